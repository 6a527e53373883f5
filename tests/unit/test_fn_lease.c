/* Unit tests: the period a renewed pod's lease annotation names (pool_lease.h), as a sweep
 * reads it: only "COUNT/PERIOD-MS", never shorter than FN_LEASE_MIN_PERIOD_MS. */
#include <stddef.h>

#include "check.h"
#include "pool/pool_lease.h"

TEST(period)
{
	CHECK(fn_lease_period("3/20000") == 20000);
	CHECK(fn_lease_period("1/1000") == 1000);
	CHECK(fn_lease_period("1/5") == FN_LEASE_MIN_PERIOD_MS); /* a sweep never believes less */
	CHECK(fn_lease_period(NULL) == 0);
	CHECK(fn_lease_period("3") == 0);
	CHECK(fn_lease_period("3/") == 0);
	CHECK(fn_lease_period("3/20s") == 0);
	CHECK(fn_lease_period("3/99999999999999999999") == 0);
}

int main(void)
{
	RUN(period);
	return check_summary();
}

/* check.h — the unit-test harness: CHECK macros that print what was checked when they fail,
 * and a summary line "N passed, N failed". A test binary exits non-zero if any check failed.
 *
 *     TEST(parses_rm) { ... CHECK(x == 1); CHECK_STR(a, "b"); }
 *     int main(void) { RUN(parses_rm); return check_summary(); }
 */
#ifndef KRMPOD_CHECK_H
#define KRMPOD_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_passed, check_failed, check_current_failed;
static const char *check_current;

#define TEST(name) static void test_##name(void)
#define RUN(name)                         \
	do {                              \
		check_current = #name;    \
		check_current_failed = 0; \
		test_##name();            \
		if (check_current_failed) \
			check_failed++;   \
		else                      \
			check_passed++;   \
	} while (0)

#define CHECK_FAIL_(fmt, ...)                                                                    \
	do {                                                                                     \
		fprintf(stderr, "FAIL %s (%s:%d): " fmt "\n", check_current, __FILE__, __LINE__, \
		        __VA_ARGS__);                                                            \
		check_current_failed = 1;                                                        \
	} while (0)

#define CHECK(cond)                               \
	do {                                      \
		if (!(cond))                      \
			CHECK_FAIL_("%s", #cond); \
	} while (0)

#define CHECK_INT(a, b)                                                               \
	do {                                                                          \
		long long a_ = (long long)(a), b_ = (long long)(b);                   \
		if (a_ != b_)                                                         \
			CHECK_FAIL_("%s == %s: got %lld, want %lld", #a, #b, a_, b_); \
	} while (0)

#define CHECK_STR(a, b)                                                          \
	do {                                                                     \
		const char *a_ = (a), *b_ = (b);                                 \
		if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0)             \
			CHECK_FAIL_("%s == %s: got \"%s\", want \"%s\"", #a, #b, \
			            a_ ? a_ : "(null)", b_ ? b_ : "(null)");     \
	} while (0)

/* Checks that haystack contains needle. */
#define CHECK_CONTAINS(hay, needle)                                             \
	do {                                                                    \
		const char *h_ = (hay), *n_ = (needle);                         \
		if (h_ == NULL || strstr(h_, n_) == NULL)                       \
			CHECK_FAIL_("%s contains \"%s\": got \"%s\"", #hay, n_, \
			            h_ ? h_ : "(null)");                        \
	} while (0)

static inline int check_summary(void)
{
	printf("%d passed, %d failed\n", check_passed, check_failed);
	return check_failed ? 1 : 0;
}

#endif

/* clock.c — see clock.h. */
#include "base/clock.h"

#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

static int64_t read_ms(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t now_ms(void)
{
	return read_ms(CLOCK_MONOTONIC);
}

static _Atomic int64_t offset_ms;

void clock_set_offset_ms(int64_t ms)
{
	offset_ms = ms;
}

int64_t epoch_ms(void)
{
	return read_ms(CLOCK_REALTIME) + offset_ms;
}

time_t epoch_s(void)
{
	return (time_t)(epoch_ms() / 1000);
}

void file_clock_now(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
}

int sleep_ms(int64_t ms, atomic_int *cancel)
{
	int64_t until = now_ms() + ms;
	for (int64_t now = now_ms(); now < until; now = now_ms()) {
		if (cancel && *cancel)
			return *cancel;
		int64_t slice = min64(until - now, 20);
		usleep((useconds_t)(slice * 1000));
	}
	return cancel ? *cancel : 0;
}

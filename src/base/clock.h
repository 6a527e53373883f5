/* clock.h — the one millisecond clock of krmpod, and the arithmetic on deadlines.
 *
 * Deadlines inside one process are absolute times on the monotonic clock (now_ms()); a
 * deadline handed to another process (generate's KRMPOD_DEADLINE_MS) is wall-clock time in
 * ms since the epoch (epoch_ms()), the only clock two processes share. */
#ifndef KRMPOD_CLOCK_H
#define KRMPOD_CLOCK_H

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

/* Monotonic clock in milliseconds. */
int64_t now_ms(void);

/* Wall-clock time in milliseconds since the epoch. */
int64_t epoch_ms(void);

/* The earlier of two times (or the smaller of two durations). */
static inline int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* Sleeps ms milliseconds, in slices of at most 20 ms, returning early (with the signal's
 * number) once *cancel is non-zero; cancel may be NULL. Returns 0 after a full sleep. */
int sleep_ms(int64_t ms, atomic_int *cancel);

#endif

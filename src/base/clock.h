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
#include <time.h>

/* Monotonic clock in milliseconds. */
int64_t now_ms(void);

/* Wall-clock time in milliseconds since the epoch, and in seconds: with file_clock_now the
 * only reads of the wall clock in krmpod (lint forbids time(NULL) and CLOCK_REALTIME
 * elsewhere), so that KRMPOD_CLOCK_OFFSET moves every one that meets another machine's. */
int64_t epoch_ms(void);
time_t epoch_s(void);

/* This machine's own clock, never moved: for the age of a local file, whose mtime the same
 * clock wrote (a cache entry, a stamp). */
void file_clock_now(struct timespec *ts);

/* For tests only (KRMPOD_CLOCK_OFFSET, set once at start by cli/main.c): moves the wall
 * clock by ms, to play a machine whose clock is off. The monotonic clock does not move. */
void clock_set_offset_ms(int64_t ms);

/* The earlier of two times (or the smaller of two durations). */
static inline int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* Sleeps ms milliseconds, in slices of at most 20 ms, returning early (with the signal's
 * number) once *cancel is non-zero; cancel may be NULL. Returns 0 after a full sleep. */
int sleep_ms(int64_t ms, atomic_int *cancel);

#endif

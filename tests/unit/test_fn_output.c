/* Unit tests: the pure part of the pod lifecycle: lining up the pod log of an ended
 * container with what the attach delivered (the part only the log has, and output the
 * attach lost). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fn/fn_output.h"

/* Returns pre, or -1; *missing set. */
static long long split(const char *log, bool cut, uint64_t attached, const char *prefix,
                       size_t *missing)
{
	size_t pre = 99, miss = 99;
	int rc = fn_output_log_split(log, strlen(log), strlen(log), cut, attached, prefix,
	                             strlen(prefix), &pre, &miss);
	*missing = miss;
	return rc < 0 ? -1 : (long long)pre;
}

TEST(log_split)
{
	size_t m;
	CHECK_INT(split("", false, 0, "", &m), 0);             /* no output at all */
	CHECK_INT(split("early\n", false, 0, "", &m), 6);      /* nothing attached: all */
	CHECK_INT(split("late\n", false, 5, "late\n", &m), 0); /* all of it attached */
	CHECK_INT(m, 0);
	CHECK_INT(split("early\nlate\n", false, 5, "late\n", &m), 6); /* part + attached */
	CHECK_INT(m, 0);
	CHECK_INT(split("x\nx\nx\nx\n", false, 4, "x\nx\n", &m), 4); /* repeated: by length */
	CHECK_INT(split("early\nlate\nmore\n", false, 10, "late\n", &m), 6);
	CHECK_INT(m, 0);
	/* the log was cut where it was read: the attached output's start ends the part */
	CHECK_INT(split("early\nlate\nmore\nand", true, 100, "late\nmore\n", &m), 6);
	CHECK_INT(m, 0);
	CHECK_INT(split("something else\n", false, 4, "late", &m), -1); /* does not line up */
	CHECK_INT(split("ab", false, 5, "", &m), -1);                   /* rotated: shorter */
	CHECK_INT(split("ab", false, 5, "late\n", &m), -1);             /* or not written yet */
}

/* The container ended, but its runtime has not written the last of its output to the log
 * yet: the part from before the attach is still found, never taken for attached output
 * (the old code took a log as long as the attach for "exactly what was attached", and one
 * shorter for a rotated log: either way the early line was lost without a word). */
TEST(log_split_of_a_log_not_written_to_its_end)
{
	size_t m;
	/* "early\n" before the attach; attached "late\nmore\n" (10): the log lags more than
	 * the early part, so it is shorter than the attach; the start of the attached output is
	 * there */
	CHECK_INT(split("early\nlat", false, 10, "lat", &m), 6);
	CHECK_INT(m, 0);
	/* the early part not in the log yet either: nothing to line up, read again */
	CHECK_INT(split("", false, 10, "late\nmore\n", &m), -1);
	/* as long as the attach: exactly what was attached, also merged in another order (a
	 * stderr line first in the log, last on the stream: never taken for an early part,
	 * which would write it twice; seen with kpt on the real cluster) */
	CHECK_INT(split("late\nmore\n", false, 10, "late\nmore\n", &m), 0);
	CHECK_INT(split("err\nout-out\n", false, 12, "out-out\nerr\n", &m), 0);
	CHECK_INT(m, 0);
	/* incomplete and merged in another order: its first bytes came on the stream too, so
	 * nothing can be said yet (read again); the same log with an early part it did not
	 * deliver is lined up */
	char attached[305], lagging[285], early[286];
	memset(attached, 'A', 300);
	memcpy(attached + 300, "err\n", 5);
	memcpy(lagging, "err\n", 4);
	memset(lagging + 4, 'A', 280);
	lagging[284] = '\0';
	CHECK_INT(split(lagging, false, 304, attached, &m), -1);
	memcpy(early, "pre\n\n", 5);
	memset(early + 5, 'A', 280);
	early[285] = '\0';
	CHECK_INT(split(early, false, 304, attached, &m), 5);
	/* stdout and stderr in another order in the log: the first bytes still line up */
	CHECK_INT(split("err\nout\n", false, 8, "err\nout\n", &m), 0);
}

/* The attach ended early: the log holds more after the attached bytes. */
TEST(log_split_finds_lost_output)
{
	size_t m;
	CHECK_INT(split("items:\n- a\n- b\n- c\n", false, 11, "items:\n- a\n", &m), 0);
	CHECK_INT(m, 8);
	CHECK_INT(split("pre\nitems:\n- a\n- b\n", false, 11, "items:\n- a\n", &m), 4);
	CHECK_INT(m, 4);
	/* cut where it was read, and already longer than pre + attached */
	CHECK_INT(split("pre\nitems:\n- a\n- b\n- c\n- d", true, 7, "items:\n", &m), 4);
	CHECK_INT(m, 15);
	/* a large output cut after 192 KiB of 200 KiB */
	size_t n = 200 << 10, got = 192 << 10;
	char *log = malloc(n);
	for (size_t i = 0; i < n; i++)
		log[i] = (char)('a' + (i * 7919 % 26));
	size_t pre = 1, miss = 0;
	CHECK(fn_output_log_split(log, n, n, false, got, log, 64 << 10, &pre, &miss) == 0);
	CHECK_INT(pre, 0);
	CHECK_INT(miss, n - got);
	/* only the log's first 1 KiB at hand: the same answer */
	pre = 1, miss = 0;
	CHECK(fn_output_log_split(log, 1024, n, false, got, log, 64 << 10, &pre, &miss) == 0);
	CHECK_INT(pre, 0);
	CHECK_INT(miss, n - got);
	free(log);
}

/* The usual case from the head alone: the part before lies within the head. */
TEST(log_split_from_the_head)
{
	const char *log = "pre\nitems:\n- a\n- b\n";
	size_t pre = 9, miss = 9;
	CHECK(fn_output_log_split(log, 12, strlen(log), false, 15, "items:\n", 7, &pre, &miss) ==
	      0);
	CHECK_INT(pre, 4);
	CHECK_INT(miss, 0);
	/* the attached start beyond the head: cannot be lined up */
	CHECK(fn_output_log_split(log, 5, strlen(log), false, 10, "- a\n", 4, &pre, &miss) < 0);
}

int main(void)
{
	RUN(log_split);
	RUN(log_split_of_a_log_not_written_to_its_end);
	RUN(log_split_finds_lost_output);
	RUN(log_split_from_the_head);
	return check_summary();
}

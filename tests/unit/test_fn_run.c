/* Unit tests: the pure parts of the pod lifecycle (log/attach overlap, the part of a log
 * only the log has). */
#include <stdlib.h>

#include "check.h"
#include "fn_run.h"

static size_t ov(const char *log, const char *att)
{
	return fn_run_log_overlap(log, strlen(log), att, strlen(att));
}

TEST(overlap)
{
	CHECK_INT(ov("", ""), 0);
	CHECK_INT(ov("hello\n", ""), 0);                     /* nothing attached yet */
	CHECK_INT(ov("", "out"), 0);                         /* empty log */
	CHECK_INT(ov("pre\n", "output"), 0);                 /* no overlap */
	CHECK_INT(ov("pre\nstarted\n", "started\nmore"), 8); /* log tail == attach head */
	CHECK_INT(ov("abab", "ababx"), 4);                   /* periodic: KMP fallback */
	CHECK_INT(ov("aaab", "aab"), 3);                     /* whole attach inside the tail */
	CHECK_INT(ov("xyz", "xyzxyz"), 3);                   /* attach longer than the log */
	CHECK_INT(ov("abcabd", "abd"), 3);
	CHECK_INT(ov("abcab", "abd"), 2);
}

TEST(overlap_large)
{
	size_t n = 1 << 20;
	char *log = malloc(n), *att = malloc(n);
	memset(log, 'a', n);
	memset(att, 'a', n);
	att[n - 1] = 'b';
	/* The longest suffix of aaaa...a that is a prefix of aaa...ab is n-1 bytes. */
	CHECK_INT(fn_run_log_overlap(log, n, att, n), n - 1);
	free(log);
	free(att);
}

static long long pre(const char *log, uint64_t attached, const char *prefix)
{
	return fn_run_preattach_len(log, strlen(log), attached, prefix, strlen(prefix));
}

TEST(preattach_len)
{
	CHECK_INT(pre("", 0, ""), 0);                           /* no output at all */
	CHECK_INT(pre("early\n", 0, ""), 6);                    /* nothing attached: all of it */
	CHECK_INT(pre("late\n", 5, "late\n"), 0);               /* all of it attached */
	CHECK_INT(pre("early\nlate\n", 5, "late\n"), 6);        /* the log = part + attached */
	CHECK_INT(pre("x\nx\nx\nx\n", 4, "x\nx\n"), 4);         /* repeated lines: by length */
	CHECK_INT(pre("early\nlate\nmore\n", 10, "late\n"), 6); /* prefix shorter than attached */
	/* the log was cut: the attached output's first occurrence ends the part */
	CHECK_INT(pre("early\nlate\nmo", 12, "late\nmore\n"), -1);
	CHECK_INT(pre("early\nlate\nmore\nand", 100, "late\nmore\n"), 6);
	CHECK_INT(pre("something else\n", 4, "late"), -1); /* does not line up */
	CHECK_INT(pre("ab", 5, ""), -1);                   /* attached, nothing captured */
}

int main(void)
{
	RUN(overlap);
	RUN(preattach_len);
	RUN(overlap_large);
	return check_summary();
}

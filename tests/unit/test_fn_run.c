/* Unit tests: the pure parts of the pod lifecycle (log/attach overlap). */
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

int main(void)
{
	RUN(overlap);
	RUN(overlap_large);
	return check_summary();
}

/* Unit tests: fd_cap (base/fd_cap.h): under the limit every byte passes in order; past it
 * the first and last halves pass, the middle is dropped and counted in one line; a
 * redirected fd is put back; a writer that outlives the cap does not hold it forever; the
 * relay outlives a starter that was SIGKILLed (Argo CD's deadline kill of generate) and
 * passes what the writers say after, deaf to SIGTERM. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/fd_cap.h"
#include "base/fdio.h"
#include "check.h"

/* n bytes that differ by position, so that a reordering or a lost chunk shows */
static char *pattern(size_t n)
{
	char *p = malloc(n);
	for (size_t i = 0; i < n; i++)
		p[i] = (char)('a' + (i * 7 + i / 251) % 26);
	return p;
}

/* Everything readable from fd now (its writers closed). */
static void drain(int fd, struct buf *out)
{
	char chunk[65536];
	ssize_t n;
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		buf_append(out, chunk, (size_t)n, "test", NULL);
}

/* Writes n pattern bytes through a cap of limit bytes into a pipe; *out what came out. */
static uint64_t through(size_t n, uint64_t limit, struct buf *out, char **sent)
{
	int d[2];
	if (pipe(d) < 0)
		return (uint64_t)-1;
	fcntl(d[1], F_SETPIPE_SZ, 1 << 20);
	struct fd_cap *c = NULL;
	struct err *e = NULL;
	if (fd_cap_pipe(d[1], limit, "the test's stderr", "TEST_MAX", &c, &e) < 0) {
		CHECK_FAIL_("fd_cap_pipe: %s", e->msg);
		return (uint64_t)-1;
	}
	*sent = pattern(n);
	for (size_t off = 0; off < n; off += 1000) /* many small writes */
		fd_write_all(fd_cap_fd(c), *sent + off, n - off < 1000 ? n - off : 1000, "w", NULL);
	uint64_t dropped = fd_cap_end(c);
	close(d[1]);
	drain(d[0], out);
	close(d[0]);
	return dropped;
}

TEST(under_the_limit_every_byte_passes)
{
	for (size_t n = 0; n <= 8192; n += 4096) {
		struct buf out;
		buf_init(&out, 0);
		char *sent = NULL;
		CHECK_INT(through(n, 8192, &out, &sent), 0);
		CHECK_INT(out.len, n);
		CHECK(n == 0 || memcmp(out.data, sent, n) == 0);
		free(sent);
		buf_free(&out);
	}
}

TEST(past_the_limit_head_notice_and_tail)
{
	struct buf out;
	buf_init(&out, 0);
	char *sent = NULL;
	size_t n = 300000;
	CHECK_INT(through(n, 8192, &out, &sent), n - 8192);
	static const char note[] = "\n[krmpod: 291808 bytes of the test's stderr dropped here: "
	                           "TEST_MAX=8192 keeps the first 4096 and the last 4096 bytes]\n";
	CHECK_INT(out.len, 8192 + strlen(note));
	CHECK(memcmp(out.data, sent, 4096) == 0);
	CHECK(out.len > 4096 && memcmp(out.data + 4096, note, strlen(note)) == 0);
	CHECK(memcmp(out.data + 4096 + strlen(note), sent + n - 4096, 4096) == 0);
	free(sent);
	buf_free(&out);
}

/* The shim's way: its own stderr through the cap, and back afterwards. */
TEST(a_redirected_fd_is_put_back)
{
	int d[2];
	CHECK(pipe(d) == 0);
	fcntl(d[1], F_SETPIPE_SZ, 1 << 20);
	int fd = dup(d[1]);
	struct fd_cap *c = NULL;
	CHECK_INT(fd_cap_redirect(fd, 4096, "x", "X", &c, NULL), 0);
	char *big = pattern(20000);
	fd_write_all(fd, big, 20000, "w", NULL);
	CHECK_INT(fd_cap_end(c), 20000 - 4096);
	fd_write_all(fd, "after\n", 6, "w", NULL); /* straight through again */
	close(fd);
	close(d[1]);
	struct buf out;
	buf_init(&out, 0);
	drain(d[0], &out);
	close(d[0]);
	CHECK(out.len > 6 && memcmp(out.data + out.len - 6, "after\n", 6) == 0);
	CHECK(memcmp(out.data, big, 2048) == 0);
	CHECK(memcmp(out.data + out.len - 6 - 2048, big + 20000 - 2048, 2048) == 0);
	free(big);
	buf_free(&out);
}

/* A child that keeps the write end (an orphaned process) does not hold fd_cap_end past
 * FD_CAP_DRAIN_MS. */
TEST(a_writer_that_outlives_the_cap_is_not_waited_for)
{
	int d[2];
	CHECK(pipe(d) == 0);
	struct fd_cap *c = NULL;
	CHECK_INT(fd_cap_pipe(d[1], 8192, "x", "X", &c, NULL), 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd_cap_fd(c), 9); /* not close-on-exec: held */
		sleep(30);
		_exit(0);
	}
	usleep(100 * 1000);
	int64_t t0 = now_ms();
	fd_cap_end(c);
	int64_t took = now_ms() - t0;
	CHECK(took >= FD_CAP_DRAIN_MS - 100 && took < FD_CAP_DRAIN_MS + 15000);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(d[0]);
	close(d[1]);
}

/* The starter (a child here) starts a cap and a writer that keeps its write end, then is
 * SIGKILLed; the relay, sent SIGTERM, still passes what the writer says after. */
TEST(the_relay_outlives_a_killed_starter)
{
	int d[2], ready[2], go[2];
	CHECK(pipe(d) == 0 && pipe(ready) == 0 && pipe(go) == 0);
	pid_t starter = fork();
	if (starter == 0) {
		close(d[0]);
		struct fd_cap *c = NULL;
		if (fd_cap_pipe(d[1], 8192, "x", "X", &c, NULL) < 0)
			_exit(1);
		close(d[1]);
		if (fork() == 0) { /* the writer: a shim that is still stopping */
			dup2(fd_cap_fd(c), 9);
			char b;
			read(go[0], &b, 1);
			fd_write_all(9, "last words\n", 11, "w", NULL);
			_exit(0);
		}
		fd_write_all(fd_cap_fd(c), "first\n", 6, "w", NULL);
		pid_t relay = fd_cap_pid(c);
		fd_write_all(ready[1], &relay, sizeof(relay), "ready", NULL);
		pause();
		_exit(0);
	}
	close(d[1]);
	close(ready[1]);
	close(go[0]);
	pid_t relay = 0;
	CHECK(read(ready[0], &relay, sizeof(relay)) == sizeof(relay) && relay > 0);
	kill(starter, SIGKILL);
	waitpid(starter, NULL, 0);
	kill(relay, SIGTERM);
	usleep(100 * 1000);
	fd_write_all(go[1], "g", 1, "go", NULL);
	close(go[1]);
	struct buf out;
	buf_init(&out, 0);
	drain(d[0], &out);
	CHECK_STR(out.data ? out.data : "", "first\nlast words\n");
	buf_free(&out);
	close(d[0]);
	close(ready[0]);
}

int main(void)
{
	RUN(under_the_limit_every_byte_passes);
	RUN(past_the_limit_head_notice_and_tail);
	RUN(a_redirected_fd_is_put_back);
	RUN(a_writer_that_outlives_the_cap_is_not_waited_for);
	RUN(the_relay_outlives_a_killed_starter);
	return check_summary();
}

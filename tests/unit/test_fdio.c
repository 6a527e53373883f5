/* Unit tests: fd_accept (fdio.h): a connection waiting while no descriptor is free is
 * retried sleeping, never in a busy loop, and a wake ends the wait. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/fdio.h"
#include "check.h"

/* A listening socket with one client connected to it (queued, not accepted). */
static int listener_with_client(char *path, int *client)
{
	snprintf(path, 108, "/tmp/krmpod-test-fdio-%d.sock", (int)getpid());
	unlink(path);
	int l = fd_unix_socket(path, true, 4);
	*client = fd_unix_socket(path, false, 0);
	return l;
}

static long long cpu_ms(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return (long long)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000 +
	       (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1000;
}

TEST(accepts_a_waiting_connection)
{
	char path[108];
	int client = -1;
	int l = listener_with_client(path, &client);
	CHECK(l >= 0 && client >= 0);
	int c = fd_accept(l, -1);
	CHECK(c >= 0);
	/* and nothing more is waiting: EAGAIN at once (the socket is non-blocking) */
	struct pollfd p = {.fd = l, .events = POLLIN};
	CHECK_INT(poll(&p, 1, 0), 0);
	close(c), close(client), close(l);
	unlink(path);
}

/* Leaves no descriptor free: RLIMIT_NOFILE just above the highest one in use (*old keeps
 * the limit to put back). True when set. */
static bool no_descriptor_left(int highest, struct rlimit *old)
{
	getrlimit(RLIMIT_NOFILE, old);
	struct rlimit tight = {.rlim_cur = (rlim_t)highest + 1, .rlim_max = old->rlim_max};
	return setrlimit(RLIMIT_NOFILE, &tight) == 0;
}

/* No descriptor left (RLIMIT_NOFILE at the number in use): accept4 fails with EMFILE and
 * the connection stays queued, the socket readable. The retries sleep: the whole wait
 * (FD_ACCEPT_RETRIES x FD_ACCEPT_RETRY_MS) costs little CPU, and ends with EMFILE. */
TEST(no_descriptor_left_is_waited_out_without_spinning)
{
	char path[108];
	int client = -1;
	int l = listener_with_client(path, &client);
	CHECK(l >= 0 && client >= 0);
	struct rlimit old;
	CHECK(no_descriptor_left(client > l ? client : l, &old));
	long long t0 = now_ms(), c0 = cpu_ms();
	int c = fd_accept(l, -1);
	int e = errno;
	long long wall = now_ms() - t0, cpu = cpu_ms() - c0;
	setrlimit(RLIMIT_NOFILE, &old);
	CHECK_INT(c, -1);
	CHECK_INT(e, EMFILE);
	CHECK(wall >= (long long)FD_ACCEPT_RETRIES * FD_ACCEPT_RETRY_MS * 9 / 10);
	/* a busy loop would burn about the whole wall time */
	if (cpu > wall / 10)
		fprintf(stderr, "fd_accept spent %lld ms of CPU in %lld ms\n", cpu, wall);
	CHECK(cpu <= wall / 10);
	/* once a descriptor is free again, the same connection is taken */
	c = fd_accept(l, -1);
	CHECK(c >= 0);
	close(c), close(client), close(l);
	unlink(path);
}

/* A wake (the session closing) ends the wait at once with ECANCELED. */
TEST(a_wake_ends_the_wait)
{
	char path[108];
	int client = -1;
	int l = listener_with_client(path, &client);
	int wake[2];
	CHECK(pipe(wake) == 0);
	CHECK(write(wake[1], "x", 1) == 1);
	int highest = wake[1];
	if (l > highest)
		highest = l;
	if (client > highest)
		highest = client;
	struct rlimit old;
	CHECK(no_descriptor_left(highest, &old));
	long long t0 = now_ms();
	int c = fd_accept(l, wake[0]);
	int e = errno;
	long long wall = now_ms() - t0;
	setrlimit(RLIMIT_NOFILE, &old);
	CHECK_INT(c, -1);
	CHECK_INT(e, ECANCELED);
	CHECK(wall < 1000);
	close(client), close(l), close(wake[0]), close(wake[1]);
	unlink(path);
}

/* listen(2) for this binary: slowed down on demand, so that the moment between a socket's
 * bind and its listen is long enough to be seen. */
static int listen_delay_us;
int listen(int fd, int backlog)
{
	if (listen_delay_us)
		usleep((useconds_t)listen_delay_us);
	return (int)syscall(SYS_listen, fd, backlog);
}

/* Whoever sees a listening socket's file can connect to it: a child makes the socket (its
 * listen held back 100 ms) while the parent polls for the file and connects the moment it
 * appears. The old code bound, then listened: the connect came in between and was
 * refused, which a shim took for "no session". */
TEST(a_socket_file_that_exists_is_listening)
{
	int refused = 0;
	listen_delay_us = 100000;
	for (int i = 0; i < 5; i++) {
		char path[108];
		snprintf(path, sizeof(path), "/tmp/krmpod-test-fdio-race-%d-%d.sock", (int)getpid(),
		         i);
		unlink(path);
		/* the child's socket lives until the parent tried (a fixed wait lost that race
		 * to a busy machine, where the parent's connect came after the child's exit) */
		int done[2];
		CHECK(pipe(done) == 0);
		pid_t child = fork();
		if (child == 0) {
			close(done[1]);
			int l = fd_unix_socket(path, true, 4);
			char b;
			while (read(done[0], &b, 1) < 0 && errno == EINTR)
				;
			_exit(l >= 0 ? 0 : 1);
		}
		close(done[0]);
		int c = -1;
		for (long spin = 0; spin < 50000000 && c < 0; spin++) {
			if (access(path, F_OK) != 0)
				continue;
			c = fd_unix_socket(path, false, 0);
			if (c < 0 && errno == ECONNREFUSED)
				refused++;
			break;
		}
		if (c >= 0)
			close(c);
		close(done[1]);
		int st = 0;
		waitpid(child, &st, 0);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		CHECK(c >= 0 || refused > 0);
		unlink(path);
	}
	listen_delay_us = 0;
	CHECK_INT(refused, 0);
}

/* A failed system call's errno is a field of the error (callers branch on it, never on
 * the text), and the text still says it. */
TEST(a_failed_call_carries_its_errno)
{
	char *text = NULL;
	size_t len = 0;
	struct err *e = NULL;
	CHECK_INT(buf_read_file("/nonexistent/krmpod-test", 1024, "the test file", ERR_CONFIG,
	                        &text, &len, &e),
	          -1);
	CHECK(e && e->code == ERR_CONFIG && e->sys_errno == ENOENT);
	CHECK_CONTAINS(e ? e->msg : NULL, "the test file /nonexistent/krmpod-test: ");
	CHECK_CONTAINS(e ? e->msg : NULL, strerror(ENOENT));
	err_free(e);
	e = NULL;
	CHECK_INT(err_set_sys(&e, ERR_IO, EMFILE, "accept on %s", "x.sock"), -1);
	CHECK(e && e->sys_errno == EMFILE && e->code == ERR_IO);
	CHECK_CONTAINS(e ? e->msg : NULL, "accept on x.sock: ");
	err_free(e);
}

static char *slurp(const char *path)
{
	char *text = NULL;
	size_t len = 0;
	struct err *e = NULL;
	if (buf_read_file(path, 1 << 20, "test", ERR_IO, &text, &len, &e) < 0) {
		err_free(e);
		return NULL;
	}
	return text;
}

/* One writer for every temp + rename: the whole new file or the old one, the temporary file
 * never left behind, never written through a symlink, a mkostemp template made unique. */
TEST(write_atomic)
{
	char dir[] = "/tmp/krmpod-atomic-XXXXXX", path[64], tmp[64], link[64];
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/f", dir);
	snprintf(tmp, sizeof(tmp), "%s/.f.new", dir);
	struct err *e = NULL;
	CHECK(fd_write_atomic(path, tmp, "one\n", 4, 0600, "a test file", &e) == 0);
	CHECK(fd_write_atomic(path, tmp, "two\n", 4, 0640, "a test file", &e) == 0);
	char *got = slurp(path);
	CHECK(got && strcmp(got, "two\n") == 0);
	free(got);
	struct stat st;
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0640);
	CHECK(access(tmp, F_OK) < 0);
	/* a template: a unique name, then the rename */
	snprintf(tmp, sizeof(tmp), "%s/.f-XXXXXX", dir);
	CHECK(fd_write_atomic(path, tmp, "three\n", 6, 0600, "a test file", &e) == 0);
	got = slurp(path);
	CHECK(got && strcmp(got, "three\n") == 0);
	free(got);
	CHECK(access(tmp, F_OK) < 0); /* the template itself was never created */
	/* a rename that fails: the error names what and where, and no temporary file stays */
	char into[96];
	snprintf(into, sizeof(into), "%s/missing/f", dir);
	snprintf(tmp, sizeof(tmp), "%s/.g.new", dir);
	CHECK(fd_write_atomic(into, tmp, "x", 1, 0600, "a test file", &e) == -1);
	CHECK(e && e->code == ERR_IO && strstr(e->msg, "a test file") && strstr(e->msg, into));
	err_free(e);
	e = NULL;
	CHECK(access(tmp, F_OK) < 0);
	/* a temporary name that is a symlink (planted by someone else) is not followed */
	snprintf(link, sizeof(link), "%s/victim", dir);
	CHECK(symlink(link, tmp) == 0);
	CHECK(fd_write_atomic(path, tmp, "evil", 4, 0600, "a test file", &e) == -1);
	CHECK(access(link, F_OK) < 0);
	err_free(e);
	e = NULL;
	unlink(tmp);
	/* a copy of a file, from its start whatever its offset, with the mode asked */
	char src[96];
	snprintf(src, sizeof(src), "%s/src", dir);
	CHECK(fd_write_atomic(src, tmp, "a program\n", 10, 0600, "a test file", &e) == 0);
	int from = open(src, O_RDONLY | O_CLOEXEC);
	CHECK(from >= 0 && lseek(from, 4, SEEK_SET) == 4);
	CHECK(fd_copy_atomic(path, tmp, from, 0555, "a copy", &e) == 0);
	got = slurp(path);
	CHECK(got && strcmp(got, "a program\n") == 0);
	free(got);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0555 && access(tmp, F_OK) < 0);
	/* a source that cannot be read: the error names what, and no temporary file stays */
	close(from);
	from = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(fd_copy_atomic(path, tmp, from, 0555, "a copy", &e) == -1);
	CHECK(e && e->code == ERR_IO && access(tmp, F_OK) < 0);
	err_free(e);
	close(from);
	fd_remove_tree(dir, "test", NULL);
}

int main(void)
{
	RUN(write_atomic);
	RUN(a_failed_call_carries_its_errno);
	RUN(a_socket_file_that_exists_is_listening);
	RUN(accepts_a_waiting_connection);
	RUN(no_descriptor_left_is_waited_out_without_spinning);
	RUN(a_wake_ends_the_wait);
	return check_summary();
}

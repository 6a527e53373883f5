/* fd_cap.c — see fd_cap.h.
 *
 * The relay is a forked child, not a thread, so that it outlives the process that started
 * it: Argo CD SIGKILLs generate at its deadline, and what the shims write while they stop
 * (their "interrupted by signal 15" and the pod they deleted) must still reach Argo CD. The
 * child was forked from a process that may run threads: it only calls async-signal-safe
 * functions (read, write, poll, clock_gettime, close, dup2, fcntl, sigaction, prctl, _exit), and
 * everything it needs is allocated before the fork. */
#include "base/fd_cap.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/xalloc.h"

/* The byte the parent sends on the control pipe when it ends the cap in order. */
#define END_BYTE 'E'
/* The relay's fds after it moved them (everything else is closed). */
enum { RELAY_RD = 3, RELAY_DEST, RELAY_CTL, RELAY_RES, RELAY_FIRST_FREE };

struct fd_cap {
	pid_t relay;   /* the child that reads the pipe, or -1 */
	int dest;      /* where the bytes go */
	int wr;        /* the pipe's write end; -1 once closed */
	int ctl;       /* the control pipe's write end (END_BYTE, then closed) */
	int res;       /* the result pipe's read end: the relay's dropped count */
	int moved;     /* fd_cap_redirect: the fd replaced by the pipe, else -1 */
	uint64_t head; /* the bytes passed through as they come */
	uint64_t seen; /* every byte read (relay) */
	char *ring;    /* the last tail bytes after the head (relay) */
	size_t tail, ring_pos;
	char *what, *setting; /* for the notice (cut to what its buffer holds) */
	uint64_t limit;
};

/* ---- the relay (async-signal-safe from here to relay_main) ---- */

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Writes all of p; false once dest failed (its reader is gone: the rest is read and
 * dropped, so that the writers never block). Not fd_write_all: its error path formats
 * strerror, which is not async-signal-safe. */
static bool put(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

static size_t put_u64(char *out, uint64_t v)
{
	char tmp[24];
	size_t n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	return n;
}

static size_t put_str(char *out, const char *s)
{
	size_t n = strlen(s);
	memcpy(out, s, n);
	return n;
}

/* Takes n bytes read from the pipe: the head's share is written now, the rest kept in the
 * ring (its oldest bytes overwritten). */
static void take(struct fd_cap *c, const char *p, size_t n, bool *dest_ok)
{
	if (c->seen < c->head) {
		size_t pass = c->head - c->seen < n ? (size_t)(c->head - c->seen) : n;
		if (*dest_ok)
			*dest_ok = put(RELAY_DEST, p, pass);
		c->seen += pass;
		p += pass;
		n -= pass;
	}
	c->seen += n;
	if (n >= c->tail) { /* only the newest tail bytes can survive */
		p += n - c->tail;
		n = c->tail;
	}
	while (n > 0) {
		size_t room = c->tail - c->ring_pos;
		size_t k = n < room ? n : room;
		memcpy(c->ring + c->ring_pos, p, k);
		c->ring_pos = (c->ring_pos + k) % c->tail;
		p += k;
		n -= k;
	}
}

/* The notice, then the tail kept in the ring; returns the bytes dropped. */
static uint64_t finish(struct fd_cap *c, bool dest_ok)
{
	uint64_t after_head = c->seen > c->head ? c->seen - c->head : 0;
	uint64_t dropped = after_head > c->tail ? after_head - c->tail : 0;
	size_t kept = after_head < c->tail ? (size_t)after_head : c->tail;
	if (dropped && dest_ok) {
		char note[600];
		size_t n = put_str(note, "\n[krmpod: ");
		n += put_u64(note + n, dropped);
		n += put_str(note + n, " bytes of ");
		n += put_str(note + n, c->what);
		n += put_str(note + n, " dropped here: ");
		n += put_str(note + n, c->setting);
		n += put_str(note + n, "=");
		n += put_u64(note + n, c->limit);
		n += put_str(note + n, " keeps the first ");
		n += put_u64(note + n, c->head);
		n += put_str(note + n, " and the last ");
		n += put_u64(note + n, c->tail);
		n += put_str(note + n, " bytes]\n");
		dest_ok = put(RELAY_DEST, note, n);
	}
	/* the ring holds `kept` bytes ending at ring_pos */
	size_t start = (c->ring_pos + c->tail - kept) % c->tail;
	size_t first = kept < c->tail - start ? kept : c->tail - start;
	if (dest_ok && put(RELAY_DEST, c->ring + start, first))
		put(RELAY_DEST, c->ring, kept - first);
	return dropped;
}

/* Moves the four fds the relay keeps to RELAY_RD.. and closes every other one: a pipe end
 * kept open by mistake would hold back someone's end of file. */
static void keep_only(int rd, int dest, int ctl, int res)
{
	int want[4] = {rd, dest, ctl, res}, high[4];
	for (int i = 0; i < 4; i++)
		high[i] = fcntl(want[i], F_DUPFD, RELAY_FIRST_FREE);
	for (int i = 0; i < 4; i++)
		dup2(high[i], RELAY_RD + i);
	long max = 1 << 20;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		max = (long)rl.rlim_cur;
#ifdef SYS_close_range
	if (syscall(SYS_close_range, RELAY_FIRST_FREE, ~0U, 0) == 0)
		max = 0;
#endif
	for (long fd = RELAY_FIRST_FREE; fd < max; fd++)
		close((int)fd);
	for (int fd = 0; fd < 3; fd++)
		if (fd != RELAY_DEST)
			close(fd);
}

/* The signals the relay ignores: a deadline kill's, and a closed destination's. */
static const int RELAY_IGNORED[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE};

static void relay_main(struct fd_cap *c, int rd, int ctl_rd, int res_wr)
{
	struct sigaction ign = {.sa_handler = SIG_IGN};
	sigemptyset(&ign.sa_mask);
	for (size_t i = 0; i < sizeof(RELAY_IGNORED) / sizeof(RELAY_IGNORED[0]); i++)
		sigaction(RELAY_IGNORED[i], &ign, NULL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setpgid(0, 0); /* out of the group a deadline kill signals */
	prctl(PR_SET_NAME, "krmpod-relay");
	keep_only(rd, c->dest, ctl_rd, res_wr);
	bool dest_ok = true, ctl_open = true;
	int64_t until = 0; /* 0 while the starter is there: read until end of file */
	static char chunk[65536];
	for (;;) {
		if (until && mono_ms() >= until)
			break;
		struct pollfd p[2] = {{.fd = RELAY_RD, .events = POLLIN},
		                      {.fd = ctl_open ? RELAY_CTL : -1, .events = POLLIN}};
		int r = poll(p, 2, until ? 50 : -1);
		if (r < 0 && errno != EINTR)
			break;
		if (r <= 0)
			continue;
		if (p[1].revents) {
			char b = 0;
			ssize_t n = read(RELAY_CTL, &b, 1);
			if (n < 0 && errno == EINTR)
				continue;
			/* END_BYTE: the starter ended the cap; end of file alone: it died (SIGKILL)
			 * and the writers it left may still be stopping */
			until = mono_ms() +
			        (n == 1 && b == END_BYTE ? FD_CAP_DRAIN_MS : FD_CAP_ORPHAN_MS);
			close(RELAY_CTL);
			ctl_open = false;
		}
		if (p[0].revents) {
			ssize_t n = read(RELAY_RD, chunk, sizeof(chunk));
			if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
				break;
			if (n > 0)
				take(c, chunk, (size_t)n, &dest_ok);
		}
	}
	uint64_t dropped = finish(c, dest_ok);
	put(RELAY_RES, (const char *)&dropped, sizeof(dropped));
	_exit(0);
}

/* ---- the starter ---- */

static void cap_free(struct fd_cap *c)
{
	int *fds[] = {&c->wr, &c->ctl, &c->res};
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (*fds[i] >= 0)
			close(*fds[i]);
	free(c->ring);
	free(c->what);
	free(c->setting);
	free(c);
}

int fd_cap_pipe(int dest, uint64_t limit, const char *what, const char *setting,
                struct fd_cap **out, struct err **err)
{
	if (limit < FD_CAP_MIN)
		limit = FD_CAP_MIN;
	struct fd_cap *c = xcalloc(1, sizeof(*c));
	c->relay = -1;
	c->dest = dest;
	c->moved = -1;
	c->wr = c->ctl = c->res = -1;
	c->limit = limit;
	c->head = limit / 2;
	c->tail = (size_t)(limit - c->head);
	c->ring = xmalloc(c->tail);
	c->what = xstrndup(what, 200);
	c->setting = xstrndup(setting, 100);
	int data[2] = {-1, -1}, ctl[2] = {-1, -1}, res[2] = {-1, -1};
	if (pipe2(data, O_CLOEXEC) < 0 || pipe2(ctl, O_CLOEXEC) < 0 || pipe2(res, O_CLOEXEC) < 0) {
		int e = errno;
		int *all[] = {data, ctl, res};
		for (size_t i = 0; i < 3; i++)
			for (size_t k = 0; k < 2; k++)
				if (all[i][k] >= 0)
					close(all[i][k]);
		cap_free(c);
		return err_set_sys(err, ERR_INTERNAL, e, "pipe for %s", what);
	}
	/* The relay is deaf to the signals of a deadline kill from its first instruction: they
	 * are blocked across the fork, and the child ignores them before it unblocks them (a
	 * SIGTERM sent between the fork and its sigaction would kill it, and the starter's last
	 * words with it; seen under load in tests/unit/test_fd_cap.c). */
	sigset_t deaf, old;
	sigemptyset(&deaf);
	for (size_t i = 0; i < sizeof(RELAY_IGNORED) / sizeof(RELAY_IGNORED[0]); i++)
		sigaddset(&deaf, RELAY_IGNORED[i]);
	pthread_sigmask(SIG_BLOCK, &deaf, &old);
	pid_t pid = fork();
	if (pid == 0)
		relay_main(c, data[0], ctl[0], res[1]);
	int e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(data[0]);
	close(ctl[0]);
	close(res[1]);
	c->wr = data[1];
	c->ctl = ctl[1];
	c->res = res[0];
	if (pid < 0) {
		cap_free(c);
		return err_set_sys(err, ERR_INTERNAL, e, "no process to relay %s", what);
	}
	c->relay = pid;
	free(c->ring); /* the relay's copy is the one that counts */
	c->ring = NULL;
	*out = c;
	return 0;
}

int fd_cap_redirect(int fd, uint64_t limit, const char *what, const char *setting,
                    struct fd_cap **out, struct err **err)
{
	int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (moved < 0)
		return err_set_sys(err, ERR_INTERNAL, errno, "dup of fd %d for %s", fd, what);
	if (fd_cap_pipe(moved, limit, what, setting, out, err) < 0) {
		close(moved);
		return -1;
	}
	if (dup2((*out)->wr, fd) < 0) {
		int e = errno;
		(*out)->moved = -1;
		fd_cap_end(*out);
		close(moved);
		*out = NULL;
		return err_set_sys(err, ERR_INTERNAL, e, "dup2 onto fd %d for %s", fd, what);
	}
	(*out)->moved = fd;
	return 0;
}

int fd_cap_fd(const struct fd_cap *c)
{
	return c->wr;
}

pid_t fd_cap_pid(const struct fd_cap *c)
{
	return c ? c->relay : 0;
}

uint64_t fd_cap_end(struct fd_cap *c)
{
	if (c == NULL)
		return 0;
	/* The end first, while this process still holds a write end of the data pipe: once the
	 * last writer closes it the relay may see the end of its data and exit, and an END_BYTE
	 * written after would meet a closed pipe (SIGPIPE in a process that does not ignore it;
	 * seen under load in tests/unit/test_fd_cap.c). */
	char b = END_BYTE;
	while (write(c->ctl, &b, 1) < 0 && errno == EINTR)
		;
	close(c->ctl);
	c->ctl = -1;
	if (c->moved >= 0)
		dup2(c->dest, c->moved); /* the pipe's copy at c->moved is closed by this */
	close(c->wr);
	c->wr = -1;
	uint64_t dropped = 0;
	size_t got = 0;
	while (got < sizeof(dropped)) {
		ssize_t n = read(c->res, (char *)&dropped + got, sizeof(dropped) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	while (waitpid(c->relay, NULL, 0) < 0 && errno == EINTR)
		;
	if (c->moved >= 0)
		close(c->dest);
	cap_free(c);
	return got == sizeof(dropped) ? dropped : 0;
}

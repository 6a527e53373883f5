/* fd_cap.c — see fd_cap.h. */
#include "base/fd_cap.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fdio.h"
#include "base/signals.h"
#include "base/xalloc.h"

struct fd_cap {
	int dest;      /* where the bytes go */
	int rd, wr;    /* the pipe; wr is -1 once closed */
	int moved;     /* fd_cap_redirect: the fd replaced by the pipe, else -1 */
	uint64_t head; /* the bytes passed through as they come */
	uint64_t seen; /* every byte read */
	char *ring;    /* the last tail bytes after the head */
	size_t tail, ring_pos;
	atomic_llong drain_until; /* 0 while writers may still come; then a now_ms() deadline */
	char *what, *setting;
	uint64_t limit;
	pthread_t thread;
};

/* Takes n bytes read from the pipe: the head's share is written now, the rest kept in the
 * ring (its oldest bytes overwritten). */
static void take(struct fd_cap *c, const char *p, size_t n)
{
	if (c->seen < c->head) {
		size_t pass = c->head - c->seen < n ? (size_t)(c->head - c->seen) : n;
		fd_write_all(c->dest, p, pass, "output", NULL);
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

static void *reader(void *arg)
{
	struct fd_cap *c = arg;
	char chunk[65536];
	for (;;) {
		long long until = atomic_load(&c->drain_until);
		if (until && now_ms() >= until)
			break;
		struct pollfd p = {.fd = c->rd, .events = POLLIN};
		int r = poll(&p, 1, 50);
		if (r < 0 && errno != EINTR)
			break;
		if (r <= 0)
			continue;
		ssize_t n = read(c->rd, chunk, sizeof(chunk));
		if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
			break;
		if (n > 0)
			take(c, chunk, (size_t)n);
	}
	return NULL;
}

static void cap_free(struct fd_cap *c)
{
	if (c->rd >= 0)
		close(c->rd);
	if (c->wr >= 0)
		close(c->wr);
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
	c->dest = dest;
	c->moved = -1;
	c->rd = c->wr = -1;
	c->limit = limit;
	c->head = limit / 2;
	c->tail = (size_t)(limit - c->head);
	c->ring = xmalloc(c->tail);
	c->what = xstrdup(what);
	c->setting = xstrdup(setting);
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		cap_free(c);
		return err_set_sys(err, ERR_INTERNAL, errno, "pipe for %s", what);
	}
	c->rd = p[0];
	c->wr = p[1];
	if (signals_thread_start(&c->thread, reader, c) != 0) {
		cap_free(c);
		return err_set(err, ERR_INTERNAL, "no thread to read %s", what);
	}
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

uint64_t fd_cap_end(struct fd_cap *c)
{
	if (c == NULL)
		return 0;
	if (c->moved >= 0)
		dup2(c->dest, c->moved); /* the pipe's copy at c->moved is closed by this */
	close(c->wr);
	c->wr = -1;
	atomic_store(&c->drain_until, (long long)(now_ms() + FD_CAP_DRAIN_MS));
	pthread_join(c->thread, NULL);
	uint64_t after_head = c->seen > c->head ? c->seen - c->head : 0;
	uint64_t dropped = after_head > c->tail ? after_head - c->tail : 0;
	size_t kept = after_head < c->tail ? (size_t)after_head : c->tail;
	if (dropped) {
		char note[512];
		int n = snprintf(
		        note, sizeof(note),
		        "\n[krmpod: %llu bytes of %s dropped here: %s=%llu keeps the first "
		        "%llu and the last %zu bytes]\n",
		        (unsigned long long)dropped, c->what, c->setting,
		        (unsigned long long)c->limit, (unsigned long long)c->head, c->tail);
		fd_write_all(c->dest, note, (size_t)n < sizeof(note) ? (size_t)n : sizeof(note) - 1,
		             "output", NULL);
	}
	/* the ring holds `kept` bytes ending at ring_pos */
	size_t start = (c->ring_pos + c->tail - kept) % c->tail;
	size_t first = kept < c->tail - start ? kept : c->tail - start;
	fd_write_all(c->dest, c->ring + start, first, "output", NULL);
	fd_write_all(c->dest, c->ring, kept - first, "output", NULL);
	if (c->moved >= 0)
		close(c->dest);
	cap_free(c);
	return dropped;
}

/* agent_serve.c — `krmpod serve WORKDIR`: a call session in an exec-mode pod (agent.h,
 * agent_frame.h). Each call is `krmpod call WORKDIR` as a child with pipes for its stdio,
 * exactly as a pods/exec of it would run, without the container runtime's exec. */
#include "agent/agent.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent_frame.h"
#include "base/buf.h"
#include "base/size_limits.h"

/* One call's child and its pipes (-1 once closed). */
struct call {
	pid_t pid;
	int in, out, err;
	struct buf pending; /* stdin bytes on their way to the child */
	bool in_end;        /* the 'e' frame arrived */
	bool exited;        /* 'x' sent: stdin frames until 'e' are dropped */
};

struct serve {
	const char *self;
	const char *workdir;
	int out_fd;
	struct call c;
	bool active;
	struct err *failed; /* a callback's error */
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int spawn_call(struct serve *s)
{
	int pi[2], po[2], pe[2];
	if (pipe2(pi, O_CLOEXEC) < 0)
		return err_set_sys(&s->failed, ERR_INTERNAL, errno, "pipe");
	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
		int e = errno;
		close(pi[0]);
		close(pi[1]);
		return err_set(&s->failed, ERR_INTERNAL, "pipe: %s", strerror(e));
	}
	pid_t pid = fork();
	if (pid == 0) {
		/* a process group of its own: `krmpod call` and the function it runs (and what
		 * that one forks) are killed together when the call is abandoned */
		setpgid(0, 0);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(pi[0], 0) < 0 || dup2(po[1], 1) < 0 || dup2(pe[1], 2) < 0)
			_exit(126);
		char *argv[] = {"krmpod", "call", (char *)s->workdir, NULL};
		execv(s->self, argv);
		dprintf(2, "krmpod serve: cannot run krmpod call: %s\n", strerror(errno));
		_exit(126);
	}
	close(pi[0]);
	close(po[1]);
	close(pe[1]);
	if (pid < 0) {
		int e = errno;
		close(pi[1]);
		close(po[0]);
		close(pe[0]);
		return err_set(&s->failed, ERR_INTERNAL, "fork: %s", strerror(e));
	}
	fcntl(pi[1], F_SETFL, O_NONBLOCK);
	s->c = (struct call){.pid = pid, .in = pi[1], .out = po[0], .err = pe[0]};
	buf_init(&s->c.pending, 0);
	s->active = true;
	return 0;
}

static int on_data(void *ud, char type, const char *data, size_t len)
{
	struct serve *s = ud;
	if (type != FRAME_IN)
		return err_set(&s->failed, ERR_NET, "session: frame '%c' sent to the pod", type);
	if (!s->active && spawn_call(s) < 0)
		return -1;
	if (!s->c.exited && s->c.in >= 0)
		buf_append(&s->c.pending, data, len, "stdin", NULL);
	return 0;
}

static int on_end(void *ud, char type)
{
	struct serve *s = ud;
	if (type == FRAME_IN)
		return s->active || spawn_call(s) == 0 ? 0 : -1;
	if (type != FRAME_IN_END)
		return err_set(&s->failed, ERR_NET, "session: frame '%c' sent to the pod", type);
	if (!s->active && spawn_call(s) < 0)
		return -1;
	s->c.in_end = true;
	if (s->c.exited) { /* the call is over and its stdin too: the next may come */
		buf_free(&s->c.pending);
		s->active = false;
	}
	return 0;
}

/* Moves pending stdin into the child; a child that closed its stdin gets no more. */
static void feed_child(struct call *c)
{
	while (c->in >= 0 && c->pending.len > 0) {
		ssize_t n = write(c->in, c->pending.data, c->pending.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) { /* EPIPE: the function does not read the rest */
			close_fd(&c->in);
			break;
		}
		memmove(c->pending.data, c->pending.data + n, c->pending.len - (size_t)n);
		c->pending.len -= (size_t)n;
	}
	if (c->in < 0)
		c->pending.len = 0;
	if (c->in >= 0 && c->pending.len == 0 && c->in_end)
		close_fd(&c->in);
}

/* Relays one read of the child's stdout or stderr as a frame; false at EOF. */
static bool relay_output(struct serve *s, int *fd, char type)
{
	char chunk[LIMIT_STDIN_CHUNK];
	ssize_t n = read(*fd, chunk, sizeof(chunk));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0) {
		close_fd(fd);
		return false;
	}
	if (frame_write(s->out_fd, type, chunk, (size_t)n, &s->failed) < 0)
		return false;
	return true;
}

/* Both outputs ended: the child's status goes out as the 'x' frame. */
static int finish_call(struct serve *s)
{
	int status = 0;
	while (waitpid(s->c.pid, &status, 0) < 0)
		if (errno != EINTR)
			return err_set_sys(&s->failed, ERR_INTERNAL, errno, "wait for krmpod call");
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	char text[FRAME_EXIT_MAX];
	int n = snprintf(text, sizeof(text), "%d", code);
	if (frame_write(s->out_fd, FRAME_EXIT, text, (size_t)n, &s->failed) < 0)
		return -1;
	s->c.pid = 0;
	s->c.exited = true;
	close_fd(&s->c.in);
	s->c.pending.len = 0; /* stdin the function did not read: dropped, and more is read */
	if (s->c.in_end) {
		buf_free(&s->c.pending);
		s->active = false;
	}
	return 0;
}

static void abandon_call(struct serve *s)
{
	if (!s->active)
		return;
	if (s->c.pid > 0) {
		kill(-s->c.pid, SIGKILL); /* the call's group: the function with it */
		kill(s->c.pid, SIGKILL);
		while (waitpid(s->c.pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	close_fd(&s->c.in);
	close_fd(&s->c.out);
	close_fd(&s->c.err);
	buf_free(&s->c.pending);
	s->active = false;
}

/* Reads the session's stdin and feeds its frames to r: 0 to go on (*in_open false once it
 * ended between calls), -1 with *err when the session broke (the call is then abandoned). */
static int read_session(struct serve *s, struct frame_reader *r, int in_fd, bool *in_open,
                        struct err **err)
{
	char chunk[LIMIT_STDIN_CHUNK];
	ssize_t n = read(in_fd, chunk, sizeof(chunk));
	if (n < 0 && errno == EINTR)
		return 0;
	if (n > 0) {
		if (frame_feed(r, chunk, (size_t)n, err) == 0)
			return 0;
		if (s->failed) /* a callback's: frame_feed set nothing */
			*err = s->failed;
		abandon_call(s);
		return -1;
	}
	*in_open = false;
	if (s->active && !(s->c.exited && s->c.in_end) && !frame_idle(r)) {
		abandon_call(s);
		return err_set(err, ERR_NET,
		               "the session's stdin ended inside a frame: the call was abandoned");
	}
	/* The janitor closes the session between calls: one still running (its stdin sent
	 * whole or not) was cut off, and must not run on in the pod. */
	if (s->active && !s->c.exited) {
		abandon_call(s);
		return err_set(err, ERR_NET,
		               "the session's stdin ended during a call: the call was abandoned");
	}
	return 0;
}

int agent_serve(const char *self, const char *workdir, int in_fd, int out_fd, struct err **err)
{
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_DUMPABLE, 0); /* see agent_call: not for the function to read or trace */
	struct serve s = {.self = self, .workdir = workdir, .out_fd = out_fd};
	struct frame_reader r = {.on_data = on_data, .on_end = on_end, .ud = &s};
	bool in_open = true;
	while (in_open || s.active) {
		bool running = s.active && s.c.pid > 0;
		struct pollfd p[4] = {
		        {.fd = in_open && (!s.active || s.c.pending.len == 0 || s.c.exited) ? in_fd
		                                                                            : -1,
		         .events = POLLIN},
		        {.fd = running && s.c.pending.len ? s.c.in : -1, .events = POLLOUT},
		        {.fd = running ? s.c.out : -1, .events = POLLIN},
		        {.fd = running ? s.c.err : -1, .events = POLLIN},
		};
		if (!in_open && (!s.active || !running)) /* the session ended between calls */
			break;
		if (poll(p, 4, -1) < 0) {
			if (errno == EINTR)
				continue;
			err_set_sys(err, ERR_INTERNAL, errno, "poll");
			abandon_call(&s);
			return -1;
		}
		if (p[0].revents && read_session(&s, &r, in_fd, &in_open, err) < 0)
			return -1;
		if (s.active && s.c.pid > 0) {
			feed_child(&s.c); /* also closes its stdin once 'e' came */
			if (p[2].revents && s.c.out >= 0)
				relay_output(&s, &s.c.out, FRAME_OUT);
			if (p[3].revents && s.c.err >= 0)
				relay_output(&s, &s.c.err, FRAME_ERR);
			if (s.failed == NULL && s.c.out < 0 && s.c.err < 0)
				finish_call(&s);
		}
		if (s.failed) {
			*err = s.failed;
			abandon_call(&s);
			return -1;
		}
	}
	abandon_call(&s);
	return 0;
}

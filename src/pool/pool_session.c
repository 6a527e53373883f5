/* pool_session.c — see pool_session.h. */
#include "pool/pool_session.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent_frame.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/fdio.h"
#include "base/log.h"
#include "base/proc.h"
#include "base/signals.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "kube/kube_api.h"
#include "kube/kube_stream.h"
#include "kube/kube_watch.h"
#include "pod/pod_names.h"

const char *const fn_session_command[] = {POD_AGENT_BINARY, "serve", POD_AGENT_WORK_DIR, NULL};

struct fn_session {
	char *sock_path;
	char *pod;
	int listen_fd;
	int wake[2];    /* written by close: the relay stops */
	int to_agent;   /* the write end of the exec's stdin pipe */
	int from_agent; /* the read end of the exec's stdout pipe */
	int agent_in;   /* the read end the stream's stdin thread reads */
	int agent_out;  /* the write end the stream writes stdout to; closed when it ends */
	struct kube_stream *stream;
	pthread_t stream_thread, relay_thread;
	struct kube_stream_result res;
	int stream_rc;
	struct err *stream_err;
	bool broken;
	unsigned calls;
};

static void *stream_main(void *arg)
{
	struct fn_session *s = arg;
	s->stream_rc = kube_stream_run(s->stream, &s->res, &s->stream_err);
	close(s->agent_out); /* the relay sees the end */
	s->agent_out = -1;
	return NULL;
}

/* --- The relay of one call ------------------------------------------------------------ */

struct call_relay {
	bool exit_seen; /* the pod's 'x' */
	bool in_end;    /* the shim's 'e' */
	bool out_of_step;
};

static int down_data(void *ud, char type, const char *data, size_t len)
{
	(void)type;
	(void)data;
	(void)len;
	struct call_relay *c = ud;
	if (c->exit_seen)
		c->out_of_step = true; /* nothing may follow a call's end */
	return 0;
}

static int down_end(void *ud, char type)
{
	struct call_relay *c = ud;
	if (c->exit_seen)
		c->out_of_step = true;
	if (type == FRAME_EXIT)
		c->exit_seen = true;
	return 0;
}

static int up_end(void *ud, char type)
{
	struct call_relay *c = ud;
	if (type == FRAME_IN_END)
		c->in_end = true;
	return 0;
}

/* Moves what can go from b to fd without blocking; false when fd failed. */
static bool flush_some(int fd, struct buf *b, bool sock)
{
	while (b->len > 0) {
		ssize_t n =
		        sock ? send(fd, b->data, b->len, MSG_NOSIGNAL) : write(fd, b->data, b->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n <= 0)
			return false;
		memmove(b->data, b->data + n, b->len - (size_t)n);
		b->len -= (size_t)n;
	}
	return true;
}

/* Reads what is there from fd into b; 0 at EOF, -1 on an error, else the count. */
static ssize_t fill(int fd, struct buf *b)
{
	char chunk[LIMIT_STDIN_CHUNK];
	ssize_t n = read(fd, chunk, sizeof(chunk));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return -2;
	if (n > 0)
		buf_append(b, chunk, (size_t)n, "session", NULL);
	return n;
}

/* Relays one connection's call. Returns true when it ended cleanly: the pod's 'x', every
 * byte delivered, and the shim's stdin complete ('e') before it closed. */
static bool relay_one(struct fn_session *s, int conn)
{
	cleanup_buf struct buf up, down;
	buf_init(&up, 0);
	buf_init(&down, 0);
	struct call_relay c = {0};
	struct frame_reader ur = {.on_end = up_end, .ud = &c};
	struct frame_reader dr = {.on_data = down_data, .on_end = down_end, .ud = &c};
	bool conn_eof = false;
	for (;;) {
		if (c.out_of_step)
			return false;
		if (c.exit_seen && down.len == 0 && conn_eof && up.len == 0)
			return c.in_end && frame_idle(&ur);
		if (conn_eof && !c.exit_seen && up.len == 0)
			return false; /* the shim left during its call */
		struct pollfd p[5] = {
		        {.fd = !conn_eof && up.len == 0 ? conn : -1, .events = POLLIN},
		        {.fd = up.len ? s->to_agent : -1, .events = POLLOUT},
		        {.fd = !c.exit_seen && down.len == 0 ? s->from_agent : -1,
		         .events = POLLIN},
		        {.fd = down.len ? conn : -1, .events = POLLOUT},
		        {.fd = s->wake[0], .events = POLLIN},
		};
		if (poll(p, 5, -1) < 0) {
			if (errno == EINTR)
				continue;
			return false;
		}
		if (p[4].revents)
			return false; /* closing in the middle of a call */
		if (p[0].revents) {
			size_t before = up.len;
			ssize_t n = fill(conn, &up);
			if (n == 0 || n == -1)
				conn_eof = true;
			else if (n > 0 &&
			         frame_feed(&ur, up.data + before, up.len - before, NULL) != 0)
				return false;
		}
		if (p[1].revents && !flush_some(s->to_agent, &up, false))
			return false;
		if (p[2].revents) {
			size_t before = down.len;
			ssize_t n = fill(s->from_agent, &down);
			if (n == 0 || n == -1)
				return false; /* the exec ended */
			if (n > 0 &&
			    frame_feed(&dr, down.data + before, down.len - before, NULL) != 0)
				return false;
		}
		if (p[3].revents && !flush_some(conn, &down, true))
			return false;
	}
}

static void *relay_main(void *arg)
{
	struct fn_session *s = arg;
	for (;;) {
		struct pollfd p[3] = {{.fd = s->listen_fd, .events = POLLIN},
		                      {.fd = s->wake[0], .events = POLLIN},
		                      {.fd = s->from_agent, .events = POLLIN}};
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			s->broken = true;
			break;
		}
		if (p[1].revents)
			break;
		if (p[2].revents) { /* between calls the pod says nothing: it ended */
			log_debug("session with pod %s: the exec ended", s->pod);
			s->broken = true;
			break;
		}
		if (!p[0].revents)
			continue;
		int conn = fd_accept(s->listen_fd, s->wake[0]);
		if (conn < 0 && (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED ||
		                 errno == ECANCELED))
			continue;
		if (conn < 0) { /* no descriptor for the call for 5 s: the session cannot serve */
			log_info("session with pod %s: cannot accept a call: %s; the session ends",
			         s->pod, strerror(errno));
			s->broken = true;
			/* the waiting shim's connection is reset now, not at the render's end */
			close(s->listen_fd);
			s->listen_fd = -1;
			break;
		}
		bool ok = relay_one(s, conn);
		close(conn);
		s->calls++;
		if (!ok) {
			log_debug("session with pod %s: call %u did not end cleanly", s->pod,
			          s->calls);
			s->broken = true;
			break;
		}
	}
	/* No more calls: the socket goes first, so that no shim connects to nothing. */
	unlink(s->sock_path);
	return NULL;
}

/* --- Open and close ----------------------------------------------------------------- */

static int listen_at(const char *path, struct err **err)
{
	int fd = fd_unix_socket(path, true, 4);
	if (fd < 0)
		return err_set_sys(err, ERR_IO, errno, "listen at %s", path);
	if (chmod(path, 0600) < 0) {
		int e = errno;
		close(fd);
		unlink(path);
		return err_set(err, ERR_IO, "chmod %s: %s", path, strerror(e));
	}
	return fd;
}

static void session_free(struct fn_session *s)
{
	int *fds[] = {&s->listen_fd,  &s->wake[0],  &s->wake[1],  &s->to_agent,
	              &s->from_agent, &s->agent_in, &s->agent_out};
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (*fds[i] >= 0)
			close(*fds[i]);
	kube_stream_free(s->stream);
	kube_stream_result_clear(&s->res);
	err_free(s->stream_err);
	free(s->sock_path);
	free(s->pod);
	free(s);
}

int fn_session_open(struct kube_config *cfg, const char *ns, const char *pod, const char *sock_path,
                    int64_t deadline_ms, atomic_int *cancel, struct fn_session **out,
                    struct err **err)
{
	struct fn_session *s = xcalloc(1, sizeof(*s));
	s->listen_fd = s->wake[0] = s->wake[1] = -1;
	s->to_agent = s->from_agent = s->agent_in = s->agent_out = -1;
	s->sock_path = xstrdup(sock_path);
	s->pod = xasprintf("%s/%s", ns, pod);
	int a[2], b[2];
	if (pipe2(s->wake, O_CLOEXEC) < 0 || pipe2(a, O_CLOEXEC) < 0) {
		err_set_sys(err, ERR_INTERNAL, errno, "pipe");
		session_free(s);
		return -1;
	}
	s->agent_in = a[0];
	s->to_agent = a[1];
	if (pipe2(b, O_CLOEXEC) < 0) {
		err_set_sys(err, ERR_INTERNAL, errno, "pipe");
		session_free(s);
		return -1;
	}
	s->from_agent = b[0];
	s->agent_out = b[1];
	fcntl(s->to_agent, F_SETFL, O_NONBLOCK);
	fcntl(s->from_agent, F_SETFL, O_NONBLOCK);
	cleanup_free char *path =
	        kube_api_pod_exec_path(ns, pod, POD_CONTAINER_NAME, fn_session_command);
	struct kube_stream_opts o = {.path = path,
	                             .in_fd = s->agent_in,
	                             .out_fd = s->agent_out,
	                             .err_fd = 2,
	                             .cancel = cancel,
	                             .deadline_ms = deadline_ms};
	if (kube_stream_open(cfg, &o, &s->stream, err) < 0) {
		session_free(s);
		return err_wrap(err, "session with pod %s/%s", ns, pod);
	}
	s->listen_fd = listen_at(sock_path, err);
	if (s->listen_fd < 0) {
		session_free(s);
		return -1;
	}
	if (signals_thread_start(&s->stream_thread, stream_main, s) != 0) {
		unlink(sock_path);
		session_free(s);
		return err_set(err, ERR_INTERNAL, "session with pod %s/%s: no thread", ns, pod);
	}
	if (signals_thread_start(&s->relay_thread, relay_main, s) != 0) {
		close(s->to_agent); /* the stream ends */
		s->to_agent = -1;
		pthread_join(s->stream_thread, NULL);
		unlink(sock_path);
		session_free(s);
		return err_set(err, ERR_INTERNAL, "session with pod %s/%s: no thread", ns, pod);
	}
	*out = s;
	return 0;
}

bool fn_session_close(struct fn_session *s, unsigned *calls)
{
	if (calls)
		*calls = 0;
	if (s == NULL)
		return false;
	char c = 1;
	while (write(s->wake[1], &c, 1) < 0 && errno == EINTR)
		;
	pthread_join(s->relay_thread, NULL);
	close(s->to_agent); /* `krmpod serve` sees its stdin end between calls, and exits */
	s->to_agent = -1;
	/* What the pod still sends (a call cut off mid-output) is read and dropped until the
	 * stream ends: unread, it would block the stream in its write, and serve in its own. */
	fcntl(s->from_agent, F_SETFL, 0);
	char sink[LIMIT_STDIN_CHUNK];
	ssize_t n;
	while ((n = read(s->from_agent, sink, sizeof(sink))) > 0 || (n < 0 && errno == EINTR))
		;
	pthread_join(s->stream_thread, NULL);
	if (calls)
		*calls = s->calls;
	bool clean = !s->broken && s->stream_rc == 0 && s->res.got_status && s->res.status_success;
	if (!clean)
		log_debug("session with pod %s ends %s after %u calls (%s%s%s)", s->pod,
		          "not clean", s->calls, s->stream_err ? s->stream_err->msg : "",
		          s->res.got_status ? s->res.status_reason : "",
		          s->res.got_status ? s->res.status_message : "");
	session_free(s);
	return clean;
}

/* --- Sessions with pods that are starting ------------------------------------------- */

/* Whether st says the pod will not start by itself. */
static bool will_not_start(const struct pod_state *st)
{
	if (st->deleted || st->cstate == CS_TERMINATED || strcmp(st->phase, "Failed") == 0)
		return true;
	if (st->cstate == CS_WAITING && st->c_reason[0] &&
	    strcmp(st->c_reason, "ContainerCreating") != 0)
		return true;
	return st->init_name[0] != '\0' && !st->init_done &&
	       (st->init_cstate == CS_TERMINATED ||
	        (st->init_cstate == CS_WAITING && st->init_reason[0] &&
	         strcmp(st->init_reason, "PodInitializing") != 0 &&
	         strcmp(st->init_reason, "ContainerCreating") != 0));
}

int fn_session_open_when_started(struct kube_config *cfg, const char *ns, const char *pod,
                                 const struct json *created, const char *sock_path,
                                 int64_t deadline_ms, atomic_int *stop, atomic_int *cancel,
                                 struct fn_session **out, struct err **err)
{
	struct pod_watch *w = NULL;
	if (pod_watch_start(cfg, ns, pod, POD_CONTAINER_NAME, created, &w, err) < 0)
		return -1;
	struct pod_state st = {0};
	int started = 0;
	while (started == 0 && !*stop && now_ms() < deadline_ms) {
		int64_t until = now_ms() + 200;
		if (pod_watch_wait(w, st.generation, until < deadline_ms ? until : deadline_ms,
		                   stop, &st, err) < 0) {
			pod_watch_stop(w);
			return -1;
		}
		if (st.started_event || st.cstate == CS_RUNNING)
			started = 1;
		else if (will_not_start(&st))
			started = -1;
	}
	pod_watch_stop(w);
	if (started <= 0 || *stop)
		return 1;
	return fn_session_open(cfg, ns, pod, sock_path, deadline_ms, cancel, out, err);
}

char *fn_session_none_path(const char *sock_path)
{
	return xasprintf("%s.none", sock_path);
}

bool fn_session_await(const char *sock_path, long janitor_pid, int64_t until, atomic_int *cancel)
{
	cleanup_free char *none = fn_session_none_path(sock_path);
	for (;;) {
		if (access(sock_path, F_OK) == 0)
			return true;
		if (access(none, F_OK) == 0 || *cancel || now_ms() >= until ||
		    (janitor_pid > 0 && !proc_running((pid_t)janitor_pid)))
			return false;
		sleep_ms(5, cancel);
	}
}

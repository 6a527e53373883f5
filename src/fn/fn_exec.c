/* fn_exec.c — see fn_exec.h. */
#include "fn/fn_exec.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/agent_frame.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/fdio.h"
#include "base/log.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "pod/pod_agent.h"

/* The call header: argv and the request's environment (-e); on the image's own entrypoint,
 * PID 1's command line, the env being in the pod spec already. */
static void write_header(const struct fn_request *req, struct buf *out)
{
	if (req->exec_pid1) {
		agent_call_header_write_pid1(NULL, out);
		return;
	}
	char **env = xcalloc(req->n_env + 1, sizeof(char *));
	for (size_t i = 0; i < req->n_env; i++)
		env[i] = xasprintf("%s=%s", req->env[i].name, req->env[i].value);
	agent_call_header_write(req->exec_argv, env, req->pooled, out);
	for (size_t i = 0; i < req->n_env; i++) {
		explicit_bzero(env[i], strlen(env[i]));
		free(env[i]);
	}
	free(env);
}

/* The call's stderr, on its way out: the last AGENT_TRAILER_MAX bytes are held back, so
 * that the trailer (agent.h) can be checked and never reaches the caller. */
struct err_tail {
	int fd;
	char held[2 * AGENT_TRAILER_MAX];
	size_t n;
	unsigned long long passed; /* bytes written through */
	unsigned long long fn_err; /* once the trailer checked: the function's stderr bytes */
	struct buf *head;          /* if not NULL: the first bytes that arrived (its limit) */
};

static int tail_sink(void *ud, const char *data, size_t len, struct err **err)
{
	struct err_tail *t = ud;
	if (t->head && t->head->len < t->head->limit) {
		size_t take = t->head->limit - t->head->len;
		buf_append(t->head, data, take < len ? take : len, "stderr", NULL);
	}
	while (len > 0) {
		bytes_fill(t->held, &t->n, sizeof(t->held), &data, &len);
		if (t->n > AGENT_TRAILER_MAX) { /* keep the last AGENT_TRAILER_MAX bytes */
			size_t out = t->n - AGENT_TRAILER_MAX;
			if (fd_write_all(t->fd, t->held, out, "stderr", err) < 0)
				return -1;
			memmove(t->held, t->held + out, AGENT_TRAILER_MAX);
			t->n = AGENT_TRAILER_MAX;
			t->passed += out;
		}
	}
	return 0;
}

/* At the end: the trailer must be there and its counts must be what arrived; the held
 * bytes before it go out. */
static int check_trailer(struct fn_pod *p, struct err_tail *t, const struct kube_stream_result *res,
                         struct err **err)
{
	size_t tlen = 0;
	unsigned long long out = 0, errb = 0;
	int code = 0;
	bool ok = agent_trailer_parse(t->held, t->n, &tlen, &out, &errb, &code) == 0;
	size_t before = ok ? t->n - tlen : t->n;
	if (fd_write_all(t->fd, t->held, before, "stderr", err) < 0)
		return -1;
	if (ok && out == res->bytes_out && errb == t->passed + before) {
		t->fn_err = errb;
		return 0;
	}
	if (!ok && res->got_status && !res->status_success && res->exit_code == 137)
		return err_set(
		        err, ERR_POD,
		        "function %s: pod %s/%s: the call was killed (SIGKILL, exit code 137): "
		        "%smost likely by the out-of-memory killer at the pod's memory limit "
		        "(KRMPOD_MEMORY_LIMIT=%s)",
		        fn_pod_request(p)->image, fn_pod_namespace(p), fn_pod_name(p),
		        fn_pod_request(p)->exec_pid1
		                ? "its container's PID 1, the function's own process, ended (an "
		                  "entrypoint that does not wait for its stdin takes the call with "
		                  "it), or "
		                : "",
		        fn_pod_settings(p)->memory_limit);
	if (!ok && res->got_status && !res->status_success && res->exit_code > 0)
		return err_set(err, ERR_POD,
		               "function %s: pod %s/%s: krmpod call ended with code %d before the "
		               "function's end (its message is above)",
		               fn_pod_request(p)->image, fn_pod_namespace(p), fn_pod_name(p),
		               res->exit_code);
	if (!ok)
		return err_set(
		        err, ERR_NET,
		        "function %s: pod %s/%s: the exec stream ended without the call's "
		        "end (after %llu bytes of stdout, %llu of stderr): the function's "
		        "output is incomplete (the API server closed the stream early), so it "
		        "is not used",
		        fn_pod_request(p)->image, fn_pod_namespace(p), fn_pod_name(p),
		        (unsigned long long)res->bytes_out, t->passed + before);
	return err_set(err, ERR_NET,
	               "function %s: pod %s/%s: the function wrote %llu bytes of stdout and %llu "
	               "of stderr, the exec stream delivered %llu and %llu: its output is "
	               "incomplete, so it is not used",
	               fn_pod_request(p)->image, fn_pod_namespace(p), fn_pod_name(p), out, errb,
	               (unsigned long long)res->bytes_out, t->passed + before);
}

/* The exit code the Status says, or an error naming what the exec got instead. */
static int exit_status(struct fn_pod *p, const struct kube_stream_result *res, int *exit_code,
                       struct err **err)
{
	if (res->got_status && res->status_success) {
		*exit_code = 0;
		return 0;
	}
	if (res->got_status && res->exit_code >= 0) {
		*exit_code = res->exit_code;
		if (*exit_code == 137)
			log_warn("function %s in pod %s/%s was killed (SIGKILL, exit code 137): "
			         "most "
			         "likely by the out-of-memory killer at the pod's memory limit "
			         "(KRMPOD_MEMORY_LIMIT=%s)",
			         fn_pod_request(p)->image, fn_pod_namespace(p), fn_pod_name(p),
			         fn_pod_settings(p)->memory_limit);
		return 0;
	}
	return err_set(err, ERR_API,
	               "function %s: pod %s/%s: the exec of krmpod call ended without an exit "
	               "code (%s%s%s)",
	               fn_pod_request(p)->image, fn_pod_namespace(p), fn_pod_name(p),
	               res->got_status ? res->status_reason : "no status",
	               res->got_status ? ": " : "", res->got_status ? res->status_message : "");
}

/* --- The call through the render's session (pool_session.h) ------------------------------ */

struct session_call {
	struct fn_pod *p;
	const struct fn_io *io;
	struct err_tail *tail;
	struct kube_stream_result *res;
	char code[FRAME_EXIT_MAX + 1];
	size_t code_len;
	bool exit_seen;
	struct err *failed;
};

static int call_data(void *ud, char type, const char *data, size_t len)
{
	struct session_call *c = ud;
	if (type == FRAME_OUT) {
		if (fn_pod_check_output(c->p, c->res->bytes_out + len, false, &c->failed) < 0)
			return -1;
		c->res->bytes_out += len;
		return fd_write_all(c->io->out_fd, data, len, "stdout", &c->failed) < 0 ? -1 : 0;
	}
	if (type == FRAME_ERR) {
		c->res->bytes_err += len;
		return tail_sink(c->tail, data, len, &c->failed) < 0 ? -1 : 0;
	}
	if (type == FRAME_EXIT && c->code_len + len <= FRAME_EXIT_MAX) {
		memcpy(c->code + c->code_len, data, len);
		c->code_len += len;
		return 0;
	}
	return err_set(&c->failed, ERR_NET, "session: an unexpected frame '%c' from the pod", type);
}

static int call_end(void *ud, char type)
{
	struct session_call *c = ud;
	if (type != FRAME_EXIT)
		return 0;
	c->code[c->code_len] = '\0';
	char *end = NULL;
	long code = strtol(c->code, &end, 10);
	if (c->code_len == 0 || *end != '\0' || code < 0 || code > 255)
		return err_set(&c->failed, ERR_NET, "session: a call's end without an exit code");
	c->exit_seen = true;
	c->res->got_status = true;
	c->res->status_success = code == 0;
	c->res->exit_code = (int)code;
	return 0;
}

/* Queues stdin frames: at most one chunk of the function's stdin, or its end. A read error
 * fails the call, as on the attach and single-exec paths: taken as the end, it would hand
 * the function a cut input that it may well accept. */
static int queue_stdin(int in_fd, struct buf *q, bool *in_done, uint64_t *sent, struct err **err)
{
	char chunk[LIMIT_STDIN_CHUNK];
	ssize_t n = in_fd < 0 ? 0 : read(in_fd, chunk, sizeof(chunk));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n < 0)
		return err_set_sys(err, ERR_IO, errno, "read stdin");
	char head[FRAME_HEADER];
	if (n == 0) { /* EOF */
		frame_header(FRAME_IN_END, 0, head);
		buf_append(q, head, sizeof(head), "session", NULL);
		*in_done = true;
		return 0;
	}
	frame_header(FRAME_IN, (size_t)n, head);
	buf_append(q, head, sizeof(head), "session", NULL);
	buf_append(q, chunk, (size_t)n, "session", NULL);
	*sent += (uint64_t)n;
	return 0;
}

/* Connects to the session's socket: -1 when nobody listens (the caller execs instead). */
static int session_connect(const char *path)
{
	int fd = fd_unix_socket(path, false, 0);
	if (fd >= 0)
		fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

/* Sends what it can of the queued frames q to the session. */
static int session_send(struct session_call *c, int fd, struct buf *q, struct err **err)
{
	struct fn_pod *p = c->p;
	ssize_t n = send(fd, q->data, q->len, MSG_NOSIGNAL);
	if (n < 0 && errno != EAGAIN && errno != EINTR)
		return err_set_sys(err, ERR_NET, errno,
		                   "function %s: pod %s/%s: the render's session is gone",
		                   fn_pod_request(p)->image, fn_pod_namespace(p), fn_pod_name(p));
	if (n > 0) {
		memmove(q->data, q->data + n, q->len - (size_t)n);
		q->len -= (size_t)n;
	}
	return 0;
}

/* Reads what the session has for the call and feeds it to r. */
static int session_read(struct session_call *c, int fd, struct frame_reader *r, struct err **err)
{
	struct fn_pod *p = c->p;
	char chunk[LIMIT_STDIN_CHUNK];
	ssize_t n = read(fd, chunk, sizeof(chunk));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0)
		return err_set(err, ERR_NET,
		               "function %s: pod %s/%s: the render's session ended before the "
		               "call's end (after %llu bytes of stdout): the output is incomplete, "
		               "so it is not used",
		               fn_pod_request(p)->image, fn_pod_namespace(p), fn_pod_name(p),
		               (unsigned long long)c->res->bytes_out);
	if (frame_feed(r, chunk, (size_t)n, err) != 0) {
		if (c->failed) {
			err_free(*err);
			*err = c->failed;
			c->failed = NULL;
		}
		return -1;
	}
	return 0;
}

/* The call over a connected session: frames out (the header, then stdin), frames in
 * until the call's end; then the rest of stdin's frames, so the session stays in step. */
static int session_pump(struct session_call *c, int fd, const struct buf *header, int in_fd,
                        struct err **err)
{
	struct fn_pod *p = c->p;
	cleanup_buf struct buf q;
	buf_init(&q, 0);
	char head[FRAME_HEADER];
	frame_header(FRAME_IN, header->len, head);
	buf_append(&q, head, sizeof(head), "session", NULL);
	buf_append(&q, header->data, header->len, "session", NULL);
	bool in_done = false;
	struct frame_reader r = {.on_data = call_data, .on_end = call_end, .ud = c};
	while (!(c->exit_seen && in_done && q.len == 0)) {
		if (fn_pod_is_cancelled(p))
			return fn_pod_cancelled(p, "its call", err);
		int64_t left = fn_pod_deadline(p) - now_ms();
		if (left <= 0) { /* worded as for any stream past KRMPOD_TIMEOUT */
			err_set(err, ERR_TIMEOUT, "the render's session: deadline reached");
			return fn_output_stream_failed(p, err);
		}
		if (c->exit_seen && !in_done) { /* the function is done: its stdin ends */
			frame_header(FRAME_IN_END, 0, head);
			buf_append(&q, head, sizeof(head), "session", NULL);
			in_done = true;
		}
		bool want_in = !in_done && q.len == 0;
		struct pollfd pf[2] = {
		        {.fd = fd,
		         .events = (short)((c->exit_seen ? 0 : POLLIN) | (q.len ? POLLOUT : 0))},
		        {.fd = want_in ? in_fd : -1, .events = POLLIN},
		};
		if (want_in && in_fd < 0) {
			queue_stdin(-1, &q, &in_done, &c->res->bytes_in, err);
			continue;
		}
		if (poll(pf, 2, left < 50 ? (int)left : 50) < 0 && errno != EINTR)
			return err_set_sys(err, ERR_INTERNAL, errno, "poll");
		if (pf[1].revents && queue_stdin(in_fd, &q, &in_done, &c->res->bytes_in, err) < 0)
			return err_wrap(err, "function %s: pod %s/%s: the render's session",
			                fn_pod_request(p)->image, fn_pod_namespace(p),
			                fn_pod_name(p));
		if (pf[0].revents & POLLOUT && session_send(c, fd, &q, err) < 0)
			return -1;
		if (pf[0].revents & (POLLIN | POLLHUP | POLLERR) && !c->exit_seen &&
		    session_read(c, fd, &r, err) < 0)
			return -1;
	}
	return 0;
}

/* Returns 1 when nobody listens at the session's socket (the caller execs instead). */
static int session_call(struct fn_pod *p, const struct fn_io *io, const struct buf *header,
                        struct err_tail *tail, struct kube_stream_result *res, struct err **err)
{
	int fd = session_connect(fn_pod_session(p));
	if (fd < 0) {
		log_debug("no session at %s: %s; exec instead", fn_pod_session(p), strerror(errno));
		return 1;
	}
	fn_pod_mark_attached(p, now_ms());
	struct session_call c = {.p = p, .io = io, .tail = tail, .res = res};
	int in_fd = fn_pod_request(p)->want_stdin ? io->in_fd : -1;
	int rc = session_pump(&c, fd, header, in_fd, err);
	err_free(c.failed);
	close(fd);
	log_debug("session call: %llu bytes in, %llu out, %llu err",
	          (unsigned long long)res->bytes_in, (unsigned long long)res->bytes_out,
	          (unsigned long long)res->bytes_err);
	return rc;
}

/* The exec stream ended with neither the call's end nor an exit code (*err says so): no
 * Status, or one without an exit code (the exec was refused: the container no longer
 * runs). When the function's container itself ended meanwhile (the out-of-memory killer at
 * the pod's limit takes the holding process too; an eviction), that is the cause to report,
 * and OOMKilled gives exit code 137 as in attach mode. The pod's status shows it at the
 * kubelet's next relist: waited for at most FN_EXEC_END_WAIT_MS. Otherwise *err stays. */
static int blame_container(struct fn_pod *p, int *exit_code, struct err **err)
{
	struct pod_state st;
	cleanup_err struct err *we = NULL;
	int ended = fn_pod_wait_exit_within(p, FN_EXEC_END_WAIT_MS, &st, &we);
	log_debug("after the exec stream: the container %s%s%s",
	          ended == 0  ? "terminated: "
	          : ended > 0 ? "did not terminate"
	                      : "is unknown: ",
	          ended == 0 ? st.c_reason : "", ended < 0 ? we->msg : "");
	if (ended != 0) /* it runs on (or cannot be known): the stream is what failed */
		return -1;
	if (err != NULL) {
		err_free(*err);
		*err = NULL;
	}
	if (fn_pod_exit(p, &st, exit_code, err) < 0)
		return -1;
	*exit_code = 0;
	return err_set(err, ERR_POD,
	               "function %s: pod %s/%s: its container ended during the call (%s, exit "
	               "code %d): the function's output is incomplete, so it is not used",
	               fn_pod_request(p)->image, fn_pod_namespace(p), fn_pod_name(p),
	               st.c_reason[0] ? st.c_reason : "terminated", st.exit_code);
}

/* The end of a call, either way: the trailer, then the exit code. */
static int call_result(struct fn_pod *p, struct err_tail *tail, struct kube_stream_result *res,
                       int *exit_code, struct err **err)
{
	int rc = check_trailer(p, tail, res, err);
	if (rc == 0)
		rc = exit_status(p, res, exit_code, err);
	else if (res->exit_code == 137) /* killed: the exit code says so, as in attach mode */
		*exit_code = 137;
	else if (res->exit_code < 0) /* no exit code: whether the container is what ended */
		rc = blame_container(p, exit_code, err);
	return rc;
}

/* On the image's own entrypoint: the call ran PID 1's command line, environment and
 * working directory, which are what the entrypoint became when the call began. Whatever PID
 * 1 wrote before (its pod log: it waits on its stdin and writes nothing after) must then be
 * what the call's run wrote first on stderr: the same program, started the same way. An
 * entrypoint that wrote something and then exec'd another program (a shell wrapper's `echo;
 * exec`) did not run again in the call, and what it wrote is not in the render: the call
 * fails, naming what would give krmpod the entrypoint itself. */
static int check_pid1_log(struct fn_pod *p, const struct err_tail *t, struct err **err)
{
	const struct fn_request *req = fn_pod_request(p);
	cleanup_buf struct buf log;
	buf_init(&log, 0);
	size_t total = 0;
	/* The exec can run before the pod status says the container started (the kubelet's
	 * relist, up to a second later); until then the API server refuses the log with 400
	 * ("is waiting to start"): asked again for FN_PID1_LOG_WAIT_MS. */
	int64_t until = now_ms() + FN_PID1_LOG_WAIT_MS;
	for (;;) {
		if (fn_pod_read_log(p, LIMIT_PID1_LOG + 1, LIMIT_PID1_LOG + 1, &log, &total, err) ==
		    0)
			break;
		if ((*err)->code != ERR_API || (*err)->http_status != 400 || now_ms() >= until)
			return err_wrap(err, "function %s: pod %s/%s: the log of its own process",
			                req->image, fn_pod_namespace(p), fn_pod_name(p));
		log_debug("pod %s: its log is not readable yet: %s", fn_pod_name(p), (*err)->msg);
		err_free(*err);
		*err = NULL;
		if (sleep_ms(100, fn_pod_cancel_flag(p)) != 0)
			return fn_pod_cancelled(p, "reading the log of the function's own process",
			                        err);
	}
	size_t have = t->head->len < t->fn_err ? t->head->len : (size_t)t->fn_err;
	log_debug("pod %s: its own process wrote %zu bytes before the call; the call's stderr "
	          "began with %zu",
	          fn_pod_name(p), total, have);
	if (total <= LIMIT_PID1_LOG && log.len <= have &&
	    (log.len == 0 || memcmp(log.data, t->head->data, log.len) == 0))
		return 0;
	return err_set(err, ERR_POD,
	               "function %s: pod %s/%s: the function's own process (PID 1, started from "
	               "its image's entrypoint) wrote %zu bytes%s before krmpod's call that the "
	               "call's run did not write first on its stderr (an entrypoint that wrote "
	               "them and then ran another program, or output that differs from run to "
	               "run), so the output cannot be proven complete: record the image's "
	               "entrypoint in an admin catalog (docs/catalogs.md, \"Recorded "
	               "entrypoint\") or give the sidecar read access to its registry "
	               "(KRMPOD_REGISTRY_AUTH, KRMPOD_REGISTRY_MIRRORS)",
	               req->image, fn_pod_namespace(p), fn_pod_name(p), total,
	               total > LIMIT_PID1_LOG ? " (more than can be checked)" : "");
}

/* call_result, then the check of PID 1's log on the image's own entrypoint, when the run
 * succeeded: a run that failed fails the render anyway, and its own message (a function's
 * error, krmpod call's "cannot enter" or "cannot run") is the one to read, not that the
 * early bytes differ. */
static int call_result_checked(struct fn_pod *p, struct err_tail *tail,
                               struct kube_stream_result *res, int *exit_code, struct err **err)
{
	int rc = call_result(p, tail, res, exit_code, err);
	if (rc == 0 && *exit_code == 0 && tail->head && check_pid1_log(p, tail, err) < 0)
		return -1;
	return rc;
}

int fn_exec_call(struct fn_pod *p, const struct fn_io *io, int *exit_code, struct err **err)
{
	const struct fn_request *req = fn_pod_request(p);
	cleanup_buf struct buf header;
	buf_init(&header, 0);
	write_header(req, &header);
	cleanup_buf struct buf head;
	buf_init(&head, LIMIT_PID1_LOG);
	struct buf *headp = req->exec_pid1 ? &head : NULL;
	if (fn_pod_session(p)) {
		struct err_tail tail = {.fd = io->err_fd, .head = headp};
		struct kube_stream_result res = {.exit_code = -1};
		int rc = session_call(p, io, &header, &tail, &res, err);
		if (rc != 1) {
			explicit_bzero(header.data, header.len);
			if (rc < 0) {
				fd_write_all(io->err_fd, tail.held, tail.n, "stderr", NULL);
				return -1;
			}
			return call_result_checked(p, &tail, &res, exit_code, err);
		}
	}
	/* Without -i the function's stdin is empty, as with docker: the header, then EOF. */
	cleanup_close int null_fd = req->want_stdin ? -1 : open("/dev/null", O_RDONLY | O_CLOEXEC);
	struct err_tail tail = {.fd = io->err_fd, .head = headp};
	struct kube_stream_opts o = {
	        .in_fd = req->want_stdin ? io->in_fd : null_fd,
	        .in_prefix = header.data,
	        .in_prefix_len = header.len,
	        .out_fd = io->out_fd,
	        .out_limit = (uint64_t)fn_pod_settings(p)->max_output,
	        .out_limit_name = "KRMPOD_MAX_OUTPUT",
	        .err_fd = io->err_fd,
	        .err_sink = tail_sink,
	        .err_sink_ud = &tail,
	};
	struct kube_stream *stream = NULL;
	int rc = fn_pod_exec(p, pod_agent_call_command, &o, &stream, err);
	if (rc < 0) {
		explicit_bzero(header.data, header.len);
		return fn_pod_is_cancelled(p) ? fn_pod_cancelled(p, NULL, err)
		                              : err_wrap(err, "exec in pod %s/%s",
		                                         fn_pod_namespace(p), fn_pod_name(p));
	}
	fn_pod_mark_attached(p, now_ms());
	struct kube_stream_result res = {0};
	rc = kube_stream_run(stream, &res, err);
	kube_stream_free(stream); /* the stdin thread, which reads the header, is gone */
	explicit_bzero(header.data, header.len);
	log_debug("exec: %llu bytes in, %llu out, %llu err", (unsigned long long)res.bytes_in,
	          (unsigned long long)res.bytes_out, (unsigned long long)res.bytes_err);
	if (rc < 0) {
		fd_write_all(io->err_fd, tail.held, tail.n, "stderr", NULL);
		rc = fn_output_stream_failed(p, err);
	} else {
		rc = call_result_checked(p, &tail, &res, exit_code, err);
	}
	kube_stream_result_clear(&res);
	return rc;
}

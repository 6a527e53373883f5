/* fn_exec.c — see fn_exec.h. */
#include "fn/fn_exec.h"

#include <fcntl.h>
#include <string.h>

#include "agent/agent.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/fdio.h"
#include "base/log.h"
#include "base/xalloc.h"
#include "pod/pod_agent.h"

/* The call header: argv and the request's environment (-e). */
static void write_header(const struct fn_request *req, struct buf *out)
{
	char **env = xcalloc(req->n_env + 1, sizeof(char *));
	for (size_t i = 0; i < req->n_env; i++)
		env[i] = xasprintf("%s=%s", req->env[i].name, req->env[i].value);
	agent_call_header_write(req->exec_argv, env, out);
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
};

static int tail_sink(void *ud, const char *data, size_t len, struct err **err)
{
	struct err_tail *t = ud;
	while (len > 0) {
		size_t take = sizeof(t->held) - t->n;
		if (take > len)
			take = len;
		memcpy(t->held + t->n, data, take);
		t->n += take;
		data += take;
		len -= take;
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
	if (ok && out == res->bytes_out && errb == t->passed + before)
		return 0;
	if (!ok && res->got_status && !res->status_success && res->exit_code == 137)
		return err_set(
		        err, ERR_POD,
		        "function %s: pod %s/%s: the call was killed (SIGKILL, exit code 137): "
		        "most likely by the out-of-memory killer at the pod's memory limit "
		        "(KRMPOD_MEMORY_LIMIT=%s)",
		        fn_pod_request(p)->image, fn_pod_namespace(p), fn_pod_name(p),
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

int fn_exec_call(struct fn_pod *p, const struct fn_io *io, int *exit_code, struct err **err)
{
	const struct fn_request *req = fn_pod_request(p);
	cleanup_buf struct buf header;
	buf_init(&header, 0);
	write_header(req, &header);
	/* Without -i the function's stdin is empty, as with docker: the header, then EOF. */
	cleanup_close int null_fd = req->want_stdin ? -1 : open("/dev/null", O_RDONLY | O_CLOEXEC);
	struct err_tail tail = {.fd = io->err_fd};
	struct kube_stream_opts o = {
	        .in_fd = req->want_stdin ? io->in_fd : null_fd,
	        .in_prefix = header.data,
	        .in_prefix_len = header.len,
	        .out_fd = io->out_fd,
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
		rc = check_trailer(p, &tail, &res, err);
		if (rc == 0)
			rc = exit_status(p, &res, exit_code, err);
		else if (res.exit_code ==
		         137) /* killed: the exit code says so, as in attach mode */
			*exit_code = 137;
	}
	kube_stream_result_clear(&res);
	return rc;
}

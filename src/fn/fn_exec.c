/* fn_exec.c — see fn_exec.h. */
#include "fn/fn_exec.h"

#include <fcntl.h>
#include <string.h>

#include "agent/agent.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/clock.h"
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
	struct kube_stream_opts o = {
	        .in_fd = req->want_stdin ? io->in_fd : null_fd,
	        .in_prefix = header.data,
	        .in_prefix_len = header.len,
	        .out_fd = io->out_fd,
	        .err_fd = io->err_fd,
	};
	struct kube_stream *stream = NULL;
	int rc = fn_pod_exec(p, pod_agent_call_command, &o, &stream, err);
	explicit_bzero(header.data, header.len);
	if (rc < 0)
		return fn_pod_is_cancelled(p) ? fn_pod_cancelled(p, NULL, err)
		                              : err_wrap(err, "exec in pod %s/%s",
		                                         fn_pod_namespace(p), fn_pod_name(p));
	fn_pod_mark_attached(p, now_ms());
	struct kube_stream_result res = {0};
	rc = kube_stream_run(stream, &res, err);
	kube_stream_free(stream);
	log_debug("exec: %llu bytes in, %llu out, %llu err", (unsigned long long)res.bytes_in,
	          (unsigned long long)res.bytes_out, (unsigned long long)res.bytes_err);
	if (rc < 0)
		rc = fn_output_stream_failed(p, err);
	else
		rc = exit_status(p, &res, exit_code, err);
	kube_stream_result_clear(&res);
	return rc;
}

/* fn_run.c — see fn_run.h and docs/internals/pod-lifecycle.md. */
#include "fn/fn_run.h"

#include "base/cleanup.h"
#include "fn/fn_exec.h"
#include "fn/fn_mounts.h"
#include "fn/fn_pod.h"
#include "handoff/markers.h"

/* Exec mode: the pod holds; the call's exec stream carries the exit code. */
static int run_exec(struct fn_pod *p, const struct pod_state *st, const struct fn_io *io,
                    int *exit_code, struct err **err)
{
	/* Its container ended before the call: OOMKilled is the function's limit, as in attach
	 * mode (exit code 137); anything else is krmpod's own failure. */
	if (st->cstate == CS_TERMINATED && fn_pod_exit(p, st, exit_code, err) < 0)
		return -1;
	if (st->cstate == CS_TERMINATED)
		return err_set(
		        err, ERR_API,
		        "function %s: pod %s/%s: its container (krmpod hold) ended with code "
		        "%d before the call: %s",
		        fn_pod_request(p)->image, fn_pod_namespace(p), fn_pod_name(p),
		        st->exit_code, st->c_reason[0] ? st->c_reason : "no reason given");
	if (fn_exec_call(p, io, exit_code, err) < 0)
		return -1;
	fn_pod_mark_done(p);
	return 0;
}

/* Everything after the pod handle exists: the pod's life up to its exit code. */
static int run_in_pod(struct fn_pod *p, const struct mount_plan *plan, const struct fn_io *io,
                      int *exit_code, struct err **err)
{
	if (fn_pod_acquire(p, err) < 0)
		return -1;
	if (plan && fn_mounts_deliver(p, plan, io->err_fd, err) < 0)
		return -1;
	struct pod_state st = {0};
	if (!fn_pod_is_warm(p) && fn_pod_wait_started(p, &st, err) < 0)
		return -1;
	if (fn_pod_request(p)->exec_argv)
		return run_exec(p, &st, io, exit_code, err);
	int rc = st.cstate == CS_TERMINATED ? fn_output_from_log(p, &st, io, err)
	                                    : fn_output_stream(p, &st, io, err);
	if (rc < 0)
		return -1;
	fn_pod_mark_done(p);
	return fn_pod_exit(p, &st, exit_code, err);
}

/* The run, from the mounts' check to the pod's deletion. */
static int run(struct kube_config *cfg, const struct settings *s, const struct fn_request *req,
               const struct fn_io *io, int *exit_code, struct err **err)
{
	/* Mounts are checked and measured before any pod exists. */
	cleanup_mount_plan struct mount_plan *plan = NULL;
	if (fn_mounts_prepare(req, s, &plan, err) < 0)
		return -1;
	struct fn_pod *p = NULL;
	if (fn_pod_open(cfg, s, req, io->cancel, &p, err) < 0)
		return -1;
	if (*io->cancel) /* signalled before anything exists: make nothing */
		return fn_pod_close(p, fn_pod_cancelled(p, NULL, err), *exit_code, err);
	int rc = run_in_pod(p, plan, io, exit_code, err);
	return fn_pod_close(p, rc, *exit_code, err);
}

int fn_run(struct kube_config *cfg, const struct settings *s, const struct fn_request *req,
           const struct fn_io *io, int *exit_code, struct err **err)
{
	*exit_code = -1;
	/* Under generate: a marker names this run's function (and pod) until it has ended, in
	 * case this process dies without a word (markers.h). */
	if (s->running_dir)
		shim_marker_write(s->running_dir, req->image, NULL, NULL);
	int rc = run(cfg, s, req, io, exit_code, err);
	if (s->running_dir)
		shim_marker_remove(s->running_dir);
	return rc;
}

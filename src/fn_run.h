/* fn_run.h — the pod lifecycle of one function (docs/internals/pod-lifecycle.md):
 *
 *   create → watch until the container runs → attach → recover output written before the
 *   attach from the pod log → stream → wait for termination → exit code → delete.
 *
 * The pod is deleted on every path that created it: success, function failure, errors,
 * timeouts and cancellation (a signal), with a short deadline of its own.
 *
 * Fails fast, naming the image, the pod, the cluster's reason and message, on
 * ErrImagePull (after a short grace) / ImagePullBackOff, InvalidImageName,
 * CreateContainerConfigError, ErrImageNeverPull, a pod that never starts within the start
 * timeout (Unschedulable included), DeadlineExceeded and OOMKilled.
 */
#ifndef KRMPOD_FN_RUN_H
#define KRMPOD_FN_RUN_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "fn_request.h"
#include "kubeconfig.h"
#include "settings.h"

struct fn_io {
	int in_fd, out_fd, err_fd;
	/* Set to a signal number by the front-end's handler: the run stops, deletes its pod
	 * and fails with ERR_SIGNAL. */
	volatile sig_atomic_t *cancel;
};

/* Runs req as a pod in namespace ns. Returns 0 when the function ran to completion, with
 * *exit_code its exit status (which may be non-zero: that is the function's own failure,
 * already reported on its stderr). Returns -1 with *err for everything else; *exit_code is
 * then the status the front-end should use if the failure has a natural one (137 for
 * OOMKilled), else -1. */
int fn_run(struct kube_config *cfg, const struct settings *s, const char *ns,
           const struct fn_request *req, const struct fn_io *io, int *exit_code, struct err **err);

/* Returns the length of the longest suffix of `log` that is also a prefix of `attached`
 * (KMP, O(log_len + attached_len)). Used to cut, from a log snapshot taken after the attach
 * began, the part that the attach delivers too. */
size_t fn_run_log_overlap(const char *log, size_t log_len, const char *attached,
                          size_t attached_len);

/* For a function that ran without stdin (docker run without -i) and has ended: the length
 * of the start of its complete pod `log` that the attach did not deliver. The log is that
 * part followed by exactly the `attached` bytes the attach delivered (stdout and stderr),
 * whose first `prefix_len` bytes are in `prefix`; when the log does not end that way (cut
 * at LIMIT_POD_LOG) the prefix's first occurrence in it marks the end of the part. Returns
 * -1 when the two cannot be lined up. */
long long fn_run_preattach_len(const char *log, size_t log_len, uint64_t attached,
                               const char *prefix, size_t prefix_len);

#endif

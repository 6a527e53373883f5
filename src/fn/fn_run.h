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
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "config/fn_request.h"
#include "config/settings.h"
#include "kube/kubeconfig.h"

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

/* Lines up the pod log of a container that has ended with what the attach delivered
 * (`attached` bytes of stdout and stderr, the first `prefix_len` of them in `prefix`). The
 * log holds what the container wrote before the attach began, then everything it wrote
 * after. Only its first head_len bytes are at hand (`head`), and its length, log_len. Sets
 * *pre to the length of that first part and *missing to the bytes after it that the attach
 * did not deliver (its stream ended early). `cut` says the log was read only up to log_len
 * (more may follow). Returns 0, or -1 when they cannot be lined up: the log is
 * shorter than what was attached (the kubelet rotated it), or the start of the attached
 * output is not in it (stdout and stderr interleaved in another order). */
int fn_run_log_split(const char *head, size_t head_len, size_t log_len, bool cut, uint64_t attached,
                     const char *prefix, size_t prefix_len, size_t *pre, size_t *missing);

#endif

/* fn_run.h — running one function as a pod, the story of one call
 * (docs/internals/pod-lifecycle.md):
 *
 *   check the mounts → get a pod (prestarted or new) → deliver the mounts → wait until it
 *   runs → attach and stream (or read the log of a function that ended first) → wait for
 *   the exit → the exit code → delete the pod.
 *
 * The pod is deleted on every path that got one: success, function failure, errors,
 * timeouts and cancellation (a signal), with a short deadline of its own (fn_pod.h).
 *
 * Fails fast, naming the image, the pod, the cluster's reason and message, on
 * ErrImagePull (after a short grace) / ImagePullBackOff, InvalidImageName,
 * CreateContainerConfigError, ErrImageNeverPull, a pod that never starts within the start
 * timeout (Unschedulable included), DeadlineExceeded and OOMKilled.
 */
#ifndef KRMPOD_FN_RUN_H
#define KRMPOD_FN_RUN_H

#include "base/err.h"
#include "config/kubeconfig.h"
#include "config/request.h"
#include "config/settings.h"
#include "fn/fn_output.h"

/* Runs req as a pod under s (resolved: fn_config.h) on cfg. Returns 0 when the function ran
 * to completion, with *exit_code its exit status (which may be non-zero: that is the
 * function's own failure, already reported on its stderr). Returns -1 with *err for
 * everything else; *exit_code is then the status the front-end should use if the failure
 * has a natural one (137 for OOMKilled), else -1. */
int fn_run(struct kube_config *cfg, const struct settings *s, const struct fn_request *req,
           const struct fn_io *io, int *exit_code, struct err **err);

#endif

/* fn_mounts.h — a function's bind mounts in its pod's lifecycle (docs/levels.md, "Level 2:
 * mounts"; docs/internals/pod-lifecycle.md):
 *
 *   before the pod is created: fn_mounts_prepare() checks the settings and the sources and
 *   measures them (mounts.h), so that a refused or oversized mount never costs a pod;
 *
 *   after: fn_mounts_deliver() waits for the pod's `mounts` init container to run, attaches
 *   to its stdin (one WebSocket, like the function's own attach), streams the tar from a
 *   writer thread, and waits until the container has unpacked everything and exited 0. The
 *   helper's stderr reaches the user's stderr. Then the function container starts and
 *   fn_run attaches to it as usual. All waits go through fn_pod_wait().
 */
#ifndef KRMPOD_FN_MOUNTS_H
#define KRMPOD_FN_MOUNTS_H

#include <signal.h>
#include <stdint.h>

#include "base/err.h"
#include "config/request.h"
#include "config/settings.h"
#include "fn/fn_pod.h"
#include "mounts/mounts.h"

/* When req has bind mounts: fails with ERR_CONFIG naming KRMPOD_HELPER_IMAGE when it is not
 * set, then builds the plan against the working directory (the kustomization directory
 * kustomize runs the shim in) and s->mount_max_bytes. *out is NULL when there is nothing to
 * send (no mounts, or tmpfs only). */
int fn_mounts_prepare(const struct fn_request *req, const struct settings *s,
                      struct mount_plan **out, struct err **err);

/* Delivers plan into the pod of p as described above; the helper's stderr goes to err_fd.
 * Fails (the caller deletes the pod) with ERR_POD when the helper cannot start (naming
 * KRMPOD_HELPER_IMAGE and the cluster's reason) or exits non-zero (with its message),
 * ERR_IO when a file changed while being sent, ERR_TIMEOUT, ERR_SIGNAL ("while delivering
 * its mounts"), ERR_NET / ERR_API for a failed attach. The time spent sending moves the
 * pod's start deadline later. */
int fn_mounts_deliver(struct fn_pod *p, const struct mount_plan *plan, int err_fd,
                      struct err **err);

#endif

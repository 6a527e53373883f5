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
 *   fn_run attaches to it as usual.
 */
#ifndef KRMPOD_FN_MOUNTS_H
#define KRMPOD_FN_MOUNTS_H

#include <signal.h>
#include <stdint.h>

#include "base/err.h"
#include "config/fn_request.h"
#include "config/settings.h"
#include "kube/kube_watch.h"
#include "kube/kubeconfig.h"
#include "mounts/mounts.h"

/* When req has bind mounts: fails with ERR_CONFIG naming KRMPOD_HELPER_IMAGE when it is not
 * set, then builds the plan against the working directory (the kustomization directory
 * kustomize runs the shim in) and s->mount_max_bytes. *out is NULL when there is nothing to
 * send (no mounts, or tmpfs only). */
int fn_mounts_prepare(const struct fn_request *req, const struct settings *s,
                      struct mount_plan **out, struct err **err);

/* The pod the mounts go into. Everything is borrowed. */
struct fn_mounts_pod {
	struct kube_config *cfg;
	const char *ns, *pod;
	const char *image;        /* the function's, for messages */
	const char *helper_image; /* KRMPOD_HELPER_IMAGE, for messages */
	struct pod_watch *watch;  /* the pod's watch (fn_run's) */
	volatile sig_atomic_t *cancel;
	int err_fd;             /* where the helper's stderr goes */
	int64_t deadline;       /* overall deadline (now_ms clock) */
	int64_t start_deadline; /* for the helper container to start (KRMPOD_START_TIMEOUT) */
};

struct fn_mounts_result {
	unsigned stream_requests; /* WebSocket connections made (for the request count) */
	int64_t transfer_ms;      /* from the attach to the helper's successful exit */
	uint64_t tar_bytes;       /* archive bytes sent */
};

/* Delivers plan into p's pod as described above. Fails (the caller deletes the pod) with
 * ERR_POD when the helper cannot start (naming KRMPOD_HELPER_IMAGE and the cluster's
 * reason) or exits non-zero (with its message), ERR_IO when a file changed while being sent,
 * ERR_TIMEOUT / ERR_SIGNAL like fn_run, ERR_NET / ERR_API for a failed attach. *res is
 * filled in every case. */
int fn_mounts_deliver(const struct fn_mounts_pod *p, const struct mount_plan *plan,
                      struct fn_mounts_result *res, struct err **err);

#endif

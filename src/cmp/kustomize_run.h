/* kustomize_run.h — running kustomize for `krmpod generate`, under a deadline, with its
 * output captured and released only on success.
 *
 * kustomize runs with the given environment (the shim's private bin dir first on PATH) and
 * the caller's stderr; its stdout is captured in memory (bounded by LIMIT_GENERATE_OUTPUT).
 *
 * Process groups (docs/internals/generate.md): when the caller leads its own process group
 * (as under Argo CD's CMP server, which SIGKILLs the leader and SIGTERMs the group at its
 * deadline), kustomize and every shim stay in that group, so that group SIGTERM reaches each
 * shim, which deletes its pod. Otherwise (a shell) kustomize gets a group of its own and a
 * signal to the caller is forwarded to it. The caller is made a child subreaper, so shims
 * orphaned by a dying kustomize are still waited for.
 *
 * Stop sequence (deadline or cancellation): SIGTERM to kustomize's group, up to
 * KUSTOMIZE_STOP_GRACE_MS for every descendant to exit (the shims delete their pods in that
 * time), then SIGKILL to whatever is left.
 */
#ifndef KRMPOD_KUSTOMIZE_RUN_H
#define KRMPOD_KUSTOMIZE_RUN_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"

#define KUSTOMIZE_STOP_GRACE_MS 4000

struct kustomize_opts {
	char *const *argv; /* argv[0] is looked up on envp's PATH */
	char *const *envp;
	int64_t deadline_ms;       /* now_ms() clock */
	const char *deadline_name; /* the setting to name when the deadline passes */
	atomic_int *cancel;        /* a signal number when the caller was signalled */
	pid_t keep[2];     /* children of the caller's that are not kustomize's (the prestart
	                  janitor, the stderr relay): never waited for; 0 for none */
	const char *dir;   /* kustomize's working directory (the shims inherit it); NULL: ours */
	size_t max_output; /* the most bytes of stdout (0: LIMIT_GENERATE_OUTPUT) */
	const char *max_output_name; /* the setting to name past it ("KRMPOD_..."), or NULL */
	int err_fd; /* kustomize's stderr (generate's cap, base/fd_cap.h); 0: ours */
};

/* Runs kustomize to completion. Returns 0 when it exited 0, with its stdout in *out.
 * Otherwise returns -1 with *err: kustomize failed (its exit status; its stderr was passed
 * through), was killed, the deadline passed (ERR_TIMEOUT), the caller was signalled
 * (ERR_SIGNAL), or the output passed its limit. *out is then emptied. */
int kustomize_run(const struct kustomize_opts *o, struct buf *out, struct err **err);

#endif

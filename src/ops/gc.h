/* gc.h — deleting function pods no shim will delete any more (`krmpod gc`): finished
 * for a while (a SIGKILLed shim's, or stopped by activeDeadlineSeconds), or past their
 * deadline; and the warm pool's (pool.h): idle past KRMPOD_WARM_POOL_TTL, leased past
 * their lease (the holder died), or beyond KRMPOD_WARM_POOL_SIZE idle ones per pool. Never
 * a running function, never a pod without krmpod.dev/function=true. Ages are judged on the
 * API server's clock (kube_client_server_time), never this machine's. */
#ifndef KRMPOD_GC_H
#define KRMPOD_GC_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/err.h"
#include "config/kubeconfig.h"
#include "config/settings.h"

#define FN_GC_DEFAULT_OLDER_THAN_MS 60000

struct fn_gc_opts {
	bool dry_run;          /* list, delete nothing */
	int64_t older_than_ms; /* finished for at least this long */
	FILE *out;             /* one line per pod, then a summary; NULL: the log, at info */
	atomic_int *cancel;    /* stops the requests */
};

struct fn_gc_result {
	unsigned deleted, kept, failed; /* deleted: or would be, with dry_run */
};

/* Sweeps the functions namespace of the settings in envp (fn_config.h) as described in
 * gc.c. Fails only when the pods cannot be listed; a pod that cannot be deleted is
 * counted in res->failed and said on out. */
int fn_gc(char *const *envp, const struct fn_gc_opts *o, struct fn_gc_result *res,
          struct err **err);

/* generate's sweep: fn_gc with the default --older-than, what it deletes said at info level,
 * at most once per interval_ms per cache directory (s->cache_dir: a file there records the
 * last sweep; one sidecar, one directory), with the settings and credentials generate
 * loaded already. Returns 1 when it swept, 0 when the last sweep is recent, -1 on failure
 * (the caller warns; a render does not fail for it). */
int fn_gc_periodic(const struct settings *s, struct kube_config *cfg, int64_t interval_ms,
                   atomic_int *cancel, struct fn_gc_result *res, struct err **err);

#endif

/* plugin_settings.h — the settings of the Argo CD plugin hooks (generate, init, discover), from
 * the sidecar's environment (README.md, "Settings"), read by the settings module (src/config/,
 * the only one that reads KRMPOD_* variables). Like settings.h, every variable is
 * validated and a bad value is an ERR_CONFIG error that names it. */
#ifndef KRMPOD_PLUGIN_SETTINGS_H
#define KRMPOD_PLUGIN_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

struct cmp_settings {
	/* The kustomize command line, NULL-terminated: KRMPOD_KUSTOMIZE split on blanks
	 * (default "kustomize"), then "build" unless the command is kubectl ("kubectl
	 * kustomize"), then --enable-alpha-plugins, --network when allow_network, the words of
	 * KRMPOD_KUSTOMIZE_FLAGS, and ".". */
	char **kustomize_argv;
	size_t kustomize_argc;
	bool is_kubectl;    /* the command is kubectl, not kustomize */
	bool allow_network; /* KRMPOD_ALLOW_NETWORK=true|false (default false) */
	int64_t timeout_ms; /* KRMPOD_GENERATE_TIMEOUT (default 45s) */
	/* KRMPOD_GENERATE_MAX_OUTPUT (default 90Mi, at most LIMIT_GENERATE_OUTPUT): the most
	 * bytes of manifests generate prints. Argo CD's repo-server takes at most 100 MiB from a
	 * plugin (its gRPC limit, ARGOCD_GRPC_MAX_SIZE_MB), and fails with its own error past
	 * it; krmpod fails first, naming both. */
	int64_t max_output;
	/* KRMPOD_GENERATE_MAX_STDERR (default 4Mi, at least FD_CAP_MIN): the most bytes of a
	 * render's stderr (kustomize's, every shim's) that reach Argo CD, which keeps a plugin's
	 * whole stderr in memory: the first and last half, the bytes between dropped and
	 * counted (base/fd_cap.h). Each function is capped first by KRMPOD_MAX_STDERR. */
	int64_t max_stderr;
	char *shim_dir;       /* KRMPOD_SHIM_DIR, or NULL: generate makes a private one */
	bool prestart;        /* KRMPOD_PRESTART=true|false (default true): see cmp/prestart.h */
	size_t prestart_max;  /* KRMPOD_PRESTART_MAX (default 8, 1..64): pods started ahead */
	bool log_level_given; /* KRMPOD_LOG_LEVEL is set (else generate hands its shims info) */
	/* KRMPOD_GC_INTERVAL (default 5m; 0: never): at most this often per sidecar, generate
	 * deletes function pods no shim will delete any more, as `krmpod gc` does (gc.h). */
	int64_t gc_interval_ms;
};

/* Reads the hooks' settings from envp (NAME=VALUE strings). On failure *s is cleared. */
int cmp_settings_load(struct cmp_settings *s, char *const *envp, struct err **err);
void cmp_settings_clear(struct cmp_settings *s);

#endif

/* settings.h — krmpod's settings from the environment (documented in README.md, "Settings").
 * This folder, src/config/, is the settings module: nothing else reads a KRMPOD_* variable.
 * Every variable is validated; a bad value is an ERR_CONFIG error naming the variable, its
 * value and the expected form. */
#ifndef KRMPOD_SETTINGS_H
#define KRMPOD_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "config/locations.h"

/* KRMPOD_IMAGE_POLICY: which images may run (docs/catalogs.md). */
enum image_policy {
	IMAGE_POLICY_ANY = 0,   /* any image (the default, today's behaviour) */
	IMAGE_POLICY_CATALOG,   /* only the images of the admin's catalogs */
	IMAGE_POLICY_ALLOWLIST, /* only images matching KRMPOD_IMAGE_ALLOWLIST */
};

struct label {
	char *key;
	char *value;
};

/* KRMPOD_MODE: how a function's streams reach it (docs/internals/exec-mode.md). */
enum fn_mode {
	FN_MODE_ATTACH = 0, /* the image's entrypoint runs; attach; the exit code from the status */
	FN_MODE_EXEC,       /* the pod holds; the function runs through pods/exec (krmpod call) */
	FN_MODE_AUTO,       /* exec when the image config can be read (and with a helper image),
	                     * attach otherwise: the default */
};

struct settings {
	char *namespace;          /* KRMPOD_NAMESPACE, or NULL: use the config's namespace */
	int64_t start_timeout_ms; /* KRMPOD_START_TIMEOUT (default 120s) */
	int64_t timeout_ms;       /* KRMPOD_TIMEOUT: whole function run (default 300s) */
	char *cpu_request;        /* KRMPOD_CPU_REQUEST (default 100m) */
	char *cpu_limit;          /* KRMPOD_CPU_LIMIT (default 1) */
	char *memory_request;     /* KRMPOD_MEMORY_REQUEST (default 64Mi) */
	char *memory_limit;       /* KRMPOD_MEMORY_LIMIT (default 512Mi) */
	struct label *labels;     /* KRMPOD_EXTRA_LABELS "k=v,k2=v2" */
	size_t n_labels;
	char *owner_pod; /* KRMPOD_OWNER_POD (downward API metadata.name) */
	char *owner_uid; /* KRMPOD_OWNER_UID (downward API metadata.uid) */
	/* KRMPOD_OWNER_NAMESPACE (downward API metadata.namespace), or NULL. Kubernetes resolves
	 * an ownerReference in the dependent's own namespace only: an owner in another namespace
	 * counts as missing and the garbage collector deletes the dependent at once. So the
	 * reference is added only when this is unset or equals the functions namespace. */
	char *owner_namespace;
	/* KRMPOD_ALLOW_NETWORK=true|false (default false): whether a function whose config asks
	 * for network (`docker run --network host`) may run, with the network-granted label. */
	bool allow_network;
	/* KRMPOD_POD_TEMPLATE: the name of a PodTemplate in the functions namespace, or (when it
	 * contains a '/') the path of a YAML file holding a PodTemplate or a pod template spec;
	 * NULL when unset. */
	char *pod_template;
	/* KRMPOD_HELPER_IMAGE: the image (krmpod's own, the sidecar image) of the init container
	 * that receives a function's mounts; NULL when unset (mounts then fail clearly). */
	char *helper_image;
	/* KRMPOD_NETWORK_GATE: how long a function pod waits for its NetworkPolicies to be in
	 * effect before the function starts (agent_gate.h; needs KRMPOD_HELPER_IMAGE); 0 (the
	 * default, and "0" or "off") starts the function at once. */
	int64_t net_gate_ms;
	/* KRMPOD_LEASE_RENEW (default 20s, at least 1s): how often a shim renews its lease on
	 * the pod it holds (pool_lease.h); a sweep takes a renewed pod whose lease went three such
	 * periods without renewal for one whose shim is gone. */
	int64_t lease_renew_ms;
	/* KRMPOD_NETWORK_GATE_DNS (default true): the gate of a pod without a network grant also
	 * requires the cluster DNS to be closed. false where the admin's policies open DNS to
	 * every pod of the namespace on purpose. */
	bool net_gate_dns;
	/* KRMPOD_MOUNT_MAX_BYTES (default 64Mi): cap on the bytes of one function's mounts. */
	int64_t mount_max_bytes;
	/* KRMPOD_MAX_OUTPUT: the most stdout one function may write (default 64 MiB, well below
	 * the sidecar's 512 Mi and Argo CD's 100 MiB for a whole render); more fails the call. */
	int64_t max_output;
	/* KRMPOD_MAX_STDERR: the most of one function's stderr (and the shim's own messages
	 * while it runs) that reaches kustomize's stderr (default 1 MiB): the first and the last
	 * half of it, with a line saying how much was dropped between (base/fd_cap.h). */
	int64_t max_stderr;
	/* Which resources came from KRMPOD_* variables (SETTINGS_SET_*): a PodTemplate's
	 * resources are defaults for the others. */
	unsigned resources_set;
	/* The loaded PodTemplate (pod_template.h): the document, owned, and its template part
	 * ({metadata, spec}) within it; NULL without KRMPOD_POD_TEMPLATE. */
	struct json *template_doc;
	const struct json *template;
	/* KRMPOD_MAX_CPU_LIMIT / KRMPOD_MAX_MEMORY_LIMIT: the most a function config may ask
	 * for with the krmpod.dev/cpu-limit and krmpod.dev/memory-limit annotations (default:
	 * the limits above, so nothing can be raised until the admin sets a maximum). */
	char *max_cpu_limit;
	char *max_memory_limit;
	/* KRMPOD_FN_OVERRIDES: a file `krmpod generate` writes with the per-function
	 * annotations it found (image TAB cpu TAB memory per line); NULL when unset. */
	char *fn_overrides;
	/* KRMPOD_PRESTART_DIR: where `krmpod generate` offers prestarted pods (handoff/offers.h);
	 * NULL when unset. */
	char *prestart_dir;
	/* KRMPOD_RUNNING_DIR: where a shim under `krmpod generate` keeps its marker while it runs
	 * (handoff/markers.h); NULL when unset. */
	char *running_dir;
	/* KRMPOD_CONTEXT: the kubeconfig context to use instead of current-context; NULL. */
	char *kube_context;
	/* KRMPOD_SERVICEACCOUNT_DIR: where the in-cluster token, ca.crt and namespace are
	 * (default /var/run/secrets/kubernetes.io/serviceaccount); NULL when unset. */
	char *serviceaccount_dir;
	/* Function catalogs and the image policy (docs/catalogs.md). */
	struct catalog_ref *trusted_catalogs; /* KRMPOD_TRUSTED_CATALOGS */
	size_t n_trusted_catalogs;
	struct catalog_ref *default_catalogs; /* KRMPOD_DEFAULT_CATALOGS */
	size_t n_default_catalogs;
	enum image_policy image_policy; /* KRMPOD_IMAGE_POLICY (default any) */
	char **image_allowlist;         /* KRMPOD_IMAGE_ALLOWLIST: patterns, '*' any run */
	size_t n_image_allowlist;
	bool require_digest; /* KRMPOD_REQUIRE_DIGEST: only images referenced by digest */
	char *registry_ca;   /* KRMPOD_REGISTRY_CA: a PEM bundle trusted besides the system's */
	char *registry_auth; /* KRMPOD_REGISTRY_AUTH: a dockerconfigjson with credentials */
	/* KRMPOD_IMAGE_PULL_SECRETS "name,name2": Secrets in the functions namespace (of type
	 * kubernetes.io/dockerconfigjson) every function pod pulls with, besides its
	 * PodTemplate's imagePullSecrets; DNS subdomain names, each once. */
	char **pull_secrets;
	size_t n_pull_secrets;
	char *cache_dir;   /* KRMPOD_CACHE_DIR (default $TMPDIR/krmpod-cache) */
	char *policy_file; /* KRMPOD_POLICY_FILE: the policy generate resolved for its shims */
	/* KRMPOD_SIGNATURE_POLICY: the path of the admin's signature policy (sign/sig_policy.h):
	 * which images must be signed by which keys; NULL: no signature is required. */
	char *signature_policy;
	/* KRMPOD_MODE=auto|attach|exec (default auto). exec needs KRMPOD_HELPER_IMAGE; under
	 * exec and auto a function whose image config cannot be read from its registry runs in
	 * attach mode; auto without KRMPOD_HELPER_IMAGE runs everything in attach mode. */
	enum fn_mode mode;
	/* KRMPOD_ATTACH_UNVERIFIED=deny|allow (default deny): whether attach mode may use output
	 * it cannot prove complete (bytes only the pod log has, where stdout and stderr are one
	 * stream; a log that does not line up with the attach; one too long to check). deny
	 * fails the call naming the function, the reason and the settings for exec mode. */
	bool attach_unverified;
	/* KRMPOD_REGISTRY_MIRRORS "registry=host[:port],...": where a registry's API is read
	 * instead (image configs and OCI catalogs), for air-gapped clusters and tests. */
	struct label *registry_mirrors;
	size_t n_registry_mirrors;
	/* The warm pool (docs/internals/warm-pool.md), KRMPOD_WARM_POOL=true (default false;
	 * needs KRMPOD_MODE=exec): exec-mode pods kept for reuse, for the functions of
	 * KRMPOD_WARM_POOL_IMAGES (patterns, '*' any run) and those `krmpod generate` resolved
	 * from a catalog entry marked idempotent. */
	bool warm_pool;
	char **pool_images;
	size_t n_pool_images;
	long pool_size;       /* KRMPOD_WARM_POOL_SIZE: idle pods kept per image (default 2) */
	long pool_max;        /* KRMPOD_WARM_POOL_MAX: pool pods in the namespace (8: half the
	                       * shipped quota's 16 pods, so idle pods never hold all of it) */
	int64_t pool_ttl_ms;  /* KRMPOD_WARM_POOL_TTL: how long a pod may stay idle (10m) */
	int64_t pool_life_ms; /* KRMPOD_WARM_POOL_MAX_LIFE: a pool pod's deadline (1h) */
	/* The Application a render is for (Argo CD's ARGOCD_APP_NAME, ARGOCD_APP_PROJECT_NAME
	 * and ARGOCD_APP_NAMESPACE, "" outside Argo CD): part of every pod key, so that a pooled
	 * pod serves one Application only (docs/security.md). */
	char *pool_tenant;
};

#define SETTINGS_SET_CPU_REQUEST    1u
#define SETTINGS_SET_CPU_LIMIT      2u
#define SETTINGS_SET_MEMORY_REQUEST 4u
#define SETTINGS_SET_MEMORY_LIMIT   8u

/* Reads all settings from the environment array envp (NAME=VALUE strings, NULL-terminated).
 * On failure *s is cleared. The function-run settings are resolved from this through
 * fn_config.h, never read piecemeal. */
int settings_load_env(struct settings *s, char *const *envp, struct err **err);

/* The shortest KRMPOD_NETWORK_GATE: the gate needs its silent rounds over a second, and a
 * round's wait either side (agent_gate.h, AGENT_GATE_MIN_MS, checks it is no less). */
#define SETTINGS_NET_GATE_MIN_MS 2000

/* Inside a function pod, what pod_manifest.c gave the gate's container:
 * - SETTINGS_NET_GATE_ENV: the gate's time in ms (exec mode's function container; attach
 *   mode's init container takes it as its argument), 0 when unset: no gate;
 * - SETTINGS_NET_GATE_NODE_ENV: the node's address (status.hostIP), whose kubelet the gate
 *   probes beside the API server;
 * - SETTINGS_NET_GATE_DNS_ENV=1: probe the cluster DNS too (a pod without a grant).
 * ERR_CONFIG when malformed. The functions never see them (agent_call.c gives them only their
 * config's env; cmd_gate.c unsets them). */
#define SETTINGS_NET_GATE_ENV      "KRMPOD_NET_GATE_MS"
#define SETTINGS_NET_GATE_NODE_ENV "KRMPOD_NET_GATE_NODE"
#define SETTINGS_NET_GATE_DNS_ENV  "KRMPOD_NET_GATE_DNS"
struct settings_gate {
	int64_t ms;
	const char *node; /* in envp; NULL when unset */
	bool dns;
};
int settings_agent_net_gate(char *const *envp, struct settings_gate *g, struct err **err);
void settings_clear(struct settings *s);

/* The value of variable `name` in envp, or NULL when it is unset or empty. The settings
 * module (src/config/) is the only one that reads KRMPOD_* variables. */
const char *settings_env(char *const *envp, const char *name);

/* KRMPOD_CLOCK_OFFSET, for tests only: a signed duration ("105s", "-2m") the wall clock is
 * moved by (base/clock.h), to play a machine whose clock is off; 0 when unset. ERR_CONFIG
 * naming the variable when malformed. */
int settings_clock_offset(char *const *envp, int64_t *ms, struct err **err);

/* KRMPOD_LOG_LEVEL (error, warn, info, debug): *set says whether it is set; when it is,
 * *level receives it. An invalid value is an ERR_CONFIG error naming the variable. */
int settings_log_level(char *const *envp, enum log_level *level, bool *set, struct err **err);

/* Parses a duration: "90" (seconds), "500ms", "90s", "2m", "1h"; > 0. `var` names the
 * variable for the error. */
int settings_parse_duration(const char *var, const char *text, int64_t *out_ms, struct err **err);

/* Parses a boolean setting: true/false/1/0/yes/no (any case). */
int settings_parse_bool(const char *var, const char *text, bool *out, struct err **err);

/* Parses a size in bytes: "1048576", "64Mi", "1Gi", "500k", "10M" (binary Ki/Mi/Gi and
 * decimal k/M/G suffixes); > 0. */
int settings_parse_size(const char *var, const char *text, int64_t *out, struct err **err);

/* The value of a quantity in base units (cores, bytes): "500m" → 0.5, "1Gi" → 2^30. */
int settings_quantity_value(const char *text, double *out);

/* Applies the per-function resource overrides recorded for `image` in s->fn_overrides,
 * checked against the maxima (a request above its new limit is lowered to it). */
int settings_apply_overrides(struct settings *s, const char *image, struct err **err);

/* Checks one override value against its maximum; `what` names the annotation's source. */
int settings_check_override(const struct settings *s, const char *what, const char *annotation,
                            const char *value, struct err **err);

#define ANNOTATION_CPU_LIMIT    "krmpod.dev/cpu-limit"
#define ANNOTATION_MEMORY_LIMIT "krmpod.dev/memory-limit"

/* Checks a Kubernetes resource quantity ("100m", "1", "0.5", "512Mi", "1G", "1e3"). */
int settings_check_quantity(const char *var, const char *text, struct err **err);

/* Checks a label key (optional DNS-subdomain prefix + "/" + name of ≤ 63 chars) and value
 * (≤ 63 chars, alnum at both ends, [-_.] inside, may be empty). */
int settings_check_label(const char *var, const char *key, const char *value, struct err **err);

#endif

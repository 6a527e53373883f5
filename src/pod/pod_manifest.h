/* pod_manifest.h — the locked-down Pod that runs one function (design.md §3.3).
 *
 * The pod passes Pod Security "restricted": non-root (65534 unless --user names another
 * non-zero id), seccomp RuntimeDefault, no privilege escalation, all capabilities dropped,
 * no service-account token, no service links, restartPolicy Never, activeDeadlineSeconds from
 * the overall timeout, resource requests and limits, terminationMessagePolicy
 * FallbackToLogsOnError. The container is stdin+stdinOnce when the request wants stdin (-i),
 * else without stdin (docker run without -i: an empty stdin); tty false. The spec is a pure
 * function of the request and the settings (prestart keys pods by it).
 *
 * Labels: app.kubernetes.io/managed-by=krmpod, krmpod.dev/function=true,
 * krmpod.dev/network=none|granted (a NetworkPolicy selects these), plus KRMPOD_EXTRA_LABELS.
 * Annotation krmpod.dev/image records the full image. With an owner pod (downward API), an
 * ownerReference to it without blockOwnerDeletion, so function pods die with the
 * repo-server pod.
 *
 * imagePullSecrets: pod_spec_pull_secrets (the kubelet pulls with them; the spec names
 * Secrets, never holds credentials).
 *
 * --mount flags add emptyDir volumes, their volumeMounts and, for bind mounts, the `mounts`
 * init container that receives the files (pod_mounts.h).
 */
#ifndef KRMPOD_POD_MANIFEST_H
#define KRMPOD_POD_MANIFEST_H

#include <stdbool.h>

#include "base/buf.h"
#include "base/json.h"
#include "config/request.h"
#include "config/settings.h"
#include "pod/pod_names.h"

/* Whether the pod has init containers (the network gate's, the mounts'): the pods whose
 * output the container runtime was seen to cut at the exit (fn_output.c, check_tail). */
bool pod_has_init_containers(const struct fn_request *req, const struct settings *s);

/* Writes the Pod as JSON into out (appending), with a random KUBE_LABEL_CREATE_ID of its own
 * (kube_api.h). Cannot fail: inputs were validated when they were parsed. */
void pod_spec_build(const struct fn_request *req, const struct settings *s, struct buf *out);

/* The same pod without the random label: what a pod key (fn_config_key) is computed from. */
void pod_spec_build_for_key(const struct fn_request *req, const struct settings *s,
                            struct buf *out);

/* A warm-pool pod (pool.h): the pool's key and the lease it is created with (holder
 * NULL: idle since idle_since_ms). */
struct pod_pool_meta {
	const char *key;         /* 16 hex digits: fn_config_key of the pod */
	const char *spec_sha256; /* all of it (fn_config_spec_sha256), or NULL */
	const char *holder;      /* the lease's holder, or NULL */
	long long lease_until_ms, idle_since_ms;
};

/* The same pod as a pool pod: labels krmpod.dev/pool=KEY and krmpod.dev/pool-state, the
 * lease annotations, no ownerReference (every replica shares the pool), and
 * activeDeadlineSeconds from KRMPOD_WARM_POOL_MAX_LIFE. */
void pod_spec_build_pool(const struct fn_request *req, const struct settings *s,
                         const struct pod_pool_meta *pool, struct buf *out);

/* The labels a function pod carries, in the pod's order: the PodTemplate's (unless
 * KRMPOD_EXTRA_LABELS sets the same key), KRMPOD_EXTRA_LABELS, then krmpod's own
 * (managed-by, function, and network: "granted" or "none"). The strings are borrowed from s
 * (string literals for krmpod's own). Returns the count; *out is a new array to free. */
size_t pod_spec_labels(const struct settings *s, bool network_granted, struct label **out);

/* The Secrets a function pod pulls with (its imagePullSecrets, in order): the names of the
 * PodTemplate's spec.imagePullSecrets, then KRMPOD_IMAGE_PULL_SECRETS, each name once (an
 * entry without a name is left out). The strings are borrowed from s. Returns the count;
 * *out is a new NULL-terminated array to free. */
size_t pod_spec_pull_secrets(const struct settings *s, const char ***out);

/* The generateName prefix for an image: "krmpod-" + the image's last path segment without
 * tag/digest, lowercased, non-alphanumerics as '-', cut so the name stays ≤ 63 chars with
 * the 5 random characters the server adds. Returns a new string ending in '-'. */
char *pod_spec_generate_name(const char *image);

#endif

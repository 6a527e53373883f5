/* fn_config.h — the function-run settings, resolved in one place.
 *
 * Everything that decides a function's pod — its namespace, ownerReference, labels,
 * resources, PodTemplate and so the prestart key — is resolved here and nowhere else, from
 * an environment array. The shim resolves from its own environment; `krmpod generate`'s
 * prestart resolves from the very environment it hands kustomize, which kustomize passes
 * on to the shims. So a prestarted pod and the pod a shim would create come from the same
 * function on the same input: their keys match by construction. doctor and gc take their
 * namespace from here too.
 *
 * The rules:
 *  - namespace: KRMPOD_NAMESPACE, else the kubeconfig context's (or in-cluster) namespace,
 *    else "default". Always set in out->namespace.
 *  - owner: KRMPOD_OWNER_POD/UID are kept only when KRMPOD_OWNER_NAMESPACE is unset or is
 *    that namespace. Kubernetes resolves an ownerReference in the dependent's namespace
 *    only: a pod whose owner lives elsewhere is garbage-collected at once (event
 *    OwnerRefInvalidNamespace). The shipped install (repo-server in argocd, functions in
 *    krmpod-functions) is exactly that case.
 *  - per request: the PodTemplate (KRMPOD_POD_TEMPLATE: a file, or a name read with one
 *    GET) and the per-function resource limits recorded for the image
 *    (KRMPOD_FN_OVERRIDES). Whether the request may run, and how, is admission's
 *    (admit/admit.h).
 */
#ifndef KRMPOD_FN_CONFIG_H
#define KRMPOD_FN_CONFIG_H

#include <stdint.h>

#include "base/err.h"
#include "base/sha256.h"
#include "config/kubeconfig.h"
#include "config/request.h"
#include "config/settings.h"

/* What every command that talks to the cluster starts with (the shim, run, generate, doctor,
 * gc): the settings from envp, the cluster configuration they point at (KRMPOD_CONTEXT,
 * KRMPOD_SERVICEACCOUNT_DIR; kubeconfig.h), then the namespace and owner rules below. On
 * failure *s is cleared and *cfg NULL. */
int fn_config_load(char *const *envp, struct settings *s, struct kube_config **cfg,
                   struct err **err);

/* The settings every function shares: loaded from envp with the namespace and owner rules
 * applied. No I/O. On failure *out is cleared. */
int fn_config_base(char *const *envp, const struct kube_config *cfg, struct settings *out,
                   struct err **err);

/* Reads the PodTemplate KRMPOD_POD_TEMPLATE names into s (pod_template.h): its file, or
 * the PodTemplate of s->namespace with one GET (ERR_CONFIG naming it when it does not
 * exist). A no-op without KRMPOD_POD_TEMPLATE or when s holds the template already. */
int fn_config_load_template(struct settings *s, struct kube_config *cfg, struct err **err);

/* The settings for running req on top of s: the PodTemplate and the image's resource limits
 * (KRMPOD_FN_OVERRIDES). Whether req may run at all is admission's (admit/admit.h). On
 * failure s is left for the caller to clear. */
int fn_config_for_request(struct settings *s, struct kube_config *cfg, const struct fn_request *req,
                          struct err **err);

/* The settings for running req and its admission, as a shim of generate's will have them
 * (prestart): fn_config_base(), fn_config_for_request(), then admit() without the image
 * policy, which generate checked for the whole tree. On failure *out is cleared. */
int fn_config_resolve(char *const *envp, struct kube_config *cfg, struct fn_request *req,
                      struct settings *out, struct err **err);

/* The identity of the pod req runs in under s (resolved above): the SHA-256 of its canonical
 * pod spec (env sorted by name, without activeDeadlineSeconds, which follows the clock, and
 * without the random create label) and of the Application the render is for (settings.h,
 * pool_tenant), as 64 hex digits. */
void fn_config_spec_sha256(const struct fn_request *req, const struct settings *s,
                           char hex[SHA256_HEX_LEN + 1]);

/* Its first 16 hex digits as a number: the pod key. Prestart offers pods under this key, a
 * shim claims by it, and the pool labels its pods with it; a claim checks the whole hash. */
uint64_t fn_config_key(const struct fn_request *req, const struct settings *s);

#endif

/* pull_auth.h — the function pods' pull Secrets as credentials of the sidecar's own
 * registry reads (issue 29, item 1: more functions whose entrypoint krmpod can know, so that
 * they run in exec mode).
 *
 * The kubelet pulls a function's image with the pod's imagePullSecrets
 * (pod_spec_pull_secrets: the PodTemplate's, then KRMPOD_IMAGE_PULL_SECRETS). Where the
 * admin lets the sidecar read them (`get` on those Secrets, by name, in the functions
 * namespace: the shipped Role does not), krmpod reads the image config with the same
 * credentials, after KRMPOD_REGISTRY_AUTH's. A Secret it may not read (403), that does not
 * exist (404) or that is not a kubernetes.io/dockerconfigjson is left out, said at debug
 * level; the registry's own refusal then names what was tried.
 */
#ifndef KRMPOD_PULL_AUTH_H
#define KRMPOD_PULL_AUTH_H

#include <stdatomic.h>
#include <stddef.h>

#include "base/err.h"
#include "config/kubeconfig.h"
#include "config/settings.h"
#include "registry/registry.h"

struct fn_pull_auths {
	struct registry_auth_doc *docs; /* n of them, for registry_opts.auth_docs */
	size_t n;
};

/* Reads the Secrets as above into out (empty when none can be read). Fails only on a signal
 * or when no client can be made. */
int fn_pull_auths_load(const struct settings *s, struct kube_config *cfg, atomic_int *cancel,
                       struct fn_pull_auths *out, struct err **err);

/* Frees what load made (the credentials wiped first). */
void fn_pull_auths_clear(struct fn_pull_auths *a);

#endif

/* fn_config.c — see fn_config.h. */
#include "fn/fn_config.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "base/xalloc.h"
#include "pod/pod_spec.h"
#include "pod/pod_template.h"

int fn_config_base(char *const *envp, const struct kube_config *cfg, struct settings *out,
                   struct err **err)
{
	if (settings_load_env(out, envp, err) < 0)
		return -1;
	if (out->namespace == NULL)
		out->namespace = xstrdup(cfg->namespace ? cfg->namespace : "default");
	if (out->owner_pod && out->owner_namespace &&
	    strcmp(out->owner_namespace, out->namespace) != 0) {
		log_debug("owner pod %s/%s is not in namespace %s: no ownerReference (the pods' "
		          "activeDeadlineSeconds, the shims' signal handling and krmpod gc clean "
		          "up)",
		          out->owner_namespace, out->owner_pod, out->namespace);
		free(out->owner_pod);
		free(out->owner_uid);
		out->owner_pod = out->owner_uid = NULL;
	}
	return 0;
}

int fn_config_resolve(char *const *envp, struct kube_config *cfg, const struct fn_request *req,
                      struct settings *out, struct err **err)
{
	if (fn_config_base(envp, cfg, out, err) < 0)
		return -1;
	if (req->network == FN_NETWORK_HOST && !out->allow_network) {
		settings_clear(out);
		return err_set(err, ERR_USAGE,
		               "function %s asks for network access (network: true in its config, "
		               "docker run --network host), but the cluster admin has not allowed "
		               "it: KRMPOD_ALLOW_NETWORK is not true",
		               req->image);
	}
	if (pod_template_load(out, cfg, out->namespace, err) < 0 ||
	    settings_apply_overrides(out, req->image, err) < 0) {
		settings_clear(out);
		return -1;
	}
	return 0;
}

static int cmp_env(const void *a, const void *b)
{
	return strcmp(((const struct fn_env *)a)->name, ((const struct fn_env *)b)->name);
}

uint64_t fn_config_key(const struct fn_request *req, const struct settings *s)
{
	struct fn_request r = *req; /* shallow: only the env order changes */
	cleanup_free struct fn_env *env = xcalloc(req->n_env + 1, sizeof(*env));
	if (req->n_env)
		memcpy(env, req->env, req->n_env * sizeof(*env));
	qsort(env, req->n_env, sizeof(*env), cmp_env);
	r.env = env;
	struct settings t = *s;
	t.timeout_ms = 0; /* activeDeadlineSeconds follows the clock */
	cleanup_buf struct buf b;
	buf_init(&b, 0);
	pod_spec_build(&r, &t, &b);
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < b.len; i++) {
		h ^= (unsigned char)b.data[i];
		h *= 1099511628211ull;
	}
	return h;
}

/* fn_invoke.c — see fn_invoke.h. */
#include "fn_invoke.h"

#include <stdlib.h>
#include <string.h>

#include "kubeconfig.h"
#include "log.h"
#include "pod_template.h"
#include "settings.h"

const char *fn_invoke_namespace(const struct settings *s, const struct kube_config *cfg)
{
	return s->namespace ? s->namespace : cfg->namespace ? cfg->namespace : "default";
}

int fn_invoke(const struct fn_request *req, const struct fn_io *io, int *exit_code,
              struct err **err)
{
	*exit_code = -1;
	struct settings s;
	if (settings_load(&s, err) < 0)
		return -1;
	if (req->network == FN_NETWORK_HOST && !s.allow_network) {
		settings_clear(&s);
		return err_set(err, ERR_USAGE,
		               "function %s asks for network access (network: true in its config, "
		               "docker run --network host), but the cluster admin has not allowed "
		               "it: KRMPOD_ALLOW_NETWORK is not true",
		               req->image);
	}
	struct kube_config *cfg = NULL;
	if (kube_config_load(&cfg, err) < 0) {
		settings_clear(&s);
		return -1;
	}
	const char *ns = fn_invoke_namespace(&s, cfg);
	log_debug("cluster %s (%s), namespace %s", cfg->server, cfg->source, ns);
	if (s.owner_pod && s.owner_namespace && strcmp(s.owner_namespace, ns) != 0) {
		/* See settings.h: a cross-namespace owner would get the pod garbage-collected. */
		log_debug("owner pod %s/%s is not in namespace %s: no ownerReference (the pod's "
		          "activeDeadlineSeconds and the shims' signal handling clean up)",
		          s.owner_namespace, s.owner_pod, ns);
		free(s.owner_pod);
		free(s.owner_uid);
		s.owner_pod = s.owner_uid = NULL;
	}
	int rc = pod_template_load(&s, cfg, ns, err);
	if (rc == 0)
		rc = settings_apply_overrides(&s, req->image, err);
	if (rc == 0)
		rc = fn_run(cfg, &s, ns, req, io, exit_code, err);
	if (rc < 0)
		err_wrap(err, "run function %s", req->image);
	kube_config_free(cfg);
	settings_clear(&s);
	return rc;
}

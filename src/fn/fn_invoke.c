/* fn_invoke.c — see fn_invoke.h. */
#include "fn/fn_invoke.h"

#include "base/log.h"
#include "config/settings.h"
#include "fn/fn_config.h"
#include "kube/kubeconfig.h"

int fn_invoke(char *const *envp, const struct fn_request *req, const struct fn_io *io,
              int *exit_code, struct err **err)
{
	*exit_code = -1;
	struct settings s;
	struct kube_config *cfg = NULL;
	if (fn_config_load(envp, &s, &cfg, err) < 0)
		return err_wrap(err, "run function %s", req->image);
	int rc = fn_config_apply_request(&s, cfg, req, err);
	if (rc == 0) {
		log_debug("cluster %s (%s), namespace %s", cfg->server, cfg->source, s.namespace);
		rc = fn_run(cfg, &s, req, io, exit_code, err);
	}
	if (rc < 0)
		err_wrap(err, "run function %s", req->image);
	settings_clear(&s);
	kube_config_free(cfg);
	return rc;
}

/* fn_invoke.c — see fn_invoke.h. */
#include "fn/fn_invoke.h"

#include "base/log.h"
#include "config/settings.h"
#include "fn/fn_config.h"
#include "kube/kubeconfig.h"

extern char **environ;

int fn_invoke(const struct fn_request *req, const struct fn_io *io, int *exit_code,
              struct err **err)
{
	*exit_code = -1;
	struct kube_config *cfg = NULL;
	if (kube_config_load(&cfg, err) < 0)
		return -1;
	struct settings s;
	int rc = fn_config_resolve(environ, cfg, req, &s, err);
	if (rc == 0) {
		log_debug("cluster %s (%s), namespace %s", cfg->server, cfg->source, s.namespace);
		rc = fn_run(cfg, &s, s.namespace, req, io, exit_code, err);
		settings_clear(&s);
	}
	if (rc < 0)
		err_wrap(err, "run function %s", req->image);
	kube_config_free(cfg);
	return rc;
}

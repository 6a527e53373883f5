/* fn_invoke.c — see fn_invoke.h. */
#include <stdatomic.h>

#include "fn/fn_invoke.h"

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "catalog/catalog_store.h"
#include "catalog/policy.h"
#include "config/settings.h"
#include "fn/fn_config.h"
#include "kube/kubeconfig.h"

/* The image policy (catalog/policy.h), before any pod exists. */
static int check_policy(const struct settings *s, const struct fn_request *req, atomic_int *cancel,
                        struct err **err)
{
	if (s->image_policy == IMAGE_POLICY_ANY && !s->require_digest && s->policy_file == NULL)
		return 0;
	struct policy p = {0};
	int rc = catalog_store_policy(s, cancel, false, &p, err);
	if (rc == 0)
		rc = policy_check(&p, req->image, req->network == FN_NETWORK_HOST,
		                  req->n_mounts > 0, NULL, err);
	policy_clear(&p);
	return rc;
}

int fn_invoke(char *const *envp, struct fn_request *req, const struct fn_io *io, int *exit_code,
              struct err **err)
{
	*exit_code = -1;
	struct settings s;
	struct kube_config *cfg = NULL;
	if (fn_config_load(envp, &s, &cfg, err) < 0)
		return err_wrap(err, "run function %s", req->image);
	int rc = check_policy(&s, req, io->cancel, err);
	if (rc == 0)
		rc = fn_config_apply_request(&s, cfg, req, err);
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

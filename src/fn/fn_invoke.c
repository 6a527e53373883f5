/* fn_invoke.c — see fn_invoke.h. */
#include <stdatomic.h>

#include "fn/fn_invoke.h"

#include "admit/admit.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/fd_cap.h"
#include "base/log.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "config/kubeconfig.h"
#include "config/settings.h"
#include "fn/fn_config.h"
#include "fn/fn_run.h"

/* fn_run with the function's stderr (everything written to io->err_fd meanwhile: the
 * stream, the pod log, a pool session, the shim's own messages) bounded by
 * KRMPOD_MAX_STDERR; krmpod's final error, printed after, is not. */
static int run_capped(struct kube_config *cfg, const struct settings *s, struct fn_request *req,
                      const struct fn_io *io, int *exit_code, struct err **err)
{
	cleanup_free char *what = xasprintf("the stderr of %s", req->image);
	struct fd_cap *cap = NULL;
	if (fd_cap_redirect(io->err_fd, (uint64_t)s->max_stderr, what, "KRMPOD_MAX_STDERR", &cap,
	                    err) < 0)
		return -1;
	int rc = fn_run(cfg, s, req, io, exit_code, err);
	uint64_t dropped = fd_cap_end(cap);
	if (dropped)
		log_warn("%s: %llu bytes of its stderr were dropped (KRMPOD_MAX_STDERR)",
		         req->image, (unsigned long long)dropped);
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
	int rc = fn_config_for_request(&s, cfg, req, err);
	if (rc == 0)
		rc = admit(&s, cfg, req, io->cancel, 0, err);
	if (rc == 0) {
		log_debug("cluster %s (%s), namespace %s", cfg->server, cfg->source, s.namespace);
		rc = run_capped(cfg, &s, req, io, exit_code, err);
	}
	if (rc < 0)
		err_wrap(err, "run function %s", req->image);
	settings_clear(&s);
	kube_config_free(cfg);
	return rc;
}

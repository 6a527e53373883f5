/* admit.c — see admit.h. */
#include "admit/admit.h"

#include <string.h>

#include "admit/entrypoint.h"
#include "admit/trust.h"
#include "base/clock.h"
#include "catalog/catalog_store.h"
#include "catalog/image_policy.h"
#include "pool/pool.h"

/* 1. The image policy. */
static int check_image_policy(const struct settings *s, const struct fn_request *req,
                              atomic_int *cancel, struct err **err)
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

/* 2. The network rule. */
static int check_network(const struct settings *s, const struct fn_request *req, struct err **err)
{
	if (req->network != FN_NETWORK_HOST || s->allow_network)
		return 0;
	return err_set(err, ERR_USAGE,
	               "function %s asks for network access (network: true in its config, "
	               "docker run --network host), but the cluster admin has not allowed it: "
	               "KRMPOD_ALLOW_NETWORK is not true",
	               req->image);
}

/* Variables that make a loader or an interpreter run code of the caller's choosing: in a
 * pooled pod, whose next call may be another Application's, a function config may not set
 * them (docs/security.md, "The warm pool"). A name ending in '*' is a prefix. */
static const char *const POOLED_REFUSED_ENV[] = {
        "LD_*",          "GLIBC_TUNABLES",    "GCONV_PATH",    "BASH_ENV",         "ENV",
        "NODE_OPTIONS",  "NODE_PATH",         "PERL5OPT",      "PERL5LIB",         "PERLLIB",
        "PYTHONSTARTUP", "PYTHONPATH",        "PYTHONHOME",    "PYTHONUSERBASE",   "RUBYOPT",
        "RUBYLIB",       "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH",
};

static const char *pooled_refused(const struct fn_request *req)
{
	for (size_t i = 0; i < req->n_env; i++) {
		const char *name = req->env[i].name;
		for (size_t k = 0; k < sizeof(POOLED_REFUSED_ENV) / sizeof(POOLED_REFUSED_ENV[0]);
		     k++) {
			const char *r = POOLED_REFUSED_ENV[k];
			size_t n = strlen(r);
			if (r[n - 1] == '*' ? strncmp(name, r, n - 1) == 0 : strcmp(name, r) == 0)
				return name;
		}
	}
	return NULL;
}

/* 5. The warm pool: pooled or not, and what a pooled call's config may not set. */
static int decide_pool(const struct settings *s, struct fn_request *req, atomic_int *cancel,
                       struct err **err)
{
	req->pooled = fn_pool_takes(s, req);
	req->pool_shared = false;
	if (req->pooled) {
		struct policy p = {0};
		int rc = catalog_store_policy(s, cancel, true, &p, err);
		req->pool_shared = rc == 0 && policy_shared(&p, req->image);
		policy_clear(&p);
		if (rc < 0)
			return err_wrap(err, "the warm pool: the admin's catalogs");
	}
	const char *refused = req->pooled ? pooled_refused(req) : NULL;
	if (refused)
		return err_set(err, ERR_USAGE,
		               "function %s: its config sets %s, which a pooled call refuses: the "
		               "warm pool's pod may serve another Application next, and %s makes "
		               "a loader or interpreter run code of this one's choosing; drop it "
		               "from the function config, or leave the image out of "
		               "KRMPOD_WARM_POOL_IMAGES",
		               req->image, refused, refused);
	return 0;
}

int admit(struct settings *s, struct kube_config *cfg, struct fn_request *req, atomic_int *cancel,
          int flags, struct err **err)
{
	int64_t deadline = now_ms() + ADMIT_FETCH_TIMEOUT_MS;
	if ((!(flags & ADMIT_POLICY_CHECKED) && check_image_policy(s, req, cancel, err) < 0) ||
	    check_network(s, req, err) < 0 || fn_trust_check(s, req, cancel, deadline, err) < 0 ||
	    fn_image_resolve(s, cfg, req, cancel, deadline, err) < 0)
		return -1;
	return decide_pool(s, req, cancel, err);
}

/* fn_config.c — see fn_config.h. */
#include "fn/fn_config.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/sha256.h"
#include "base/signals.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "catalog/catalog_store.h"
#include "catalog/image_policy.h"
#include "fn/fn_image.h"
#include "fn/fn_trust.h"
#include "kube/kube_api.h"
#include "pod/pod_manifest.h"
#include "pod/pod_names.h"
#include "pod/pod_template.h"
#include "pool/pool.h"

/* The namespace and owner rules (fn_config.h) on loaded settings. */
static void apply_rules(struct settings *out, const struct kube_config *cfg)
{
	if (out->namespace == NULL)
		out->namespace = xstrdup(cfg->namespace ? cfg->namespace : "default");
	if (out->owner_pod && out->owner_namespace &&
	    strcmp(out->owner_namespace, out->namespace) != 0) {
		log_debug("owner pod %s/%s is not in namespace %s: no ownerReference, only the "
		          "annotation " POD_ANNOTATION_OWNER " (the pods' activeDeadlineSeconds, "
		          "the shims' signal handling and leases, and krmpod gc clean up)",
		          out->owner_namespace, out->owner_pod, out->namespace);
	}
}

int fn_config_base(char *const *envp, const struct kube_config *cfg, struct settings *out,
                   struct err **err)
{
	if (settings_load_env(out, envp, err) < 0)
		return -1;
	apply_rules(out, cfg);
	return 0;
}

int fn_config_load(char *const *envp, struct settings *s, struct kube_config **cfg,
                   struct err **err)
{
	*cfg = NULL;
	if (settings_load_env(s, envp, err) < 0)
		return -1;
	struct kube_config_opts o = {.context = s->kube_context, .sa_dir = s->serviceaccount_dir};
	if (kube_config_load(&o, cfg, err) < 0) {
		settings_clear(s);
		return -1;
	}
	apply_rules(s, *cfg);
	return 0;
}

int fn_config_load_template(struct settings *s, struct kube_config *cfg, struct err **err)
{
	if (s->pod_template == NULL || s->template_doc)
		return 0;
	const char *ns = s->namespace;
	cleanup_free char *what = NULL;
	struct json *doc = NULL;
	if (strchr(s->pod_template, '/')) {
		what = xasprintf("KRMPOD_POD_TEMPLATE file %s", s->pod_template);
		cleanup_free char *text = NULL;
		size_t len = 0;
		if (buf_read_file(s->pod_template, LIMIT_KUSTOMIZE_FILE, "KRMPOD_POD_TEMPLATE file",
		                  ERR_CONFIG, &text, &len, err) < 0 ||
		    json_parse(text, len, what, &doc, err) < 0)
			return -1;
	} else {
		what = xasprintf("KRMPOD_POD_TEMPLATE: PodTemplate %s/%s", ns, s->pod_template);
		cleanup_kube_client struct kube_client *c = NULL;
		long status = 0;
		if (kube_client_new(cfg, &c, err) < 0)
			return -1;
		if (kube_api_podtemplate_get(c, ns, s->pod_template, &status, &doc, err) < 0) {
			if (status == 404)
				return err_set(
				        err, ERR_CONFIG,
				        "%s does not exist: create it (kubectl -n %s create -f "
				        "podtemplate.yaml) or unset KRMPOD_POD_TEMPLATE",
				        what, ns);
			return err_wrap(err, "%s", what);
		}
	}
	return pod_template_adopt(s, doc, what, err);
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

int fn_config_apply_request(struct settings *s, struct kube_config *cfg, struct fn_request *req,
                            struct err **err)
{
	if (req->network == FN_NETWORK_HOST && !s->allow_network)
		return err_set(err, ERR_USAGE,
		               "function %s asks for network access (network: true in its config, "
		               "docker run --network host), but the cluster admin has not allowed "
		               "it: KRMPOD_ALLOW_NETWORK is not true",
		               req->image);
	if (fn_config_load_template(s, cfg, err) < 0 ||
	    settings_apply_overrides(s, req->image, err) < 0)
		return -1;
	int64_t deadline = now_ms() + FN_IMAGE_FETCH_TIMEOUT_MS;
	if (fn_trust_check(s, req, &signals_cancel, deadline, err) < 0 ||
	    fn_image_resolve(s, cfg, req, &signals_cancel, deadline, err) < 0)
		return -1;
	req->pooled = fn_pool_takes(s, req);
	req->pool_shared = false;
	if (req->pooled) {
		struct policy p = {0};
		int rc = catalog_store_policy(s, &signals_cancel, true, &p, err);
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

int fn_config_resolve(char *const *envp, struct kube_config *cfg, struct fn_request *req,
                      struct settings *out, struct err **err)
{
	if (fn_config_base(envp, cfg, out, err) < 0)
		return -1;
	if (fn_config_apply_request(out, cfg, req, err) < 0) {
		settings_clear(out);
		return -1;
	}
	return 0;
}

static int cmp_env(const void *a, const void *b)
{
	return strcmp(((const struct fn_env *)a)->name, ((const struct fn_env *)b)->name);
}

void fn_config_spec_sha256(const struct fn_request *req, const struct settings *s,
                           char hex[SHA256_HEX_LEN + 1])
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
	pod_spec_build_for_key(&r, &t, &b);
	/* the Application too: a pod of one is never another's (settings.h, pool_tenant),
	 * unless the admin's catalog marks the function shareAcrossApplications */
	buf_putc(&b, '\n');
	if (req->pool_shared)
		buf_puts(&b, "shared across Applications");
	else if (s->pool_tenant)
		buf_append(&b, s->pool_tenant, strlen(s->pool_tenant), "pod key", NULL);
	sha256_hex(b.data, b.len, hex);
}

uint64_t fn_config_key(const struct fn_request *req, const struct settings *s)
{
	char hex[SHA256_HEX_LEN + 1];
	fn_config_spec_sha256(req, s, hex);
	uint64_t h = 0;
	for (int i = 0; i < 16; i++) /* the label holds 16 hex digits of it */
		h = h << 4 | (uint64_t)(hex[i] <= '9' ? hex[i] - '0' : hex[i] - 'a' + 10);
	return h;
}

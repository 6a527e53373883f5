/* fn_config.c — see fn_config.h. */
#include "fn/fn_config.h"

#include <stdlib.h>
#include <string.h>

#include "admit/admit.h"
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

int fn_config_for_request(struct settings *s, struct kube_config *cfg, const struct fn_request *req,
                          struct err **err)
{
	return fn_config_load_template(s, cfg, err) < 0 ||
	                       settings_apply_overrides(s, req->image, err) < 0
	               ? -1
	               : 0;
}

int fn_config_resolve(char *const *envp, struct kube_config *cfg, struct fn_request *req,
                      struct settings *out, struct err **err)
{
	if (fn_config_base(envp, cfg, out, err) < 0)
		return -1;
	if (fn_config_for_request(out, cfg, req, err) < 0 ||
	    admit(out, cfg, req, &signals_cancel, ADMIT_POLICY_CHECKED, err) < 0) {
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

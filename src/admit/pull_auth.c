/* pull_auth.c — see pull_auth.h. */
#include "admit/pull_auth.h"

#include <string.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "base/json.h"
#include "base/log.h"
#include "base/xalloc.h"
#include "kube/kube_api.h"
#include "kube/kube_http.h"
#include "pod/pod_manifest.h"

#define DOCKERCONFIGJSON "kubernetes.io/dockerconfigjson"

/* One Secret's dockerconfigjson into *doc; 0 when it cannot be used (said at debug level),
 * -1 on a signal. */
static int read_one(struct kube_client *c, const char *ns, const char *name,
                    struct registry_auth_doc *doc, struct err **err)
{
	cleanup_json struct json *secret = NULL;
	cleanup_err struct err *e = NULL;
	long status = 0;
	if (kube_api_secret_get(c, ns, name, &status, &secret, &e) < 0) {
		if (e->code == ERR_SIGNAL) {
			*err = e;
			e = NULL;
			return -1;
		}
		log_debug("pull Secret %s/%s: not read (%s): the image config is read without it",
		          ns, name, status == 403 ? "the Role grants no `get` on it" : e->msg);
		return 0;
	}
	const char *type = json_str(json_get(secret, "type"));
	const char *data = json_str(json_get(json_get(secret, "data"), ".dockerconfigjson"));
	if (type == NULL || strcmp(type, DOCKERCONFIGJSON) != 0 || data == NULL) {
		log_debug("pull Secret %s/%s is not a %s with .dockerconfigjson: left out", ns,
		          name, DOCKERCONFIGJSON);
		return 0;
	}
	char *json = NULL;
	size_t len = 0;
	if (base64_decode(data, strlen(data), "the Secret's .dockerconfigjson", &json, &len, &e) <
	    0) {
		log_debug("pull Secret %s/%s: %s: left out", ns, name, e->msg);
		return 0;
	}
	*doc = (struct registry_auth_doc){xasprintf("pull Secret %s/%s", ns, name), json, len};
	return 1;
}

int fn_pull_auths_load(const struct settings *s, struct kube_config *cfg, atomic_int *cancel,
                       struct fn_pull_auths *out, struct err **err)
{
	memset(out, 0, sizeof(*out));
	cleanup_free const char **names = NULL;
	size_t n = pod_spec_pull_secrets(s, &names);
	if (n == 0)
		return 0;
	struct kube_client *c = NULL;
	if (kube_client_new(cfg, &c, err) < 0)
		return -1;
	kube_client_set_cancel(c, cancel);
	out->docs = xcalloc(n, sizeof(*out->docs));
	int rc = 0;
	for (size_t i = 0; i < n && rc >= 0; i++) {
		rc = read_one(c, s->namespace, names[i], &out->docs[out->n], err);
		if (rc > 0)
			out->n++;
	}
	kube_client_free(c);
	if (rc < 0)
		fn_pull_auths_clear(out);
	return rc < 0 ? -1 : 0;
}

void fn_pull_auths_clear(struct fn_pull_auths *a)
{
	for (size_t i = 0; i < a->n; i++) {
		explicit_bzero((char *)a->docs[i].json, a->docs[i].len);
		free((char *)a->docs[i].json);
		free((char *)a->docs[i].what);
	}
	free(a->docs);
	memset(a, 0, sizeof(*a));
}

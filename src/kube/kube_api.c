/* kube_api.c — see kube_api.h. */
#include "kube/kube_api.h"

#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/xalloc.h"
#include "http/http_util.h"

#define CORE "/api/v1/namespaces/"

char *kube_api_pod_path(const char *ns, const char *pod)
{
	return xasprintf(CORE "%s/pods/%s", ns, pod);
}

char *kube_api_pod_watch_path(const char *ns, const char *pod, const char *rv, int timeout_s)
{
	cleanup_free char *name = url_query_escape(pod);
	cleanup_free char *erv = url_query_escape(rv);
	return xasprintf(CORE "%s/pods?watch=1&fieldSelector=metadata.name%%3D%s"
	                      "&resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=%d",
	                 ns, name, erv, timeout_s);
}

char *kube_api_started_events_watch_path(const char *ns, const char *pod_uid, int timeout_s)
{
	cleanup_free char *sel = xasprintf("involvedObject.uid=%s,reason=Started", pod_uid);
	cleanup_free char *esel = url_query_escape(sel);
	return xasprintf(CORE "%s/events?watch=1&fieldSelector=%s&timeoutSeconds=%d", ns, esel,
	                 timeout_s);
}

char *kube_api_pod_log_path(const char *ns, const char *pod, const char *container,
                            size_t limit_bytes)
{
	cleanup_free char *c = url_query_escape(container);
	return xasprintf(CORE "%s/pods/%s/log?container=%s&limitBytes=%zu", ns, pod, c,
	                 limit_bytes);
}

char *kube_api_pod_attach_path(const char *ns, const char *pod, const char *container,
                               bool want_stdin)
{
	cleanup_free char *c = url_query_escape(container);
	return xasprintf(CORE "%s/pods/%s/attach?container=%s&stdin=%s&stdout=true"
	                      "&stderr=true&tty=false",
	                 ns, pod, c, want_stdin ? "true" : "false");
}

char *kube_api_pod_exec_path(const char *ns, const char *pod, const char *container,
                             const char *const *command)
{
	struct buf b;
	buf_init(&b, 0);
	cleanup_free char *c = url_query_escape(container);
	buf_printf(&b, CORE "%s/pods/%s/exec?container=%s", ns, pod, c);
	for (size_t i = 0; command[i]; i++) {
		cleanup_free char *arg = url_query_escape(command[i]);
		buf_printf(&b, "&command=%s", arg);
	}
	buf_puts(&b, "&stdin=true&stdout=true&stderr=true&tty=false");
	return buf_steal(&b, NULL);
}

void kube_api_stream_path_parts(const char *path, char **ns, char **subresource)
{
	*ns = *subresource = NULL;
	if (strncmp(path, CORE, strlen(CORE)) == 0) {
		const char *p = path + strlen(CORE);
		*ns = xstrndup(p, strcspn(p, "/"));
		size_t end = strcspn(path, "?");
		const char *slash = memrchr(path, '/', end);
		if (slash)
			*subresource = xstrndup(slash + 1, end - (size_t)(slash + 1 - path));
	}
	if (*ns == NULL)
		*ns = xstrdup("(unknown)");
	if (*subresource == NULL)
		*subresource = xstrdup("attach");
}

/* The body's KUBE_LABEL_CREATE_ID (NULL when it has none). */
static char *create_id_of(const char *body, size_t len)
{
	cleanup_json struct json *j = NULL;
	if (json_parse(body, len, "pod body", &j, NULL) < 0)
		return NULL;
	const char *id = json_str(json_get(json_path(j, "metadata.labels"), KUBE_LABEL_CREATE_ID));
	return id ? xstrdup(id) : NULL;
}

/* After an answer that leaves a create's fate unknown: the pod the body made, if any
 * (1, in *out), none (0), or an error (-1). */
static int created_by(struct kube_client *c, const char *ns, const char *id, struct json **out,
                      struct err **err)
{
	cleanup_free char *sel = xasprintf(KUBE_LABEL_CREATE_ID "=%s", id);
	cleanup_json struct json *list = NULL;
	if (kube_api_pod_list(c, ns, sel, &list, err) < 0)
		return -1;
	const struct json *items = json_get(list, "items");
	if (json_len(items) == 0)
		return 0;
	struct buf b;
	buf_init(&b, 0);
	struct jw w;
	jw_init(&w, &b);
	json_write(&w, json_at(items, 0));
	int rc = json_parse(b.data, b.len, "pod", out, err) < 0 ? -1 : 1;
	buf_free(&b);
	return rc;
}

/* Whether a failed POST may have been applied: a 5xx, or the connection lost. */
static bool fate_unknown(long status, const struct err *e)
{
	return (status >= 500 && status <= 599 && status != 501) ||
	       (status == 0 && e && e->code == ERR_NET);
}

int kube_api_pod_create(struct kube_client *c, const char *ns, const char *body, size_t len,
                        struct json **out, struct err **err)
{
	cleanup_free char *path = xasprintf(CORE "%s/pods?fieldValidation=Strict", ns);
	cleanup_free char *id = create_id_of(body, len);
	atomic_int *cancel = kube_client_get_cancel(c);
	kube_client_set_cancel(c, NULL);
	int rc;
	for (int attempt = 0, unknown = 0;; attempt++) {
		long status = 0;
		rc = kube_request(c, "POST", path, "application/json", body, len, &status, out,
		                  err);
		if (rc < 0 && status == 409 && attempt < 3) {
			err_free(*err);
			*err = NULL;
			continue;
		}
		if (rc < 0 && id && fate_unknown(status, *err) && unknown < 3) {
			unknown++;
			log_info("%s; looking for the pod it may have made (%s=%s)", (*err)->msg,
			         KUBE_LABEL_CREATE_ID, id);
			cleanup_err struct err *le = NULL;
			int found = created_by(c, ns, id, out, &le);
			if (found > 0) {
				err_free(*err);
				*err = NULL;
				rc = 0;
				break;
			}
			if (found == 0) { /* not applied: safe to send again */
				err_free(*err);
				*err = NULL;
				sleep_ms(100 << unknown, NULL);
				continue;
			}
			err_wrap(err, "and the pod it may have made cannot be looked up (%s)",
			         le->msg);
		}
		break;
	}
	kube_client_set_cancel(c, cancel);
	if (rc == 0 && json_str(json_path(*out, "metadata.name")) == NULL) {
		json_free(*out);
		*out = NULL;
		return err_set(err, ERR_API, "POST %s: the created pod has no metadata.name", path);
	}
	return rc;
}

int kube_api_pod_delete(struct kube_client *c, const char *ns, const char *name, struct err **err)
{
	cleanup_free char *path = kube_api_pod_path(ns, name);
	static const char body[] = "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\","
	                           "\"gracePeriodSeconds\":0,\"propagationPolicy\":\"Background\"}";
	long status = 0;
	if (kube_request(c, "DELETE", path, "application/json", body, sizeof(body) - 1, &status,
	                 NULL, err) < 0) {
		if (status != 404)
			return -1;
		err_free(*err);
		*err = NULL;
	}
	return 0;
}

int kube_api_pod_delete_if(struct kube_client *c, const char *ns, const char *name, const char *uid,
                           const char *resource_version, struct err **err)
{
	cleanup_free char *path = kube_api_pod_path(ns, name);
	struct buf b;
	buf_init(&b, 0);
	struct jw w;
	jw_init(&w, &b);
	jw_obj_begin(&w);
	jw_kv_str(&w, "kind", "DeleteOptions");
	jw_kv_str(&w, "apiVersion", "v1");
	jw_kv_int(&w, "gracePeriodSeconds", 0);
	jw_kv_str(&w, "propagationPolicy", "Background");
	jw_key(&w, "preconditions");
	jw_obj_begin(&w);
	jw_kv_str(&w, "uid", uid);
	jw_kv_str(&w, "resourceVersion", resource_version);
	jw_obj_end(&w);
	jw_obj_end(&w);
	long status = 0;
	int rc = kube_request(c, "DELETE", path, "application/json", b.data, b.len, &status, NULL,
	                      err);
	buf_free(&b);
	if (rc == 0)
		return 0;
	if (status != 404 && status != 409)
		return -1;
	err_free(*err);
	*err = NULL;
	return status == 409 ? 1 : 0;
}

int kube_api_pod_json_patch(struct kube_client *c, const char *ns, const char *name,
                            const char *patch, long *status, struct json **out, struct err **err)
{
	cleanup_free char *path = kube_api_pod_path(ns, name);
	return kube_request(c, "PATCH", path, "application/json-patch+json", patch, strlen(patch),
	                    status, out, err);
}

int kube_api_pod_get(struct kube_client *c, const char *ns, const char *name, long *status,
                     struct json **out, struct err **err)
{
	cleanup_free char *path = kube_api_pod_path(ns, name);
	return kube_request(c, "GET", path, NULL, NULL, 0, status, out, err);
}

int kube_api_pod_list(struct kube_client *c, const char *ns, const char *label_selector,
                      struct json **out, struct err **err)
{
	cleanup_free char *sel = url_query_escape(label_selector);
	cleanup_free char *path = xasprintf(CORE "%s/pods?labelSelector=%s", ns, sel);
	return kube_request(c, "GET", path, NULL, NULL, 0, NULL, out, err);
}

/* GET of one named core/v1 object of ns ("podtemplates", "secrets"). */
static int core_get(struct kube_client *c, const char *ns, const char *resource, const char *name,
                    long *status, struct json **out, struct err **err)
{
	cleanup_free char *esc = url_query_escape(name);
	cleanup_free char *path = xasprintf(CORE "%s/%s/%s", ns, resource, esc);
	return kube_request(c, "GET", path, NULL, NULL, 0, status, out, err);
}

int kube_api_podtemplate_get(struct kube_client *c, const char *ns, const char *name, long *status,
                             struct json **out, struct err **err)
{
	return core_get(c, ns, "podtemplates", name, status, out, err);
}

int kube_api_secret_get(struct kube_client *c, const char *ns, const char *name, long *status,
                        struct json **out, struct err **err)
{
	return core_get(c, ns, "secrets", name, status, out, err);
}

int kube_api_networkpolicy_list(struct kube_client *c, const char *ns, struct json **out,
                                struct err **err)
{
	cleanup_free char *path =
	        xasprintf("/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies", ns);
	return kube_request(c, "GET", path, NULL, NULL, 0, NULL, out, err);
}

int kube_api_access_review(struct kube_client *c, const char *ns, const struct kube_api_access *a,
                           bool *allowed, struct err **err)
{
	cleanup_buf struct buf body;
	buf_init(&body, 0);
	struct jw w;
	jw_init(&w, &body);
	jw_obj_begin(&w);
	jw_kv_str(&w, "apiVersion", "authorization.k8s.io/v1");
	jw_kv_str(&w, "kind", "SelfSubjectAccessReview");
	jw_key(&w, "spec");
	jw_obj_begin(&w);
	jw_key(&w, "resourceAttributes");
	jw_obj_begin(&w);
	jw_kv_str(&w, "namespace", ns);
	jw_kv_str(&w, "verb", a->verb);
	if (a->group && *a->group)
		jw_kv_str(&w, "group", a->group);
	jw_kv_str(&w, "resource", a->resource);
	if (a->subresource && *a->subresource)
		jw_kv_str(&w, "subresource", a->subresource);
	jw_obj_end(&w);
	jw_obj_end(&w);
	jw_obj_end(&w);
	cleanup_json struct json *resp = NULL;
	if (kube_request(c, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
	                 "application/json", body.data, body.len, NULL, &resp, err) < 0)
		return -1;
	*allowed = false;
	json_bool(json_path(resp, "status.allowed"), allowed);
	return 0;
}

int kube_api_version_get(struct kube_client *c, struct kube_version *out, struct err **err)
{
	cleanup_json struct json *doc = NULL;
	if (kube_request(c, "GET", "/version", NULL, NULL, 0, NULL, &doc, err) < 0)
		return -1;
	return kube_version_decode(doc, out, err);
}

bool kube_api_quota_full(const struct err *e)
{
	return e && e->code == ERR_API && e->cause == ERR_CAUSE_QUOTA;
}

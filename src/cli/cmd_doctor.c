/* cmd_doctor.c — `krmpod doctor`: preflight checks of the cluster side, printed as a report
 * on stdout: settings, credentials, the server's Kubernetes version (1.30 or newer, for the
 * v5.channel.k8s.io stream protocol), the permissions krmpod needs in the functions
 * namespace (SelfSubjectAccessReview), whether NetworkPolicies really isolate function pods
 * (without them the krmpod.dev/network labels isolate nothing), and the PodTemplate. Exits 0
 * when nothing failed, 1 otherwise. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/json.h"
#include "base/signals.h"
#include "base/xalloc.h"
#include "cli/cmd.h"
#include "config/settings.h"
#include "fn/fn_config.h"
#include "kube/kube_http.h"
#include "kube/kube_version.h"
#include "kube/kubeconfig.h"
#include "pod/netpol.h"
#include "pod/pod_spec.h"
#include "pod/pod_template.h"

extern char **environ;

struct report {
	unsigned failed, warned;
};

static void line(struct report *r, const char *tag, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void line(struct report *r, const char *tag, const char *fmt, ...)
{
	if (strcmp(tag, "FAIL") == 0)
		r->failed++;
	else if (strcmp(tag, "WARN") == 0)
		r->warned++;
	va_list ap;
	va_start(ap, fmt);
	printf("[%-4s] ", tag);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
}

/* The server must speak v5.channel.k8s.io (kube_version.h). */
static void check_version(struct report *r, struct kube_client *c)
{
	struct kube_version v;
	cleanup_err struct err *e = NULL;
	if (kube_version_get(c, &v, &e) < 0) {
		line(r, "WARN",
		     "server version: cannot read it (%s); krmpod needs Kubernetes %d.%d "
		     "or newer",
		     e->msg, KUBE_VERSION_MIN_MAJOR, KUBE_VERSION_MIN_MINOR);
		return;
	}
	if (kube_version_supported(&v))
		line(r, "ok", "server version: Kubernetes %s (krmpod needs %d.%d or newer)", v.text,
		     KUBE_VERSION_MIN_MAJOR, KUBE_VERSION_MIN_MINOR);
	else
		line(r, "FAIL",
		     "server version: Kubernetes %s is too old: krmpod needs %d.%d or newer, the "
		     "first release with the v5.channel.k8s.io stream protocol (it can close a "
		     "function's stdin); every function would fail at its attach: upgrade the "
		     "cluster",
		     v.text, KUBE_VERSION_MIN_MAJOR, KUBE_VERSION_MIN_MINOR);
}

struct perm {
	const char *resource, *subresource, *verb;
};

static void check_permissions(struct report *r, struct kube_client *c, const char *ns,
                              const struct settings *s)
{
	static const struct perm perms[] = {
	        {"pods", "", "create"},       {"pods", "", "get"},    {"pods", "", "list"},
	        {"pods", "", "watch"},        {"pods", "", "delete"}, {"pods", "attach", "get"},
	        {"pods", "attach", "create"}, {"pods", "log", "get"}, {"podtemplates", "", "get"},
	        {"events", "", "watch"},
	};
	for (size_t i = 0; i < sizeof(perms) / sizeof(perms[0]); i++) {
		const struct perm *p = &perms[i];
		bool optional = strcmp(p->resource, "podtemplates") == 0;
		if (optional && s->pod_template == NULL)
			continue;
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
		jw_kv_str(&w, "verb", p->verb);
		jw_kv_str(&w, "resource", p->resource);
		if (*p->subresource)
			jw_kv_str(&w, "subresource", p->subresource);
		jw_obj_end(&w);
		jw_obj_end(&w);
		jw_obj_end(&w);
		cleanup_json struct json *resp = NULL;
		cleanup_err struct err *e = NULL;
		char what[96];
		snprintf(what, sizeof(what), "%s%s%s %s", p->resource, *p->subresource ? "/" : "",
		         p->subresource, p->verb);
		if (kube_request(c, "POST",
		                 "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
		                 "application/json", body.data, body.len, NULL, &resp, &e) < 0) {
			line(r, "WARN", "permission %s in %s: cannot check: %s", what, ns, e->msg);
			continue;
		}
		bool allowed = false;
		json_bool(json_path(resp, "status.allowed"), &allowed);
		if (allowed)
			line(r, "ok", "permission %s in namespace %s", what, ns);
		else if (strcmp(p->resource, "events") == 0)
			line(r, "WARN",
			     "permission %s in namespace %s is missing: functions still run, but "
			     "krmpod attaches only when the pod status says the container runs, up "
			     "to a second later per function; add it to the Role "
			     "(manifests/functions/rbac.yaml)",
			     what, ns);
		else
			line(r, "FAIL",
			     "permission %s in namespace %s is missing: add it to the Role "
			     "(manifests/functions/rbac.yaml)",
			     what, ns);
	}
}

/* The labels a function pod carries (pod_spec.h), for one network mode. */
static size_t pod_labels(const struct settings *s, const char *network, struct label *out,
                         size_t max)
{
	size_t n = 0;
	const struct json *tl = json_path(s->template, "metadata.labels");
	for (size_t i = 0; i < json_len(tl) && n < max; i++)
		out[n++] = (struct label){(char *)json_key_at(tl, i),
		                          (char *)json_str(json_at(tl, i))};
	for (size_t i = 0; i < s->n_labels && n < max; i++)
		out[n++] = s->labels[i];
	if (n + 3 <= max) {
		out[n++] = (struct label){POD_LABEL_MANAGED_BY, "krmpod"};
		out[n++] = (struct label){POD_LABEL_FUNCTION, "true"};
		out[n++] = (struct label){POD_LABEL_NETWORK, (char *)network};
	}
	return n;
}

static void check_network_policies(struct report *r, struct kube_client *c, const char *ns,
                                   const struct settings *s)
{
	cleanup_free char *path =
	        xasprintf("/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies", ns);
	cleanup_json struct json *list = NULL;
	cleanup_err struct err *e = NULL;
	if (kube_request(c, "GET", path, NULL, NULL, 0, NULL, &list, &e) < 0) {
		line(r, "FAIL",
		     "NetworkPolicies in %s: cannot list them (%s): without that krmpod "
		     "cannot tell whether function pods are isolated; grant networkpolicies list "
		     "(networking.k8s.io) in the Role",
		     ns, e->msg);
		return;
	}
	size_t max = s->n_labels + json_len(json_path(s->template, "metadata.labels")) + 3;
	struct label *labels = xcalloc(max, sizeof(*labels));
	cleanup_buf struct buf invalid;
	buf_init(&invalid, 0);
	static const char *modes[] = {"none", "granted"};
	for (size_t m = 0; m < 2; m++) {
		size_t n = pod_labels(s, modes[m], labels, max);
		struct netpol_verdict v;
		netpol_evaluate(list, labels, n, &v, m == 0 ? &invalid : NULL);
		bool granted = m == 1;
		if (v.selecting.len == 0) {
			line(r, "FAIL",
			     "no NetworkPolicy in %s selects function pods with %s=%s: their "
			     "network isolation is only on paper (apply "
			     "manifests/functions/networkpolicies.yaml; the CNI must enforce "
			     "NetworkPolicies)",
			     ns, POD_LABEL_NETWORK, modes[m]);
		} else if (!granted) {
			if (v.egress_isolated && v.egress_rules == 0 && v.ingress_isolated &&
			    v.ingress_rules == 0)
				line(r, "ok",
				     "function pods with %s=none: no ingress, no egress (%s)",
				     POD_LABEL_NETWORK, v.selecting.data);
			else
				line(r, "FAIL",
				     "function pods with %s=none are not fully isolated: "
				     "ingress %s, egress %s (policies: %s)",
				     POD_LABEL_NETWORK,
				     !v.ingress_isolated ? "open"
				     : v.ingress_rules   ? "partly allowed"
				                         : "closed",
				     !v.egress_isolated ? "open"
				     : v.egress_rules   ? "partly allowed"
				                        : "closed",
				     v.selecting.data);
		} else if (!s->allow_network) {
			line(r, "ok",
			     "functions that ask for network are refused (KRMPOD_ALLOW_NETWORK "
			     "is false); policies for %s=granted: %s",
			     POD_LABEL_NETWORK, v.selecting.data);
		} else if (v.egress_isolated && v.egress_rules == 0) {
			line(r, "WARN",
			     "KRMPOD_ALLOW_NETWORK is true but pods with %s=granted get no "
			     "egress (policies: %s): add an egress allowance",
			     POD_LABEL_NETWORK, v.selecting.data);
		} else {
			line(r, "ok", "function pods with %s=granted: egress %s (policies: %s)",
			     POD_LABEL_NETWORK,
			     v.egress_isolated ? "by the allowance's rules" : "open",
			     v.selecting.data);
		}
		netpol_verdict_clear(&v);
	}
	if (invalid.len)
		line(r, "WARN", "NetworkPolicies with selectors krmpod cannot evaluate: %s",
		     invalid.data);
	free(labels);
}

int cmd_doctor(int argc, char **argv, int *exit_code, struct err **err)
{
	if (argc > 1)
		return err_set(err, ERR_USAGE, "krmpod doctor takes no arguments (got %s)",
		               argv[1]);
	struct report r = {0};
	struct kube_config *cfg = NULL;
	if (kube_config_load(&cfg, err) < 0)
		return -1;
	struct settings s;
	if (fn_config_base(environ, cfg, &s, err) < 0) {
		kube_config_free(cfg);
		return -1;
	}
	line(&r, "ok", "settings (KRMPOD_*)");
	const char *ns = s.namespace;
	line(&r, "ok", "credentials: %s; server %s; functions namespace %s", cfg->source,
	     cfg->server, ns);
	cleanup_kube_client struct kube_client *c = NULL;
	if (kube_client_new(cfg, &c, err) < 0) {
		kube_config_free(cfg);
		settings_clear(&s);
		return -1;
	}
	kube_client_set_cancel(c, &signals_cancel);
	check_version(&r, c);
	if (s.pod_template) {
		cleanup_err struct err *e = NULL;
		if (pod_template_load(&s, cfg, ns, &e) < 0)
			line(&r, "FAIL", "%s", e->msg);
		else
			line(&r, "ok", "pod template %s", s.pod_template);
	}
	if (s.helper_image)
		line(&r, "ok", "mounts: helper image %s (KRMPOD_HELPER_IMAGE)", s.helper_image);
	else
		line(&r, "WARN",
		     "KRMPOD_HELPER_IMAGE is not set: functions with mounts will be "
		     "refused (set it to the sidecar's own image)");
	check_permissions(&r, c, ns, &s);
	check_network_policies(&r, c, ns, &s);
	printf("doctor: %u failed, %u warnings\n", r.failed, r.warned);
	kube_config_free(cfg);
	settings_clear(&s);
	*exit_code = r.failed ? 1 : 0;
	return 0;
}

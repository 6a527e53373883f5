/* doctor.c — see doctor.h. `krmpod doctor`: preflight checks of the cluster side,
 * printed as a report: settings, credentials, the server's Kubernetes version (1.30 or newer, for the
 * v5.channel.k8s.io stream protocol), the permissions krmpod needs in the functions
 * namespace (SelfSubjectAccessReview), whether NetworkPolicies really isolate function pods
 * (without them the krmpod.dev/network labels isolate nothing), and the PodTemplate. Exits 0
 * when nothing failed, 1 otherwise. */
#include "ops/doctor.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "admit/trust.h"
#include "agent/agent_gate.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/signals.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "catalog/catalog_store.h"
#include "catalog/image_policy.h"
#include "config/kubeconfig.h"
#include "config/settings.h"
#include "fn/fn_config.h"
#include "fn/fn_run.h"
#include "kube/kube_api.h"
#include "kube/kube_http.h"
#include "kube/kube_version.h"
#include "pod/netpol.h"
#include "pod/pod_manifest.h"
#include "sign/sig_policy.h"

struct report {
	FILE *out;
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
	fprintf(r->out, "[%-4s] ", tag);
	vfprintf(r->out, fmt, ap);
	fputc('\n', r->out);
	va_end(ap);
}

/* The server must speak v5.channel.k8s.io (kube_version.h). */
static void check_version(struct report *r, struct kube_client *c)
{
	struct kube_version v;
	cleanup_err struct err *e = NULL;
	if (kube_api_version_get(c, &v, &e) < 0) {
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

static void check_permissions(struct report *r, struct kube_client *c, const char *ns,
                              const struct settings *s)
{
	static const struct kube_api_access perms[] = {
	        {"create", "", "pods", ""},       {"get", "", "pods", ""},
	        {"list", "", "pods", ""},         {"watch", "", "pods", ""},
	        {"delete", "", "pods", ""},       {"get", "", "pods", "attach"},
	        {"create", "", "pods", "attach"}, {"get", "", "pods", "log"},
	        {"get", "", "podtemplates", ""},  {"watch", "", "events", ""},
	        {"get", "", "pods", "exec"},      {"create", "", "pods", "exec"},
	        {"patch", "", "pods", ""},
	};
	for (size_t i = 0; i < sizeof(perms) / sizeof(perms[0]); i++) {
		const struct kube_api_access *p = &perms[i];
		/* what only some settings use: a PodTemplate, exec mode, the warm pool */
		if ((strcmp(p->resource, "podtemplates") == 0 && s->pod_template == NULL) ||
		    (strcmp(p->subresource, "exec") == 0 &&
		     (s->mode == FN_MODE_ATTACH || s->helper_image == NULL)) ||
		    (strcmp(p->verb, "patch") == 0 && !s->warm_pool))
			continue;
		cleanup_err struct err *e = NULL;
		char what[96];
		snprintf(what, sizeof(what), "%s%s%s %s", p->resource, *p->subresource ? "/" : "",
		         p->subresource, p->verb);
		bool allowed = false;
		if (kube_api_access_review(c, ns, p, &allowed, &e) < 0) {
			line(r, "WARN", "permission %s in %s: cannot check: %s", what, ns, e->msg);
			continue;
		}
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

/* The report line for function pods in one network mode, given the verdict. */
static void report_mode(struct report *r, const char *ns, const struct settings *s,
                        const char *mode, const struct netpol_verdict *v)
{
	bool granted = strcmp(mode, "granted") == 0;
	if (v->selecting.len == 0) {
		line(r, "FAIL",
		     "no NetworkPolicy in %s selects function pods with %s=%s: their network "
		     "isolation is only on paper (apply manifests/functions/networkpolicies.yaml; "
		     "the CNI must enforce NetworkPolicies)",
		     ns, POD_LABEL_NETWORK, mode);
	} else if (!granted) {
		if (v->egress_isolated && v->egress_rules == 0 && v->ingress_isolated &&
		    v->ingress_rules == 0)
			line(r, "ok", "function pods with %s=none: no ingress, no egress (%s)",
			     POD_LABEL_NETWORK, v->selecting.data);
		else
			line(r, "FAIL",
			     "function pods with %s=none are not fully isolated: ingress %s, "
			     "egress "
			     "%s (policies: %s)",
			     POD_LABEL_NETWORK,
			     !v->ingress_isolated ? "open"
			     : v->ingress_rules   ? "partly allowed"
			                          : "closed",
			     !v->egress_isolated ? "open"
			     : v->egress_rules   ? "partly allowed"
			                         : "closed",
			     v->selecting.data);
	} else if (!s->allow_network) {
		line(r, "ok",
		     "functions that ask for network are refused (KRMPOD_ALLOW_NETWORK is false); "
		     "policies for %s=granted: %s",
		     POD_LABEL_NETWORK, v->selecting.data);
	} else if (v->egress_isolated && v->egress_rules == 0) {
		line(r, "WARN",
		     "KRMPOD_ALLOW_NETWORK is true but pods with %s=granted get no egress "
		     "(policies: %s): add an egress allowance",
		     POD_LABEL_NETWORK, v->selecting.data);
	} else {
		line(r, "ok", "function pods with %s=granted: egress %s (policies: %s)",
		     POD_LABEL_NETWORK, v->egress_isolated ? "by the allowance's rules" : "open",
		     v->selecting.data);
	}
}

static void check_network_policies(struct report *r, struct kube_client *c, const char *ns,
                                   const struct settings *s)
{
	cleanup_json struct json *list = NULL;
	cleanup_err struct err *e = NULL;
	if (kube_api_networkpolicy_list(c, ns, &list, &e) < 0) {
		line(r, "FAIL",
		     "NetworkPolicies in %s: cannot list them (%s): without that krmpod "
		     "cannot tell whether function pods are isolated; grant networkpolicies list "
		     "(networking.k8s.io) in the Role",
		     ns, e->msg);
		return;
	}
	cleanup_buf struct buf invalid;
	buf_init(&invalid, 0);
	static const char *modes[] = {"none", "granted"};
	for (size_t m = 0; m < 2; m++) {
		cleanup_free struct label *labels = NULL;
		size_t n = pod_spec_labels(s, m == 1, &labels);
		struct netpol_verdict v;
		netpol_evaluate(list, labels, n, &v, m == 0 ? &invalid : NULL);
		report_mode(r, ns, s, modes[m], &v);
		netpol_verdict_clear(&v);
	}
	if (invalid.len)
		line(r, "WARN", "NetworkPolicies with selectors krmpod cannot evaluate: %s",
		     invalid.data);
}

/* The admin's catalogs (fetched, pins checked) and the image policy. */
static void check_catalogs(struct report *r, const struct settings *s, atomic_int *cancel)
{
	struct catalog_store *st = NULL;
	catalog_store_open(s, cancel, now_ms() + 30000, &st);
	size_t n = s->n_trusted_catalogs + s->n_default_catalogs;
	for (size_t i = 0; i < n; i++) {
		bool trusted = i < s->n_trusted_catalogs;
		const struct catalog_ref *ref =
		        trusted ? &s->trusted_catalogs[i]
		                : &s->default_catalogs[i - s->n_trusted_catalogs];
		const char *setting =
		        trusted ? "KRMPOD_TRUSTED_CATALOGS" : "KRMPOD_DEFAULT_CATALOGS";
		const struct catalog *c = NULL;
		cleanup_err struct err *e = NULL;
		if (catalog_store_load(st, ref, &c, &e) < 0)
			line(r, "FAIL", "catalog %s (%s): %s", ref->text, setting, e->msg);
		else
			line(r, "ok", "catalog %s (%s): %s, %zu functions, %s%s", ref->text,
			     setting, c->name, c->n_fns, c->digest,
			     ref->pin ? " (the pin matches)" : "");
	}
	static const char *const modes[] = {"any", "catalog", "allowlist"};
	if (s->image_policy == IMAGE_POLICY_ANY && !s->require_digest)
		line(r, n ? "ok" : "WARN",
		     "image policy: any image may run (KRMPOD_IMAGE_POLICY=any)%s",
		     n ? "" : "; set KRMPOD_IMAGE_POLICY=catalog or allowlist to choose");
	else
		line(r, "ok", "image policy: %s%s", modes[s->image_policy],
		     s->require_digest ? ", images by digest only (KRMPOD_REQUIRE_DIGEST)" : "");
	catalog_store_free(st);
}

/* The signature policy (docs/signatures.md): whether it can be read, what it requires, and
 * for every admin-catalog function a requirement covers, whether a valid signature is
 * found now. */
static void check_signatures(struct report *r, const struct settings *s, atomic_int *cancel)
{
	if (s->signature_policy == NULL) {
		line(r, "ok",
		     "signature policy: none (KRMPOD_SIGNATURE_POLICY): no function needs a "
		     "signature");
		return;
	}
	struct sig_policy sp;
	cleanup_err struct err *e = NULL;
	if (sig_policy_load(s->signature_policy, "KRMPOD_SIGNATURE_POLICY", &sp, &e) < 0) {
		line(r, "FAIL", "%s (every render fails until it can be read)", e->msg);
		return;
	}
	if (sp.n_rules == 0)
		line(r, "ok", "signature policy %s: requires no signature", s->signature_policy);
	for (size_t i = 0; i < sp.n_rules; i++) {
		cleanup_buf struct buf keys;
		buf_init(&keys, 0);
		sig_rule_key_names(&sp, &sp.rules[i], " or ", &keys);
		line(r, "ok", "signature policy %s: %s needs a signature by %s",
		     s->signature_policy, sp.rules[i].name, keys.data);
	}
	struct policy p = {0};
	if (sp.n_rules && catalog_store_policy(s, cancel, true, &p, &e) < 0)
		line(r, "FAIL", "signatures of the admin's catalogs: not checked: %s", e->msg);
	for (size_t i = 0; i < p.n_images; i++) {
		struct fn_trust_view v;
		const char *catalogs[FN_TRUST_MAX_CATALOGS];
		size_t n =
		        policy_catalogs_of(&p, p.images[i].image, catalogs, FN_TRUST_MAX_CATALOGS);
		fn_trust_view(s, &sp, p.images[i].image, catalogs, n, &v);
		if (v.required && v.valid)
			line(r, "ok", "signature of %s (%s): by %s, valid: %s", p.images[i].image,
			     p.images[i].origin, v.keys, v.detail);
		else if (v.required)
			line(r, "FAIL", "%s (%s) needs a signature by %s and will be refused: %s",
			     p.images[i].image, p.images[i].origin, v.keys, v.detail);
		fn_trust_view_clear(&v);
	}
	policy_clear(&p);
	sig_policy_clear(&sp);
}

/* What a memfd holds (at most LIMIT_DOCTOR_PROBE_OUTPUT bytes), NUL-terminated. */
static char *memfd_text(int fd)
{
	char *text = xcalloc(1, LIMIT_DOCTOR_PROBE_OUTPUT + 1);
	ssize_t n = pread(fd, text, LIMIT_DOCTOR_PROBE_OUTPUT, 0);
	if (n < 0)
		n = 0;
	text[n] = '\0';
	return text;
}

/* --probe: a pod as a function without a grant gets it (the same spec, labels and namespace,
 * no gate of its own), running `krmpod net-gate` from the helper image: its verdict is what
 * the policies do, seen from inside the pod. */
static void check_enforcement(struct report *r, struct kube_config *cfg, const struct settings *s,
                              atomic_int *cancel)
{
	if (s->helper_image == NULL) {
		line(r, "WARN",
		     "NetworkPolicy enforcement: cannot tell (the probe pod runs "
		     "KRMPOD_HELPER_IMAGE, which is not set)");
		return;
	}
	char ms[32];
	snprintf(ms, sizeof(ms), "%d", FN_DOCTOR_PROBE_MS);
	char *args[] = {"net-gate", ms, NULL};
	struct fn_request req = {.image = s->helper_image,
	                         .args = args,
	                         .n_args = 2,
	                         .network = FN_NETWORK_NONE,
	                         .run_as_user = 65534,
	                         .run_as_group = 65534,
	                         .gate_probe = true};
	struct settings probe = *s; /* shallow: only read, never cleared */
	probe.net_gate_ms = 0;
	cleanup_close int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	cleanup_close int out = memfd_create("krmpod-doctor-out", MFD_CLOEXEC);
	cleanup_close int errfd = memfd_create("krmpod-doctor-err", MFD_CLOEXEC);
	if (in < 0 || out < 0 || errfd < 0) {
		line(r, "WARN", "NetworkPolicy enforcement: cannot tell (no probe: %s)",
		     strerror(errno));
		return;
	}
	struct fn_io io = {in, out, errfd, cancel};
	int code = -1;
	cleanup_err struct err *e = NULL;
	int64_t t0 = now_ms();
	int rc = fn_run(cfg, &probe, &req, &io, &code, &e);
	cleanup_free char *said = memfd_text(errfd);
	said[strcspn(said, "\n")] = '\0';
	if (rc < 0)
		line(r, "WARN",
		     "NetworkPolicy enforcement: cannot tell: the probe pod (%s net-gate) did not "
		     "run: %s",
		     s->helper_image, e->msg);
	else if (code == AGENT_GATE_EXIT_UNKNOWN)
		line(r, "WARN", "NetworkPolicy enforcement: cannot tell: %s",
		     said[0] ? said : "the probe could not check");
	else if (code == AGENT_GATE_EXIT_ISOLATED)
		line(r, "ok",
		     "NetworkPolicy enforcement: a pod without a grant was isolated, seen from "
		     "inside it (%s; the probe took %lld ms)",
		     said[0] ? said : "krmpod net-gate", (long long)(now_ms() - t0));
	else
		line(r, "FAIL",
		     "NetworkPolicy enforcement: a pod without a grant was NOT isolated: %s",
		     said[0] ? said : "the probe exited non-zero without a message");
}

/* Where a pull Secret's name comes from, for the report. */
static const char *pull_secret_source(const struct settings *s, const char *name)
{
	bool setting = false;
	for (size_t i = 0; i < s->n_pull_secrets && !setting; i++)
		setting = strcmp(s->pull_secrets[i], name) == 0;
	return setting ? "KRMPOD_IMAGE_PULL_SECRETS" : "the PodTemplate's imagePullSecrets";
}

/* The report line for a pull Secret doctor could not read (status: the HTTP status). */
static void pull_secret_unread(struct report *r, const char *name, const char *from, const char *ns,
                               long status, const struct err *e)
{
	if (status == 404)
		line(r, "FAIL",
		     "image pull Secret %s (%s) does not exist in namespace %s: function pods "
		     "cannot pull with it; create it (kubectl -n %s create secret docker-registry "
		     "%s --docker-server=REGISTRY --docker-username=USER --docker-password=...) or "
		     "remove it from %s",
		     name, from, ns, ns, name, from);
	else if (status == 403)
		line(r, "WARN",
		     "image pull Secret %s (%s) in namespace %s: cannot check: reading it needs "
		     "secrets get, which krmpod's Role does not grant (a Role rule for secrets get "
		     "with resourceNames [%s] in %s lets doctor check it)",
		     name, from, ns, name, ns);
	else
		line(r, "WARN", "image pull Secret %s (%s) in namespace %s: cannot check: %s", name,
		     from, ns, e ? e->msg : "?");
}

/* Each Secret function pods pull with (pod_spec_pull_secrets) exists in the functions
 * namespace and is a kubernetes.io/dockerconfigjson; its data is never printed. Reading a
 * Secret needs `secrets get`, which the shipped Role does not grant: a 403 is a warning that
 * says which rule would let doctor check. */
static void check_pull_secrets(struct report *r, struct kube_client *c, const char *ns,
                               const struct settings *s)
{
	static const char *const want = "kubernetes.io/dockerconfigjson";
	cleanup_free const char **names = NULL;
	size_t n = pod_spec_pull_secrets(s, &names);
	for (size_t i = 0; i < n; i++) {
		const char *from = pull_secret_source(s, names[i]);
		cleanup_json struct json *secret = NULL;
		cleanup_err struct err *e = NULL;
		long status = 0;
		if (kube_api_secret_get(c, ns, names[i], &status, &secret, &e) < 0) {
			pull_secret_unread(r, names[i], from, ns, status, e);
			continue;
		}
		const char *type = json_str(json_get(secret, "type"));
		if (type && strcmp(type, want) == 0)
			line(r, "ok", "image pull Secret %s in namespace %s (%s): %s", names[i], ns,
			     from, want);
		else
			line(r, "FAIL",
			     "image pull Secret %s (%s) in namespace %s is of type %s, not %s: "
			     "function pods pull with dockerconfigjson Secrets; create it again "
			     "with kubectl -n %s create secret docker-registry %s",
			     names[i], from, ns, type ? type : "(none)", want, ns, names[i]);
	}
}

/* The checks that need the server, in the order a reader fixes them. */
static void check_cluster(struct report *r, struct kube_config *cfg, struct kube_client *c,
                          struct settings *s, bool probe, atomic_int *cancel)
{
	const char *ns = s->namespace;
	check_version(r, c);
	if (s->pod_template) {
		cleanup_err struct err *e = NULL;
		if (fn_config_load_template(s, cfg, &e) < 0)
			line(r, "FAIL", "%s", e->msg);
		else
			line(r, "ok", "pod template %s", s->pod_template);
	}
	if (s->helper_image)
		line(r, "ok", "mounts: helper image %s (KRMPOD_HELPER_IMAGE)", s->helper_image);
	else
		line(r, "WARN",
		     "KRMPOD_HELPER_IMAGE is not set: functions with mounts will be "
		     "refused (set it to the sidecar's own image)");
	if (s->mode == FN_MODE_ATTACH)
		line(r, "ok", "mode: attach (KRMPOD_MODE): every function in attach mode");
	else if (s->helper_image == NULL)
		line(r, "WARN",
		     "mode: auto without KRMPOD_HELPER_IMAGE: every function runs in attach mode "
		     "(set KRMPOD_HELPER_IMAGE for exec mode, docs/internals/exec-mode.md)");
	else
		line(r, "ok",
		     "mode: %s (KRMPOD_MODE): exec mode for every function whose image config "
		     "krmpod can read from its registry, attach mode for the rest",
		     s->mode == FN_MODE_AUTO ? "auto" : "exec");
	check_permissions(r, c, ns, s);
	check_pull_secrets(r, c, ns, s);
	check_network_policies(r, c, ns, s);
	if (probe)
		check_enforcement(r, cfg, s, cancel);
	else
		line(r, "WARN",
		     "NetworkPolicy enforcement: not checked: the policies above are what the API "
		     "holds, not what the network does (krmpod doctor --probe runs a pod that "
		     "checks from inside)");
	if (s->net_gate_ms > 0)
		line(r, "ok",
		     "network gate: functions start once their pod is isolated, waiting at most "
		     "%lld ms (KRMPOD_NETWORK_GATE)",
		     (long long)s->net_gate_ms);
	else
		line(r, "WARN",
		     "network gate: off (KRMPOD_NETWORK_GATE): policy enforcement is asynchronous, "
		     "and a function may reach the network in its pod's first moment "
		     "(docs/network.md, \"The gate\")");
}

int fn_doctor(char *const *envp, FILE *out, bool probe, atomic_int *cancel, unsigned *failed,
              struct err **err)
{
	struct report r = {.out = out};
	struct settings s;
	struct kube_config *cfg = NULL;
	if (fn_config_load(envp, &s, &cfg, err) < 0)
		return -1;
	line(&r, "ok", "settings (KRMPOD_*)");
	check_catalogs(&r, &s, cancel);
	check_signatures(&r, &s, cancel);
	line(&r, "ok", "credentials: %s; server %s; functions namespace %s", cfg->source,
	     cfg->server, s.namespace);
	struct kube_client *c = NULL;
	int rc = kube_client_new(cfg, &c, err);
	if (rc == 0) {
		kube_client_set_cancel(c, cancel);
		check_cluster(&r, cfg, c, &s, probe, cancel);
		fprintf(out, "doctor: %u failed, %u warnings\n", r.failed, r.warned);
		*failed = r.failed;
	}
	kube_client_free(c);
	kube_config_free(cfg);
	settings_clear(&s);
	return rc;
}

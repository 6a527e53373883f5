/* pod_manifest.c — see pod_manifest.h. */
#include "pod/pod_manifest.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/json.h"
#include "base/xalloc.h"
#include "kube/kube_api.h"
#include "pod/pod_agent.h"
#include "pod/pod_container.h"
#include "pod/pod_mounts.h"
#include "pod/pod_names.h"
#include "pod/pod_template.h"

char *pod_spec_generate_name(const char *image)
{
	const char *base = strrchr(image, '/');
	base = base ? base + 1 : image;
	size_t n = strcspn(base, ":@");
	struct buf b;
	buf_init(&b, 0);
	buf_puts(&b, "krmpod-");
	/* 63 (name limit) - 5 (random suffix) - 7 ("krmpod-") - 1 ('-') = 50 */
	size_t kept = 0;
	bool last_dash = true;
	for (size_t i = 0; i < n && kept < 50; i++) {
		unsigned char c = (unsigned char)base[i];
		if (isalnum(c)) {
			buf_putc(&b, (char)tolower(c));
			last_dash = false;
			kept++;
		} else if (!last_dash) {
			buf_putc(&b, '-');
			last_dash = true;
			kept++;
		}
	}
	if (!last_dash)
		buf_putc(&b, '-');
	return buf_steal(&b, NULL);
}

static const char *pull_policy(enum fn_pull p)
{
	switch (p) {
	case FN_PULL_ALWAYS:
		return "Always";
	case FN_PULL_MISSING:
		return "IfNotPresent";
	case FN_PULL_NEVER:
		return "Never";
	case FN_PULL_DEFAULT:
		break;
	}
	return NULL;
}

size_t pod_spec_labels(const struct settings *s, bool network_granted, struct label **out)
{
	const struct json *tl = json_path(s->template, "metadata.labels");
	struct label *l = xcalloc(json_len(tl) + s->n_labels + 3, sizeof(*l));
	size_t n = 0;
	/* The PodTemplate's labels first (pod_template_check refused krmpod's own), unless
	 * KRMPOD_EXTRA_LABELS sets the same key: strict field validation refuses duplicates. */
	for (size_t i = 0; i < json_len(tl); i++) {
		const char *k = json_key_at(tl, i);
		bool dup = false;
		for (size_t j = 0; j < s->n_labels && !dup; j++)
			dup = strcmp(s->labels[j].key, k) == 0;
		if (!dup)
			l[n++] = (struct label){(char *)k, (char *)json_str(json_at(tl, i))};
	}
	for (size_t i = 0; i < s->n_labels; i++)
		l[n++] = s->labels[i];
	l[n++] = (struct label){POD_LABEL_MANAGED_BY, "krmpod"};
	l[n++] = (struct label){POD_LABEL_FUNCTION, "true"};
	l[n++] = (struct label){POD_LABEL_NETWORK, network_granted ? "granted" : "none"};
	*out = l;
	return n;
}

static void write_pool_meta(struct jw *w, const struct pod_pool_meta *m, bool labels)
{
	if (m == NULL)
		return;
	if (labels) {
		jw_kv_str(w, POD_LABEL_POOL, m->key);
		jw_kv_str(w, POD_LABEL_POOL_STATE, m->holder ? "busy" : "idle");
		return;
	}
	char t[32];
	if (m->holder) {
		jw_kv_str(w, POD_ANNOTATION_LEASE_HOLDER, m->holder);
		snprintf(t, sizeof(t), "%lld", m->lease_until_ms);
		jw_kv_str(w, POD_ANNOTATION_LEASE_UNTIL, t);
	} else {
		snprintf(t, sizeof(t), "%lld", m->idle_since_ms);
		jw_kv_str(w, POD_ANNOTATION_IDLE_SINCE, t);
	}
	if (m->spec_sha256)
		jw_kv_str(w, POD_ANNOTATION_SPEC_SHA256, m->spec_sha256);
}

static void write_metadata(struct jw *w, const struct fn_request *req, const struct settings *s,
                           const struct pod_pool_meta *pool, bool create_id)
{
	jw_key(w, "metadata");
	jw_obj_begin(w);
	char *gen = pod_spec_generate_name(req->image);
	jw_kv_str(w, "generateName", gen);
	free(gen);
	jw_key(w, "labels");
	jw_obj_begin(w);
	struct label *labels = NULL;
	size_t n = pod_spec_labels(s, req->network == FN_NETWORK_HOST, &labels);
	for (size_t i = 0; i < n; i++)
		jw_kv_str(w, labels[i].key, labels[i].value);
	free(labels);
	/* random per body: a create whose answer was lost is found by it (kube_api.h) */
	if (create_id) {
		uint64_t r = 0;
		if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
			r = (uint64_t)(uintptr_t)&r ^ (uint64_t)rand();
		char id[17];
		snprintf(id, sizeof(id), "%016llx", (unsigned long long)r);
		jw_kv_str(w, KUBE_LABEL_CREATE_ID, id);
	}
	write_pool_meta(w, pool, true);
	jw_obj_end(w);
	jw_key(w, "annotations");
	jw_obj_begin(w);
	const struct json *ta = json_path(s->template, "metadata.annotations");
	for (size_t i = 0; i < json_len(ta); i++)
		if (strcmp(json_key_at(ta, i), POD_ANNOTATION_IMAGE) != 0 &&
		    json_scalar(json_at(ta, i)))
			jw_kv_str(w, json_key_at(ta, i), json_scalar(json_at(ta, i)));
	jw_kv_str(w, POD_ANNOTATION_IMAGE, req->image);
	write_pool_meta(w, pool, false);
	/* A pool pod is shared by every repo-server replica: it belongs to none of them. (Not in
	 * the body a pool key hashes, create_id false: the key is the same for every replica.) */
	if (s->owner_pod && pool == NULL && create_id) {
		char owner[512];
		snprintf(owner, sizeof(owner), "%s%s%s",
		         s->owner_namespace ? s->owner_namespace : "",
		         s->owner_namespace ? "/" : "", s->owner_pod);
		jw_kv_str(w, POD_ANNOTATION_OWNER, owner);
	}
	jw_obj_end(w);
	/* An ownerReference resolves in the pod's own namespace only (settings.h). */
	bool same_ns = s->owner_namespace == NULL || s->namespace == NULL ||
	               strcmp(s->owner_namespace, s->namespace) == 0;
	if (s->owner_pod && pool == NULL && same_ns) {
		jw_key(w, "ownerReferences");
		jw_arr_begin(w);
		jw_obj_begin(w);
		jw_kv_str(w, "apiVersion", "v1");
		jw_kv_str(w, "kind", "Pod");
		jw_kv_str(w, "name", s->owner_pod);
		jw_kv_str(w, "uid", s->owner_uid);
		jw_kv_bool(w, "blockOwnerDeletion", false);
		jw_obj_end(w);
		jw_arr_end(w);
	}
	jw_obj_end(w);
}

/* The function container's volumeMounts: the PodTemplate's first container's, then those
 * of the --mount flags (pod_mounts.h). */
static void write_volume_mounts(struct jw *w, const struct fn_request *req,
                                const struct settings *s)
{
	const struct json *tm = json_get(pod_template_container(s->template), "volumeMounts");
	if (json_len(tm) == 0 && req->n_mounts == 0 && req->exec_argv == NULL)
		return;
	jw_key(w, "volumeMounts");
	jw_arr_begin(w);
	for (size_t i = 0; i < json_len(tm); i++)
		json_write(w, json_at(tm, i));
	pod_mounts_write_volume_mounts(w, req);
	if (req->exec_argv)
		pod_agent_write_volume_mounts(w);
	jw_arr_end(w);
}

/* The pod's volumes: the PodTemplate's, then those of the --mount flags. */
static void write_volumes(struct jw *w, const struct fn_request *req, const struct settings *s)
{
	const struct json *tv = json_path(s->template, "spec.volumes");
	if (json_len(tv) == 0 && req->n_mounts == 0 && req->exec_argv == NULL)
		return;
	jw_key(w, "volumes");
	jw_arr_begin(w);
	for (size_t i = 0; i < json_len(tv); i++)
		json_write(w, json_at(tv, i));
	pod_mounts_write_volumes(w, req);
	if (req->exec_argv)
		pod_agent_write_volumes(w);
	jw_arr_end(w);
}

/* Appends name to names[*n] unless it is there already. */
static void add_pull_secret(const char **names, size_t *n, const char *name)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp(names[i], name) == 0)
			return;
	names[(*n)++] = name;
}

size_t pod_spec_pull_secrets(const struct settings *s, const char ***out)
{
	const struct json *tl = json_path(s->template, "spec.imagePullSecrets");
	size_t nt = json_type(tl) == JSON_ARRAY ? json_len(tl) : 0, n = 0;
	const char **names = xcalloc(nt + s->n_pull_secrets + 1, sizeof(char *));
	for (size_t i = 0; i < nt; i++) {
		const char *name = json_str(json_get(json_at(tl, i), "name"));
		if (name && *name)
			add_pull_secret(names, &n, name);
	}
	for (size_t i = 0; i < s->n_pull_secrets; i++)
		add_pull_secret(names, &n, s->pull_secrets[i]);
	*out = names;
	return n;
}

static void write_pull_secrets(struct jw *w, const struct settings *s)
{
	const char **names = NULL;
	size_t n = pod_spec_pull_secrets(s, &names);
	if (n > 0) {
		jw_key(w, "imagePullSecrets");
		jw_arr_begin(w);
		for (size_t i = 0; i < n; i++) {
			jw_obj_begin(w);
			jw_kv_str(w, "name", names[i]);
			jw_obj_end(w);
		}
		jw_arr_end(w);
	}
	free(names);
}

/* Scheduling and runtime fields a PodTemplate may set, copied as they are; imagePullSecrets
 * merged with KRMPOD_IMAGE_PULL_SECRETS. */
static void write_template_spec(struct jw *w, const struct settings *s)
{
	static const char *keys[] = {"tolerations",       "nodeSelector",     "affinity",
	                             "priorityClassName", "imagePullSecrets", "runtimeClassName"};
	const struct json *spec = json_get(s->template, "spec");
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const struct json *v = json_get(spec, keys[i]);
		if (strcmp(keys[i], "imagePullSecrets") == 0) {
			write_pull_secrets(w, s);
		} else if (v && json_type(v) != JSON_NULL) {
			jw_key(w, keys[i]);
			json_write(w, v);
		}
	}
}

/* The gate's targets beside the API server (agent_gate.h), as env array elements: the node's
 * address, whose kubelet it probes, and for a pod without a network grant the flag to probe
 * the cluster DNS too (unless the admin's policies open DNS to every pod). */
static void write_gate_target_env(struct jw *w, const struct fn_request *req,
                                  const struct settings *s)
{
	jw_obj_begin(w);
	jw_kv_str(w, "name", SETTINGS_NET_GATE_NODE_ENV);
	jw_key(w, "valueFrom");
	jw_obj_begin(w);
	jw_key(w, "fieldRef");
	jw_obj_begin(w);
	jw_kv_str(w, "fieldPath", "status.hostIP");
	jw_obj_end(w);
	jw_obj_end(w);
	jw_obj_end(w);
	if (req->network == FN_NETWORK_NONE && s->net_gate_dns) {
		jw_obj_begin(w);
		jw_kv_str(w, "name", SETTINGS_NET_GATE_DNS_ENV);
		jw_kv_str(w, "value", "1");
		jw_obj_end(w);
	}
}

/* Attach mode: the image's entrypoint with the request's args, stdin and env. Exec mode on
 * the image's own entrypoint (req->exec_pid1): the same, but stdin is held open with no
 * attach ever (stdinOnce false: an attach that ends must not close it), so that the process
 * waits there while krmpod's calls run its command line. */
static void write_args_and_env(struct jw *w, const struct fn_request *req, const struct settings *s)
{
	if (req->n_args) {
		jw_key(w, "args");
		jw_arr_begin(w);
		for (size_t i = 0; i < req->n_args; i++)
			jw_str(w, req->args[i]);
		jw_arr_end(w);
	}
	/* docker run without -i: the process gets an empty stdin (/dev/null), as with docker;
	 * a container that asks for stdin would wait for an attach that never sends it. */
	if (req->exec_pid1)
		pod_container_write_held_stdin(w);
	else
		pod_container_write_attach_fields(w, req->want_stdin);
	jw_key(w, "env");
	jw_arr_begin(w);
	for (size_t i = 0; i < req->n_env; i++) {
		jw_obj_begin(w);
		jw_kv_str(w, "name", req->env[i].name);
		jw_kv_str(w, "value", req->env[i].value);
		jw_obj_end(w);
	}
	if (req->gate_probe)
		write_gate_target_env(w, req, s);
	jw_arr_end(w);
}

/* Attach mode's network gate (KRMPOD_NETWORK_GATE; agent_gate.h): an init container, so
 * that the pod's address is in its status (a policy agent keys on it) while the gate waits,
 * and the function's entrypoint starts only after it. */
static void write_gate_init_container(struct jw *w, const struct fn_request *req,
                                      const struct settings *s)
{
	char ms[32];
	snprintf(ms, sizeof(ms), "%lld", (long long)s->net_gate_ms);
	jw_obj_begin(w);
	jw_kv_str(w, "name", POD_NET_GATE_CONTAINER_NAME);
	jw_kv_str(w, "image", s->helper_image ? s->helper_image : "");
	jw_key(w, "command");
	jw_arr_begin(w);
	jw_str(w, "krmpod");
	jw_str(w, "net-gate");
	jw_str(w, ms);
	jw_arr_end(w);
	jw_key(w, "env");
	jw_arr_begin(w);
	write_gate_target_env(w, req, s);
	jw_arr_end(w);
	pod_container_write_helper_resources(w);
	pod_container_write_security_context(w, true);
	jw_kv_str(w, "terminationMessagePolicy", "FallbackToLogsOnError");
	jw_obj_end(w);
}

/* krmpod's init containers: the network gate's (attach mode, and exec mode on the image's
 * own entrypoint, which starts with the container), then the mounts'. */
static bool gate_init(const struct fn_request *req, const struct settings *s)
{
	return s->net_gate_ms > 0 && (!req->exec_argv || req->exec_pid1);
}

bool pod_has_init_containers(const struct fn_request *req, const struct settings *s)
{
	return gate_init(req, s) || pod_mounts_need_helper(req);
}

static void write_init_containers(struct jw *w, const struct fn_request *req,
                                  const struct settings *s)
{
	bool gate = gate_init(req, s);
	if (!pod_has_init_containers(req, s))
		return;
	jw_key(w, "initContainers");
	jw_arr_begin(w);
	if (gate)
		write_gate_init_container(w, req, s);
	if (pod_mounts_need_helper(req))
		pod_mounts_write_init_container(w, req, s);
	jw_arr_end(w);
}

/* Exec mode's network gate: krmpod call/serve in the function container gate the pod's
 * first function (cmd_gate.c); the functions themselves never see this variable. */
static void write_gate_env(struct jw *w, const struct fn_request *req, const struct settings *s)
{
	if (s->net_gate_ms <= 0)
		return;
	char ms[32];
	snprintf(ms, sizeof(ms), "%lld", (long long)s->net_gate_ms);
	jw_key(w, "env");
	jw_arr_begin(w);
	jw_obj_begin(w);
	jw_kv_str(w, "name", SETTINGS_NET_GATE_ENV);
	jw_kv_str(w, "value", ms);
	jw_obj_end(w);
	write_gate_target_env(w, req, s);
	jw_arr_end(w);
}

static void write_container(struct jw *w, const struct fn_request *req, const struct settings *s)
{
	jw_obj_begin(w);
	jw_kv_str(w, "name", POD_CONTAINER_NAME);
	jw_kv_str(w, "image", req->pinned_image ? req->pinned_image : req->image);
	const char *pp = pull_policy(req->pull);
	if (pp)
		jw_kv_str(w, "imagePullPolicy", pp);
	if (req->exec_argv && !req->exec_pid1) {
		/* Exec mode: the container holds; argv, env and stdin come with each call. */
		pod_agent_write_command(w);
		pod_container_write_attach_fields(w, false);
		write_gate_env(w, req, s);
	} else {
		write_args_and_env(w, req, s);
	}
	jw_key(w, "resources");
	jw_obj_begin(w);
	jw_key(w, "requests");
	jw_obj_begin(w);
	jw_kv_str(w, "cpu", s->cpu_request);
	jw_kv_str(w, "memory", s->memory_request);
	jw_obj_end(w);
	jw_key(w, "limits");
	jw_obj_begin(w);
	jw_kv_str(w, "cpu", s->cpu_limit);
	jw_kv_str(w, "memory", s->memory_limit);
	jw_obj_end(w);
	jw_obj_end(w);
	/* a pooled pod serves many calls: nothing of one may stay in its filesystem */
	pod_container_write_security_context(w, req->pooled);
	jw_kv_str(w, "terminationMessagePolicy", "FallbackToLogsOnError");
	write_volume_mounts(w, req, s);
	jw_obj_end(w);
}

static void build(const struct fn_request *req, const struct settings *s,
                  const struct pod_pool_meta *pool, bool create_id, struct buf *out);

void pod_spec_build(const struct fn_request *req, const struct settings *s, struct buf *out)
{
	build(req, s, NULL, true, out);
}

void pod_spec_build_pool(const struct fn_request *req, const struct settings *s,
                         const struct pod_pool_meta *pool, struct buf *out)
{
	build(req, s, pool, true, out);
}

void pod_spec_build_for_key(const struct fn_request *req, const struct settings *s, struct buf *out)
{
	build(req, s, NULL, false, out);
}

static void build(const struct fn_request *req, const struct settings *s,
                  const struct pod_pool_meta *pool, bool create_id, struct buf *out)
{
	struct jw w;
	jw_init(&w, out);
	jw_obj_begin(&w);
	jw_kv_str(&w, "apiVersion", "v1");
	jw_kv_str(&w, "kind", "Pod");
	write_metadata(&w, req, s, pool, create_id);
	jw_key(&w, "spec");
	jw_obj_begin(&w);
	jw_kv_str(&w, "restartPolicy", "Never");
	/* The pod must not outlive the run even if krmpod is SIGKILLed; round up. */
	int64_t life_ms = pool ? s->pool_life_ms : s->timeout_ms;
	jw_kv_int(&w, "activeDeadlineSeconds", (life_ms + 999) / 1000);
	jw_kv_int(&w, "terminationGracePeriodSeconds", 0);
	jw_kv_bool(&w, "automountServiceAccountToken", false);
	jw_kv_bool(&w, "enableServiceLinks", false);
	jw_kv_bool(&w, "hostNetwork", false);
	jw_kv_bool(&w, "hostPID", false);
	jw_kv_bool(&w, "hostIPC", false);
	jw_key(&w, "securityContext");
	jw_obj_begin(&w);
	jw_kv_bool(&w, "runAsNonRoot", true);
	jw_kv_int(&w, "runAsUser", req->run_as_user);
	jw_kv_int(&w, "runAsGroup", req->run_as_group);
	jw_key(&w, "seccompProfile");
	jw_obj_begin(&w);
	jw_kv_str(&w, "type", "RuntimeDefault");
	jw_obj_end(&w);
	jw_obj_end(&w);
	write_template_spec(&w, s);
	write_init_containers(&w, req, s);
	jw_key(&w, "containers");
	jw_arr_begin(&w);
	if (req->exec_argv)
		pod_agent_write_container(&w, s);
	write_container(&w, req, s);
	jw_arr_end(&w);
	write_volumes(&w, req, s);
	jw_obj_end(&w);
	jw_obj_end(&w);
}

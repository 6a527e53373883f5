/* pod_template.c — see pod_template.h. */
#include "pod/pod_template.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "base/xalloc.h"
#include "pod/pod_names.h"

const struct json *pod_template_container(const struct json *tmpl)
{
	return json_at(json_path(tmpl, "spec.containers"), 0);
}

static int reject(const char *what, const char *field, const char *why, struct err **err)
{
	return err_set(err, ERR_CONFIG,
	               "%s: %s %s: krmpod enforces the Pod Security \"restricted\" floor for "
	               "function pods; remove the field from the template",
	               what, field, why);
}

static bool is_true(const struct json *j)
{
	bool b = false;
	return json_bool(j, &b) && b;
}

/* A pod- or container-level securityContext that would weaken the floor. */
static int check_security_context(const struct json *sc, const char *what, const char *where,
                                  bool container, struct err **err)
{
	char field[160];
	bool b = true;
	long long uid = -1;
	snprintf(field, sizeof(field), "%s.securityContext.runAsNonRoot", where);
	if (json_bool(json_get(sc, "runAsNonRoot"), &b) && !b)
		return reject(what, field, "is false", err);
	snprintf(field, sizeof(field), "%s.securityContext.runAsUser", where);
	if (json_int(json_get(sc, "runAsUser"), &uid) && uid == 0)
		return reject(what, field, "is 0 (root)", err);
	const char *sp = json_str(json_path(sc, "seccompProfile.type"));
	snprintf(field, sizeof(field), "%s.securityContext.seccompProfile.type", where);
	if (sp && strcmp(sp, "Unconfined") == 0)
		return reject(what, field, "is Unconfined", err);
	if (!container)
		return 0;
	snprintf(field, sizeof(field), "%s.securityContext.privileged", where);
	if (is_true(json_get(sc, "privileged")))
		return reject(what, field, "is true", err);
	snprintf(field, sizeof(field), "%s.securityContext.allowPrivilegeEscalation", where);
	if (is_true(json_get(sc, "allowPrivilegeEscalation")))
		return reject(what, field, "is true", err);
	snprintf(field, sizeof(field), "%s.securityContext.capabilities.add", where);
	if (json_len(json_path(sc, "capabilities.add")) > 0)
		return reject(what, field, "adds capabilities", err);
	return 0;
}

/* The lists krmpod reads element by element (and extends, for volumes and imagePullSecrets)
 * must be lists of mappings: a mapping's values would be read, and written, as if they were
 * its elements (tests/fuzz/crashes/pod_template/volumes-mapping). */
static int check_lists(const struct json *spec, const char *what, struct err **err)
{
	static const char *lists[] = {"containers", "initContainers", "volumes",
	                              "imagePullSecrets"};
	for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
		const struct json *a = json_get(spec, lists[l]);
		if (a == NULL || json_type(a) == JSON_NULL)
			continue;
		if (json_type(a) != JSON_ARRAY)
			return err_set(err, ERR_CONFIG, "%s: spec.%s is not a list", what,
			               lists[l]);
		for (size_t i = 0; i < json_len(a); i++)
			if (json_type(json_at(a, i)) != JSON_OBJECT)
				return err_set(err, ERR_CONFIG, "%s: spec.%s[%zu] is not a mapping",
				               what, lists[l], i);
	}
	return 0;
}

/* The template's metadata: mappings, no label krmpod owns, string label values. */
static int check_metadata(const struct json *tmpl, const char *what, struct err **err)
{
	/* the pod's labels and annotations are written from their keys */
	static const char *maps[] = {"labels", "annotations"};
	for (size_t i = 0; i < 2; i++) {
		const struct json *m = json_get(json_get(tmpl, "metadata"), maps[i]);
		if (m && json_type(m) != JSON_OBJECT && json_type(m) != JSON_NULL)
			return err_set(err, ERR_CONFIG, "%s: metadata.%s is not a mapping", what,
			               maps[i]);
	}
	const struct json *labels = json_path(tmpl, "metadata.labels");
	static const char *own[] = {POD_LABEL_MANAGED_BY, POD_LABEL_FUNCTION, POD_LABEL_NETWORK};
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (json_get(labels, own[i]))
			return err_set(
			        err, ERR_CONFIG,
			        "%s: metadata.labels sets %s, which krmpod owns (NetworkPolicies "
			        "select on it): remove it from the template",
			        what, own[i]);
	for (size_t i = 0; i < json_len(labels); i++)
		if (json_str(json_at(labels, i)) == NULL)
			return err_set(err, ERR_CONFIG, "%s: metadata.labels.%s is not a string",
			               what, json_key_at(labels, i));
	return 0;
}

/* The template's volumes: no node path, none named like krmpod's own. */
static int check_volumes(const struct json *spec, const char *what, struct err **err)
{
	const struct json *vols = json_get(spec, "volumes");
	for (size_t i = 0; i < json_len(vols); i++) {
		const struct json *v = json_at(vols, i);
		const char *name = json_str(json_get(v, "name"));
		if (json_get(v, "hostPath")) {
			char field[128];
			snprintf(field, sizeof(field), "spec.volumes[%zu] (%s).hostPath", i,
			         name ? name : "?");
			return reject(what, field, "mounts a node path", err);
		}
		if (name && strncmp(name, "krmpod-", 7) == 0)
			return err_set(
			        err, ERR_CONFIG,
			        "%s: spec.volumes[%zu]: the name %s is reserved for krmpod's own "
			        "volumes",
			        what, i, name);
	}
	return 0;
}

int pod_template_check(const struct json *tmpl, const char *what, struct err **err)
{
	if (json_type(tmpl) != JSON_OBJECT)
		return err_set(err, ERR_CONFIG, "%s: the template is not an object", what);
	if (check_metadata(tmpl, what, err) < 0)
		return -1;
	const struct json *spec = json_get(tmpl, "spec");
	if (check_lists(spec, what, err) < 0)
		return -1;
	static const char *host[] = {"hostNetwork", "hostPID", "hostIPC"};
	for (size_t i = 0; i < 3; i++) {
		char field[64];
		snprintf(field, sizeof(field), "spec.%s", host[i]);
		if (is_true(json_get(spec, host[i])))
			return reject(what, field, "is true", err);
	}
	if (is_true(json_get(spec, "automountServiceAccountToken")))
		return reject(what, "spec.automountServiceAccountToken", "is true", err);
	if (check_security_context(json_get(spec, "securityContext"), what, "spec", false, err) < 0)
		return -1;
	static const char *lists[] = {"containers", "initContainers"};
	for (size_t l = 0; l < 2; l++) {
		const struct json *cs = json_get(spec, lists[l]);
		for (size_t i = 0; i < json_len(cs); i++) {
			char where[64];
			snprintf(where, sizeof(where), "spec.%s[%zu]", lists[l], i);
			if (check_security_context(json_get(json_at(cs, i), "securityContext"),
			                           what, where, true, err) < 0)
				return -1;
		}
	}
	if (json_len(json_get(spec, "initContainers")) > 0)
		return err_set(err, ERR_CONFIG,
		               "%s: spec.initContainers: a template cannot add init containers to "
		               "function pods",
		               what);
	return check_volumes(spec, what, err);
}

/* Template resources become defaults where no KRMPOD_* setting was given. */
static void apply_resources(struct settings *s, const struct json *tmpl)
{
	const struct json *res = json_get(pod_template_container(tmpl), "resources");
	struct {
		const char *path;
		char **value;
		unsigned bit;
	} r[] = {
	        {"requests.cpu", &s->cpu_request, SETTINGS_SET_CPU_REQUEST},
	        {"limits.cpu", &s->cpu_limit, SETTINGS_SET_CPU_LIMIT},
	        {"requests.memory", &s->memory_request, SETTINGS_SET_MEMORY_REQUEST},
	        {"limits.memory", &s->memory_limit, SETTINGS_SET_MEMORY_LIMIT},
	};
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		const char *v = json_scalar(json_path(res, r[i].path));
		if (v && !(s->resources_set & r[i].bit)) {
			free(*r[i].value);
			*r[i].value = xstrdup(v);
		}
	}
}

int pod_template_adopt(struct settings *s, struct json *doc, const char *what, struct err **err)
{
	const char *kind = json_str(json_get(doc, "kind"));
	const struct json *tmpl = doc;
	if (kind && strcmp(kind, "PodTemplate") == 0)
		tmpl = json_get(doc, "template");
	else if (kind)
		tmpl = NULL;
	if (tmpl == NULL ||
	    (json_get(tmpl, "spec") == NULL && json_get(tmpl, "metadata") == NULL)) {
		json_free(doc);
		return err_set(
		        err, ERR_CONFIG,
		        "%s: not a PodTemplate (kind: PodTemplate with a template) nor a pod "
		        "template ({metadata, spec})",
		        what);
	}
	if (pod_template_check(tmpl, what, err) < 0) {
		json_free(doc);
		return -1;
	}
	json_free(s->template_doc);
	s->template_doc = doc;
	s->template = tmpl;
	apply_resources(s, tmpl);
	log_debug("pod template from %s", what);
	return 0;
}

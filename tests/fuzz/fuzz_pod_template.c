/* fuzz_pod_template.c — an admin's PodTemplate checked and merged into the function pod
 * (src/pod/pod_template.h, src/pod/pod_manifest.h).
 *
 * The input is the template (a PodTemplate or just {metadata, spec}). When
 * pod_template_adopt() takes it, the pod is built for a request with mounts and for one
 * without, and read back.
 *
 * Invariant: the security floor always holds in the pod, whatever the template said —
 * exactly what pod_manifest.c, pod_container.c and pod_mounts.c write:
 *   - spec: restartPolicy Never, automountServiceAccountToken, enableServiceLinks,
 *     hostNetwork, hostPID and hostIPC false; no other field than krmpod's own and the
 *     scheduling fields a template may set;
 *   - spec.securityContext: exactly runAsNonRoot true, runAsUser and runAsGroup > 0 (the
 *     request's), seccompProfile {type: RuntimeDefault};
 *   - one container, krmpod's (name, image, tty false), with exactly the securityContext
 *     {allowPrivilegeEscalation: false, privileged: false, runAsNonRoot: true,
 *     capabilities: {drop: [ALL]}}; init containers only krmpod's `mounts` one, and only
 *     with bind mounts, with the same securityContext;
 *   - no hostPath volume; krmpod's volumes once each;
 *   - krmpod's labels (managed-by krmpod, function true, network none) and its image
 *     annotation exactly once with krmpod's values;
 *   - no key twice in any object of the floor (the API server would take the last one).
 * The pod is valid JSON that json_parse() reads. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "config/request.h"
#include "config/settings.h"
#include "fuzz_util.h"
#include "pod/pod_manifest.h"
#include "pod/pod_names.h"
#include "pod/pod_template.h"

#define IMAGE  "example.com/fns/set-labels:v1"
#define HELPER "ghcr.io/example/krmpod:v1"

static char *const fuzz_env[] = {
        "KRMPOD_HELPER_IMAGE=" HELPER,
        "KRMPOD_EXTRA_LABELS=team=functions",
        "KRMPOD_OWNER_POD=repo-server-0",
        "KRMPOD_OWNER_UID=0f0f0f0f-0000-4000-8000-000000000000",
        NULL,
};

/* The object's members named key: how many, and the first in *out. */
static size_t count(const struct json *obj, const char *key, const struct json **out)
{
	size_t n = 0;
	for (size_t i = 0; i < json_len(obj); i++) {
		if (strcmp(json_key_at(obj, i), key) != 0)
			continue;
		if (n++ == 0 && out)
			*out = json_at(obj, i);
	}
	return n;
}

/* obj is an object with no key twice and no key outside `allowed` (NULL-terminated). */
static void only_once(const struct json *obj, const char *where, const char *const *allowed)
{
	if (json_type(obj) != JSON_OBJECT)
		fuzz_fail("%s is not an object", where);
	for (size_t i = 0; i < json_len(obj); i++) {
		const char *k = json_key_at(obj, i);
		if (count(obj, k, NULL) != 1)
			fuzz_fail("%s has %s %zu times", where, k, count(obj, k, NULL));
		bool ok = allowed == NULL;
		for (const char *const *a = allowed; a && *a && !ok; a++)
			ok = strcmp(*a, k) == 0;
		if (!ok)
			fuzz_fail("%s has the field %s", where, k);
	}
}

static const struct json *need(const struct json *obj, const char *key, const char *where)
{
	const struct json *v = NULL;
	if (count(obj, key, &v) != 1)
		fuzz_fail("%s.%s is missing or repeated", where, key);
	return v;
}

static void need_bool(const struct json *obj, const char *key, bool want, const char *where)
{
	bool b = !want;
	if (!json_bool(need(obj, key, where), &b) || b != want)
		fuzz_fail("%s.%s is not %s", where, key, want ? "true" : "false");
}

static void need_str(const struct json *obj, const char *key, const char *want, const char *where)
{
	const char *s = json_str(need(obj, key, where));
	if (s == NULL || strcmp(s, want) != 0)
		fuzz_fail("%s.%s is \"%s\", not \"%s\"", where, key, s ? s : "(not a string)",
		          want);
}

static void check_container_security(const struct json *c, const char *where)
{
	static const char *const sc_keys[] = {"allowPrivilegeEscalation", "privileged",
	                                      "runAsNonRoot", "capabilities", NULL};
	const struct json *sc = need(c, "securityContext", where);
	only_once(sc, where, sc_keys);
	need_bool(sc, "allowPrivilegeEscalation", false, where);
	need_bool(sc, "privileged", false, where);
	need_bool(sc, "runAsNonRoot", true, where);
	static const char *const cap_keys[] = {"drop", NULL};
	const struct json *caps = need(sc, "capabilities", where);
	only_once(caps, where, cap_keys);
	const struct json *drop = need(caps, "drop", where);
	if (json_len(drop) != 1 || json_str(json_at(drop, 0)) == NULL ||
	    strcmp(json_str(json_at(drop, 0)), "ALL") != 0)
		fuzz_fail("%s: capabilities.drop is not [ALL]", where);
}

static void check_container(const struct json *c, const char *name, const char *image,
                            const char *where)
{
	static const char *const keys[] = {
	        "name",         "image",     "imagePullPolicy", "args",
	        "command",      "stdin",     "stdinOnce",       "tty",
	        "env",          "resources", "securityContext", "terminationMessagePolicy",
	        "volumeMounts", NULL};
	only_once(c, where, keys);
	need_str(c, "name", name, where);
	need_str(c, "image", image, where);
	need_bool(c, "tty", false, where);
	check_container_security(c, where);
}

static void check_pod(const char *text, size_t len, const struct fn_request *req)
{
	struct json *pod = NULL;
	struct err *e = NULL;
	if (json_parse(text, len, "pod", &pod, &e) < 0)
		fuzz_fail("the pod is not JSON krmpod reads: %s\n%s", e->msg, text);
	static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", NULL};
	only_once(pod, "the pod", top);
	need_str(pod, "apiVersion", "v1", "the pod");
	need_str(pod, "kind", "Pod", "the pod");

	const struct json *meta = need(pod, "metadata", "the pod");
	static const char *const meta_keys[] = {"generateName", "labels", "annotations",
	                                        "ownerReferences", NULL};
	only_once(meta, "metadata", meta_keys);
	const struct json *labels = need(meta, "labels", "metadata");
	need_str(labels, POD_LABEL_MANAGED_BY, "krmpod", "metadata.labels");
	need_str(labels, POD_LABEL_FUNCTION, "true", "metadata.labels");
	need_str(labels, POD_LABEL_NETWORK, "none", "metadata.labels");
	need_str(need(meta, "annotations", "metadata"), POD_ANNOTATION_IMAGE, req->image,
	         "metadata.annotations");

	const struct json *spec = need(pod, "spec", "the pod");
	static const char *const spec_keys[] = {"restartPolicy",
	                                        "activeDeadlineSeconds",
	                                        "terminationGracePeriodSeconds",
	                                        "automountServiceAccountToken",
	                                        "enableServiceLinks",
	                                        "hostNetwork",
	                                        "hostPID",
	                                        "hostIPC",
	                                        "securityContext",
	                                        "tolerations",
	                                        "nodeSelector",
	                                        "affinity",
	                                        "priorityClassName",
	                                        "imagePullSecrets",
	                                        "runtimeClassName",
	                                        "initContainers",
	                                        "containers",
	                                        "volumes",
	                                        NULL};
	only_once(spec, "spec", spec_keys);
	need_str(spec, "restartPolicy", "Never", "spec");
	need_bool(spec, "automountServiceAccountToken", false, "spec");
	need_bool(spec, "enableServiceLinks", false, "spec");
	need_bool(spec, "hostNetwork", false, "spec");
	need_bool(spec, "hostPID", false, "spec");
	need_bool(spec, "hostIPC", false, "spec");

	const struct json *psc = need(spec, "securityContext", "spec");
	static const char *const psc_keys[] = {"runAsNonRoot", "runAsUser", "runAsGroup",
	                                       "seccompProfile", NULL};
	only_once(psc, "spec.securityContext", psc_keys);
	need_bool(psc, "runAsNonRoot", true, "spec.securityContext");
	long long uid = 0, gid = 0;
	if (!json_int(need(psc, "runAsUser", "spec.securityContext"), &uid) ||
	    uid != req->run_as_user ||
	    !json_int(need(psc, "runAsGroup", "spec.securityContext"), &gid) ||
	    gid != req->run_as_group || uid <= 0 || gid <= 0)
		fuzz_fail("spec.securityContext: runAsUser %lld, runAsGroup %lld", uid, gid);
	const struct json *seccomp = need(psc, "seccompProfile", "spec.securityContext");
	static const char *const seccomp_keys[] = {"type", NULL};
	only_once(seccomp, "spec.securityContext.seccompProfile", seccomp_keys);
	need_str(seccomp, "type", "RuntimeDefault", "spec.securityContext.seccompProfile");

	const struct json *cs = need(spec, "containers", "spec");
	if (json_type(cs) != JSON_ARRAY || json_len(cs) != 1)
		fuzz_fail("spec.containers holds %zu containers", json_len(cs));
	check_container(json_at(cs, 0), POD_CONTAINER_NAME, req->image, "spec.containers[0]");

	bool helper = false;
	for (size_t i = 0; i < req->n_mounts; i++)
		helper = helper || req->mounts[i].type == FN_MOUNT_BIND;
	const struct json *ics = NULL;
	size_t n_ics = count(spec, "initContainers", &ics);
	if (n_ics != (helper ? 1u : 0u) || (helper && json_len(ics) != 1))
		fuzz_fail("spec.initContainers: %zu lists of %zu", n_ics, json_len(ics));
	if (helper)
		check_container(json_at(ics, 0), POD_MOUNTS_CONTAINER_NAME, HELPER,
		                "spec.initContainers[0]");

	const struct json *vols = NULL;
	count(spec, "volumes", &vols);
	for (size_t i = 0; i < req->n_mounts; i++) {
		char name[64];
		snprintf(name, sizeof(name), POD_MOUNT_VOLUME_PREFIX "%zu", i);
		size_t seen = 0;
		for (size_t v = 0; v < json_len(vols); v++) {
			const char *vn = NULL;
			for (size_t k = 0; k < json_len(json_at(vols, v)); k++)
				if (strcmp(json_key_at(json_at(vols, v), k), "name") == 0)
					vn = json_str(json_at(json_at(vols, v), k));
			seen += vn && strcmp(vn, name) == 0;
		}
		if (seen != 1)
			fuzz_fail("volume %s appears %zu times", name, seen);
	}
	for (size_t v = 0; v < json_len(vols); v++)
		if (count(json_at(vols, v), "hostPath", NULL) > 0)
			fuzz_fail("spec.volumes[%zu] is a hostPath volume", v);
	json_free(pod);
}

static void build_and_check(const struct settings *s, bool mounts)
{
	struct fn_mount m[2] = {
	        {FN_MOUNT_BIND, "/src/app/data", "/data", true, "type=bind,src=/src/app/data"},
	        {FN_MOUNT_TMPFS, NULL, "/scratch", false, "type=tmpfs,dst=/scratch"},
	};
	char *args[] = {"--flag", "value"};
	struct fn_env env[] = {{"FOO", "bar"}};
	struct fn_request req = {
	        .image = IMAGE,
	        .args = args,
	        .n_args = 2,
	        .env = env,
	        .n_env = 1,
	        .pull = FN_PULL_MISSING,
	        .run_as_user = 65534,
	        .run_as_group = 65534,
	        .want_stdin = true,
	        .mounts = mounts ? m : NULL,
	        .n_mounts = mounts ? 2 : 0,
	};
	struct buf out;
	buf_init(&out, 0);
	pod_spec_build(&req, s, &out);
	check_pod(out.data, out.len, &req);
	buf_free(&out);
}

FUZZ_QUIET_LOG

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json *doc = NULL;
	if (json_parse((const char *)data, size, "template", &doc, NULL) < 0)
		return 0;
	struct settings s;
	struct err *e = NULL;
	if (settings_load_env(&s, fuzz_env, &e) < 0)
		fuzz_fail("settings: %s", e->msg);
	int rc = pod_template_adopt(&s, doc, "fuzz template", &e); /* takes doc */
	fuzz_check_err(rc, e, "pod_template_adopt");
	err_free(e);
	if (rc == 0) {
		if (pod_template_check(s.template, "fuzz template", NULL) < 0)
			fuzz_fail("an adopted template fails its check");
		build_and_check(&s, false);
		build_and_check(&s, true);
	}
	settings_clear(&s);
	return 0;
}

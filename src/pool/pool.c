/* pool.c — see pool.h and docs/internals/warm-pool.md. */
#include "pool/pool.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/glob.h"
#include "base/log.h"
#include "base/xalloc.h"
#include "catalog/image_policy.h"
#include "kube/kube_api.h"
#include "pod/pod_names.h"

/* JSON-pointer paths (RFC 6901: '/' in a key is "~1"). */
#define P_STATE  "/metadata/labels/krmpod.dev~1pool-state"
#define P_HOLDER "/metadata/annotations/krmpod.dev~1lease-holder"
#define P_UNTIL  "/metadata/annotations/krmpod.dev~1lease-until"
#define P_IDLE   "/metadata/annotations/krmpod.dev~1idle-since"
#define P_SERVED "/metadata/annotations/krmpod.dev~1served"

bool fn_pool_takes(const struct settings *s, const struct fn_request *req)
{
	if (!s->warm_pool || req->exec_argv == NULL || req->exec_pid1 || req->n_mounts > 0)
		return false;
	for (size_t i = 0; i < s->n_pool_images; i++)
		if (glob_match(s->pool_images[i], req->image))
			return true;
	return false;
}

char *fn_pool_holder(void)
{
	char host[64] = "";
	gethostname(host, sizeof(host) - 1);
	uint32_t r = 0;
	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		r = (uint32_t)now_ms();
	return xasprintf("%s/%d/%08" PRIx32, host[0] ? host : "krmpod", (int)getpid(), r);
}

void fn_pool_key_text(uint64_t key, char out[17])
{
	snprintf(out, 17, "%016" PRIx64, key);
}

/* A pod a claim may take: not being deleted, not ended, its function container not ended. */
static bool claimable(const struct json *pod)
{
	if (json_path(pod, "metadata.deletionTimestamp") != NULL)
		return false;
	const char *phase = json_str(json_path(pod, "status.phase"));
	if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0))
		return false;
	const struct json *cs = json_path(pod, "status.containerStatuses");
	for (size_t i = 0; i < json_len(cs); i++)
		if (json_path(json_at(cs, i), "state.terminated"))
			return false;
	return true;
}

bool fn_pool_pod_runs(const struct json *pod)
{
	/* the function container's own status: exec mode's installer runs before it starts */
	const struct json *cs = json_path(pod, "status.containerStatuses");
	for (size_t i = 0; i < json_len(cs); i++) {
		const char *name = json_str(json_get(json_at(cs, i), "name"));
		if (name && strcmp(name, POD_CONTAINER_NAME) == 0 &&
		    json_path(json_at(cs, i), "state.running"))
			return true;
	}
	const char *served =
	        json_str(json_get(json_path(pod, "metadata.annotations"), POD_ANNOTATION_SERVED));
	return served && strcmp(served, "true") == 0;
}

static bool is_idle(const struct json *pod)
{
	const char *v = json_str(json_get(json_path(pod, "metadata.labels"), POD_LABEL_POOL_STATE));
	return v && strcmp(v, "idle") == 0;
}

static long long annotation_ms(const struct json *pod, const char *name)
{
	const struct json *a = json_path(pod, "metadata.annotations");
	const char *v = json_str(json_get(a, name));
	return v ? strtoll(v, NULL, 10) : 0;
}

/* One JSON-patch operation (value NULL: none). */
static void patch_op(struct jw *w, const char *op, const char *path, const char *value)
{
	jw_obj_begin(w);
	jw_kv_str(w, "op", op);
	jw_kv_str(w, "path", path);
	if (value)
		jw_kv_str(w, "value", value);
	jw_obj_end(w);
}

/* The lease patch: idle -> busy, held by holder until lease_until_ms. */
static char *claim_patch(const char *holder, long long lease_until_ms)
{
	char until[32];
	snprintf(until, sizeof(until), "%lld", lease_until_ms);
	struct buf b;
	buf_init(&b, 0);
	struct jw w;
	jw_init(&w, &b);
	jw_arr_begin(&w);
	patch_op(&w, "test", P_STATE, "idle");
	patch_op(&w, "replace", P_STATE, "busy");
	patch_op(&w, "add", P_HOLDER, holder);
	patch_op(&w, "add", P_UNTIL, until);
	patch_op(&w, "remove", P_IDLE, NULL);
	jw_arr_end(&w);
	return buf_steal(&b, NULL);
}

/* The patch that gives holder's lease back: busy -> idle since now. */
static char *release_patch(const char *holder)
{
	char since[32];
	snprintf(since, sizeof(since), "%lld", (long long)epoch_ms());
	struct buf b;
	buf_init(&b, 0);
	struct jw w;
	jw_init(&w, &b);
	jw_arr_begin(&w);
	patch_op(&w, "test", P_HOLDER, holder);
	patch_op(&w, "replace", P_STATE, "idle");
	patch_op(&w, "remove", P_HOLDER, NULL);
	patch_op(&w, "remove", P_UNTIL, NULL);
	patch_op(&w, "add", P_IDLE, since);
	patch_op(&w, "add", P_SERVED, "true");
	jw_arr_end(&w);
	return buf_steal(&b, NULL);
}

/* Whether pod is leased (busy) and to holder. */
static bool held_by(const struct json *pod, const char *holder)
{
	const char *h = json_str(
	        json_get(json_path(pod, "metadata.annotations"), POD_ANNOTATION_LEASE_HOLDER));
	return !is_idle(pod) && h != NULL && strcmp(h, holder) == 0;
}

/* After a lease patch whose answer was lost (a 5xx, a connection cut): whether the pod is
 * leased to holder now, the patch having applied; *pod then holds it. */
static bool leased_to(struct kube_client *c, const char *ns, const char *name, const char *holder,
                      struct json **pod)
{
	cleanup_err struct err *e = NULL;
	struct json *p = NULL;
	if (kube_api_pod_get(c, ns, name, NULL, &p, &e) < 0)
		return false;
	if (!held_by(p, holder)) {
		json_free(p);
		return false;
	}
	json_free(*pod);
	*pod = p;
	return true;
}

/* Whether a leased pod is the one the request needs: its whole spec hash and its image. */
static const char *mismatch(const struct json *pod, const char *spec_sha256, const char *image)
{
	const char *h = json_str(
	        json_get(json_path(pod, "metadata.annotations"), POD_ANNOTATION_SPEC_SHA256));
	if (h == NULL || strcmp(h, spec_sha256) != 0)
		return "its spec-sha256 annotation is not the request's";
	const struct json *cs = json_path(pod, "spec.containers");
	for (size_t i = 0; i < json_len(cs); i++) {
		const struct json *ct = json_at(cs, i);
		const char *name = json_str(json_get(ct, "name"));
		if (name && strcmp(name, POD_CONTAINER_NAME) == 0)
			return json_str(json_get(ct, "image")) &&
			                       strcmp(json_str(json_get(ct, "image")), image) == 0
			               ? NULL
			               : "its function container runs another image";
	}
	return "it has no function container";
}

int fn_pool_claim(struct kube_client *c, const char *ns, const char *key, const char *spec_sha256,
                  const char *image, const char *holder, long long lease_until_ms,
                  struct json **pod, size_t *idle, struct err **err)
{
	*pod = NULL;
	*idle = 0;
	cleanup_free char *sel = xasprintf(POD_LABEL_POOL "=%s," POD_LABEL_POOL_STATE "=idle", key);
	cleanup_json struct json *list = NULL;
	if (kube_api_pod_list(c, ns, sel, &list, err) < 0)
		return err_wrap(err, "list the warm pool %s", key);
	const struct json *items = json_get(list, "items");
	size_t n = json_len(items);
	*idle = n;
	if (n == 0)
		return 0;
	cleanup_free char *patch = claim_patch(holder, lease_until_ms);
	uint32_t start = 0;
	if (getrandom(&start, sizeof(start), 0) != (ssize_t)sizeof(start))
		start = (uint32_t)now_ms();
	for (size_t k = 0; k < n; k++) { /* from a random one: concurrent callers spread */
		const struct json *it = json_at(items, (start + k) % n);
		const char *name = json_str(json_path(it, "metadata.name"));
		if (name == NULL || !claimable(it))
			continue;
		long status = 0;
		cleanup_err struct err *e = NULL;
		int rc = kube_api_pod_json_patch(c, ns, name, patch, &status, pod, &e);
		if (rc < 0 && (status >= 500 || status == 0) && e->code != ERR_SIGNAL &&
		    e->code != ERR_TIMEOUT && leased_to(c, ns, name, holder, pod)) {
			/* the answer was lost, the lease was not (not sent again: kube_http.h) */
			log_info("warm pool: the lease on pod %s/%s was taken although its answer "
			         "was lost (%s)",
			         ns, name, e->msg);
			rc = 0;
		}
		if (rc == 0) {
			const char *why = mismatch(*pod, spec_sha256, image);
			if (why == NULL)
				return 1;
			log_warn(
			        "warm pool: pod %s/%s is labelled for pool %s but %s: retiring it, "
			        "unused",
			        ns, name, key, why);
			json_free(*pod);
			*pod = NULL;
			cleanup_err struct err *de = NULL;
			if (kube_api_pod_delete(c, ns, name, &de) < 0)
				log_warn("retire pool pod %s/%s: %s", ns, name, de->msg);
			continue;
		}
		if (status != 422 && status != 404 && status != 409) {
			*err = e;
			e = NULL;
			return err_wrap(err, "take the lease on pod %s/%s", ns, name);
		}
		log_debug("warm pool: pod %s/%s went to another caller (%ld)", ns, name, status);
	}
	return 0;
}

int fn_pool_room(struct kube_client *c, const struct settings *s, const char *ns, bool *room,
                 struct err **err)
{
	cleanup_json struct json *list = NULL;
	if (kube_api_pod_list(c, ns, POD_LABEL_POOL, &list, err) < 0)
		return err_wrap(err, "list the warm pool");
	*room = json_len(json_get(list, "items")) < (size_t)s->pool_max;
	return 0;
}

bool fn_pool_over_cap(struct kube_client *c, const struct settings *s, const char *ns)
{
	cleanup_json struct json *list = NULL;
	cleanup_err struct err *e = NULL;
	if (kube_api_pod_list(c, ns, POD_LABEL_POOL, &list, &e) < 0) {
		log_info("warm pool: cannot count the pool after making a pod (%s): it serves "
		         "one call only",
		         e->msg);
		return true;
	}
	const struct json *items = json_get(list, "items");
	size_t n = 0;
	for (size_t i = 0; i < json_len(items); i++)
		if (json_path(json_at(items, i), "metadata.deletionTimestamp") == NULL)
			n++;
	return n > (size_t)s->pool_max;
}

/* Deletes ns/name only while holder still holds it and nothing changed since it was read
 * (uid and resourceVersion preconditions): never a pod another caller took meanwhile. */
static int retire_if_ours(struct kube_client *c, const char *ns, const char *name,
                          const char *holder, struct err **err)
{
	cleanup_json struct json *pod = NULL;
	long status = 0;
	if (kube_api_pod_get(c, ns, name, &status, &pod, err) < 0) {
		if (status != 404)
			return err_wrap(err, "look at pool pod %s/%s before retiring it", ns, name);
		err_free(*err);
		*err = NULL;
		return 0; /* gone already */
	}
	if (!held_by(pod, holder)) {
		log_info("warm pool: pod %s/%s was given back after all (%s): left in the pool", ns,
		         name, is_idle(pod) ? "idle" : "leased by another caller");
		return 0;
	}
	const char *uid = json_str(json_path(pod, "metadata.uid"));
	const char *rv = json_str(json_path(pod, "metadata.resourceVersion"));
	if (uid == NULL || rv == NULL)
		return kube_api_pod_delete(c, ns, name, err);
	return kube_api_pod_delete_if(c, ns, name, uid, rv, err) < 0 ? -1 : 0;
}

int fn_pool_release(struct kube_client *c, const char *ns, const char *name, const char *holder,
                    bool keep, struct err **err)
{
	if (keep) {
		cleanup_free char *patch = release_patch(holder);
		long status = 0;
		cleanup_err struct err *e = NULL;
		if (kube_api_pod_json_patch(c, ns, name, patch, &status, NULL, &e) == 0)
			return 0;
		/* a Role without pods patch cannot keep a pool: said, not hidden */
		log_msg(status == 403 ? LOG_WARN : LOG_INFO,
		        "warm pool: pod %s/%s could not be given back (%s): retiring it", ns, name,
		        e->msg);
		/* A 5xx may hide a release that did apply: the pod may be idle again, or leased
		 * by another caller already. It is retired only while still ours, unchanged. */
		if (status >= 500 || status == 0)
			return retire_if_ours(c, ns, name, holder, err);
	}
	return kube_api_pod_delete(c, ns, name, err);
}

/* Why the janitor deletes a pool pod (NULL: it stays). *idle_seen counts the idle pods of
 * its pool met so far (the first KRMPOD_WARM_POOL_SIZE stay). */
static const char *retire_reason(const struct settings *s, const struct json *pod, long long now,
                                 size_t *idle_seen)
{
	if (!claimable(pod))
		return "ended";
	if (!is_idle(pod)) {
		long long until = annotation_ms(pod, POD_ANNOTATION_LEASE_UNTIL);
		return until > 0 && until < now ? "its lease ran out (the holder died)" : NULL;
	}
	long long since = annotation_ms(pod, POD_ANNOTATION_IDLE_SINCE);
	if (since > 0 && now - since > s->pool_ttl_ms)
		return "idle past KRMPOD_WARM_POOL_TTL";
	if (++*idle_seen > (size_t)s->pool_size)
		return "beyond KRMPOD_WARM_POOL_SIZE idle pods";
	return NULL;
}

int fn_pool_janitor(struct kube_client *c, const struct settings *s, const char *ns,
                    long long now_epoch_ms, bool dry_run, unsigned *deleted, struct err **err)
{
	cleanup_json struct json *list = NULL;
	if (kube_api_pod_list(c, ns, POD_LABEL_POOL, &list, err) < 0)
		return err_wrap(err, "list the warm pool");
	const struct json *items = json_get(list, "items");
	/* idle pods counted per pool: the pools in the order met */
	size_t n = json_len(items);
	cleanup_free const char **keys = xcalloc(n + 1, sizeof(char *));
	cleanup_free size_t *counts = xcalloc(n + 1, sizeof(size_t));
	size_t n_keys = 0, kept = 0;
	for (size_t i = 0; i < n; i++) {
		const struct json *pod = json_at(items, i);
		const char *key =
		        json_str(json_get(json_path(pod, "metadata.labels"), POD_LABEL_POOL));
		const char *name = json_str(json_path(pod, "metadata.name"));
		size_t k = 0;
		while (k < n_keys && key && strcmp(keys[k], key) != 0)
			k++;
		if (k == n_keys && key)
			keys[n_keys++] = key;
		const char *why = retire_reason(s, pod, now_epoch_ms, &counts[k]);
		/* creators racing for the last room can make more than KRMPOD_WARM_POOL_MAX */
		if (why == NULL && ++kept > (size_t)s->pool_max && is_idle(pod)) {
			kept--;
			why = "beyond KRMPOD_WARM_POOL_MAX pool pods";
		}
		if (why == NULL || name == NULL)
			continue;
		log_info("warm pool: %s pod %s/%s: %s", dry_run ? "would delete" : "deleting", ns,
		         name, why);
		if (dry_run) {
			(*deleted)++;
			continue;
		}
		/* only the pod as listed: a claim that landed since changed it, and keeps it */
		const char *uid = json_str(json_path(pod, "metadata.uid"));
		const char *rv = json_str(json_path(pod, "metadata.resourceVersion"));
		int rc = uid && rv ? kube_api_pod_delete_if(c, ns, name, uid, rv, err)
		                   : kube_api_pod_delete(c, ns, name, err);
		if (rc < 0)
			return err_wrap(err, "delete pool pod %s/%s", ns, name);
		if (rc == 1) {
			log_info(
			        "warm pool: pod %s/%s changed since the list (a caller took it, or "
			        "its status moved): left alone until the next run",
			        ns, name);
			continue;
		}
		(*deleted)++;
	}
	return 0;
}

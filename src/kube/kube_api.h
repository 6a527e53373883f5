/* kube_api.h — every Kubernetes REST path and request body krmpod sends, and the calls made
 * of them: pods (create, get, list, delete, watch, log, attach), the kubelet's Started
 * events, podtemplates, networkpolicies, SelfSubjectAccessReviews and /version. Nothing
 * else in krmpod writes an API path (scripts/layers.py checks it); the server's own path
 * prefix (a proxied API server) is added by the clients, kube_http and kube_stream, never
 * here.
 *
 * Paths are new strings the caller frees. Names that go into a query are escaped. The calls
 * take a kube_client (kube_http.h) and fail like kube_request(): ERR_API with the HTTP
 * status and the server's reason and message, ERR_NET, ERR_TIMEOUT, ERR_SIGNAL.
 */
#ifndef KRMPOD_KUBE_API_H
#define KRMPOD_KUBE_API_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "base/json.h"
#include "kube/kube_http.h"
#include "kube/kube_version.h"

/* --- paths ---------------------------------------------------------------------------- */

/* GET .../pods/POD */
char *kube_api_pod_path(const char *ns, const char *pod);

/* A watch of one pod from resourceVersion rv, with bookmarks, ending after timeout_s. */
char *kube_api_pod_watch_path(const char *ns, const char *pod, const char *rv, int timeout_s);

/* A watch of the kubelet's Started events of the pod with this uid. */
char *kube_api_started_events_watch_path(const char *ns, const char *pod_uid, int timeout_s);

/* The log of one container, at most limit_bytes of it. */
char *kube_api_pod_log_path(const char *ns, const char *pod, const char *container,
                            size_t limit_bytes);

/* pods/attach to container: stdout and stderr, stdin when want_stdin, no tty. */
char *kube_api_pod_attach_path(const char *ns, const char *pod, const char *container,
                               bool want_stdin);

/* pods/exec of command (NULL-terminated) in container: stdin, stdout and stderr, no tty. */
char *kube_api_pod_exec_path(const char *ns, const char *pod, const char *container,
                             const char *const *command);

/* The namespace and the subresource ("attach", "exec") of a stream path built above.
 * New strings; "(unknown)" and "attach" when the path is not of that form. */
void kube_api_stream_path_parts(const char *path, char **ns, char **subresource);

/* --- calls ---------------------------------------------------------------------------- */

/* The label that makes a pod create safe to repeat: a random value per body (pod_manifest.h
 * writes it). */
#define KUBE_LABEL_CREATE_ID "krmpod.dev/create-id"

/* Creates a pod from a JSON body (POST .../pods?fieldValidation=Strict), trying again when
 * its generateName collided with an existing pod (409, up to 3 times). A POST is never
 * repeated blindly: after an answer that leaves unknown whether the server applied it (a
 * 5xx, a connection lost after sending), the pod is looked up by the body's
 * KUBE_LABEL_CREATE_ID first, taken when it exists and created again only when it does not
 * (up to 3 times). Not cancellable: a create cut short might still be applied server-side,
 * and then nobody would know the name of the pod to delete. *out receives the created object
 * (with its metadata.name). */
int kube_api_pod_create(struct kube_client *c, const char *ns, const char *body, size_t len,
                        struct json **out, struct err **err);

/* Deletes a pod at once (gracePeriodSeconds 0, propagationPolicy Background); a pod that is
 * already gone (404) is success. */
int kube_api_pod_delete(struct kube_client *c, const char *ns, const char *name, struct err **err);

/* Deletes the pod only if it is still the object that was read: its uid and resourceVersion
 * as preconditions. Returns 0 when deleted (or already gone), 1 when it changed since (409:
 * someone patched it, a pool claim say; it is left alone), -1 with *err otherwise. */
int kube_api_pod_delete_if(struct kube_client *c, const char *ns, const char *name, const char *uid,
                           const char *resource_version, struct err **err);

/* GETs a pod into *out; *status (may be NULL) receives the HTTP status, also on errors (404:
 * the pod is gone). */
int kube_api_pod_get(struct kube_client *c, const char *ns, const char *name, long *status,
                     struct json **out, struct err **err);

/* Applies a JSON patch (RFC 6902, application/json-patch+json) to the pod: its "test"
 * operations make it a compare-and-swap (the server applies it atomically: 422 when a test
 * fails). *status as in kube_api_pod_get; *out (may be NULL) receives the pod after. */
int kube_api_pod_json_patch(struct kube_client *c, const char *ns, const char *name,
                            const char *patch, long *status, struct json **out, struct err **err);

/* Lists the pods of ns that match a label selector ("k=v"). */
int kube_api_pod_list(struct kube_client *c, const char *ns, const char *label_selector,
                      struct json **out, struct err **err);

/* GETs the PodTemplate ns/name; *status as in kube_api_pod_get. */
int kube_api_podtemplate_get(struct kube_client *c, const char *ns, const char *name, long *status,
                             struct json **out, struct err **err);

/* GETs the Secret ns/name into *out (`krmpod doctor` reads its type, never prints its
 * data); *status as in kube_api_pod_get (403: no `secrets get`). */
int kube_api_secret_get(struct kube_client *c, const char *ns, const char *name, long *status,
                        struct json **out, struct err **err);

/* Lists the NetworkPolicies of ns. */
int kube_api_networkpolicy_list(struct kube_client *c, const char *ns, struct json **out,
                                struct err **err);

/* One permission, as a SelfSubjectAccessReview asks it (group "" is the core group). */
struct kube_api_access {
	const char *verb, *group, *resource, *subresource; /* subresource may be "" */
};

/* Asks the server whether the client's identity may do `a` in ns: *allowed. */
int kube_api_access_review(struct kube_client *c, const char *ns, const struct kube_api_access *a,
                           bool *allowed, struct err **err);

/* GET /version, decoded (kube_version.h). */
int kube_api_version_get(struct kube_client *c, struct kube_version *out, struct err **err);

/* Whether an error is the refusal of a full ResourceQuota (403 "exceeded quota"). */
bool kube_api_quota_full(const struct err *e);

#endif

/* pod_spec.h — the locked-down Pod that runs one function (design.md §3.3).
 *
 * The pod passes Pod Security "restricted": non-root (65534 unless --user names another
 * non-zero id), seccomp RuntimeDefault, no privilege escalation, all capabilities dropped,
 * no service-account token, no service links, restartPolicy Never, activeDeadlineSeconds from
 * the overall timeout, resource requests and limits, terminationMessagePolicy
 * FallbackToLogsOnError. The container is stdin+stdinOnce when the request wants stdin (-i),
 * else without stdin (docker run without -i: an empty stdin); tty false. The spec is a pure
 * function of the request and the settings (prestart keys pods by it).
 *
 * Labels: app.kubernetes.io/managed-by=krmpod, krmpod.dev/function=true,
 * krmpod.dev/network=none|granted (a NetworkPolicy selects these), plus KRMPOD_EXTRA_LABELS.
 * Annotation krmpod.dev/image records the full image. With an owner pod (downward API), an
 * ownerReference to it without blockOwnerDeletion, so function pods die with the
 * repo-server pod.
 *
 * --mount flags add emptyDir volumes, their volumeMounts and, for bind mounts, the `mounts`
 * init container that receives the files (pod_mounts.h).
 */
#ifndef KRMPOD_POD_SPEC_H
#define KRMPOD_POD_SPEC_H

#include "base/buf.h"
#include "base/json.h"
#include "config/fn_request.h"
#include "config/settings.h"

#define POD_CONTAINER_NAME   "fn"
#define POD_LABEL_MANAGED_BY "app.kubernetes.io/managed-by"
#define POD_LABEL_FUNCTION   "krmpod.dev/function"
#define POD_LABEL_NETWORK    "krmpod.dev/network"
#define POD_ANNOTATION_IMAGE "krmpod.dev/image"

/* Writes the Pod as JSON into out (appending). Cannot fail: inputs were validated when they
 * were parsed. */
void pod_spec_build(const struct fn_request *req, const struct settings *s, struct buf *out);

/* Writes the container "securityContext" (no privilege escalation, not privileged,
 * non-root, all capabilities dropped) that every container of a function pod gets. */
void pod_spec_write_security_context(struct jw *w);

/* The fields that make a container attachable the way krmpod streams it, no tty. With
 * `stdin_`, stdin and stdinOnce (the runtime closes stdin when the first attach's stdin
 * ends); without, neither: the process's stdin is empty (/dev/null), like `docker run`
 * without -i, and the attach asks only for stdout and stderr. */
void pod_spec_write_attach_fields(struct jw *w, bool stdin_);

/* The generateName prefix for an image: "krmpod-" + the image's last path segment without
 * tag/digest, lowercased, non-alphanumerics as '-', cut so the name stays ≤ 63 chars with
 * the 5 random characters the server adds. Returns a new string ending in '-'. */
char *pod_spec_generate_name(const char *image);

#endif

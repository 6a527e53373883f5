/* pod_container.h — what every container of a function pod gets, whichever writes it: the
 * function container (pod_manifest.c), the mounts init container (pod_mounts.c) and the exec
 * mode's init container (pod_agent.c). */
#ifndef KRMPOD_POD_CONTAINER_H
#define KRMPOD_POD_CONTAINER_H

#include <stdbool.h>

#include "base/json.h"

/* Writes the container "securityContext" (no privilege escalation, not privileged,
 * non-root, all capabilities dropped; with read_only_root, readOnlyRootFilesystem). */
void pod_container_write_security_context(struct jw *w, bool read_only_root);

/* The fields that make a container attachable the way krmpod streams it, no tty. With
 * `stdin_`, stdin and stdinOnce (the runtime closes stdin when the first attach's stdin
 * ends); without, neither: the process's stdin is empty (/dev/null), like `docker run`
 * without -i, and the attach asks only for stdout and stderr. */
void pod_container_write_attach_fields(struct jw *w, bool stdin_);
/* stdin open and never closed by an attach's end (stdinOnce false), no tty: the container's
 * process waits on it (exec mode on the image's own entrypoint, pod_manifest.c). */
void pod_container_write_held_stdin(struct jw *w);

/* Writes "resources" for krmpod's own init containers: they only copy bytes (10m/16Mi
 * requested, 500m/64Mi at most). */
void pod_container_write_helper_resources(struct jw *w);
/* The "resources" key of exec mode's installer container, which runs as long as the pod. */
void pod_container_write_agent_resources(struct jw *w);

#endif

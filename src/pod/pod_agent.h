/* pod_agent.h — the parts of an exec-mode function pod (docs/internals/exec-mode.md; the
 * names are in pod_names.h). Called by pod_manifest.c for a request with exec_argv.
 *
 *   - the container "krmpod" (KRMPOD_HELPER_IMAGE, krmpod's own image), first among the
 *     pod's containers, runs `krmpod hold`; its postStart hook runs
 *     `krmpod install-self /krmpod/bin` into the emptyDir "krmpod-bin". The kubelet starts
 *     the next container only when the hook is done, and in the same sync: no relist wait,
 *     as an init container would have;
 *   - the function container runs `/krmpod/bin/krmpod hold` instead of the image's
 *     entrypoint, without stdin, with "krmpod-bin" read-only at /krmpod/bin and the
 *     emptyDir "krmpod-work" at /krmpod/work (each call's HOME and TMPDIR live there);
 *   - the function itself runs through pods/exec: `krmpod call /krmpod/work`.
 * Both containers keep the locked-down security context; the pod still passes Pod Security
 * "restricted".
 */
#ifndef KRMPOD_POD_AGENT_H
#define KRMPOD_POD_AGENT_H

#include "base/json.h"
#include "config/settings.h"

/* Writes the installer container (an element of "containers", before the function's). */
void pod_agent_write_container(struct jw *w, const struct settings *s);

/* Writes the function container's "command" (hold). */
void pod_agent_write_command(struct jw *w);

/* Writes the function container's volumeMounts for the agent, as array elements. */
void pod_agent_write_volume_mounts(struct jw *w);

/* Writes the pod's volumes for the agent, as array elements. */
void pod_agent_write_volumes(struct jw *w);

/* The exec command of one call, for pods/exec: NULL-terminated, static. */
extern const char *const pod_agent_call_command[];

#endif

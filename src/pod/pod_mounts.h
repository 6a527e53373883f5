/* pod_mounts.h — the parts of a function pod that carry its --mount flags (docs/levels.md,
 * "Level 2: mounts"). Called by pod_manifest.c; the names are in pod_names.h.
 *
 * Mount i (its index among the --mount flags) gets the emptyDir volume "krmpod-mount-<i>":
 *   - bind: the `mounts` init container (the helper image running `krmpod unpack
 *     /krmpod/mounts`, stdin+stdinOnce, the function container's locked-down security
 *     context, small resources) mounts it at /krmpod/mounts/<i> and receives the files over
 *     its attached stdin; the function container mounts it at the target with subPath
 *     "content", readOnly unless the flag is not `readonly`;
 *   - tmpfs: an emptyDir with medium Memory at the target, readOnly when the flag says so;
 *     nothing is sent.
 */
#ifndef KRMPOD_POD_MOUNTS_H
#define KRMPOD_POD_MOUNTS_H

#include <stdbool.h>

#include "base/json.h"
#include "config/request.h"
#include "config/settings.h"

/* Whether req needs the `mounts` init container (it has a bind mount). */
bool pod_mounts_need_helper(const struct fn_request *req);

/* Writes the mounts init container (an element of "initContainers"), for a req that needs
 * it. s->helper_image must be set (fn_mounts_prepare checked it). */
void pod_mounts_write_init_container(struct jw *w, const struct fn_request *req,
                                     const struct settings *s);

/* Writes the function container's volumeMounts for req's mounts as array elements (the
 * caller writes the array). */
void pod_mounts_write_volume_mounts(struct jw *w, const struct fn_request *req);

/* Writes the pod's volumes for req's mounts as array elements. */
void pod_mounts_write_volumes(struct jw *w, const struct fn_request *req);

#endif

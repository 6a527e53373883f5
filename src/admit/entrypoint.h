/* entrypoint.h — what a function's image runs, for exec mode (docs/internals/exec-mode.md).
 *
 * In exec mode the pod does not run the image's entrypoint: `krmpod call` runs it through
 * pods/exec, so krmpod must know it. It comes from the image's config in its registry
 * (registry.h: anonymous, bearer token, KRMPOD_REGISTRY_AUTH or, where the sidecar may read
 * them, the function pods' pull Secrets, pull_auth.h; KRMPOD_REGISTRY_MIRRORS),
 * cached by digest under KRMPOD_CACHE_DIR, a tag's digest remembered for
 * FN_IMAGE_TAG_TTL_MS (so the functions of one render ask the registry once per image).
 * argv is docker's: Entrypoint, then the request's args or else Cmd.
 *
 * An admin's catalog may record an image's entrypoint and cmd (catalog.h): when the config
 * cannot be read, the record gives exec mode; when it can, the two must agree.
 */
#ifndef KRMPOD_ENTRYPOINT_H
#define KRMPOD_ENTRYPOINT_H

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#include "base/err.h"
#include "config/kubeconfig.h"
#include "config/request.h"
#include "config/settings.h"

#define FN_IMAGE_TAG_TTL_MS (5 * 60 * 1000)

/* Sets req->exec_argv under KRMPOD_MODE=exec and auto (nothing in attach mode, nor without
 * KRMPOD_HELPER_IMAGE). When the image's config cannot be read (no registry reachable, a
 * private registry without credentials, an image only on the nodes), the entrypoint an admin
 * catalog records is used; without one, exec mode on the image's own entrypoint
 * (req->exec_pid1, exec_argv empty: the call runs PID 1's command line). Under auto the config is
 * then not asked for again for FN_IMAGE_TAG_TTL_MS (a marker in the cache, keyed by the
 * image and the registry settings). What was chosen is said at info level the first time
 * for an image (under exec, only a fallback or a record), at debug level after. Fails
 * (ERR_CONFIG, naming the image) for a config that names nothing to run, for a record that
 * disagrees with the config, for catalogs that record different ones or cannot be loaded;
 * and on a signal. */
int fn_image_resolve(const struct settings *s, struct kube_config *cfg, struct fn_request *req,
                     atomic_int *cancel, int64_t deadline_ms, struct err **err);

#endif

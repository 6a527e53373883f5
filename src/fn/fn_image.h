/* fn_image.h — what a function's image runs, for exec mode (docs/internals/exec-mode.md).
 *
 * In exec mode the pod does not run the image's entrypoint: `krmpod call` runs it through
 * pods/exec, so krmpod must know it. It comes from the image's config in its registry
 * (registry.h: anonymous, bearer token or KRMPOD_REGISTRY_AUTH; KRMPOD_REGISTRY_MIRRORS),
 * cached by digest under KRMPOD_CACHE_DIR, a tag's digest remembered for
 * FN_IMAGE_TAG_TTL_MS (so the functions of one render ask the registry once per image).
 * argv is docker's: Entrypoint, then the request's args or else Cmd.
 */
#ifndef KRMPOD_FN_IMAGE_H
#define KRMPOD_FN_IMAGE_H

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#include "base/err.h"
#include "config/fn_request.h"
#include "config/settings.h"

#define FN_IMAGE_TAG_TTL_MS (5 * 60 * 1000)

/* Sets req->exec_argv under KRMPOD_MODE=exec and auto (nothing in attach mode, nor under
 * auto without KRMPOD_HELPER_IMAGE). When the image's config cannot be read (no registry
 * reachable, a private registry without credentials, an image only on the nodes), req stays
 * in attach mode; under auto its config is then not asked for again for FN_IMAGE_TAG_TTL_MS
 * (a marker in the cache, keyed by the image and the registry settings). What was chosen is said at
 * info level the first time for an image (under exec, only the fallback), at debug level
 * after. Fails only for an image whose config names nothing to run (ERR_CONFIG naming it)
 * and on a signal. */
int fn_image_resolve(const struct settings *s, struct fn_request *req, atomic_int *cancel,
                     int64_t deadline_ms, struct err **err);

#endif

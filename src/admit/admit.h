/* admit.h — admission: one stage between a function request and its pod.
 *
 * admit() decides whether req runs and how, before any pod exists, in this order, and every
 * refusal leaves from it with its reason:
 *   1. the image policy (KRMPOD_IMAGE_POLICY, KRMPOD_IMAGE_ALLOWLIST, the admin's catalogs:
 *      catalog/image_policy.h), with the network and mounts the image may have;
 *   2. the network rule: `network: true` only under KRMPOD_ALLOW_NETWORK;
 *   3. the signature policy (trust.h): the image verified and its digest pinned;
 *   4. the mode: the image's entrypoint from its config or an admin catalog's record
 *      (entrypoint.h), for exec mode, or attach mode;
 *   5. the warm pool: whether the call is pooled, and whether its config may be.
 * What it decides goes into req (pinned_image, exec_argv, exec_pid1, pooled, pool_shared).
 * s holds the settings for req (fn_config_for_request()). Registry reads end after
 * ADMIT_FETCH_TIMEOUT_MS or at *cancel.
 */
#ifndef KRMPOD_ADMIT_H
#define KRMPOD_ADMIT_H

#include <stdatomic.h>

#include "base/err.h"
#include "config/kubeconfig.h"
#include "config/request.h"
#include "config/settings.h"

#define ADMIT_FETCH_TIMEOUT_MS 10000

/* flags */
#define ADMIT_POLICY_CHECKED 1 /* the image policy was checked already (generate, for its tree) */

int admit(struct settings *s, struct kube_config *cfg, struct fn_request *req, atomic_int *cancel,
          int flags, struct err **err);

#endif

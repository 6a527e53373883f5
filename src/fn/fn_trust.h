/* fn_trust.h — the admin's signature policy (KRMPOD_SIGNATURE_POLICY, docs/signatures.md)
 * applied to one function before any pod exists: when a requirement covers its image, the
 * image must carry a valid cosign signature by one of the requirement's keys, and the pod
 * runs the digest so verified (req->pinned_image).
 */
#ifndef KRMPOD_FN_TRUST_H
#define KRMPOD_FN_TRUST_H

#include <stdatomic.h>
#include <stdint.h>

#include "base/err.h"
#include "config/fn_request.h"
#include "config/settings.h"

/* Checks req->image against s->signature_policy (nothing without one, or when no
 * requirement covers the image) and sets req->pinned_image. A requirement naming catalogs
 * loads the admin's catalogs (through KRMPOD_POLICY_FILE under generate). Registry reads
 * end at deadline_ms or *cancel. Fails as sig_verify does, or with ERR_CONFIG for a policy
 * that cannot be read. */
int fn_trust_check(const struct settings *s, struct fn_request *req, atomic_int *cancel,
                   int64_t deadline_ms, struct err **err);

#endif

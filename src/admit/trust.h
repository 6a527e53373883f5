/* trust.h — the admin's signature policy (KRMPOD_SIGNATURE_POLICY, docs/signatures.md)
 * applied to one function before any pod exists: when a requirement covers its image, the
 * image must carry a valid cosign signature by one of the requirement's keys, and the pod
 * runs the digest so verified (req->pinned_image).
 */
#ifndef KRMPOD_TRUST_H
#define KRMPOD_TRUST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "config/request.h"
#include "config/settings.h"

/* Checks req->image against s->signature_policy (nothing without one, or when no
 * requirement covers the image) and sets req->pinned_image. A requirement naming catalogs
 * loads the admin's catalogs (through KRMPOD_POLICY_FILE under generate). Registry reads
 * end at deadline_ms or *cancel. Fails as sig_verify does, or with ERR_CONFIG for a policy
 * that cannot be read. */
int fn_trust_check(const struct settings *s, struct fn_request *req, atomic_int *cancel,
                   int64_t deadline_ms, struct err **err);

/* The admin catalogs listing one image whose requirements krmpod checks; more is
 * ERR_CONFIG. */
#define FN_TRUST_MAX_CATALOGS 16

/* What `krmpod catalog view` and `krmpod doctor` say of image under the loaded policy sp
 * (catalogs: the names of the n_catalogs admin catalogs that list it): whether a requirement
 * covers it, with which keys, and whether a valid signature is found now (registry reads
 * bounded by FN_TRUST_VIEW_TIMEOUT_MS). Never fails: a failure is the detail. */
#define FN_TRUST_VIEW_TIMEOUT_MS 10000
struct fn_trust_view {
	bool required;
	char *keys;   /* "platform-team or vendor" (per requirement, "; " between); NULL */
	bool valid;   /* with required: a valid signature was found */
	char *detail; /* how it was verified, or why it is refused; NULL when not required */
};
struct sig_policy;
void fn_trust_view(const struct settings *s, const struct sig_policy *sp, const char *image,
                   const char *const *catalogs, size_t n_catalogs, struct fn_trust_view *out);
void fn_trust_view_clear(struct fn_trust_view *v);

#endif

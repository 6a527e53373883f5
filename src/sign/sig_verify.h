/* sig_verify.h — one function image against the signature policy (docs/signatures.md):
 * the digest its reference names now, then for each requirement that covers it a valid
 * signature by one of that requirement's keys (cosign.h finds them, sig_key.h checks them).
 *
 * The pod then runs that digest, never a tag that could move after the check. A digest
 * found signed by a key is remembered under the cache directory (DIR/verified/, keyed by
 * the key and the digest), so a warm render asks the registry nothing: a tag's digest is
 * remembered for o->tag_ttl_ms as registry.h does, and a verified digest until the cache is
 * emptied. Dropping a key from the policy takes effect at once (its entries are never read).
 */
#ifndef KRMPOD_SIG_VERIFY_H
#define KRMPOD_SIG_VERIFY_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "base/sha256.h"
#include "registry/registry.h"
#include "sign/sig_policy.h"

struct sig_verdict {
	char digest[SHA256_DIGEST_LEN + 1];
	char *pinned; /* the image to run: "NAME[:TAG]@sha256:…" */
	char *how;    /* per requirement, the key and the signature that satisfied it */
	bool cached;  /* every requirement was met from the cache */
};
void sig_verdict_clear(struct sig_verdict *v);

/* Verifies image against the n_rules requirements rules (from sig_policy_rules_for; n_rules
 * > 0) of p, reading the registry with o. On success *out is filled. A refusal is
 * ERR_CONFIG naming the image, the digest, the policy and the requirement, the keys, each
 * signature found and why it did not count (or that none was found, and where krmpod
 * looked), and the cosign command that would sign it. Registry failures are passed on
 * (ERR_NET, ERR_CONFIG for credentials, ERR_TIMEOUT, ERR_SIGNAL), wrapped with the image. */
int sig_verify(const struct sig_policy *p, const struct sig_rule *const *rules, size_t n_rules,
               const struct registry_opts *o, const char *image, struct sig_verdict *out,
               struct err **err);

#endif

/* sig_policy.h — the admin's signature policy (docs/signatures.md): which public keys a
 * function's image must be signed by, for which images. KRMPOD_SIGNATURE_POLICY names the
 * file (the ConfigMap krmpod-signature-policy, mounted into the sidecar):
 *
 *   apiVersion: krmpod.dev/v1alpha1
 *   kind: SignaturePolicy
 *   keys:
 *     - name: platform-team
 *       publicKey: |              # PEM, ECDSA P-256 (cosign.pub); or publicKeyFile: PATH
 *         -----BEGIN PUBLIC KEY-----
 *         ...
 *   requirements:
 *     - images: ["registry.example.co/fns/set-*"] # patterns, '*' any run of characters
 *       catalogs: [example-co-functions]        # every image an admin catalog lists
 *       keys: [platform-team]                   # a valid signature by any one of them
 *
 * An image covered by several requirements needs a signature for each. Both lists are
 * required and may be empty (the manifests ship such a policy: nothing needs a signature). The policy is read
 * strictly: an unknown field is an error, and so is any field that asks for a transparency
 * log or keyless signing (krmpod verifies offline, against the keys only).
 */
#ifndef KRMPOD_SIG_POLICY_H
#define KRMPOD_SIG_POLICY_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/err.h"
#include "sign/sig_key.h"

struct sig_rule {
	char *name; /* "requirement 1 (images ghcr.io/x/...)", for messages */
	char **images;
	size_t n_images;
	char **catalogs;
	size_t n_catalogs;
	size_t *keys; /* indexes into the policy's keys */
	size_t n_keys;
};

struct sig_policy {
	char *what; /* "the signature policy /etc/krmpod/signatures/policy.yaml" */
	struct sig_key *keys;
	size_t n_keys;
	struct sig_rule *rules;
	size_t n_rules;
};

/* Parses policy text (len bytes; `what` names it) into *out. Fails with ERR_CONFIG naming
 * the field, what is wrong and the fix. */
int sig_policy_parse(const char *text, size_t len, const char *what, struct sig_policy *out,
                     struct err **err);
/* sig_policy_parse on the file at path (at most LIMIT_SIGNATURE_POLICY bytes), `setting`
 * naming where the path came from. */
int sig_policy_load(const char *path, const char *setting, struct sig_policy *out,
                    struct err **err);
void sig_policy_clear(struct sig_policy *p);

/* Whether some requirement names catalogs (then the admin's catalogs must be loaded to
 * know which images they cover). */
bool sig_policy_has_catalogs(const struct sig_policy *p);

/* Appends the names of r's keys to out, sep between them ("platform or vendor"). */
void sig_rule_key_names(const struct sig_policy *p, const struct sig_rule *r, const char *sep,
                        struct buf *out);

/* The requirements that cover image: a pattern matches it, or it names one of the
 * n_catalogs `catalogs` (the names of every admin catalog listing the image,
 * policy_catalogs_of). Up to max of them go to out; returns how many cover it. */
size_t sig_policy_rules_for(const struct sig_policy *p, const char *image,
                            const char *const *catalogs, size_t n_catalogs,
                            const struct sig_rule **out, size_t max);

#endif

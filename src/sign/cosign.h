/* cosign.h — the signatures cosign stores for an image digest in its registry
 * (docs/signatures.md), found and parsed, not yet checked against any key (sig_verify.h does
 * that). Two formats:
 *
 *   legacy  the tag `sha256-<hex>.sig` (cosign v2's default): an image manifest whose layers
 *           of media type COSIGN_SIMPLESIGNING each hold a simple-signing payload naming the
 *           digest (critical.image.docker-manifest-digest), the signature of its bytes in the
 *           layer's annotation COSIGN_SIGNATURE_ANNOTATION (base64 DER ECDSA);
 *   bundle  a sigstore bundle (cosign v3's default): an OCI 1.1 referrer of the digest, of
 *           artifactType COSIGN_BUNDLE, found through the referrers API or, where the
 *           registry has none (it answers 404), the fallback tag `sha256-<hex>`, an index of
 *           the referrers. Its one layer is the bundle: a DSSE envelope whose payload is an
 *           in-toto statement with predicate type COSIGN_SIGN_PREDICATE and the digest among
 *           its subjects; the signature signs DSSE's pre-authentication encoding (PAE).
 *
 * A signature whose payload names another digest, a bundle that is an attestation rather
 * than a signature, a layer or bundle that cannot be read: each is kept with its `problem`,
 * so that a refusal can say what was found and why it did not count. No transparency log
 * entry and no certificate in a bundle is read: krmpod checks keys, offline.
 */
#ifndef KRMPOD_COSIGN_H
#define KRMPOD_COSIGN_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/err.h"
#include "registry/registry_repo.h"

#define COSIGN_SIMPLESIGNING        "application/vnd.dev.cosign.simplesigning.v1+json"
#define COSIGN_SIGNATURE_ANNOTATION "dev.cosignproject.cosign/signature"
#define COSIGN_SIMPLESIGNING_TYPE   "cosign container image signature"
#define COSIGN_BUNDLE               "application/vnd.dev.sigstore.bundle.v0.3+json"
#define COSIGN_BUNDLE_ALT           "application/vnd.dev.sigstore.bundle+json;version=0.3"
#define COSIGN_SIGN_PREDICATE       "https://sigstore.dev/cosign/sign/v1"
#define DSSE_INTOTO                 "application/vnd.in-toto+json"
#define OCI_EMPTY_CONFIG            "application/vnd.oci.empty.v1+json"

enum cosign_format { COSIGN_LEGACY, COSIGN_FORMAT_BUNDLE };

/* One signature as found. */
struct cosign_sig {
	enum cosign_format format;
	char *where;             /* "tag sha256-<hex>.sig, layer 1", "bundle sha256:… (the
	                          * referrers API)": for messages */
	struct buf signed_bytes; /* what the signature signs: the payload, or DSSE's PAE */
	unsigned char *sig;      /* DER ECDSA */
	size_t sig_len;
	char *problem; /* why it cannot count whatever the key; NULL when it may */
};

struct cosign_sigs {
	struct cosign_sig *v;
	size_t n;
	/* Where bundles were looked for: "the referrers API" or "the fallback tag sha256-…";
	 * with n == 0 it completes the message "no signature: …". */
	char *searched;
};
void cosign_sigs_clear(struct cosign_sigs *s);

/* Finds the signatures of digest in repo's repository: the legacy tag and the bundles.
 * Everything found goes into *out (zeroed by the caller), readable or not (problem set).
 * Fails only when the registry cannot tell (a transport error, a refused request, an
 * answer other than 2xx or 404, a signal): ERR_NET, ERR_CONFIG, ERR_TIMEOUT, ERR_SIGNAL. */
int cosign_find(struct registry_repo *repo, const char *digest, struct cosign_sigs *out,
                struct err **err);

/* Pure, for unit tests and fuzzing. */

/* Checks a simple-signing payload (len bytes) against digest: its type and the digest it
 * names. Returns NULL when it matches, else the problem (a new string). */
char *cosign_payload_problem(const char *payload, size_t len, const char *digest);

/* Reads a sigstore bundle (len bytes of JSON) signed for digest into *out (format, bytes,
 * signature; `where` left alone): out->problem says why it cannot count, if it cannot.
 * Only the first signature of its envelope is read. */
void cosign_bundle_read(const char *text, size_t len, const char *digest, struct cosign_sig *out);

/* DSSE's pre-authentication encoding of (type, body): "DSSEv1 <len> <type> <len> <body>",
 * appended to out. */
void cosign_dsse_pae(const char *type, const char *body, size_t body_len, struct buf *out);

#endif

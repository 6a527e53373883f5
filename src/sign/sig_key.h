/* sig_key.h — the public keys of a signature policy (docs/signatures.md): ECDSA on P-256
 * with SHA-256, the keys `cosign generate-key-pair` makes, read from PEM and checked with
 * mbedTLS. No other key type is accepted: an RSA, Ed25519 or other-curve key is refused by
 * name, so that an admin learns at once why a policy would never let anything through.
 */
#ifndef KRMPOD_SIG_KEY_H
#define KRMPOD_SIG_KEY_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "base/sha256.h"

struct sig_key {
	char *name;                     /* the policy's name for it ("platform-team") */
	char id[SHA256_DIGEST_LEN + 1]; /* sha256 of its DER SubjectPublicKeyInfo */
	void *pk;                       /* mbedtls_pk_context, owned */
};

/* Parses a PEM "PUBLIC KEY" (SubjectPublicKeyInfo) of len bytes (need not be
 * NUL-terminated) as key `name`. Fails with ERR_CONFIG naming the key and `what` (where it
 * was written) when the text is not a PEM public key, or when the key is not ECDSA on P-256
 * (naming what it is: "an RSA key", "an EC key on another curve"). */
int sig_key_parse(const char *name, const char *what, const char *pem, size_t len,
                  struct sig_key *out, struct err **err);
void sig_key_clear(struct sig_key *k);

/* Whether sig (sig_len bytes, an ASN.1 DER ECDSA signature as cosign writes it) is k's
 * signature of the SHA-256 of msg. Never fails: a malformed signature is simply not valid. */
bool sig_key_verify(const struct sig_key *k, const void *msg, size_t msg_len,
                    const unsigned char *sig, size_t sig_len);

#endif

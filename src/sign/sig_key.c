/* sig_key.c — see sig_key.h. */
#include "sign/sig_key.h"

#include <stdlib.h>
#include <string.h>

#include <mbedtls/ecp.h>
#include <mbedtls/pk.h>
#include <mbedtls/sha256.h>

#include "base/cleanup.h"
#include "base/xalloc.h"

/* The largest DER SubjectPublicKeyInfo krmpod writes for an id: a P-256 key takes 91. */
#define SIG_KEY_DER_MAX 256

static const char *describe(const mbedtls_pk_context *pk)
{
	switch (mbedtls_pk_get_type(pk)) {
	case MBEDTLS_PK_RSA:
	case MBEDTLS_PK_RSASSA_PSS:
		return "an RSA key";
	case MBEDTLS_PK_ECKEY:
	case MBEDTLS_PK_ECKEY_DH:
	case MBEDTLS_PK_ECDSA:
		return "an EC key on another curve than P-256";
	default:
		return "a key of a type mbedTLS cannot read";
	}
}

int sig_key_parse(const char *name, const char *what, const char *pem, size_t len,
                  struct sig_key *out, struct err **err)
{
	memset(out, 0, sizeof(*out));
	if (len == 0 || memmem(pem, len, "-----BEGIN PUBLIC KEY-----", 26) == NULL)
		return err_set(err, ERR_CONFIG,
		               "key %s in %s: not a PEM public key (\"-----BEGIN PUBLIC "
		               "KEY-----\", as `cosign generate-key-pair` writes cosign.pub)",
		               name, what);
	/* mbedTLS reads PEM only from a NUL-terminated buffer whose length counts the NUL. */
	cleanup_free char *text = xstrndup(pem, len);
	mbedtls_pk_context *pk = xcalloc(1, sizeof(*pk));
	mbedtls_pk_init(pk);
	int rc = mbedtls_pk_parse_public_key(pk, (const unsigned char *)text, strlen(text) + 1);
	const char *problem = NULL;
	if (rc != 0)
		problem = "its PEM does not hold a public key mbedTLS can read (Ed25519 keys "
		          "are not supported)";
	else if (mbedtls_pk_get_type(pk) != MBEDTLS_PK_ECKEY ||
	         mbedtls_ecp_keypair_get_group_id(mbedtls_pk_ec(*pk)) != MBEDTLS_ECP_DP_SECP256R1)
		problem = describe(pk);
	unsigned char der[SIG_KEY_DER_MAX];
	int n = problem ? 0 : mbedtls_pk_write_pubkey_der(pk, der, sizeof(der));
	if (!problem && n <= 0)
		problem = "its DER form cannot be written";
	if (problem) {
		mbedtls_pk_free(pk);
		free(pk);
		return err_set(err, ERR_CONFIG,
		               "key %s in %s: %s; krmpod verifies ECDSA P-256 signatures with "
		               "SHA-256 only, the keys `cosign generate-key-pair` makes",
		               name, what, problem);
	}
	/* mbedtls_pk_write_pubkey_der writes at the end of the buffer. */
	sha256_digest(der + sizeof(der) - (size_t)n, (size_t)n, out->id);
	out->name = xstrdup(name);
	out->pk = pk;
	return 0;
}

void sig_key_clear(struct sig_key *k)
{
	if (k->pk) {
		mbedtls_pk_free(k->pk);
		free(k->pk);
	}
	free(k->name);
	memset(k, 0, sizeof(*k));
}

bool sig_key_verify(const struct sig_key *k, const void *msg, size_t msg_len,
                    const unsigned char *sig, size_t sig_len)
{
	unsigned char hash[32];
	if (k->pk == NULL || sig_len == 0 ||
	    mbedtls_sha256((const unsigned char *)msg, msg_len, hash, 0) != 0)
		return false;
	return mbedtls_pk_verify(k->pk, MBEDTLS_MD_SHA256, hash, sizeof(hash), sig, sig_len) == 0;
}

/* Unit tests: the pure parts of signature verification (src/sign/): public keys (P-256
 * parsed, its id, OpenSSL's signatures checked; RSA, P-384, Ed25519 and non-PEM refused),
 * cosign's simple-signing payload, DSSE's PAE, sigstore bundles (read, refused, verified end
 * to end), and the signature policy (parsed, matched, refused by field; publicKeyFile and
 * sig_policy_load on files). sig_verify and cosign_find need a registry: not here.
 *
 * The fixtures were made once with OpenSSL 3.0 and embedded (the private keys discarded):
 *
 *   openssl ecparam -name prime256v1 -genkey -noout -out p256.key
 *   openssl ec -in p256.key -pubout -out p256.pub                        # P256_PEM
 *   (the same two commands again for p256b.key, p256b.pub)               # P256B_PEM
 *   openssl ecparam -name secp384r1 -genkey -noout -out p384.key
 *   openssl ec -in p384.key -pubout -out p384.pub                        # P384_PEM
 *   openssl ecparam -name secp256k1 -genkey -noout -out k1.key
 *   openssl ec -in k1.key -pubout -out k1.pub                            # K1_PEM
 *   openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:1024 -out rsa.key
 *   openssl pkey -in rsa.key -pubout -out rsa.pub                        # RSA_PEM
 *   openssl genpkey -algorithm ED25519 -out ed.key
 *   openssl pkey -in ed.key -pubout -out ed.pub                          # ED25519_PEM
 *   openssl pkey -pubin -in p256.pub -outform DER | sha256sum            # P256_ID
 *   openssl pkey -pubin -in p256.pub -outform DER | openssl dgst -sha256 -binary | base64
 *                                                  # the bundles' publicKey hint
 *   printf 'krmpod test image manifest' | sha256sum                      # HEX
 *   printf 'hello, krmpod' > msg.txt
 *   openssl dgst -sha256 -sign p256.key -out msg.sig msg.txt             # MSG_SIG (base64 -w0)
 *   printf '%s' "$PAYLOAD" > payload.json                                # PAYLOAD below
 *   openssl dgst -sha256 -sign p256.key -out payload.sig payload.json   # PAYLOAD_SIG
 *   printf '%s' "$STATEMENT" > statement.json                            # STATEMENT below
 *   base64 -w0 statement.json                                            # STATEMENT_B64
 *   { printf 'DSSEv1 28 application/vnd.in-toto+json 226 '; cat statement.json; } > pae.bin
 *   openssl dgst -sha256 -sign p256.key -out pae.sig pae.bin            # PAE_SIG
 *   openssl dgst -sha256 -verify p256.pub -signature pae.sig pae.bin    # Verified OK
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/xalloc.h"
#include "check.h"
#include "sign/cosign.h"
#include "sign/sig_key.h"
#include "sign/sig_policy.h"

#define P256_PEM                                                             \
	"-----BEGIN PUBLIC KEY-----\n"                                       \
	"MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE2KA3Q829jHTv39kcLYX4agqJLbxe\n" \
	"3rbbDAFtzNN4KoxfYusVf1I3LjKq9S/uA8OJD/NvcmAfz8/8xwLWUqZtHg==\n"     \
	"-----END PUBLIC KEY-----\n"
#define P256_ID "sha256:e9467c8a1bab7887c9cffaa13e571f2ceec8962872605bd5f8a8156f65dfefe2"

#define P256B_PEM                                                            \
	"-----BEGIN PUBLIC KEY-----\n"                                       \
	"MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE9Q7mV9dtRgAV3mMPKmUAGG2IHUGI\n" \
	"l8CXLJqXl1xUrVdqBTJI8iW2Rm2f9PVpU7Vcd+3B3YpugJD86qQHCAFjhg==\n"     \
	"-----END PUBLIC KEY-----\n"

#define P384_PEM                                                             \
	"-----BEGIN PUBLIC KEY-----\n"                                       \
	"MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAEnwih5zEUkHio6s5kanX/6JCEqUeobijJ\n" \
	"2rKg0nl5nnNKlNiOmeHUVSgOsFZp3tfpxclbO9VFcKy9v4MDiU/pcctzfRS9Jwdf\n" \
	"10L7KZNieS0BYqpldXKTtDKW7zoJeF3A\n"                                 \
	"-----END PUBLIC KEY-----\n"

/* secp256k1: 256 bits too, but not P-256. */
#define K1_PEM                                                               \
	"-----BEGIN PUBLIC KEY-----\n"                                       \
	"MFYwEAYHKoZIzj0CAQYFK4EEAAoDQgAEmt8O8oPLR2yNncreIAVzb8BmkXflzkPj\n" \
	"SuQIAHQeIpOit/UmYmDyCp4k0fAW/LYRV73ospcapbiGBKdxDaHTHA==\n"         \
	"-----END PUBLIC KEY-----\n"

#define RSA_PEM                                                              \
	"-----BEGIN PUBLIC KEY-----\n"                                       \
	"MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQCVk1VuMQ5UoZKjl7Bp3UfLPt6/\n" \
	"5yUK7BT8pxM5q45vko5PtSObYVprJZ6QA2JP/u5fCAVfh2peFamRz+hnpbSMHDTp\n" \
	"gfyYllAgz+kXIufZnZkNkh6EGUj/pfd93tCFzdZPaRrDYyiyqQCcXk7efQDzFU1t\n" \
	"hVx46xNY+7u/8bxWywIDAQAB\n"                                         \
	"-----END PUBLIC KEY-----\n"

#define ED25519_PEM                                                      \
	"-----BEGIN PUBLIC KEY-----\n"                                   \
	"MCowBQYDK2VwAyEAS/hENLtIYk7pOZoKsRatkStnFSvdqei/n3ApByqXvCM=\n" \
	"-----END PUBLIC KEY-----\n"

#define MSG "hello, krmpod"
#define MSG_SIG                                                                            \
	"MEUCIGsbE++jbG86SM/GrW64x8L0jxeuW85l0PgKbYGiRwoGAiEArFuRROtKvRJSchoXLAHB+aDVChw/" \
	"gy0Lj8egNgwJzko="

#define HEX       "0b0f0ea3383c8c1c8af7c4506263f15614681378a9e8337d44664c3ae0adb8e6"
#define DIGEST    "sha256:" HEX
#define OTHER_HEX "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define OTHER     "sha256:" OTHER_HEX

#define PAYLOAD_FOR(type, digest)                                                         \
	"{\"critical\":{\"identity\":{\"docker-reference\":\"r/x\"},\"image\":{\"docker-" \
	"manifest-digest\":\"" digest "\"},\"type\":\"" type "\"},\"optional\":null}"
#define PAYLOAD PAYLOAD_FOR("cosign container image signature", DIGEST)
#define PAYLOAD_SIG                                                                          \
	"MEQCIG+Dp/Mgu3cQhazX63y8Anp0AaI54FhirtsIUrqNQ01sAiA4dGmDNkUlAUR/K6AIrs+1CgG3a2lVc/" \
	"He4I8LV7th0A=="

#define STATEMENT_FOR(hex, predicate)                                                    \
	"{\"_type\":\"https://in-toto.io/Statement/v1\",\"subject\":[{\"name\":\"r/x\"," \
	"\"digest\":{\"sha256\":\"" hex "\"}}],\"predicateType\":\"" predicate "\","     \
	"\"predicate\":{}}"
#define STATEMENT STATEMENT_FOR(HEX, "https://sigstore.dev/cosign/sign/v1")
#define STATEMENT_B64                                                                              \
	"eyJfdHlwZSI6Imh0dHBzOi8vaW4tdG90by5pby9TdGF0ZW1lbnQvdjEiLCJzdWJqZWN0IjpbeyJuYW1lIjoici94" \
	"IiwiZGlnZXN0Ijp7InNoYTI1NiI6IjBiMGYwZWEzMzgzYzhjMWM4YWY3YzQ1MDYyNjNmMTU2MTQ2ODEzNzhhOWU4" \
	"MzM3ZDQ0NjY0YzNhZTBhZGI4ZTYifX1dLCJwcmVkaWNhdGVUeXBlIjoiaHR0cHM6Ly9zaWdzdG9yZS5kZXYvY29z" \
	"aWduL3NpZ24vdjEiLCJwcmVkaWNhdGUiOnt9fQ=="
#define PAE_SIG                                                                                 \
	"MEQCIFQKqp+Uts7zpvo6X9B5PMnWvemzCIXQe37bVIu2cNIKAiAOQ3VE4xLC7lOSCG3klu4KXCzXem1ZA5RcV" \
	"rpGW7YNMQ=="

/* --- helpers ----------------------------------------------------------------------------- */

/* Standard base64 with padding (the project has a decoder only). */
static char *b64(const void *data, size_t n)
{
	static const char abc[] =
	        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = data;
	char *out = xmalloc((n + 2) / 3 * 4 + 1), *o = out;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16;
		if (i + 1 < n)
			v |= (unsigned)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		*o++ = abc[(v >> 18) & 63];
		*o++ = abc[(v >> 12) & 63];
		*o++ = i + 1 < n ? abc[(v >> 6) & 63] : '=';
		*o++ = i + 2 < n ? abc[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

/* The bytes of base64 text (a fixture: decoding must work). */
static unsigned char *unb64(const char *text, size_t *n)
{
	char *out = NULL;
	cleanup_err struct err *e = NULL;
	*n = 0;
	if (base64_decode(text, strlen(text), "a fixture", &out, n, &e) < 0) {
		CHECK_FAIL_("decode fixture %s: %s", text, e->msg);
		return NULL;
	}
	return (unsigned char *)out;
}

/* pem parsed as key `name` (it must parse). */
static void parse_key(const char *name, const char *pem, struct sig_key *k)
{
	cleanup_err struct err *e = NULL;
	if (sig_key_parse(name, "the test", pem, strlen(pem), k, &e) < 0)
		CHECK_FAIL_("parse %s: %s", name, e->msg);
}

static void sig_free(struct cosign_sig *g)
{
	free(g->where);
	buf_free(&g->signed_bytes);
	free(g->sig);
	free(g->problem);
	memset(g, 0, sizeof(*g));
}

/* cosign_bundle_read of text for digest into a fresh *g. */
static void read_bundle(const char *text, const char *digest, struct cosign_sig *g)
{
	memset(g, 0, sizeof(*g));
	buf_init(&g->signed_bytes, 0);
	cosign_bundle_read(text, strlen(text), digest, g);
}

/* A bundle as cosign v3 writes it: mediaType, the envelope's payloadType, its payload
 * (statement, base64-encoded here) and its one signature (base64 text as given). */
static char *bundle_json(const char *media_type, const char *payload_type, const char *statement,
                         const char *sig_b64)
{
	cleanup_free char *payload = b64(statement, strlen(statement));
	return xasprintf(
	        "{\"mediaType\":\"%s\",\"verificationMaterial\":{\"publicKey\":{\"hint\":"
	        "\"6UZ8ihureIfJz/qhPlcfLO7IlihyYFvV+KgVb2Xf7+I=\"}},\"dsseEnvelope\":{"
	        "\"payload\":\"%s\",\"payloadType\":\"%s\",\"signatures\":[{\"sig\":\"%s\"}"
	        "]}}",
	        media_type, payload, payload_type, sig_b64);
}

/* --- keys ---------------------------------------------------------------------------------- */

TEST(a_p256_key_parses_and_its_id_is_the_sha256_of_its_der)
{
	struct sig_key k;
	parse_key("platform-team", P256_PEM, &k);
	CHECK_STR(k.name, "platform-team");
	CHECK_STR(k.id, P256_ID);
	CHECK(k.pk != NULL);
	sig_key_clear(&k);
	CHECK(k.pk == NULL && k.name == NULL);

	/* The text need not be NUL-terminated: exactly len bytes on the heap (ASan watches). */
	size_t len = strlen(P256_PEM);
	char *exact = xmalloc(len);
	memcpy(exact, P256_PEM, len);
	cleanup_err struct err *e = NULL;
	CHECK_INT(sig_key_parse("exact", "the test", exact, len, &k, &e), 0);
	CHECK_STR(k.id, P256_ID);
	sig_key_clear(&k);
	free(exact);

	/* Another key, another id. */
	parse_key("other", P256B_PEM, &k);
	CHECK(k.pk != NULL);
	CHECK(strncmp(k.id, "sha256:", 7) == 0 && strlen(k.id) == SHA256_DIGEST_LEN);
	CHECK(strcmp(k.id, P256_ID) != 0);
	sig_key_clear(&k);
}

TEST(an_openssl_signature_verifies_and_nothing_altered_does)
{
	struct sig_key k, other;
	parse_key("platform-team", P256_PEM, &k);
	parse_key("other", P256B_PEM, &other);
	size_t n = 0;
	unsigned char *sig = unb64(MSG_SIG, &n);
	CHECK_INT(n, 71);
	CHECK(sig_key_verify(&k, MSG, strlen(MSG), sig, n));

	/* Another message, a shorter one, another key. */
	CHECK(!sig_key_verify(&k, "hello, krmpoD", strlen(MSG), sig, n));
	CHECK(!sig_key_verify(&k, MSG, strlen(MSG) - 1, sig, n));
	CHECK(!sig_key_verify(&k, "", 0, sig, n));
	CHECK(!sig_key_verify(&other, MSG, strlen(MSG), sig, n));

	/* Truncated, empty, with a byte more. */
	CHECK(!sig_key_verify(&k, MSG, strlen(MSG), sig, n - 1));
	CHECK(!sig_key_verify(&k, MSG, strlen(MSG), sig, n / 2));
	CHECK(!sig_key_verify(&k, MSG, strlen(MSG), sig, 0));
	unsigned char longer[80];
	memcpy(longer, sig, n);
	longer[n] = 0;
	CHECK(!sig_key_verify(&k, MSG, strlen(MSG), longer, n + 1));

	/* Any one bit flipped, anywhere. */
	for (size_t i = 0; i < n; i++)
		for (int bit = 0; bit < 8; bit++) {
			sig[i] ^= (unsigned char)(1u << bit);
			if (sig_key_verify(&k, MSG, strlen(MSG), sig, n))
				CHECK_FAIL_("signature with bit %d of byte %zu flipped verifies",
				            bit, i);
			sig[i] ^= (unsigned char)(1u << bit);
		}
	CHECK(sig_key_verify(&k, MSG, strlen(MSG), sig, n)); /* restored */

	/* A cleared key verifies nothing. */
	sig_key_clear(&k);
	CHECK(!sig_key_verify(&k, MSG, strlen(MSG), sig, n));
	sig_key_clear(&other);
	free(sig);
}

TEST(other_key_types_are_refused_by_name)
{
	static const struct {
		const char *name, *pem, *what_it_is;
	} cases[] = {
	        {"rsa-team", RSA_PEM, "an RSA key"},
	        {"p384-team", P384_PEM, "an EC key on another curve than P-256"},
	        {"k1-team", K1_PEM, "an EC key on another curve than P-256"},
	        {"ed-team", ED25519_PEM, "Ed25519"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct sig_key k;
		cleanup_err struct err *e = NULL;
		CHECK_INT(sig_key_parse(cases[i].name, "the policy p.yaml", cases[i].pem,
		                        strlen(cases[i].pem), &k, &e),
		          -1);
		if (e == NULL) {
			CHECK_FAIL_("%s: no error", cases[i].name);
			sig_key_clear(&k);
			continue;
		}
		CHECK_INT(e->code, ERR_CONFIG);
		CHECK_CONTAINS(e->msg, cases[i].name);
		CHECK_CONTAINS(e->msg, "the policy p.yaml");
		CHECK_CONTAINS(e->msg, cases[i].what_it_is);
		CHECK_CONTAINS(e->msg, "ECDSA P-256");
		CHECK(k.pk == NULL && k.name == NULL);
	}
}

TEST(text_that_is_not_a_pem_public_key_is_refused)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
	        {"", "not a PEM public key"},
	        {"hello", "not a PEM public key"},
	        {"MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE2KA3Q829jHTv39kcLYX4agqJLbxe", /* bare */
	         "not a PEM public key"},
	        {"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIA==\n-----END EC PRIVATE KEY-----\n",
	         "not a PEM public key"},
	        {"-----BEGIN PUBLIC KEY-----\nbm90IGEga2V5\n-----END PUBLIC KEY-----\n",
	         "does not hold a public key"},
	        {"-----BEGIN PUBLIC KEY-----\n"
	         "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE2KA3Q829jHTv39kcLYX4agqJLbxe\n", /* cut */
	         "does not hold a public key"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct sig_key k;
		cleanup_err struct err *e = NULL;
		const char *t = cases[i].text;
		if (sig_key_parse("team", "the test", t, strlen(t), &k, &e) == 0) {
			CHECK_FAIL_("text %zu (\"%s\") parses as a key", i, t);
			sig_key_clear(&k);
			continue;
		}
		CHECK_INT(e ? e->code : ERR_OK, ERR_CONFIG);
		CHECK_CONTAINS(e ? e->msg : NULL, "key team in the test");
		CHECK_CONTAINS(e ? e->msg : NULL, cases[i].want);
		CHECK(k.pk == NULL);
	}
	/* A PEM whose len stops before its end. */
	struct sig_key k;
	cleanup_err struct err *e = NULL;
	CHECK_INT(sig_key_parse("team", "the test", P256_PEM, 60, &k, &e), -1);
	CHECK_INT(e ? e->code : ERR_OK, ERR_CONFIG);
	CHECK_CONTAINS(e ? e->msg : NULL, "does not hold a public key");
}

/* --- the simple-signing payload ---------------------------------------------------------- */

TEST(a_simple_signing_payload_names_its_digest)
{
	char *p = cosign_payload_problem(PAYLOAD, strlen(PAYLOAD), DIGEST);
	CHECK(p == NULL);
	free(p);

	/* The same payload asked for another digest: the problem names the one it signs. */
	p = cosign_payload_problem(PAYLOAD, strlen(PAYLOAD), OTHER);
	CHECK_CONTAINS(p, DIGEST);
	CHECK_CONTAINS(p, "another digest");
	free(p);

	/* A payload naming another digest. */
	static const char other[] = PAYLOAD_FOR("cosign container image signature", OTHER);
	p = cosign_payload_problem(other, strlen(other), DIGEST);
	CHECK_CONTAINS(p, OTHER);
	free(p);

	/* Another type, none. */
	static const char typed[] = PAYLOAD_FOR("atomic container signature", DIGEST);
	p = cosign_payload_problem(typed, strlen(typed), DIGEST);
	CHECK_CONTAINS(p, "critical.type is \"atomic container signature\"");
	free(p);
	static const char untyped[] =
	        "{\"critical\":{\"image\":{\"docker-manifest-digest\":\"" DIGEST "\"}}}";
	p = cosign_payload_problem(untyped, strlen(untyped), DIGEST);
	CHECK_CONTAINS(p, "critical.type is missing");
	free(p);

	/* No digest. */
	static const char nodigest[] =
	        "{\"critical\":{\"identity\":{\"docker-reference\":\"r/x\"},\"image\":{},"
	        "\"type\":\"cosign container image signature\"},\"optional\":null}";
	p = cosign_payload_problem(nodigest, strlen(nodigest), DIGEST);
	CHECK_CONTAINS(p, "no critical.image.docker-manifest-digest");
	free(p);

	/* Not JSON: broken, a bare word, nothing. */
	static const char *const junk[] = {"{\"critical\":", "not json", "[1, 2]", ""};
	for (size_t i = 0; i < sizeof(junk) / sizeof(*junk); i++) {
		p = cosign_payload_problem(junk[i], strlen(junk[i]), DIGEST);
		if (p == NULL)
			CHECK_FAIL_("payload \"%s\" has no problem", junk[i]);
		free(p);
	}

	/* Only len bytes are read: the payload cut before its end is broken. */
	p = cosign_payload_problem(PAYLOAD, strlen(PAYLOAD) - 2, DIGEST);
	CHECK(p != NULL);
	free(p);
}

TEST(a_signed_simple_signing_payload_verifies)
{
	struct sig_key k;
	parse_key("platform-team", P256_PEM, &k);
	size_t n = 0;
	unsigned char *sig = unb64(PAYLOAD_SIG, &n);
	CHECK(sig_key_verify(&k, PAYLOAD, strlen(PAYLOAD), sig, n));
	static const char other[] = PAYLOAD_FOR("cosign container image signature", OTHER);
	CHECK(!sig_key_verify(&k, other, strlen(other), sig, n));
	sig_key_clear(&k);
	free(sig);
}

/* --- DSSE -------------------------------------------------------------------------------- */

TEST(dsse_pae_is_exact)
{
	static const char want[] = "DSSEv1 28 application/vnd.in-toto+json 5 hello";
	cleanup_buf struct buf b;
	buf_init(&b, 0);
	cosign_dsse_pae(DSSE_INTOTO, "hello", 5, &b);
	CHECK_INT(b.len, strlen(want));
	CHECK(b.len == strlen(want) && memcmp(b.data, want, b.len) == 0);
	CHECK_STR(b.data, want);

	/* Bytes, not a string: a NUL in the body counts; the PAE appends. */
	buf_reset(&b);
	buf_puts(&b, "x");
	cosign_dsse_pae("t", "a\0b", 3, &b);
	static const char want2[] = "xDSSEv1 1 t 3 a\0b";
	CHECK_INT(b.len, sizeof(want2) - 1);
	CHECK(b.len == sizeof(want2) - 1 && memcmp(b.data, want2, b.len) == 0);

	/* An empty body; a buffer with a limit it would pass. */
	buf_reset(&b);
	cosign_dsse_pae(DSSE_INTOTO, "", 0, &b);
	CHECK_STR(b.data, "DSSEv1 28 application/vnd.in-toto+json 0 ");
	cleanup_buf struct buf small;
	buf_init(&small, 8);
	cosign_dsse_pae(DSSE_INTOTO, "hello", 5, &small);
	CHECK_STR(small.data, want);
}

/* --- sigstore bundles -------------------------------------------------------------------- */

TEST(a_cosign_v3_bundle_reads_and_verifies_end_to_end)
{
	/* The encoder here agrees with base64 -w0 on the statement. */
	cleanup_free char *enc = b64(STATEMENT, strlen(STATEMENT));
	CHECK_STR(enc, STATEMENT_B64);
	CHECK_INT(strlen(STATEMENT), 226);

	cleanup_free char *text = bundle_json(COSIGN_BUNDLE, DSSE_INTOTO, STATEMENT, PAE_SIG);
	struct cosign_sig g;
	read_bundle(text, DIGEST, &g);
	CHECK(g.problem == NULL);
	if (g.problem)
		CHECK_FAIL_("problem: %s", g.problem);
	CHECK_INT(g.format, COSIGN_FORMAT_BUNDLE);
	static const char pae[] = "DSSEv1 28 application/vnd.in-toto+json 226 " STATEMENT;
	CHECK_INT(g.signed_bytes.len, strlen(pae));
	CHECK(g.signed_bytes.len == strlen(pae) &&
	      memcmp(g.signed_bytes.data, pae, strlen(pae)) == 0);
	size_t n = 0;
	unsigned char *want = unb64(PAE_SIG, &n);
	CHECK_INT(g.sig_len, n);
	CHECK(g.sig != NULL && g.sig_len == n && memcmp(g.sig, want, n) == 0);

	struct sig_key k, other;
	parse_key("platform-team", P256_PEM, &k);
	parse_key("other", P256B_PEM, &other);
	CHECK(sig_key_verify(&k, g.signed_bytes.data, g.signed_bytes.len, g.sig, g.sig_len));
	CHECK(!sig_key_verify(&other, g.signed_bytes.data, g.signed_bytes.len, g.sig, g.sig_len));
	/* The signature is over the PAE, not the bare statement. */
	CHECK(!sig_key_verify(&k, STATEMENT, strlen(STATEMENT), g.sig, g.sig_len));
	sig_free(&g);

	/* The other spelling of the media type reads too. */
	cleanup_free char *alt = bundle_json(COSIGN_BUNDLE_ALT, DSSE_INTOTO, STATEMENT, PAE_SIG);
	read_bundle(alt, DIGEST, &g);
	CHECK(g.problem == NULL);
	CHECK(sig_key_verify(&k, g.signed_bytes.data, g.signed_bytes.len, g.sig, g.sig_len));
	sig_free(&g);

	/* A statement altered to name another digest, with the original signature: it reads
	 * for that digest, but the signature does not verify. */
	static const char forged[] =
	        STATEMENT_FOR(OTHER_HEX, "https://sigstore.dev/cosign/sign/v1");
	cleanup_free char *ftext = bundle_json(COSIGN_BUNDLE, DSSE_INTOTO, forged, PAE_SIG);
	read_bundle(ftext, OTHER, &g);
	CHECK(g.problem == NULL);
	CHECK(g.signed_bytes.len > 0);
	CHECK(!sig_key_verify(&k, g.signed_bytes.data, g.signed_bytes.len, g.sig, g.sig_len));
	sig_free(&g);

	sig_key_clear(&k);
	sig_key_clear(&other);
	free(want);
}

TEST(a_bundle_that_cannot_count_has_a_problem)
{
	static const char other_subject[] =
	        STATEMENT_FOR(OTHER_HEX, "https://sigstore.dev/cosign/sign/v1");
	static const char attestation[] = STATEMENT_FOR(HEX, "https://slsa.dev/provenance/v1");
	static const char no_predicate[] =
	        "{\"_type\":\"https://in-toto.io/Statement/v1\",\"subject\":[{\"digest\":{"
	        "\"sha256\":\"" HEX "\"}}]}";
	struct {
		const char *label;
		char *text;
		const char *digest, *want;
	} cases[] = {
	        {"another subject digest",
	         bundle_json(COSIGN_BUNDLE, DSSE_INTOTO, other_subject, PAE_SIG), DIGEST,
	         "its statement's subjects do not name " DIGEST},
	        {"the right bundle asked for another digest",
	         bundle_json(COSIGN_BUNDLE, DSSE_INTOTO, STATEMENT, PAE_SIG), OTHER,
	         "do not name " OTHER},
	        {"an attestation", bundle_json(COSIGN_BUNDLE, DSSE_INTOTO, attestation, PAE_SIG),
	         DIGEST, "attestation (predicate type https://slsa.dev/provenance/v1)"},
	        {"no predicate type",
	         bundle_json(COSIGN_BUNDLE, DSSE_INTOTO, no_predicate, PAE_SIG), DIGEST,
	         "predicate type missing"},
	        {"another payloadType",
	         bundle_json(COSIGN_BUNDLE, "application/vnd.dev.cosign.simplesigning.v1+json",
	                     STATEMENT, PAE_SIG),
	         DIGEST, "payloadType is application/vnd.dev.cosign.simplesigning.v1+json"},
	        {"a messageSignature bundle",
	         xasprintf("{\"mediaType\":\"%s\",\"verificationMaterial\":{\"publicKey\":{"
	                   "\"hint\":\"x\"}},\"messageSignature\":{\"messageDigest\":{"
	                   "\"algorithm\":\"SHA2_256\",\"digest\":\"CwgOoz\"},"
	                   "\"signature\":\"%s\"}}",
	                   COSIGN_BUNDLE, PAE_SIG),
	         DIGEST, "messageSignature"},
	        {"no envelope", xasprintf("{\"mediaType\":\"%s\"}", COSIGN_BUNDLE), DIGEST,
	         "no dsseEnvelope"},
	        {"a non-bundle mediaType",
	         bundle_json("application/vnd.oci.image.manifest.v1+json", DSSE_INTOTO, STATEMENT,
	                     PAE_SIG),
	         DIGEST, "not a sigstore bundle (mediaType application/vnd.oci.image.manifest"},
	        {"no mediaType", xstrdup("{\"dsseEnvelope\":{}}"), DIGEST,
	         "not a sigstore bundle (mediaType missing)"},
	        {"bad base64 in the payload",
	         xasprintf("{\"mediaType\":\"%s\",\"dsseEnvelope\":{\"payload\":\"e30*!!\","
	                   "\"payloadType\":\"%s\",\"signatures\":[{\"sig\":\"%s\"}]}}",
	                   COSIGN_BUNDLE, DSSE_INTOTO, PAE_SIG),
	         DIGEST, "the envelope's payload: not valid base64"},
	        {"no payload",
	         xasprintf("{\"mediaType\":\"%s\",\"dsseEnvelope\":{\"payloadType\":\"%s\","
	                   "\"signatures\":[{\"sig\":\"%s\"}]}}",
	                   COSIGN_BUNDLE, DSSE_INTOTO, PAE_SIG),
	         DIGEST, "no payload"},
	        {"a payload that is not JSON",
	         bundle_json(COSIGN_BUNDLE, DSSE_INTOTO, "{\"_type\": [", PAE_SIG), DIGEST,
	         "in-toto statement"},
	        {"bad base64 in the signature",
	         bundle_json(COSIGN_BUNDLE, DSSE_INTOTO, STATEMENT, "MEQC*IFQK"), DIGEST,
	         "the signature: not valid base64"},
	        {"an empty signature", bundle_json(COSIGN_BUNDLE, DSSE_INTOTO, STATEMENT, ""),
	         DIGEST, "no signature"},
	        {"no signatures",
	         xasprintf("{\"mediaType\":\"%s\",\"dsseEnvelope\":{\"payload\":\"%s\","
	                   "\"payloadType\":\"%s\",\"signatures\":[]}}",
	                   COSIGN_BUNDLE, STATEMENT_B64, DSSE_INTOTO),
	         DIGEST, "no signature"},
	        {"broken JSON", xstrdup("{\"mediaType\": \"application/vnd.dev.sigstore"), DIGEST,
	         "the bundle"},
	        {"not JSON at all", xstrdup("not json"), DIGEST, "not a sigstore bundle"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct cosign_sig g;
		read_bundle(cases[i].text, cases[i].digest, &g);
		if (g.problem == NULL)
			CHECK_FAIL_("%s: no problem", cases[i].label);
		else if (strstr(g.problem, cases[i].want) == NULL)
			CHECK_FAIL_("%s: problem \"%s\" lacks \"%s\"", cases[i].label, g.problem,
			            cases[i].want);
		if (g.signed_bytes.len != 0)
			CHECK_FAIL_("%s: %zu signed bytes despite the problem", cases[i].label,
			            g.signed_bytes.len);
		sig_free(&g);
		free(cases[i].text);
	}
}

/* --- the signature policy ---------------------------------------------------------------- */

/* A key entry of a YAML policy, its PEM as a block scalar. */
static void key_yaml(struct buf *b, const char *name, const char *pem)
{
	buf_printf(b, "- name: %s\n  publicKey: |\n", name);
	for (const char *l = pem; *l;) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		buf_printf(b, "    %.*s\n", (int)n, l);
		l += n + (nl ? 1 : 0);
	}
}

#define HEAD "apiVersion: krmpod.dev/v1alpha1\nkind: SignaturePolicy\n"
#define WHAT "the signature policy test.yaml"

/* HEAD (unless head is given), keys: the keys named (P256_PEM for each, P256B_PEM for
 * "security"), then rest. */
static char *policy_text(const char *head, const char *key1, const char *key2, const char *rest)
{
	struct buf b;
	buf_init(&b, 0);
	buf_puts(&b, head ? head : HEAD);
	if (key1) {
		buf_puts(&b, "keys:\n");
		key_yaml(&b, key1, strcmp(key1, "security") ? P256_PEM : P256B_PEM);
		if (key2)
			key_yaml(&b, key2, strcmp(key2, "security") ? P256_PEM : P256B_PEM);
	}
	buf_puts(&b, rest);
	return buf_steal(&b, NULL);
}

static const char good_rules[] = "requirements:\n"
                                 "- images: [\"registry.example.co/fns/set-*\"]\n"
                                 "  keys: [platform-team]\n"
                                 "- catalogs: [example-co-functions]\n"
                                 "  keys: [security, platform-team]\n"
                                 "- images: [\"*/fns/*\", ghcr.io/exact/fn:v1]\n"
                                 "  catalogs: [vendor-functions]\n"
                                 "  keys: [security]\n";

TEST(a_good_policy_parses)
{
	cleanup_free char *text = policy_text(HEAD "metadata: {name: krmpod-signature-policy}\n",
	                                      "platform-team", "security", good_rules);
	struct sig_policy p;
	cleanup_err struct err *e = NULL;
	if (sig_policy_parse(text, strlen(text), WHAT, &p, &e) < 0) {
		CHECK_FAIL_("parse: %s\n%s", e->msg, text);
		return;
	}
	CHECK_STR(p.what, WHAT);
	CHECK_INT(p.n_keys, 2);
	if (p.n_keys == 2) {
		CHECK_STR(p.keys[0].name, "platform-team");
		CHECK_STR(p.keys[0].id, P256_ID);
		CHECK_STR(p.keys[1].name, "security");
		CHECK(strcmp(p.keys[1].id, P256_ID) != 0);
	}
	CHECK_INT(p.n_rules, 3);
	if (p.n_rules == 3) {
		const struct sig_rule *r = p.rules;
		CHECK_INT(r[0].n_images, 1);
		CHECK_STR(r[0].images[0], "registry.example.co/fns/set-*");
		CHECK_INT(r[0].n_catalogs, 0);
		CHECK_INT(r[0].n_keys, 1);
		CHECK_INT(r[0].keys[0], 0);
		CHECK_STR(r[0].name, "requirements[0] (images registry.example.co/fns/set-*)");
		CHECK_INT(r[1].n_images, 0);
		CHECK_INT(r[1].n_catalogs, 1);
		CHECK_STR(r[1].catalogs[0], "example-co-functions");
		CHECK_INT(r[1].n_keys, 2);
		CHECK_INT(r[1].keys[0], 1);
		CHECK_INT(r[1].keys[1], 0);
		CHECK_STR(r[1].name, "requirements[1] (catalogs example-co-functions)");
		CHECK_INT(r[2].n_images, 2);
		CHECK_STR(r[2].images[1], "ghcr.io/exact/fn:v1");
		CHECK_INT(r[2].n_keys, 1);
		CHECK_INT(r[2].keys[0], 1);
		CHECK_STR(r[2].name,
		          "requirements[2] (images */fns/*, ghcr.io/exact/fn:v1; catalogs "
		          "vendor-functions)");
	}
	CHECK(sig_policy_has_catalogs(&p));
	sig_policy_clear(&p);
	CHECK(p.keys == NULL && p.rules == NULL && p.what == NULL);

	/* JSON is YAML; a policy by images only names no catalogs. */
	static const char json[] =
	        "{\"apiVersion\":\"krmpod.dev/v1alpha1\",\"kind\":\"SignaturePolicy\",\"keys\":[{"
	        "\"name\":\"k\",\"publicKey\":\"-----BEGIN PUBLIC KEY-----\\n"
	        "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE2KA3Q829jHTv39kcLYX4agqJLbxe\\n"
	        "3rbbDAFtzNN4KoxfYusVf1I3LjKq9S/uA8OJD/NvcmAfz8/8xwLWUqZtHg==\\n"
	        "-----END PUBLIC KEY-----\\n\"}],\"requirements\":[{\"images\":[\"*\"],\"keys\":["
	        "\"k\"]}]}";
	CHECK_INT(sig_policy_parse(json, strlen(json), WHAT, &p, &e), 0);
	CHECK_INT(p.n_keys, 1);
	CHECK_STR(p.n_keys ? p.keys[0].id : NULL, P256_ID);
	CHECK(!sig_policy_has_catalogs(&p));
	sig_policy_clear(&p);
}

/* The indexes (into p->rules) of the requirements that cover image, as "0,2". */
static void rules_for(const struct sig_policy *p, const char *image, const char *catalog,
                      const char *want)
{
	const struct sig_rule *out[8];
	size_t n =
	        sig_policy_rules_for(p, image, catalog ? &catalog : NULL, catalog ? 1 : 0, out, 8);
	char got[64] = "";
	size_t len = 0;
	for (size_t i = 0; i < n && i < 8; i++)
		len += (size_t)snprintf(got + len, sizeof(got) - len, "%s%zu", i ? "," : "",
		                        (size_t)(out[i] - p->rules));
	if (strcmp(got, want) != 0)
		CHECK_FAIL_("rules for %s (catalog %s): got \"%s\", want \"%s\"", image,
		            catalog ? catalog : "none", got, want);
}

TEST(requirements_cover_images_by_pattern_and_catalog)
{
	cleanup_free char *text = policy_text(NULL, "platform-team", "security", good_rules);
	struct sig_policy p;
	cleanup_err struct err *e = NULL;
	if (sig_policy_parse(text, strlen(text), WHAT, &p, &e) < 0) {
		CHECK_FAIL_("parse: %s", e->msg);
		return;
	}
	rules_for(&p, "registry.example.co/fns/set-labels:v1", NULL, "0,2");
	rules_for(&p, "registry.example.co/fns/set-labels:v1", "example-co-functions", "0,1,2");
	rules_for(&p, "registry.example.co/fns/set-", NULL, "0,2"); /* '*' may be empty */
	rules_for(&p, "registry.example.co/fns/sets:v1", NULL, "2");
	rules_for(&p, "registry.example.co/other/set-x:v1", NULL, "");
	rules_for(&p, "ghcr.io/exact/fn:v1", NULL, "2");
	rules_for(&p, "ghcr.io/exact/fn:v12", NULL, "");
	rules_for(&p, "docker.io/library/alpine:3", NULL, "");
	rules_for(&p, "docker.io/library/alpine:3", "example-co-functions", "1");
	rules_for(&p, "docker.io/library/alpine:3", "vendor-functions", "2");
	rules_for(&p, "docker.io/library/alpine:3", "unknown-functions", "");

	/* More than max: the count is all of them, out holds max. */
	const struct sig_rule *out[2] = {NULL, NULL};
	const char *co = "example-co-functions";
	CHECK_INT(sig_policy_rules_for(&p, "registry.example.co/fns/set-x", &co, 1, out, 1), 3);
	CHECK(out[0] == &p.rules[0]);
	CHECK(out[1] == NULL);
	CHECK_INT(sig_policy_rules_for(&p, "registry.example.co/fns/set-x", NULL, 0, NULL, 0), 2);

	/* an image two admin catalogs list is covered by the requirements of both, in
	 * whichever order the catalogs were read (issue 29: a vendor catalog read first no
	 * longer lifts the organisation's requirement) */
	const char *both[] = {"vendor-functions", "example-co-functions"};
	const struct sig_rule *got[4];
	CHECK_INT(sig_policy_rules_for(&p, "docker.io/library/alpine:3", both, 2, got, 4), 2);
	CHECK(got[0] == &p.rules[1] && got[1] == &p.rules[2]);
	CHECK_INT(sig_policy_rules_for(&p, "docker.io/library/alpine:3", both + 1, 1, got, 4), 1);
	sig_policy_clear(&p);
}

TEST(an_empty_policy_requires_nothing)
{
	/* what manifests/repo-server/signature-policy.yaml ships */
	static const char text[] = "apiVersion: krmpod.dev/v1alpha1\nkind: SignaturePolicy\n"
	                           "keys: []\nrequirements: []\n";
	struct sig_policy p;
	cleanup_err struct err *e = NULL;
	if (sig_policy_parse(text, strlen(text), WHAT, &p, &e) < 0) {
		CHECK_FAIL_("parse: %s", e->msg);
		return;
	}
	CHECK_INT(p.n_keys, 0);
	CHECK_INT(p.n_rules, 0);
	CHECK(!sig_policy_has_catalogs(&p));
	const char *any = "any-catalog";
	CHECK_INT(sig_policy_rules_for(&p, "ghcr.io/any/fn:v1", &any, 1, NULL, 0), 0);
	sig_policy_clear(&p);
}

TEST(a_bad_policy_is_refused_naming_the_field)
{
	static const char rule[] = "requirements:\n- images: [\"*\"]\n  keys: [platform-team]\n";
	static const struct {
		const char *label, *head, *key1, *key2, *rest, *want1, *want2;
	} cases[] = {
	        {"unknown top field", NULL, "platform-team", NULL,
	         "spec: {}\nrequirements:\n- images: [x]\n  keys: [platform-team]\n",
	         "the document: unknown field spec", "known: apiVersion"},
	        {"unknown requirement field", NULL, "platform-team", NULL,
	         "requirements:\n- image: [x]\n  keys: [platform-team]\n",
	         "requirements[0]: unknown field image", "known: images, catalogs, keys"},
	        {"unknown key field", NULL, NULL, NULL,
	         "keys:\n- name: k\n  publicKey: x\n  kind: ecdsa\n", "keys[0]: unknown field kind",
	         NULL},
	        {"transparencyLog", NULL, "platform-team", NULL,
	         "transparencyLog: {url: https://rekor.sigstore.dev}\n"
	         "requirements:\n- images: [x]\n  keys: [platform-team]\n",
	         "the field transparencyLog", "which krmpod does not verify"},
	        {"keyless", NULL, "platform-team", NULL,
	         "requirements:\n- images: [x]\n  keys: [platform-team]\n  keyless: {}\n",
	         "requirements[0]: the field keyless", "which krmpod does not verify"},
	        {"rekor", NULL, NULL, NULL,
	         "keys:\n- name: k\n  rekor: https://rekor.sigstore.dev\n"
	         "requirements:\n- images: [x]\n  keys: [k]\n",
	         "keys[0]: the field rekor", "which krmpod does not verify"},
	        {"wrong apiVersion", "apiVersion: krmpod.dev/v1\nkind: SignaturePolicy\n",
	         "platform-team", NULL, rule, "apiVersion must be krmpod.dev/v1alpha1",
	         "it has krmpod.dev/v1 SignaturePolicy"},
	        {"wrong kind", "apiVersion: krmpod.dev/v1alpha1\nkind: ImagePolicy\n",
	         "platform-team", NULL, rule, "kind SignaturePolicy", "ImagePolicy"},
	        {"no apiVersion", "kind: SignaturePolicy\n", "platform-team", NULL, rule,
	         "no apiVersion", NULL},
	        {"no keys", NULL, NULL, NULL, rule, "keys: must be a list of public keys", NULL},
	        {"keys not a list", NULL, NULL, NULL, "keys: {}\nrequirements: []\n",
	         "keys: must be a list of public keys", NULL},
	        {"empty keys, a requirement", NULL, NULL, NULL,
	         "keys: []\nrequirements:\n- images: [x]\n", "requirements[0] names no keys", NULL},
	        {"no requirements", NULL, "platform-team", NULL, "", "requirements: must be a list",
	         NULL},
	        {"a requirement covering nothing", NULL, "platform-team", NULL,
	         "requirements:\n- keys: [platform-team]\n", "requirements[0] covers nothing",
	         "images"},
	        {"a requirement with empty lists", NULL, "platform-team", NULL,
	         "requirements:\n- images: []\n  catalogs: []\n  keys: [platform-team]\n",
	         "requirements[0] covers nothing", NULL},
	        {"a requirement naming no key", NULL, "platform-team", NULL,
	         "requirements:\n- images: [x]\n", "requirements[0] names no keys", NULL},
	        {"an unknown key", NULL, "platform-team", NULL,
	         "requirements:\n- images: [x]\n  keys: [platform-team]\n"
	         "- catalogs: [c]\n  keys: [nobody]\n",
	         "requirements[1] names the key nobody", NULL},
	        {"images not a list", NULL, "platform-team", NULL,
	         "requirements:\n- images: x\n  keys: [platform-team]\n",
	         "requirements[0].images is not a list", NULL},
	        {"an empty image", NULL, "platform-team", NULL,
	         "requirements:\n- images: [\"\"]\n  keys: [platform-team]\n",
	         "requirements[0].images[0] is not a non-empty string", NULL},
	        {"duplicate key names", NULL, "platform-team", "platform-team", rule,
	         "keys[1]: a second key named platform-team", NULL},
	        {"a key with both", NULL, NULL, NULL,
	         "keys:\n- name: both\n  publicKey: x\n  publicKeyFile: /x\n",
	         "key both needs exactly one of publicKey", NULL},
	        {"a key with neither", NULL, NULL, NULL,
	         "keys:\n- name: neither\nrequirements:\n- images: [x]\n  keys: [neither]\n",
	         "key neither needs exactly one of publicKey", NULL},
	        {"a key with no name", NULL, NULL, NULL,
	         "keys:\n- publicKeyFile: /x\nrequirements:\n- images: [x]\n  keys: [x]\n",
	         "keys[0] has no name", NULL},
	        {"not a mapping", "- a\n- b\n", NULL, NULL, "", "the document is not a mapping",
	         NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		cleanup_free char *text =
		        policy_text(cases[i].head, cases[i].key1, cases[i].key2, cases[i].rest);
		/* Cases whose keys are written in `rest` need requirements after them. */
		if (cases[i].head == NULL && cases[i].key1 == NULL &&
		    strstr(text, "requirements:") == NULL) {
			char *more =
			        xasprintf("%srequirements:\n- images: [x]\n  keys: [k]\n", text);
			free(text);
			text = more;
		}
		struct sig_policy p;
		cleanup_err struct err *e = NULL;
		int rc = sig_policy_parse(text, strlen(text), WHAT, &p, &e);
		if (rc == 0) {
			CHECK_FAIL_("%s: parses:\n%s", cases[i].label, text);
			sig_policy_clear(&p);
			continue;
		}
		if (e == NULL) {
			CHECK_FAIL_("%s: no error", cases[i].label);
			continue;
		}
		if (e->code != ERR_CONFIG)
			CHECK_FAIL_("%s: code %d, want ERR_CONFIG: %s", cases[i].label, e->code,
			            e->msg);
		const char *wants[] = {WHAT, cases[i].want1, cases[i].want2};
		for (size_t w = 0; w < 3; w++)
			if (wants[w] && strstr(e->msg, wants[w]) == NULL)
				CHECK_FAIL_("%s: \"%s\" lacks \"%s\"", cases[i].label, e->msg,
				            wants[w]);
		if (p.keys || p.rules || p.what || p.n_keys || p.n_rules)
			CHECK_FAIL_("%s: the policy is not left empty", cases[i].label);
	}
}

TEST(an_rsa_key_in_a_policy_is_refused_by_name)
{
	struct buf b;
	buf_init(&b, 0);
	buf_puts(&b, HEAD "keys:\n");
	key_yaml(&b, "platform-team", P256_PEM);
	key_yaml(&b, "rsa-team", RSA_PEM);
	buf_puts(&b, "requirements:\n- images: [x]\n  keys: [rsa-team]\n");
	cleanup_free char *text = buf_steal(&b, NULL);
	struct sig_policy p;
	cleanup_err struct err *e = NULL;
	CHECK_INT(sig_policy_parse(text, strlen(text), WHAT, &p, &e), -1);
	CHECK_INT(e ? e->code : ERR_OK, ERR_CONFIG);
	CHECK_CONTAINS(e ? e->msg : NULL, "key rsa-team in " WHAT);
	CHECK_CONTAINS(e ? e->msg : NULL, "an RSA key");
	CHECK(p.keys == NULL && p.n_keys == 0);

	/* Broken YAML fails too (the reader's error, naming the policy). */
	static const char broken[] = HEAD "keys: [\n";
	cleanup_err struct err *e2 = NULL;
	CHECK_INT(sig_policy_parse(broken, strlen(broken), WHAT, &p, &e2), -1);
	CHECK_CONTAINS(e2 ? e2->msg : NULL, WHAT);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f == NULL) {
		CHECK_FAIL_("cannot write %s", path);
		return;
	}
	fputs(text, f);
	fclose(f);
}

TEST(public_key_files_and_policy_files)
{
	char dir[] = "/tmp/krmpod-test-sign-XXXXXX";
	if (mkdtemp(dir) == NULL) {
		CHECK_FAIL_("mkdtemp %s", dir);
		return;
	}
	cleanup_free char *pub = xasprintf("%s/cosign.pub", dir);
	cleanup_free char *rsa = xasprintf("%s/rsa.pub", dir);
	cleanup_free char *missing = xasprintf("%s/missing.pub", dir);
	cleanup_free char *file = xasprintf("%s/policy.yaml", dir);
	write_file(pub, P256_PEM);
	write_file(rsa, RSA_PEM);

	/* publicKeyFile read; the policy read from a file by sig_policy_load. */
	cleanup_free char *good = xasprintf(HEAD "keys:\n- name: filed\n  publicKeyFile: %s\n"
	                                         "requirements:\n- images: [x]\n  keys: [filed]\n",
	                                    pub);
	write_file(file, good);
	struct sig_policy p;
	cleanup_err struct err *e = NULL;
	if (sig_policy_load(file, "KRMPOD_SIGNATURE_POLICY", &p, &e) < 0) {
		CHECK_FAIL_("load: %s", e->msg);
	} else {
		CHECK_INT(p.n_keys, 1);
		CHECK_STR(p.n_keys ? p.keys[0].name : NULL, "filed");
		CHECK_STR(p.n_keys ? p.keys[0].id : NULL, P256_ID);
		CHECK_CONTAINS(p.what, file);
		CHECK_CONTAINS(p.what, "KRMPOD_SIGNATURE_POLICY");
		sig_policy_clear(&p);
	}

	/* A missing key file: ERR_CONFIG naming the key and the path. */
	cleanup_free char *nokey = xasprintf(HEAD "keys:\n- name: filed\n  publicKeyFile: %s\n"
	                                          "requirements:\n- images: [x]\n  keys: [filed]\n",
	                                     missing);
	cleanup_err struct err *e2 = NULL;
	CHECK_INT(sig_policy_parse(nokey, strlen(nokey), WHAT, &p, &e2), -1);
	CHECK_INT(e2 ? e2->code : ERR_OK, ERR_CONFIG);
	CHECK_CONTAINS(e2 ? e2->msg : NULL, missing);
	CHECK_CONTAINS(e2 ? e2->msg : NULL, "key filed");

	/* A key file holding an RSA key: named with its file. */
	cleanup_free char *rsakey =
	        xasprintf(HEAD "keys:\n- name: filed\n  publicKeyFile: %s\n"
	                       "requirements:\n- images: [x]\n  keys: [filed]\n",
	                  rsa);
	cleanup_err struct err *e3 = NULL;
	CHECK_INT(sig_policy_parse(rsakey, strlen(rsakey), WHAT, &p, &e3), -1);
	CHECK_INT(e3 ? e3->code : ERR_OK, ERR_CONFIG);
	CHECK_CONTAINS(e3 ? e3->msg : NULL, rsa);
	CHECK_CONTAINS(e3 ? e3->msg : NULL, "an RSA key");

	/* A missing policy file: ERR_CONFIG naming the path and the setting. */
	cleanup_err struct err *e4 = NULL;
	CHECK_INT(sig_policy_load(missing, "KRMPOD_SIGNATURE_POLICY", &p, &e4), -1);
	CHECK_INT(e4 ? e4->code : ERR_OK, ERR_CONFIG);
	CHECK_CONTAINS(e4 ? e4->msg : NULL, missing);
	CHECK_CONTAINS(e4 ? e4->msg : NULL, "KRMPOD_SIGNATURE_POLICY");

	unlink(pub);
	unlink(rsa);
	unlink(file);
	CHECK_INT(rmdir(dir), 0);
}

int main(void)
{
	RUN(a_p256_key_parses_and_its_id_is_the_sha256_of_its_der);
	RUN(an_openssl_signature_verifies_and_nothing_altered_does);
	RUN(other_key_types_are_refused_by_name);
	RUN(text_that_is_not_a_pem_public_key_is_refused);
	RUN(a_simple_signing_payload_names_its_digest);
	RUN(a_signed_simple_signing_payload_verifies);
	RUN(dsse_pae_is_exact);
	RUN(a_cosign_v3_bundle_reads_and_verifies_end_to_end);
	RUN(a_bundle_that_cannot_count_has_a_problem);
	RUN(a_good_policy_parses);
	RUN(requirements_cover_images_by_pattern_and_catalog);
	RUN(an_empty_policy_requires_nothing);
	RUN(a_bad_policy_is_refused_naming_the_field);
	RUN(an_rsa_key_in_a_policy_is_refused_by_name);
	RUN(public_key_files_and_policy_files);
	return check_summary();
}

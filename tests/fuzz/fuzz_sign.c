/* fuzz_sign.c — what a registry or an admin hands the signature check (src/sign/): the
 * whole input as a sigstore bundle (cosign_bundle_read), as a simple-signing payload
 * (cosign_payload_problem) and as a signature policy (sig_policy_parse), each for a fixed
 * digest; a policy that parses is asked which requirements cover each of the input's first
 * lines.
 *
 * Invariants: a bundle read either has a problem and no signature, or has no problem, a
 * signature and signed bytes that start with DSSE's "DSSEv1 " prefix; a payload problem is
 * NULL or a non-empty string; a policy failure sets its error (ERR_CONFIG) and leaves the
 * policy empty; a parsed policy's requirements name keys it has, and cover something. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "fuzz_util.h"
#include "sign/cosign.h"
#include "sign/sig_policy.h"

#define DIGEST "sha256:a2add098a88cc3623fc94b6048fcba81073c82e57c0909139b34b8e556e89216"

FUZZ_QUIET_LOG

static void check_bundle(const uint8_t *data, size_t size)
{
	struct cosign_sig g;
	memset(&g, 0, sizeof(g));
	buf_init(&g.signed_bytes, 0);
	cosign_bundle_read((const char *)data, size, DIGEST, &g);
	if (g.problem) {
		if (g.problem[0] == '\0')
			fuzz_fail("an empty problem");
		if (g.sig != NULL || g.signed_bytes.len != 0)
			fuzz_fail("a bundle with a problem kept a signature: %s", g.problem);
	} else if (g.sig == NULL || g.sig_len == 0 || g.signed_bytes.len < 7 ||
	           memcmp(g.signed_bytes.data, "DSSEv1 ", 7) != 0) {
		fuzz_fail("a readable bundle without a signature or a PAE");
	}
	free(g.sig);
	free(g.problem);
	buf_free(&g.signed_bytes);
}

struct lines {
	const struct sig_policy *p;
	unsigned n;
};

static void check_line(const char *line, size_t len, void *arg)
{
	struct lines *l = arg;
	if (l->n++ >= 8)
		return;
	char *image = fuzz_cstr((const uint8_t *)line, len);
	const struct sig_rule *out[4];
	const char *catalogs[] = {image};
	size_t n = sig_policy_rules_for(l->p, image, catalogs, 1, out, 4);
	for (size_t i = 0; i < n && i < 4; i++)
		if (out[i] < l->p->rules || out[i] >= l->p->rules + l->p->n_rules)
			fuzz_fail("a requirement that is not the policy's");
	free(image);
}

static void check_policy(const uint8_t *data, size_t size)
{
	struct sig_policy p;
	struct err *e = NULL;
	int rc = sig_policy_parse((const char *)data, size, "fuzz.yaml", &p, &e);
	fuzz_check_err(rc, e, "sig_policy_parse");
	if (rc < 0) {
		if (e->code != ERR_CONFIG)
			fuzz_fail("a bad policy is not ERR_CONFIG: %s", e->msg);
		if (p.n_keys || p.n_rules || p.keys || p.rules)
			fuzz_fail("a failed parse left a policy behind");
		err_free(e);
		return;
	}
	for (size_t i = 0; i < p.n_rules; i++) {
		const struct sig_rule *r = &p.rules[i];
		if (r->n_keys == 0 || r->n_images + r->n_catalogs == 0 || r->name == NULL)
			fuzz_fail("requirement %zu covers nothing or names no key", i);
		for (size_t k = 0; k < r->n_keys; k++)
			if (r->keys[k] >= p.n_keys)
				fuzz_fail("requirement %zu names key %zu of %zu", i, r->keys[k],
				          p.n_keys);
	}
	struct lines l = {&p, 0};
	fuzz_split(data, size, '\n', check_line, &l);
	sig_policy_clear(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_bundle(data, size);
	char *problem = cosign_payload_problem((const char *)data, size, DIGEST);
	if (problem && problem[0] == '\0')
		fuzz_fail("an empty payload problem");
	free(problem);
	check_policy(data, size);
	return 0;
}

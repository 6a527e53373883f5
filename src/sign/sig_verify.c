/* sig_verify.c — see sig_verify.h. */
#include "sign/sig_verify.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/log.h"
#include "base/xalloc.h"
#include "registry/oci_ref.h"
#include "registry/registry_repo.h"
#include "sign/cosign.h"

void sig_verdict_clear(struct sig_verdict *v)
{
	free(v->pinned);
	free(v->how);
	memset(v, 0, sizeof(*v));
}

/* DIR/verified/<sha256 of "KEY-ID DIGEST">. */
static char *verified_path(const char *dir, const struct sig_key *k, const char *digest)
{
	cleanup_free char *id = xasprintf("%s %s", k->id, digest);
	char hex[SHA256_HEX_LEN + 1];
	sha256_hex(id, strlen(id), hex);
	return xasprintf("%s/verified/%s", dir, hex);
}

static bool cached(const char *dir, const struct sig_key *k, const char *digest)
{
	if (dir == NULL)
		return false;
	cleanup_free char *path = verified_path(dir, k, digest);
	return access(path, F_OK) == 0;
}

/* Best effort, like the content cache: a failure costs a registry read next time. */
static void remember(const char *dir, const struct sig_key *k, const char *digest, const char *how)
{
	if (dir == NULL)
		return;
	cleanup_free char *sub = xasprintf("%s/verified", dir);
	if ((mkdir(dir, 0700) < 0 && errno != EEXIST) ||
	    (mkdir(sub, 0700) < 0 && errno != EEXIST)) {
		log_debug("cannot keep the verified digest %s under %s: %s", digest, sub,
		          strerror(errno));
		return;
	}
	cleanup_free char *path = verified_path(dir, k, digest);
	cleanup_free char *tmp = xasprintf("%s.tmp.%d", path, (int)getpid());
	cleanup_err struct err *e = NULL;
	if (fd_write_atomic(path, tmp, how, strlen(how), 0600, "a verified digest", &e) < 0)
		log_debug("cannot keep the verified digest %s: %s", digest, e->msg);
}

/* "platform-team (sha256:1a2b…) or vendor (sha256:…)". */
static void key_names(const struct sig_policy *p, const struct sig_rule *r, struct buf *b)
{
	for (size_t i = 0; i < r->n_keys; i++) {
		const struct sig_key *k = &p->keys[r->keys[i]];
		buf_printf(b, "%s%s (%.19s…)",
		           i == 0               ? ""
		           : i + 1 == r->n_keys ? " or "
		                                : ", ",
		           k->name, k->id);
	}
}

/* The key of r that signed g, or NULL. */
static const struct sig_key *signer(const struct sig_policy *p, const struct sig_rule *r,
                                    const struct cosign_sig *g)
{
	if (g->problem)
		return NULL;
	for (size_t i = 0; i < r->n_keys; i++) {
		const struct sig_key *k = &p->keys[r->keys[i]];
		if (sig_key_verify(k, g->signed_bytes.data ? g->signed_bytes.data : "",
		                   g->signed_bytes.len, g->sig, g->sig_len))
			return k;
	}
	return NULL;
}

static int refuse(const struct sig_policy *p, const struct sig_rule *r, const char *image,
                  const struct oci_ref *ref, const char *digest, const struct cosign_sigs *sigs,
                  struct err **err)
{
	cleanup_buf struct buf b;
	buf_init(&b, 0);
	buf_printf(&b, "image %s (%s) is refused by %s, %s: no valid signature by ", image, digest,
	           p->what, r->name);
	key_names(p, r, &b);
	if (sigs->n == 0)
		buf_printf(&b, ": no signature found (no tag sha256-%s.sig; no bundle in %s)",
		           digest + 7, sigs->searched ? sigs->searched : "the referrers");
	for (size_t i = 0; i < sigs->n; i++) {
		const struct cosign_sig *g = &sigs->v[i];
		buf_printf(&b, "%s %s: ", i ? ";" : ":", g->where);
		if (g->problem)
			buf_puts(&b, g->problem);
		else
			buf_puts(&b, "not signed by these keys (signed by another key, or the "
			             "signature or payload was altered)");
	}
	cleanup_free char *name = oci_ref_string(
	        &(struct oci_ref){.registry = ref->registry, .repository = ref->repository});
	buf_printf(&b, "; to let it run, sign it: cosign sign --key <the private key of %s> %s@%s",
	           p->keys[r->keys[0]].name, name, digest);
	return err_set(err, ERR_CONFIG, "%s", b.data);
}

static char *pinned_name(const char *image, const struct oci_ref *ref, const char *digest)
{
	return ref->digest ? xstrdup(image) : xasprintf("%s@%s", image, digest);
}

static int verify(const struct sig_policy *p, const struct sig_rule *const *rules, size_t n_rules,
                  const struct registry_opts *o, const char *image, const struct oci_ref *ref,
                  struct sig_verdict *out, struct err **err)
{
	if (registry_resolve_digest(o, ref, out->digest, err) < 0)
		return err_wrap(err, "verify the signature of %s", image);
	struct registry_repo repo;
	registry_repo_init(&repo, o, ref);
	struct cosign_sigs sigs = {0};
	bool found = false;
	cleanup_buf struct buf how;
	buf_init(&how, 0);
	int rc = 0;
	out->cached = true;
	for (size_t i = 0; rc == 0 && i < n_rules; i++) {
		const struct sig_rule *r = rules[i];
		const struct sig_key *k = NULL;
		for (size_t j = 0; k == NULL && j < r->n_keys; j++)
			if (cached(o->cache_dir, &p->keys[r->keys[j]], out->digest))
				k = &p->keys[r->keys[j]];
		if (k) {
			buf_printf(&how, "%s%s: key %s (verified before)", how.len ? "; " : "",
			           r->name, k->name);
			continue;
		}
		out->cached = false;
		if (!found && (rc = cosign_find(&repo, out->digest, &sigs, err)) < 0) {
			err_wrap(err, "verify the signature of %s", image);
			break;
		}
		found = true;
		const struct cosign_sig *g = NULL;
		for (size_t s = 0; k == NULL && s < sigs.n; s++)
			if ((k = signer(p, r, &sigs.v[s])) != NULL)
				g = &sigs.v[s];
		if (k == NULL) {
			rc = refuse(p, r, image, ref, out->digest, &sigs, err);
			break;
		}
		cleanup_free char *one =
		        xasprintf("%s: key %s, %s %s", r->name, k->name,
		                  g->format == COSIGN_LEGACY ? "signature" : "sigstore", g->where);
		buf_printf(&how, "%s%s", how.len ? "; " : "", one);
		remember(o->cache_dir, k, out->digest, one);
	}
	cosign_sigs_clear(&sigs);
	registry_repo_free(&repo);
	if (rc == 0) {
		out->pinned = pinned_name(image, ref, out->digest);
		out->how = buf_steal(&how, NULL);
	}
	return rc;
}

int sig_verify(const struct sig_policy *p, const struct sig_rule *const *rules, size_t n_rules,
               const struct registry_opts *o, const char *image, struct sig_verdict *out,
               struct err **err)
{
	memset(out, 0, sizeof(*out));
	struct oci_ref ref;
	if (oci_ref_parse(image, &ref, err) < 0)
		return err_wrap(err, "verify the signature of %s", image);
	int rc = verify(p, rules, n_rules, o, image, &ref, out, err);
	oci_ref_clear(&ref);
	if (rc < 0)
		sig_verdict_clear(out);
	return rc;
}

/* registry_repo.c — see registry_repo.h. */
#include "registry/registry_repo.h"

#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "registry/oci_ref.h"
#include "registry/registry_cache.h"

void registry_repo_init(struct registry_repo *p, const struct registry_opts *o,
                        const struct oci_ref *ref)
{
	memset(p, 0, sizeof(*p));
	p->o = o;
	p->ref = ref;
	p->name = oci_ref_string(ref);
}

void registry_repo_free(struct registry_repo *p)
{
	if (p->open)
		registry_session_close(&p->s);
	free(p->name);
}

static int repo_session(struct registry_repo *p, struct err **err)
{
	if (!p->open && registry_session_open(p->o, p->ref, &p->s, err) < 0)
		return -1;
	p->open = true;
	return 0;
}

void registry_manifest_free(struct registry_manifest *m)
{
	buf_free(&m->bytes);
	json_free(m->json);
	memset(m, 0, sizeof(*m));
}

int registry_repo_get(struct registry_repo *p, const char *path, const char *accept, size_t max,
                      enum err_code not_found_code, struct buf *out, struct err **err)
{
	if (repo_session(p, err) < 0)
		return -1;
	struct registry_response r;
	registry_response_init(&r);
	cleanup_free char *url = NULL;
	int rc = registry_session_get(&p->s, path, accept, max, &r, &url, err);
	if (rc == 0 && r.status == 404)
		rc = registry_http_status_error(url, &r, not_found_code, err);
	else if (rc == 0 && (r.status < 200 || r.status > 299))
		rc = registry_http_status_error(url, &r, ERR_NET, err);
	if (rc == 0) {
		buf_free(out);
		*out = r.body;
		buf_init(&r.body, 0);
	}
	registry_response_free(&r);
	return rc;
}

int registry_repo_manifest(struct registry_repo *p, const char *reference, const char *expected,
                           struct registry_manifest *m, struct err **err)
{
	buf_init(&m->bytes, LIMIT_REGISTRY_MANIFEST);
	bool cached = expected && registry_cache_get(p->o->cache_dir, expected,
	                                             LIMIT_REGISTRY_MANIFEST, &m->bytes);
	if (!cached) {
		cleanup_free char *path = xasprintf("manifests/%s", reference);
		if (registry_repo_get(p, path, OCI_MANIFEST_ACCEPT, LIMIT_REGISTRY_MANIFEST,
		                      ERR_CONFIG, &m->bytes, err) < 0)
			return -1;
	}
	sha256_digest(m->bytes.data ? m->bytes.data : "", m->bytes.len, m->digest);
	if (expected && strcmp(m->digest, expected) != 0)
		return err_set(err, ERR_IO, "manifest %s: its content's digest is %s, not %s",
		               reference, m->digest, expected);
	if (!cached)
		registry_cache_put(p->o->cache_dir, m->digest, m->bytes.data, m->bytes.len);
	if (json_parse(m->bytes.data ? m->bytes.data : "", m->bytes.len, "manifest", &m->json,
	               err) < 0 ||
	    oci_manifest_kind(m->json, &m->kind, err) < 0) {
		if (err)
			(*err)->code = ERR_NET;
		return err_wrap(err, "manifest %s", reference);
	}
	return 0;
}

int registry_repo_blob(struct registry_repo *p, const struct oci_descriptor *d, size_t max,
                       const char *what, struct buf *out, struct err **err)
{
	if ((unsigned long long)d->size > max)
		return err_set(err, ERR_NET, "%s %s is %lld bytes, over the limit of %zu bytes",
		               what, d->digest, d->size, max);
	if (registry_cache_get(p->o->cache_dir, d->digest, max, out))
		return 0;
	cleanup_free char *path = xasprintf("blobs/%s", d->digest);
	if (registry_repo_get(p, path, NULL, max, ERR_NET, out, err) < 0)
		return err_wrap(err, "%s %s", what, d->digest);
	char got[SHA256_DIGEST_LEN + 1];
	sha256_digest(out->data ? out->data : "", out->len, got);
	if (strcmp(got, d->digest) != 0)
		return err_set(err, ERR_IO, "%s %s: its content's digest is %s, not %s", what,
		               d->digest, got, d->digest);
	registry_cache_put(p->o->cache_dir, d->digest, out->data, out->len);
	return 0;
}

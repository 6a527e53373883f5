/* registry_pull.c — registry_pull_layer and registry_image_config (registry.h): the
 * manifest, then the blob, through one session and the content cache.
 *
 * A manifest named by digest is read from the cache when it is there (a digest pins its
 * content, so a pinned reference whose blobs are cached needs no registry at all); one named
 * by tag is always asked for (tags move), and its blobs come from the cache. An index (or
 * Docker manifest list) is resolved to its linux/amd64 manifest, for artifacts too. Every
 * manifest and blob is checked against its digest before it is used or cached.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/json.h"
#include "base/log.h"
#include "base/sha256.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "registry/oci_manifest.h"
#include "registry/oci_ref.h"
#include "registry/registry.h"
#include "registry/registry_cache.h"
#include "registry/registry_session.h"

#define PLATFORM_OS   "linux"
#define PLATFORM_ARCH "amd64"

/* One pull: the reference, and the session once a request is needed. */
struct pull {
	const struct registry_opts *o;
	const struct oci_ref *ref;
	char *name; /* the reference as text, for messages */
	struct registry_session s;
	bool open;
};

static void pull_init(struct pull *p, const struct registry_opts *o, const struct oci_ref *ref)
{
	memset(p, 0, sizeof(*p));
	p->o = o;
	p->ref = ref;
	p->name = oci_ref_string(ref);
}

static void pull_free(struct pull *p)
{
	if (p->open)
		registry_session_close(&p->s);
	free(p->name);
}

static int pull_session(struct pull *p, struct err **err)
{
	if (!p->open && registry_session_open(p->o, p->ref, &p->s, err) < 0)
		return -1;
	p->open = true;
	return 0;
}

/* A manifest as fetched: its bytes, digest, tree and kind. */
struct manifest {
	struct buf bytes;
	char digest[SHA256_DIGEST_LEN + 1];
	struct json *json;
	enum oci_manifest_kind kind;
};

static void manifest_free(struct manifest *m)
{
	buf_free(&m->bytes);
	json_free(m->json);
	memset(m, 0, sizeof(*m));
}
#define cleanup_manifest __attribute__((cleanup(manifest_free)))

/* GETs path ("manifests/…", "blobs/…") into *out (its buffer moved there). A 404 is
 * not_found_code (the reference names nothing: ERR_CONFIG; a blob a manifest names is
 * missing: ERR_NET), any other non-2xx ERR_NET. */
static int get(struct pull *p, const char *path, const char *accept, size_t max,
               enum err_code not_found_code, struct buf *out, struct err **err)
{
	if (pull_session(p, err) < 0)
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

/* Fetches the manifest `reference` (a tag or a digest); with expected (a digest) it is read
 * from the cache when there, and checked against it. */
static int fetch_manifest(struct pull *p, const char *reference, const char *expected,
                          struct manifest *m, struct err **err)
{
	buf_init(&m->bytes, LIMIT_REGISTRY_MANIFEST);
	bool cached = expected && registry_cache_get(p->o->cache_dir, expected,
	                                             LIMIT_REGISTRY_MANIFEST, &m->bytes);
	if (!cached) {
		cleanup_free char *path = xasprintf("manifests/%s", reference);
		if (get(p, path, OCI_MANIFEST_ACCEPT, LIMIT_REGISTRY_MANIFEST, ERR_CONFIG,
		        &m->bytes, err) < 0)
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

/* The image manifest the reference names: an index resolved to linux/amd64. */
static int resolve_image(struct pull *p, struct manifest *m, struct err **err)
{
	if (fetch_manifest(p, oci_ref_reference(p->ref), p->ref->digest, m, err) < 0)
		return -1;
	if (m->kind == OCI_KIND_MANIFEST)
		return 0;
	struct oci_descriptor d;
	if (oci_index_platform(m->json, PLATFORM_OS, PLATFORM_ARCH, &d, err) < 0)
		return err_wrap(err, "index %s", m->digest);
	log_debug("%s: index %s -> %s/%s manifest %s", p->name, m->digest, PLATFORM_OS,
	          PLATFORM_ARCH, d.digest);
	manifest_free(m);
	if (fetch_manifest(p, d.digest, d.digest, m, err) < 0)
		return -1;
	if (m->kind != OCI_KIND_MANIFEST)
		return err_set(err, ERR_NET, "the index's %s/%s entry %s is an index itself",
		               PLATFORM_OS, PLATFORM_ARCH, m->digest);
	return 0;
}

/* Fetches blob d (at most max bytes; `what` names it) into out, from the cache when there,
 * checked against its digest. */
static int fetch_blob(struct pull *p, const struct oci_descriptor *d, size_t max, const char *what,
                      struct buf *out, struct err **err)
{
	if ((unsigned long long)d->size > max)
		return err_set(err, ERR_NET, "%s %s is %lld bytes, over the limit of %zu bytes",
		               what, d->digest, d->size, max);
	if (registry_cache_get(p->o->cache_dir, d->digest, max, out))
		return 0;
	cleanup_free char *path = xasprintf("blobs/%s", d->digest);
	if (get(p, path, NULL, max, ERR_NET, out, err) < 0)
		return err_wrap(err, "%s %s", what, d->digest);
	char got[SHA256_DIGEST_LEN + 1];
	sha256_digest(out->data ? out->data : "", out->len, got);
	if (strcmp(got, d->digest) != 0)
		return err_set(err, ERR_IO, "%s %s: its content's digest is %s, not %s", what,
		               d->digest, got, d->digest);
	registry_cache_put(p->o->cache_dir, d->digest, out->data, out->len);
	return 0;
}

static int pull_layer(struct pull *p, const char *media_type, size_t max_bytes, struct buf *out,
                      char digest[SHA256_DIGEST_LEN + 1], struct err **err)
{
	cleanup_manifest struct manifest m = {0};
	struct oci_descriptor d;
	if (resolve_image(p, &m, err) < 0)
		return -1;
	if (oci_manifest_layer(m.json, media_type, &d, err) < 0)
		return err_wrap(err, "manifest %s", m.digest);
	cleanup_buf struct buf data;
	buf_init(&data, max_bytes);
	if (fetch_blob(p, &d, max_bytes, "layer", &data, err) < 0 ||
	    buf_append(out, data.data, data.len, "layer", err) < 0)
		return -1;
	memcpy(digest, d.digest, SHA256_DIGEST_LEN + 1);
	log_debug("%s: layer %s, %zu bytes", p->name, d.digest, data.len);
	return 0;
}

int registry_pull_layer(const struct registry_opts *o, const struct oci_ref *ref,
                        const char *media_type, size_t max_bytes, struct buf *out,
                        char digest[SHA256_DIGEST_LEN + 1], struct err **err)
{
	struct pull p;
	pull_init(&p, o, ref);
	int rc = pull_layer(&p, media_type, max_bytes, out, digest, err);
	if (rc < 0)
		err_wrap(err, "pull %s", p.name);
	pull_free(&p);
	return rc;
}

static int image_config(struct pull *p, struct registry_image_config *out, struct err **err)
{
	cleanup_manifest struct manifest m = {0};
	struct oci_descriptor d;
	if (resolve_image(p, &m, err) < 0)
		return -1;
	if (oci_manifest_config(m.json, &d, err) < 0)
		return err_wrap(err, "manifest %s", m.digest);
	if (strcmp(d.media_type, OCI_IMAGE_CONFIG) != 0 &&
	    strcmp(d.media_type, DOCKER_IMAGE_CONFIG) != 0)
		return err_set(err, ERR_CONFIG,
		               "not a container image: the config of manifest %s "
		               "has the media type \"%s\"",
		               m.digest, d.media_type);
	cleanup_buf struct buf data;
	buf_init(&data, LIMIT_IMAGE_CONFIG);
	if (fetch_blob(p, &d, LIMIT_IMAGE_CONFIG, "image config", &data, err) < 0)
		return -1;
	if (oci_image_config_parse(data.data ? data.data : "", data.len, out, err) < 0)
		return err_wrap(err, "image config %s", d.digest);
	memcpy(out->manifest_digest, m.digest, sizeof(out->manifest_digest));
	return 0;
}

/* A tag resolved within o->tag_ttl_ms: its platform manifest by digest (from the cache when
 * it is there). */
static bool image_config_by_tag(const struct registry_opts *o, const struct oci_ref *ref,
                                const char *name, struct registry_image_config *out)
{
	char digest[SHA256_DIGEST_LEN + 1];
	if (ref->digest || !registry_tag_get(o->cache_dir, name, o->tag_ttl_ms, digest))
		return false;
	struct oci_ref pinned = *ref;
	pinned.tag = NULL;
	pinned.digest = digest;
	struct pull p;
	pull_init(&p, o, &pinned);
	cleanup_err struct err *e = NULL; /* a failure: resolve the tag again */
	int rc = image_config(&p, out, &e);
	pull_free(&p);
	if (rc < 0) {
		registry_image_config_clear(out);
		memset(out, 0, sizeof(*out));
	}
	return rc == 0;
}

int registry_image_config(const struct registry_opts *o, const struct oci_ref *ref,
                          struct registry_image_config *out, struct err **err)
{
	memset(out, 0, sizeof(*out));
	struct pull p;
	pull_init(&p, o, ref);
	if (image_config_by_tag(o, ref, p.name, out)) {
		pull_free(&p);
		return 0;
	}
	int rc = image_config(&p, out, err);
	if (rc == 0 && ref->digest == NULL && o->tag_ttl_ms > 0)
		registry_tag_put(o->cache_dir, p.name, out->manifest_digest);
	if (rc < 0) {
		registry_image_config_clear(out);
		err_wrap(err, "image config of %s", p.name);
	}
	pull_free(&p);
	return rc;
}

void registry_opts_init(struct registry_opts *o, const struct settings *s, atomic_int *cancel,
                        int64_t deadline_ms)
{
	*o = (struct registry_opts){.ca_file = s->registry_ca,
	                            .auth_file = s->registry_auth,
	                            .cache_dir = s->cache_dir,
	                            .deadline_ms = deadline_ms,
	                            .cancel = cancel,
	                            .mirrors = s->registry_mirrors,
	                            .n_mirrors = s->n_registry_mirrors};
}

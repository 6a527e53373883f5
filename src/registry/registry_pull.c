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
#include "registry/registry_repo.h"
#include "registry/registry_session.h"

#define PLATFORM_OS   "linux"
#define PLATFORM_ARCH "amd64"

/* The image manifest the reference names: an index resolved to linux/amd64. */
static int resolve_image(struct registry_repo *p, struct registry_manifest *m, struct err **err)
{
	if (registry_repo_manifest(p, oci_ref_reference(p->ref), p->ref->digest, m, err) < 0)
		return -1;
	if (m->kind == OCI_KIND_MANIFEST)
		return 0;
	struct oci_descriptor d;
	if (oci_index_platform(m->json, PLATFORM_OS, PLATFORM_ARCH, &d, err) < 0)
		return err_wrap(err, "index %s", m->digest);
	log_debug("%s: index %s -> %s/%s manifest %s", p->name, m->digest, PLATFORM_OS,
	          PLATFORM_ARCH, d.digest);
	registry_manifest_free(m);
	if (registry_repo_manifest(p, d.digest, d.digest, m, err) < 0)
		return -1;
	if (m->kind != OCI_KIND_MANIFEST)
		return err_set(err, ERR_NET, "the index's %s/%s entry %s is an index itself",
		               PLATFORM_OS, PLATFORM_ARCH, m->digest);
	return 0;
}

static int pull_layer(struct registry_repo *p, const char *media_type, size_t max_bytes,
                      struct buf *out, char digest[SHA256_DIGEST_LEN + 1], struct err **err)
{
	cleanup_registry_manifest struct registry_manifest m = {0};
	struct oci_descriptor d;
	if (resolve_image(p, &m, err) < 0)
		return -1;
	if (oci_manifest_layer(m.json, media_type, &d, err) < 0)
		return err_wrap(err, "manifest %s", m.digest);
	cleanup_buf struct buf data;
	buf_init(&data, max_bytes);
	if (registry_repo_blob(p, &d, max_bytes, "layer", &data, err) < 0 ||
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
	struct registry_repo p;
	registry_repo_init(&p, o, ref);
	int rc = pull_layer(&p, media_type, max_bytes, out, digest, err);
	if (rc < 0)
		err_wrap(err, "pull %s", p.name);
	registry_repo_free(&p);
	return rc;
}

static int image_config(struct registry_repo *p, struct registry_image_config *out,
                        struct err **err)
{
	cleanup_registry_manifest struct registry_manifest m = {0};
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
	if (registry_repo_blob(p, &d, LIMIT_IMAGE_CONFIG, "image config", &data, err) < 0)
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
	struct registry_repo p;
	registry_repo_init(&p, o, &pinned);
	cleanup_err struct err *e = NULL; /* a failure: resolve the tag again */
	int rc = image_config(&p, out, &e);
	registry_repo_free(&p);
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
	struct registry_repo p;
	registry_repo_init(&p, o, ref);
	if (image_config_by_tag(o, ref, p.name, out)) {
		registry_repo_free(&p);
		return 0;
	}
	int rc = image_config(&p, out, err);
	if (rc == 0 && ref->digest == NULL && o->tag_ttl_ms > 0)
		registry_tag_put(o->cache_dir, p.name, out->manifest_digest);
	if (rc < 0) {
		registry_image_config_clear(out);
		err_wrap(err, "image config of %s", p.name);
	}
	registry_repo_free(&p);
	return rc;
}

/* The tag cache's key for what a reference's tag names itself (registry_image_config keys
 * the platform manifest under the reference's own text). */
static char *top_key(const char *name)
{
	return xasprintf("manifest %s", name);
}

int registry_resolve_digest(const struct registry_opts *o, const struct oci_ref *ref,
                            char digest[SHA256_DIGEST_LEN + 1], struct err **err)
{
	if (ref->digest) {
		memcpy(digest, ref->digest, SHA256_DIGEST_LEN + 1);
		return 0;
	}
	struct registry_repo p;
	registry_repo_init(&p, o, ref);
	cleanup_free char *key = top_key(p.name);
	int rc = 0;
	if (!(o->tag_ttl_ms > 0 && registry_tag_get(o->cache_dir, key, o->tag_ttl_ms, digest))) {
		cleanup_registry_manifest struct registry_manifest m = {0};
		rc = registry_repo_manifest(&p, ref->tag, NULL, &m, err);
		if (rc == 0) {
			memcpy(digest, m.digest, SHA256_DIGEST_LEN + 1);
			if (o->tag_ttl_ms > 0)
				registry_tag_put(o->cache_dir, key, digest);
		} else {
			err_wrap(err, "resolve %s", p.name);
		}
	}
	registry_repo_free(&p);
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

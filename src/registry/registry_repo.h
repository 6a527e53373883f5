/* registry_repo.h — reading one repository of one registry: manifests and blobs, through one
 * authenticated session (registry_session.h) and the content cache (registry_cache.h). The
 * pulls of registry.h and the signature lookups of sign/ are built on it.
 *
 * Every manifest and blob is checked against its digest before it is used or cached: a
 * manifest against the digest it was asked for by (or, asked for by tag, its digest is
 * computed from its bytes), a blob against its descriptor. The session is opened on the
 * first request.
 */
#ifndef KRMPOD_REGISTRY_REPO_H
#define KRMPOD_REGISTRY_REPO_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/json.h"
#include "base/sha256.h"
#include "registry/oci_manifest.h"
#include "registry/registry.h"
#include "registry/registry_session.h"

/* One repository: the reference that names it, and the session once a request is needed. */
struct registry_repo {
	const struct registry_opts *o; /* borrowed */
	const struct oci_ref *ref;     /* borrowed */
	char *name;                    /* the reference as text, for messages */
	struct registry_session s;
	bool open;
};

/* Prepares p for ref's repository (both borrowed; no request yet). */
void registry_repo_init(struct registry_repo *p, const struct registry_opts *o,
                        const struct oci_ref *ref);
void registry_repo_free(struct registry_repo *p);

/* A manifest as fetched: its bytes, digest, tree and kind. */
struct registry_manifest {
	struct buf bytes;
	char digest[SHA256_DIGEST_LEN + 1];
	struct json *json;
	enum oci_manifest_kind kind;
};
void registry_manifest_free(struct registry_manifest *m);
#define cleanup_registry_manifest __attribute__((cleanup(registry_manifest_free)))

/* GETs path ("manifests/…", "blobs/…", "referrers/…") into *out (its buffer moved there;
 * at most max bytes). A 404 is not_found_code (the reference names nothing: ERR_CONFIG; a
 * blob a manifest names is missing: ERR_NET), any other non-2xx ERR_NET; err->http_status
 * holds the status either way. */
int registry_repo_get(struct registry_repo *p, const char *path, const char *accept, size_t max,
                      enum err_code not_found_code, struct buf *out, struct err **err);

/* Fetches the manifest `reference` (a tag or a digest) into *m (zeroed by the caller; free
 * with registry_manifest_free); with expected (a digest) it is read from the cache when
 * there, and checked against it (ERR_IO when it does not match). A 404 is ERR_CONFIG with
 * http_status 404; content that is no manifest or index is ERR_NET. */
int registry_repo_manifest(struct registry_repo *p, const char *reference, const char *expected,
                           struct registry_manifest *m, struct err **err);

/* Fetches blob d (at most max bytes; `what` names it in errors) into out, from the cache
 * when there, checked against its digest (ERR_IO when it does not match). */
int registry_repo_blob(struct registry_repo *p, const struct oci_descriptor *d, size_t max,
                       const char *what, struct buf *out, struct err **err);

#endif

/* registry.h — fetching what krmpod needs from outside the cluster: catalogs over HTTPS, and
 * OCI artifacts and image configs from container registries (the distribution API v2), with
 * libcurl on mbedTLS.
 *
 * Trust: the system CA bundle, plus opts->ca_file when set (KRMPOD_REGISTRY_CA). TLS is
 * always verified. Credentials for registries come from a dockerconfigjson file
 * (opts->auth_file, KRMPOD_REGISTRY_AUTH: an imagePullSecret mounted into the sidecar):
 * `auths.<registry>.auth` (base64 user:password) or `username`/`password`. A registry that
 * answers 401 with `WWW-Authenticate: Bearer realm=…,service=…,scope=…` gets the token
 * flow (anonymous, or with those credentials as Basic auth on the token request); one that
 * answers `WWW-Authenticate: Basic` gets the credentials directly.
 *
 * Every fetch is size-capped (max_bytes) and bounded by opts->deadline_ms; content is
 * verified against its sha256 digest wherever the protocol names one. Errors name the
 * reference, the registry or URL, the HTTP status and the fix (ERR_NET for transport and
 * protocol errors, ERR_CONFIG for missing or refused credentials and bad references, ERR_IO
 * for a digest that does not match).
 */
#ifndef KRMPOD_REGISTRY_H
#define KRMPOD_REGISTRY_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/sha256.h"
#include "config/settings.h"

/* A dockerconfigjson held in memory (a function pod's pull Secret the sidecar may read,
 * pull_auth.h); what names it in messages ("pull Secret krmpod-functions/regcred"). */
struct registry_auth_doc {
	const char *what;
	const char *json;
	size_t len;
};

struct registry_opts {
	const char *ca_file;   /* PEM bundle trusted besides the system's; NULL */
	const char *auth_file; /* dockerconfigjson; NULL: anonymous only */
	/* More dockerconfigjsons, looked up after auth_file in order: the first that has a key
	 * for the registry gives the credentials (registry_auth_find). */
	const struct registry_auth_doc *auth_docs;
	size_t n_auth_docs;
	const char *cache_dir; /* content cache by sha256 (created when missing); NULL: none */
	int64_t deadline_ms;   /* now_ms() clock; 0: none */
	atomic_int *cancel;
	bool plain_http; /* tests only: speak http:// to registries */
	/* KRMPOD_REGISTRY_MIRRORS: requests for references of registry `key` go to host
	 * `value` (credentials are looked up for that host too). */
	const struct label *mirrors;
	size_t n_mirrors;
	/* registry_image_config: how long a tag's digest is remembered in cache_dir (0: a
	 * tag is resolved with the registry every time). */
	int64_t tag_ttl_ms;
};

/* The options the settings give (KRMPOD_REGISTRY_CA, _AUTH, _MIRRORS, KRMPOD_CACHE_DIR),
 * borrowing from s. */
void registry_opts_init(struct registry_opts *o, const struct settings *s, atomic_int *cancel,
                        int64_t deadline_ms);

/* An OCI reference: [REGISTRY/]REPOSITORY[:TAG][@sha256:HEX]. */
struct oci_ref {
	char *registry;   /* "registry.example.co:5000"; Docker Hub is "docker.io" */
	char *repository; /* "fns/catalog"; Docker Hub's one-part names get "library/" */
	char *tag;        /* NULL when only a digest is given; "latest" when neither */
	char *digest;     /* "sha256:<64 hex>" or NULL */
};

/* Parses text (without "oci://") as docker does: the first component is the registry when
 * it has a '.' or a ':' or is "localhost", else Docker Hub. Fails with ERR_CONFIG naming
 * text and what is wrong. */
int oci_ref_parse(const char *text, struct oci_ref *out, struct err **err);
void oci_ref_clear(struct oci_ref *r);

/* GETs an https:// URL anonymously into out (at most max_bytes, else ERR_NET naming the
 * limit). Redirects are followed (at most 5, https only). */
int registry_https_get(const struct registry_opts *o, const char *url, size_t max_bytes,
                       struct buf *out, struct err **err);

/* Pulls the layer of media type media_type from the OCI artifact ref (its manifest must
 * have exactly one such layer): *out receives its bytes (at most max_bytes), digest its
 * "sha256:<hex>", verified. With o->cache_dir a layer already cached by that digest is not
 * fetched again. */
int registry_pull_layer(const struct registry_opts *o, const struct oci_ref *ref,
                        const char *media_type, size_t max_bytes, struct buf *out,
                        char digest[SHA256_DIGEST_LEN + 1], struct err **err);

/* The digest ref names: its own digest when it has one (no request), else the digest of
 * the manifest or index its tag names now (the one `cosign sign` signs), remembered for
 * o->tag_ttl_ms like registry_image_config's. Fails like registry_pull_layer. */
int registry_resolve_digest(const struct registry_opts *o, const struct oci_ref *ref,
                            char digest[SHA256_DIGEST_LEN + 1], struct err **err);

/* What an image's config says about running it. */
struct registry_image_config {
	char manifest_digest[SHA256_DIGEST_LEN + 1]; /* of the (platform) manifest */
	char **entrypoint;                           /* NULL-terminated, NULL when unset */
	char **cmd;                                  /* NULL-terminated, NULL when unset */
	char **env;                                  /* "K=V" strings, NULL-terminated */
	char *working_dir;                           /* NULL when unset */
	char *user;                                  /* NULL when unset */
};

/* Reads the config of image ref for linux/amd64 (an index is resolved to that platform's
 * manifest). Cached by manifest digest when o->cache_dir is set; a tag's platform manifest
 * digest is remembered for o->tag_ttl_ms, and within it nothing is requested. */
int registry_image_config(const struct registry_opts *o, const struct oci_ref *ref,
                          struct registry_image_config *out, struct err **err);
void registry_image_config_clear(struct registry_image_config *c);

#endif

/* catalog.h — a KRM function catalog (KEP-2906, docs/catalogs.md): parsing, validation and
 * lookup. Pure: the bytes come from catalog_store.h.
 *
 *   apiVersion: config.kubernetes.io/v1alpha1
 *   kind: Catalog                     # or KRMFunctionCatalog, the same thing
 *   metadata: {name: example-co-functions}
 *   spec:
 *     krmFunctions:
 *     - group: example.com
 *       names: {kind: SetNamespace}
 *       description: ..., publisher: ..., home, maintainers, tags
 *       versions:
 *       - name: v1
 *         idempotent: true
 *         runtime:
 *           container:
 *             image: registry.example.co/fns/set-namespace:v1.2.3
 *             sha256: a428de...      # required when the tag is a semver
 *             requireNetwork: false
 *             requireStorageMount: false
 *             entrypoint: [/usr/local/bin/function]   # krmpod's: the image config's
 *             cmd: [--serve]                           # Entrypoint and Cmd, recorded
 *         schema.openAPIV3Schema, usage, examples, license, maintainers: read and shown
 *
 * Validation is strict, as the admin's gate to what runs should be: an unknown field, a
 * wrong type, a missing required field, a semver tag without sha256, a sha256 that is not
 * 64 hex digits or that disagrees with an @sha256 in the image, and an `exec` runtime
 * (krmpod runs functions only as pods) are errors naming the source and the field path
 * ("spec.krmFunctions[2].versions[0].runtime.container.image").
 */
#ifndef KRMPOD_CATALOG_H
#define KRMPOD_CATALOG_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "base/sha256.h"

struct catalog_version {
	char *name; /* the functionConfig's version: "v1" */
	bool idempotent;
	char *image;  /* runtime.container.image, as written */
	char *sha256; /* "sha256:<hex>" (from the sha256 field or an @sha256 in the image), or
	                   NULL */
	bool require_network;
	bool require_storage_mount;
	/* runtime.container.shareAcrossApplications (krmpod's own field): the admin says a
	 * warm-pool pod of this function may serve more than one Application. Honoured only in
	 * the admin's catalogs (catalog_store_admin_images); docs/security.md, "The warm pool". */
	bool share_across_apps;
	/* runtime.container.entrypoint and .cmd (krmpod's own fields): what the image's config
	 * says it runs, recorded by the admin so that a function whose config krmpod cannot
	 * read still runs in exec mode (docs/catalogs.md, "Recorded entrypoint"). Honoured only
	 * in the admin's catalogs, checked against the config whenever that can be read.
	 * NULL-terminated; NULL when not recorded (cmd only with entrypoint). */
	char **entrypoint, **cmd;
	char *usage, *license;
};

struct catalog_fn {
	char *group; /* the functionConfig's group: "example.com" ("" for the core group) */
	char *kind;  /* names.kind */
	char *description, *publisher, *home;
	struct catalog_version *versions;
	size_t n_versions;
};

struct catalog {
	char *source; /* where it came from: a path, a URL, an oci:// reference */
	char *name;   /* metadata.name */
	char *kind;   /* Catalog or KRMFunctionCatalog */
	char digest[SHA256_DIGEST_LEN + 1]; /* of its bytes */
	struct catalog_fn *fns;
	size_t n_fns;
};

/* Parses and validates text (len bytes) from `source`. *out is owned (catalog_free). */
int catalog_parse(const char *text, size_t len, const char *source, struct catalog **out,
                  struct err **err);
void catalog_free(struct catalog *c);

/* The first entry of c for group, version and kind (the KEP: within a catalog, the first
 * match wins), or NULL; *fn (may be NULL) receives its function. */
const struct catalog_version *catalog_find(const struct catalog *c, const char *group,
                                           const char *version, const char *kind,
                                           const struct catalog_fn **fn);

/* The first entry for group/version/kind in the catalogs list[0..n), searched in order (the
 * KEP: the first match wins), or NULL; *which and *fn (each may be NULL) receive its
 * catalog and function. */
const struct catalog_version *catalog_resolve(const struct catalog *const *list, size_t n,
                                              const char *group, const char *version,
                                              const char *kind, const struct catalog **which,
                                              const struct catalog_fn **fn);

/* The group of an apiVersion ("example.com/v1" → "example.com"; "v1" → ""), a new string;
 * *version points into api at the version. */
char *catalog_api_group(const char *api, const char **version);

/* The image reference a function of entry v runs as: "name@sha256:<hex>" when the entry has
 * a digest (its tag dropped: the digest is what runs), else the image as written. New
 * string. */
char *catalog_version_image(const struct catalog_version *v);

/* Whether a tag is a semantic version ("v1.2.3", "1.2.3-rc.1", "v1.2.3+build"). */
bool catalog_tag_is_semver(const char *tag);

/* Splits an image reference into its name (registry/repository, no tag), its tag (NULL when
 * none) and its digest ("sha256:...", NULL when none). New strings in *name, *tag, *digest
 * (each may be NULL to skip). Returns -1 when the reference is empty or malformed. */
int catalog_image_split(const char *image, char **name, char **tag, char **digest);

#endif

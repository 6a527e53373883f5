/* image_policy.h — which images may run (docs/catalogs.md, "Image policy"): KRMPOD_IMAGE_POLICY
 * (any, catalog or allowlist), KRMPOD_IMAGE_ALLOWLIST and KRMPOD_REQUIRE_DIGEST.
 *
 * It is enforced twice: `krmpod generate` checks every function of the tree before
 * kustomize runs, and the shim checks every `docker run` before it creates a pod, against
 * the policy generate resolved (handed over as a file: KRMPOD_POLICY_FILE), or, outside
 * generate, one it resolves itself (catalog_store.h).
 *
 *   any        every image (the default).
 *   catalog    only the images of the admin's catalogs (KRMPOD_TRUSTED_CATALOGS and
 *              KRMPOD_DEFAULT_CATALOGS); an entry with a digest allows that digest only
 *              (name@sha256:…, also written name:tag@sha256:…), one without allows the image
 *              as written. A function that asks for network or mounts when its entry does
 *              not require them is refused too.
 *   allowlist  only images matching a KRMPOD_IMAGE_ALLOWLIST pattern ('*' matches any run of
 *              characters, the whole reference must match).
 *   KRMPOD_REQUIRE_DIGEST=true, on top of any mode: only references with @sha256:<hex>.
 *
 * The admin's KRMPOD_ALLOW_NETWORK applies on top of all this (fn_config.h).
 */
#ifndef KRMPOD_IMAGE_POLICY_H
#define KRMPOD_IMAGE_POLICY_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/err.h"
#include "config/settings.h"

/* An image an admin's catalog lists, with what its entry allows. */
struct policy_image {
	char *image;   /* what runs: name@sha256:<hex>, or the image as written without digest */
	char *origin;  /* "GROUP/VERSION KIND in catalog NAME (SOURCE)", for messages */
	char *catalog; /* the catalog's metadata.name (a signature policy may name it) */
	bool require_network;
	bool require_storage_mount;
	bool share_across_apps;   /* its entry's shareAcrossApplications (catalog.h) */
	char **entrypoint, **cmd; /* its entry's recorded entrypoint and cmd, or NULL */
};

/* Where a function config of the tree names an image (generate's knowledge, handed to the
 * shims so that their refusals name the file). */
struct policy_named {
	char *image;
	char *where;
};

struct policy {
	enum image_policy mode;
	bool require_digest;
	char **allowlist; /* KRMPOD_IMAGE_ALLOWLIST patterns */
	size_t n_allowlist;
	struct policy_image *images; /* catalog mode */
	size_t n_images;
	struct policy_named *named;
	size_t n_named;
};

/* A policy from the settings: the mode, the digest switch and the allowlist (copied). The
 * catalog images are added with policy_add_image(). */
void policy_init(struct policy *p, const struct settings *s);
void policy_clear(struct policy *p);

/* Adds a copy of *e (its strings are copied). */
void policy_add_image(struct policy *p, const struct policy_image *e);
void policy_add_named(struct policy *p, const char *image, const char *where);

/* Checks one function: its image, and whether it asks for network or mounts. `where` names
 * the function config (NULL: looked up in p->named, else "the function config"). Fails
 * with ERR_CONFIG naming the image, the function config, the policy and the fix. */
int policy_check(const struct policy *p, const char *image, bool network, bool mounts,
                 const char *where, struct err **err);

/* Whether an admin's catalog entry that allows image (as policy_check matches it) marks it
 * shareAcrossApplications: a warm-pool pod of it may then serve any Application. */
bool policy_shared(const struct policy *p, const char *image);

/* The metadata.name of every admin catalog with an entry that allows image (as policy_check
 * matches it), each once, in the order the catalogs were read: up to max of them go to out
 * (borrowed from p); returns how many there are. A requirement naming any of them covers
 * the image, whichever catalog was read first. */
size_t policy_catalogs_of(const struct policy *p, const char *image, const char **out, size_t max);

/* The admin catalog entry that allows image (as policy_check matches it) and records its
 * entrypoint (catalog.h), or NULL in *out. Entries of several catalogs that record
 * different ones are an ERR_CONFIG error naming both. */
int policy_recorded(const struct policy *p, const char *image, const struct policy_image **out,
                    struct err **err);

/* "entrypoint [...] cmd [...]" (JSON arrays), for messages about a recorded run: a new
 * string. */
char *policy_describe_run(char *const *entrypoint, char *const *cmd);

/* The policy as JSON (for KRMPOD_POLICY_FILE), and back. */
void policy_write(const struct policy *p, struct buf *out);
int policy_read(const char *text, size_t len, const char *what, struct policy *out,
                struct err **err);

#endif

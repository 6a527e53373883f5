/* catalog_store.h — catalogs loaded, and trusted only as the admin says (docs/catalogs.md,
 * "Trust").
 *
 * The admin lists catalogs in two settings, with the syntax of config/locations.h:
 * KRMPOD_TRUSTED_CATALOGS (catalogs a kustomization may list) and KRMPOD_DEFAULT_CATALOGS
 * (searched after a layer's own catalogs for every kustomization; trusted because the admin
 * lists them). A catalog a kustomization lists is used only when it is trusted:
 *
 *   - an https:// or oci:// reference when it names the same catalog as an admin entry
 *     (the same URL or OCI reference; a pin on either side is checked);
 *   - a file of the repository when its content digest equals an admin catalog's: a pin,
 *     or the digest of the admin catalog's content.
 *
 * Anything else is refused before any pod exists, naming the catalog, the kustomization that
 * lists it and the setting to change. Loading: a file is read; an https:// URL is fetched
 * anonymously; an oci:// reference is pulled as the artifact layer of media type
 * CATALOG_MEDIA_TYPE (registry.h). A pinned catalog is taken from the content cache when it
 * is there and stored in it after a fetch, so an unchanged catalog is not fetched again; a
 * pin that does not match fails, naming both digests. Each catalog is loaded once per store.
 */
#ifndef KRMPOD_CATALOG_STORE_H
#define KRMPOD_CATALOG_STORE_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "catalog/catalog.h"
#include "catalog/image_policy.h"
#include "config/settings.h"

/* The OCI media type of a catalog (KEP-2906). */
#define CATALOG_MEDIA_TYPE "application/vnd.cncf.kubernetes.krm-func-catalog.layer.v1+yaml"

struct catalog_store;

/* A store for the settings s (borrowed: they outlive the store). Fetches stop at deadline_ms
 * (now_ms clock, 0: none) and on *cancel. */
void catalog_store_open(const struct settings *s, atomic_int *cancel, int64_t deadline_ms,
                        struct catalog_store **out);
void catalog_store_free(struct catalog_store *st);

/* Loads one catalog a reference names, checking its pin; no trust check (for the admin's
 * own and for `krmpod catalog validate`). The catalog stays owned by the store. */
int catalog_store_load(struct catalog_store *st, const struct catalog_ref *ref,
                       const struct catalog **out, struct err **err);

/* The default catalogs (KRMPOD_DEFAULT_CATALOGS), loaded, in their order: *out holds *n
 * pointers owned by the store. */
int catalog_store_defaults(struct catalog_store *st, const struct catalog *const **out, size_t *n,
                           struct err **err);

/* A catalog entry of a kustomization (as written; a relative file is relative to
 * layer_dir), `listed_in` naming the kustomization: loaded when it is trusted, else an
 * ERR_CONFIG refusal as described above. *trusted_by (may be NULL) receives the admin entry
 * that trusts it. */
int catalog_store_listed(struct catalog_store *st, const char *entry, const char *layer_dir,
                         const char *listed_in, const struct catalog **out,
                         const struct catalog_ref **trusted_by, struct err **err);

/* Adds the images of every admin catalog (trusted and default) to p, for
 * KRMPOD_IMAGE_POLICY=catalog and for the warm pool's shareAcrossApplications. */
int catalog_store_admin_images(struct catalog_store *st, struct policy *p, struct err **err);

/* For the entrypoints the admin's catalogs record (catalog.h), where nothing else needs
 * them: adds the images of every admin catalog that can be loaded; one that cannot is
 * skipped (said at debug level). A catalog trusted by its pin need not exist on this
 * machine (a repository's copy is checked against the pin), and a missing record only
 * leaves a function in attach mode, whose output is proven or refused (fn_output.h). */
void catalog_store_admin_records(struct catalog_store *st, struct policy *p);

/* The policy a function is checked against outside generate's own check: the one generate
 * resolved for its shims (s->policy_file, KRMPOD_POLICY_FILE), else the settings' own, with
 * the admin's catalog images when the policy is `catalog` or `with_images` (fetched here,
 * until *cancel or s->start_timeout_ms from now). *p is cleared by policy_clear. */
int catalog_store_policy(const struct settings *s, atomic_int *cancel, bool with_images,
                         struct policy *p, struct err **err);

#endif

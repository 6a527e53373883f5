/* cmp_view.h — `krmpod catalog view` and `krmpod catalog validate`, in the spirit of
 * KEP-2906's `kustomize view catalog` (docs/catalogs.md): what the admin and the app author
 * both need to see to decide about trust.
 *
 * view: the catalogs a kustomization tree lists, layer by layer, each with whether it is
 * trusted (and by which admin entry, or why not), its name, digest and publisher(s); the
 * admin's default catalogs; for every catalog its functions (group/version kind → image,
 * digest, idempotent, requireNetwork, requireStorageMount); the function configs of the tree
 * that catalogs resolve, and to what; and the image policy. Nothing is fetched that the
 * render would not fetch, and nothing is rewritten.
 *
 * validate: one catalog (a file, an https:// URL or an oci:// reference, pin allowed),
 * parsed and validated as the render would (catalog.h), then described.
 *
 * Output: text for humans, or the same model as YAML or JSON. */
#ifndef KRMPOD_CMP_VIEW_H
#define KRMPOD_CMP_VIEW_H

#include <stdio.h>

#include "base/err.h"
#include "config/settings.h"

enum catalog_view_format { CATALOG_VIEW_TEXT, CATALOG_VIEW_YAML, CATALOG_VIEW_JSON };

/* view of the kustomization tree in dir, with the settings s. A catalog that cannot be
 * loaded or is not trusted is shown as such, not an error; a tree that cannot be read is. */
int catalog_view(const struct settings *s, const char *dir, enum catalog_view_format f, FILE *out,
                 struct err **err);

/* validate: fails (ERR_CONFIG, naming the field) when the catalog is invalid. */
int catalog_validate(const struct settings *s, const char *ref, enum catalog_view_format f,
                     FILE *out, struct err **err);

#endif

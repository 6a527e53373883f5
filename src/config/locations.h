/* locations.h — where a function catalog (docs/catalogs.md) is: the syntax of the
 * references in KRMPOD_TRUSTED_CATALOGS, KRMPOD_DEFAULT_CATALOGS and a kustomization's
 * `catalogs:` list.
 *
 *   /abs/path/catalog.yaml          a file (the admin's: a ConfigMap mounted into the
 *                                   sidecar); in a kustomization, a path relative to it
 *   https://host/path/catalog.yaml  fetched anonymously over HTTPS
 *   oci://REGISTRY/REPO:TAG         an OCI artifact (media type
 *   oci://REGISTRY/REPO@sha256:HEX  application/vnd.cncf.kubernetes.krm-func-catalog.layer.v1+yaml)
 *
 * Any of them may end in "#sha256:<64 hex>", which pins the catalog's content: its bytes
 * must hash to that digest, or the render fails naming both. Pure: no I/O. */
#ifndef KRMPOD_LOCATIONS_H
#define KRMPOD_LOCATIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

enum catalog_ref_type { CATALOG_REF_FILE, CATALOG_REF_HTTPS, CATALOG_REF_OCI };

struct catalog_ref {
	enum catalog_ref_type type;
	char *text;     /* as written, pin included */
	char *location; /* the path, the URL, or the OCI reference after "oci://"; no pin */
	char *pin;      /* "sha256:<hex>", or NULL */
};

/* Parses one reference. `source` names where it was written (a setting or a kustomization
 * and its field) for errors. With `admin`, a file must be an absolute path. Fails with
 * ERR_CONFIG naming source, the reference and the accepted forms. */
int catalog_ref_parse(const char *text, const char *source, bool admin, struct catalog_ref *out,
                      struct err **err);
void catalog_ref_clear(struct catalog_ref *r);

/* A deep copy of r into *out. */
void catalog_ref_copy(const struct catalog_ref *r, struct catalog_ref *out);

/* Parses a comma-separated list (blanks around entries ignored, empty entries refused) into
 * a new array *out of *n admin references. `setting` names the variable. */
int catalog_refs_parse_list(const char *text, const char *setting, struct catalog_ref **out,
                            size_t *n, struct err **err);
void catalog_refs_free(struct catalog_ref *refs, size_t n);

/* Whether a and b name the same catalog: the same type and location (the pin is not part
 * of the name). */
bool catalog_ref_same(const struct catalog_ref *a, const struct catalog_ref *b);

#endif

/* cmp_catalogs.h — function catalogs in `krmpod generate` (KEP-2906; docs/catalogs.md).
 *
 * kustomize 5.x knows neither a kustomization's `catalogs:` field nor a function config
 * without a runtime, so generate resolves them before kustomize runs, and writes the result
 * where kustomize reads it:
 *
 *   1. every layer's `catalogs:` entries are loaded, if trusted (catalog_store.h);
 *   2. every function config of a generators/transformers/validators entry that carries no
 *      runtime (no config.kubernetes.io/function annotation) and is not one of kustomize's
 *      builtins (apiVersion `builtin`) is looked up by group, version and kind: in its
 *      layer's catalogs in their order, then in the admin's default catalogs; the first
 *      match wins, and no match is an error (when there are catalogs to search: a tree with
 *      none is left to kustomize as before);
 *   3. the files are rewritten (base/yaml_edit.h): `catalogs:` is dropped from each
 *      kustomization, and each resolved config gets the runtime annotation kustomize
 *      understands: the image by digest, `network: true` only when the entry requires it,
 *      and the mounts of its krmpod.dev/mounts annotation only when the entry requires
 *      storage mounts (asking for them otherwise is refused).
 *
 * The files rewritten are those of a private copy of the kustomization's directories
 * (tree_copy.h), which kustomize then builds: never the tree generate was started in, not
 * even Argo CD's per-request checkout (the environment cannot prove that a directory is
 * one; an engineer reproducing Argo CD's environment on a laptop must not have their tree
 * rewritten). A tree that lists no catalog and resolves nothing is built where it is. One
 * line per resolved function is logged: the kind, the catalog, the image and its digest.
 */
#ifndef KRMPOD_CMP_CATALOGS_H
#define KRMPOD_CMP_CATALOGS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "catalog/catalog_store.h"
#include "config/settings.h"

struct catalog_apply {
	char *work_dir;  /* where kustomize builds: the current directory or its copy */
	char *copy_root; /* the private copy (removed by catalog_apply_free), or NULL */
	size_t resolved; /* function configs resolved from catalogs */
	/* The images of those whose catalog entry is idempotent, comma-separated (NULL: none):
	 * the warm pool may keep their pods (pool.h). */
	char *idempotent_images;
};

/* Applies the catalogs to the tree of the current directory as described above. */
int catalog_apply(const struct settings *s, struct catalog_store *st, struct catalog_apply *out,
                  struct err **err);
void catalog_apply_free(struct catalog_apply *a);

#endif

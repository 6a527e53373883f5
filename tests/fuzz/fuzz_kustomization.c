/* fuzz_kustomization.c — the kustomization walker of `krmpod discover`, init and prestart
 * (kustomization_functions) and of function catalogs (kustomization_tree), in
 * src/cmp/kustomization.h.
 *
 * The input is a tree written into a private scratch directory: the text before the first
 * "#@ NAME" line is kustomization.yaml, each such line starts another file (a function
 * config, a base's base/kustomization.yaml...). Remote entries are never fetched.
 *
 * Invariants: a failure sets its error; every function found has a place and a non-empty
 * image; every layer has an absolute directory inside the tree and a kustomization file
 * name (the first one the tree's root); every document names a layer, the field that
 * lists it, and an absolute file when it has one. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cmp/kustomization.h"
#include "fuzz_util.h"

static char root[PATH_MAX];

static void check_functions(const struct kfn *fns, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (fns[i].where == NULL || fns[i].image == NULL || fns[i].image[0] == '\0')
			fuzz_fail("function %zu without a place or an image", i);
		if (fns[i].envs == NULL || fns[i].envs[fns[i].n_envs] != NULL)
			fuzz_fail("function %zu: envs not NULL-terminated", i);
	}
}

static void check_tree(const struct ktree *t)
{
	for (size_t i = 0; i < t->n_layers; i++) {
		const struct klayer *l = &t->layers[i];
		if (l->dir == NULL || l->dir[0] != '/' || l->kfile == NULL || l->where == NULL ||
		    l->catalogs == NULL || l->catalogs[l->n_catalogs] != NULL)
			fuzz_fail("layer %zu is incomplete", i);
		/* entries may name directories outside the tree ("../x"); the walk reads them as
		 * kustomize would, so only the root layer must be the tree itself */
		if (i == 0 && strcmp(l->dir, root) != 0)
			fuzz_fail("the first layer is %s, not the tree %s", l->dir, root);
	}
	for (size_t i = 0; i < t->n_docs; i++) {
		const struct kdoc *d = &t->docs[i];
		if (d->layer >= t->n_layers || d->where == NULL || d->field == NULL ||
		    (strcmp(d->field, "generators") != 0 && strcmp(d->field, "transformers") != 0 &&
		     strcmp(d->field, "validators") != 0 && strcmp(d->field, "resources") != 0 &&
		     strcmp(d->field, "components") != 0 && strcmp(d->field, "bases") != 0))
			fuzz_fail("document %zu is incomplete", i);
		if (d->file && d->file[0] != '/')
			fuzz_fail("document %zu: file %s is not absolute", i, d->file);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	log_set_level(LOG_ERROR);
	if (realpath(fuzz_scratch(), root) == NULL)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_write_tree(root, "kustomization.yaml", data, size);

	struct kfn *fns = NULL;
	size_t n = 0;
	struct err *e = NULL;
	int rc = kustomization_functions(root, &fns, &n, &e);
	fuzz_check_err(rc, e, "kustomization_functions");
	if (rc == 0) {
		check_functions(fns, n);
		kustomization_functions_free(fns, n);
	}
	err_free(e);

	struct ktree t;
	e = NULL;
	rc = kustomization_tree(root, &t, &e);
	fuzz_check_err(rc, e, "kustomization_tree");
	if (rc == 0) {
		check_tree(&t);
		kustomization_tree_free(&t);
	} else if (t.n_layers || t.n_docs || t.layers || t.docs) {
		fuzz_fail("kustomization_tree failed but left its tree filled");
	}
	err_free(e);

	fuzz_empty_dir(root);
	return 0;
}

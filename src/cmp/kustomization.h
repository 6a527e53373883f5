/* kustomization.h — reading a kustomization tree without running kustomize: enough to tell
 * whether it uses containerized KRM functions (`krmpod discover`) and to find its file
 * (`krmpod init`, `krmpod generate`).
 *
 * The walk follows local entries of resources, components and bases (directories that hold
 * a kustomization) and reads the files and inline documents of generators, transformers and
 * validators. A document is a containerized function when its
 * metadata.annotations["config.kubernetes.io/function"] (or the legacy
 * "config.k8s.io/function") holds a `container` with an `image`. Remote entries (URLs, git)
 * are not fetched. Each directory is read once (cycles end). */
#ifndef KRMPOD_KUSTOMIZATION_H
#define KRMPOD_KUSTOMIZATION_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

/* The kustomization file name found in dir (kustomization.yaml, kustomization.yml or
 * Kustomization), or NULL. */
const char *kustomization_file(const char *dir);

struct kfn {
	char *where; /* "overlays/prod/kustomization.yaml: transformers: fn.yaml" */
	char *image;
	/* The config's krmpod.dev/cpu-limit and krmpod.dev/memory-limit annotations, or NULL. */
	char *cpu_limit;
	char *memory_limit;
	/* From the container spec: envs ("K=V" or "NAME", as written), network, mounts. */
	char **envs;
	size_t n_envs;
	bool network;
	bool has_mounts;
};

/* Walks the tree rooted at dir. On success *fns (*n of them) lists the containerized
 * functions found (possibly none). Fails on a missing kustomization in dir, an unreadable or
 * unparseable file. */
int kustomization_functions(const char *dir, struct kfn **fns, size_t *n, struct err **err);
void kustomization_functions_free(struct kfn *fns, size_t n);

/* The same walk, for function catalogs (docs/catalogs.md): every layer, with the
 * `catalogs:` it lists, and every function config document, with what it is. */
struct klayer {
	char *dir;       /* absolute */
	char *kfile;     /* kustomization.yaml, kustomization.yml or Kustomization */
	char *where;     /* "overlays/prod/kustomization.yaml", for messages */
	char **catalogs; /* as written */
	size_t n_catalogs;
};

struct kdoc {
	size_t layer;      /* the layer whose kustomization lists it */
	char *file;        /* the absolute path of the file holding it; NULL: inline entry */
	const char *field; /* "generators", "transformers" or "validators" */
	size_t entry;      /* its index in that list */
	char *where;       /* "app/kustomization.yaml: transformers: fn.yaml", for messages */
	char *api_version; /* NULL when absent */
	char *kind;        /* NULL when absent */
	bool has_runtime;  /* it carries a config.kubernetes.io/function annotation */
	char *mounts;      /* its krmpod.dev/mounts annotation, or NULL */
};

struct ktree {
	struct klayer *layers;
	size_t n_layers;
	struct kdoc *docs;
	size_t n_docs;
};

int kustomization_tree(const char *dir, struct ktree *out, struct err **err);
void kustomization_tree_free(struct ktree *t);

#endif

/* cmp_catalogs.c — see cmp_catalogs.h. */
#include "cmp/cmp_catalogs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/json.h"
#include "base/log.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "base/yaml_edit.h"
#include "cmp/kustomization.h"
#include "cmp/tree_copy.h"

#define FUNCTION_ANNOTATION "config.kubernetes.io/function"

struct apply {
	const struct settings *s;
	struct catalog_store *st;
	struct ktree tree;
	const struct catalog ***cats; /* per layer: its catalogs, loaded */
	size_t *n_cats;
	const struct catalog *const *defaults;
	size_t n_defaults;
	char **ann; /* per document: its runtime annotation, when resolved */
	size_t resolved;
	struct buf idempotent; /* images of resolved idempotent entries, comma-separated */
	char *root, *ancestor; /* the copy, when not in place */
};

static void apply_free(struct apply *a)
{
	for (size_t i = 0; i < a->tree.n_layers; i++)
		free(a->cats ? a->cats[i] : NULL);
	free(a->cats);
	free(a->n_cats);
	for (size_t i = 0; a->ann && i < a->tree.n_docs; i++)
		free(a->ann[i]);
	free(a->ann);
	kustomization_tree_free(&a->tree);
	free(a->ancestor);
	buf_free(&a->idempotent);
}

/* Whether a document needs a runtime from a catalog: a function config without one that is
 * not a kustomize builtin. */
static bool needs_runtime(const struct kdoc *d)
{
	return !d->has_runtime && d->kind && d->api_version &&
	       strcmp(d->api_version, "builtin") != 0 &&
	       strncmp(d->api_version, "builtin/", 8) != 0;
}

/* Loads every layer's catalogs (each must be trusted); the defaults are loaded when a
 * function config first needs them. */
static int load_catalogs(struct apply *a, struct err **err)
{
	size_t n = a->tree.n_layers;
	a->cats = xcalloc(n + 1, sizeof(*a->cats));
	a->n_cats = xcalloc(n + 1, sizeof(*a->n_cats));
	for (size_t i = 0; i < n; i++) {
		const struct klayer *l = &a->tree.layers[i];
		a->cats[i] = xcalloc(l->n_catalogs + 1, sizeof(**a->cats));
		for (size_t c = 0; c < l->n_catalogs; c++) {
			if (catalog_store_listed(a->st, l->catalogs[c], l->dir, l->where,
			                         &a->cats[i][c], NULL, err) < 0)
				return -1;
			a->n_cats[i]++;
		}
	}
	return 0;
}

/* The catalogs searched for a document of layer l, in order: *n of them into out. */
static size_t search_list(const struct apply *a, size_t l, const struct catalog **out)
{
	size_t n = 0;
	for (size_t i = 0; i < a->n_cats[l]; i++)
		out[n++] = a->cats[l][i];
	for (size_t i = 0; i < a->n_defaults; i++)
		out[n++] = a->defaults[i];
	return n;
}

/* The runtime annotation for entry v: the image by digest, network and mounts only where
 * the entry requires them. */
static int annotation(const struct kdoc *d, const struct catalog_version *v, char **out,
                      struct err **err)
{
	cleanup_free char *image = catalog_version_image(v);
	cleanup_buf struct buf b;
	buf_init(&b, 0);
	buf_printf(&b, "container:\n  image: %s\n", image);
	if (v->require_network)
		buf_puts(&b, "  network: true\n");
	if (d->mounts && !v->require_storage_mount)
		return err_set(err, ERR_CONFIG,
		               "%s: its krmpod.dev/mounts annotation asks for storage mounts, but "
		               "its catalog entry (image %s) does not require them "
		               "(requireStorageMount): drop the annotation, or ask the catalog's "
		               "publisher",
		               d->where, v->image);
	if (d->mounts) {
		cleanup_json struct json *m = NULL;
		if (json_parse(d->mounts, strlen(d->mounts), d->where, &m, err) < 0 ||
		    json_type(m) != JSON_ARRAY)
			return err_set(err, ERR_CONFIG,
			               "%s: krmpod.dev/mounts must be a YAML list of mounts "
			               "({type: bind, src: ./data, dst: /data})",
			               d->where);
		struct jw w;
		buf_puts(&b, "  mounts: ");
		jw_init(&w, &b);
		json_write(&w, m);
		buf_putc(&b, '\n');
	}
	*out = buf_steal(&b, NULL);
	return 0;
}

static int no_match(const struct kdoc *d, const char *group, const char *version,
                    const struct catalog **list, size_t n, struct err **err)
{
	cleanup_buf struct buf names;
	buf_init(&names, 0);
	for (size_t i = 0; i < n; i++)
		buf_printf(&names, "%s%s (%s)", i ? ", " : "", list[i]->name, list[i]->source);
	return err_set(err, ERR_CONFIG,
	               "%s: no catalog has a function for %s%s%s %s (searched, in order: %s): "
	               "list a catalog that has it in the kustomization's catalogs:, or give the "
	               "config a runtime (config.kubernetes.io/function)",
	               d->where, group, group[0] ? "/" : "", version, d->kind, names.data);
}

/* Resolves document i (see cmp_catalogs.h). */
static int resolve(struct apply *a, size_t i, struct err **err)
{
	const struct kdoc *d = &a->tree.docs[i];
	if (catalog_store_defaults(a->st, &a->defaults, &a->n_defaults, err) < 0) /* once */
		return -1;
	const char *version;
	cleanup_free char *group = catalog_api_group(d->api_version, &version);
	cleanup_free const struct catalog **list =
	        xcalloc(a->n_cats[d->layer] + a->n_defaults + 1, sizeof(*list));
	size_t n = search_list(a, d->layer, list);
	if (n == 0)
		return 0; /* no catalog anywhere: kustomize decides, as without krmpod */
	const struct catalog *from = NULL;
	const struct catalog_version *v =
	        catalog_resolve(list, n, group, version, d->kind, &from, NULL);
	if (v == NULL)
		return no_match(d, group, version, list, n, err);
	if (annotation(d, v, &a->ann[i], err) < 0)
		return -1;
	cleanup_free char *image = catalog_version_image(v);
	log_info("catalog: %s %s%s%s (%s) -> %s%s, from catalog %s (%s)", d->kind, group,
	         group[0] ? "/" : "", version, d->where, image,
	         v->sha256 ? "" : " (no digest in the catalog)", from->name, from->source);
	a->resolved++;
	if (v->idempotent)
		buf_printf(&a->idempotent, "%s%s", a->idempotent.len ? "," : "", image);
	return 0;
}

/* A file that holds documents of one kind with and without a runtime cannot be rewritten
 * by kind: refused, naming it. */
static int check_mixed(const struct apply *a, struct err **err)
{
	const struct ktree *t = &a->tree;
	for (size_t i = 0; i < t->n_docs; i++)
		for (size_t j = 0; a->ann[i] && j < t->n_docs; j++) {
			const struct kdoc *x = &t->docs[i], *y = &t->docs[j];
			if (a->ann[j] == NULL && x->file && y->file &&
			    strcmp(x->file, y->file) == 0 &&
			    strcmp(x->kind, y->kind ? y->kind : "") == 0 &&
			    strcmp(x->api_version, y->api_version ? y->api_version : "") == 0)
				return err_set(
				        err, ERR_CONFIG,
				        "%s: the file holds %s %s configs both with and without "
				        "a runtime: put the one with its own runtime in a file "
				        "of its own",
				        x->file, x->api_version, x->kind);
		}
	return 0;
}

/* --- writing ---------------------------------------------------------------------------------- */

/* Where a path of the tree is written: in the copy; an error for a path outside the copied
 * directories (a `../x.yaml` entry: kustomize refuses those too). */
static char *target(const struct apply *a, const char *path, struct err **err)
{
	char *t = tree_copy_path(a->root, a->ancestor, path);
	if (t == NULL)
		err_set(err, ERR_CONFIG,
		        "%s is outside the kustomization directories of the render (%s): a "
		        "function "
		        "config file must be inside the directory of the kustomization that lists "
		        "it, as kustomize requires",
		        path, a->ancestor);
	return t;
}

static int write_file(const char *path, const struct buf *b, struct err **err)
{
	cleanup_free char *tmp = xasprintf("%s.krmpod.%d", path, (int)getpid());
	if (fd_write_atomic(path, tmp, b->data, b->len, 0644, "a function config", err) < 0)
		return err_wrap(err, "rewrite %s for the catalogs", path);
	return 0;
}

/* The documents of one file, for the annotate callback. */
struct file_ctx {
	const struct apply *a;
	const char *file; /* NULL: an inline entry */
	size_t layer;
	const char *field;
	size_t entry;
};

static bool same_origin(const struct kdoc *d, const struct file_ctx *f)
{
	if (f->file)
		return d->file && strcmp(d->file, f->file) == 0;
	return d->file == NULL && d->layer == f->layer && strcmp(d->field, f->field) == 0 &&
	       d->entry == f->entry;
}

static char *annotate_cb(void *ud, size_t doc, const char *api, const char *kind)
{
	(void)doc;
	const struct file_ctx *f = ud;
	const struct ktree *t = &f->a->tree;
	for (size_t i = 0; api && kind && i < t->n_docs; i++) {
		const struct kdoc *d = &t->docs[i];
		if (f->a->ann[i] && same_origin(d, f) && strcmp(d->api_version, api) == 0 &&
		    strcmp(d->kind, kind) == 0)
			return xstrdup(f->a->ann[i]);
	}
	return NULL;
}

/* Rewrites one file with the annotations of its resolved documents. */
static int rewrite_file(const struct apply *a, const char *file, struct err **err)
{
	cleanup_free char *text = NULL;
	size_t len = 0;
	if (buf_read_file(file, LIMIT_KUSTOMIZE_FILE, "function config", ERR_IO, &text, &len, err) <
	    0)
		return -1;
	struct file_ctx f = {.a = a, .file = file};
	struct yaml_edit e = {
	        .annotation_key = FUNCTION_ANNOTATION, .annotate = annotate_cb, .ud = &f};
	cleanup_buf struct buf out;
	buf_init(&out, 0);
	if (yaml_edit(text, len, file, &e, &out, err) < 0)
		return -1;
	cleanup_free char *dst = target(a, file, err);
	return dst ? write_file(dst, &out, err) : -1;
}

struct layer_ctx {
	const struct apply *a;
	size_t layer;
	struct err **err;
	int rc;
};

/* An inline entry of a kustomization, annotated when it holds resolved documents. */
static char *inline_cb(void *ud, const char *list, size_t index, const char *value)
{
	struct layer_ctx *l = ud;
	struct file_ctx f = {.a = l->a, .layer = l->layer, .field = list, .entry = index};
	bool any = false;
	for (size_t i = 0; i < l->a->tree.n_docs && !any; i++)
		any = l->a->ann[i] && same_origin(&l->a->tree.docs[i], &f);
	if (!any || l->rc < 0)
		return NULL;
	struct yaml_edit e = {
	        .annotation_key = FUNCTION_ANNOTATION, .annotate = annotate_cb, .ud = &f};
	struct buf out;
	buf_init(&out, 0);
	if (yaml_edit(value, strlen(value), l->a->tree.layers[l->layer].where, &e, &out, l->err) <
	    0) {
		l->rc = -1;
		buf_free(&out);
		return NULL;
	}
	return buf_steal(&out, NULL);
}

/* Rewrites a kustomization without `catalogs:` and with its inline entries annotated. */
static int rewrite_kustomization(const struct apply *a, size_t layer, struct err **err)
{
	const struct klayer *l = &a->tree.layers[layer];
	cleanup_free char *path = xasprintf("%s/%s", l->dir, l->kfile);
	cleanup_free char *text = NULL;
	size_t len = 0;
	if (buf_read_file(path, LIMIT_KUSTOMIZE_FILE, "kustomization", ERR_IO, &text, &len, err) <
	    0)
		return -1;
	static const char *const lists[] = {"generators", "transformers", "validators", "resources",
	                                    NULL};
	struct layer_ctx ctx = {.a = a, .layer = layer, .err = err};
	struct yaml_edit e = {
	        .drop_key = "catalogs", .lists = lists, .replace = inline_cb, .ud = &ctx};
	cleanup_buf struct buf out;
	buf_init(&out, 0);
	if (yaml_edit(text, len, path, &e, &out, err) < 0 || ctx.rc < 0)
		return -1;
	cleanup_free char *dst = target(a, path, err);
	return dst ? write_file(dst, &out, err) : -1;
}

static int rewrite(struct apply *a, struct err **err)
{
	const struct ktree *t = &a->tree;
	for (size_t i = 0; i < t->n_layers; i++) {
		bool inline_doc = false;
		for (size_t d = 0; d < t->n_docs && !inline_doc; d++)
			inline_doc = a->ann[d] && t->docs[d].file == NULL && t->docs[d].layer == i;
		if ((t->layers[i].n_catalogs > 0 || inline_doc) &&
		    rewrite_kustomization(a, i, err) < 0)
			return -1;
	}
	for (size_t i = 0; i < t->n_docs; i++) {
		bool first = a->ann[i] && t->docs[i].file;
		for (size_t j = 0; first && j < i; j++) /* each file once */
			first = !(a->ann[j] && t->docs[j].file &&
			          strcmp(t->docs[j].file, t->docs[i].file) == 0);
		if (first && rewrite_file(a, t->docs[i].file, err) < 0)
			return -1;
	}
	return 0;
}

/* The private copy of the layers' directories. */
static int make_copy(struct apply *a, struct err **err)
{
	cleanup_free const char **dirs = xcalloc(a->tree.n_layers + 1, sizeof(*dirs));
	for (size_t i = 0; i < a->tree.n_layers; i++)
		dirs[i] = a->tree.layers[i].dir;
	return tree_copy(dirs, a->tree.n_layers, &a->root, &a->ancestor, err);
}

static int run(struct apply *a, struct catalog_apply *out, struct err **err)
{
	if (kustomization_tree(".", &a->tree, err) < 0)
		return err_wrap(err, "catalogs: read the kustomization");
	if (load_catalogs(a, err) < 0)
		return -1;
	a->ann = xcalloc(a->tree.n_docs + 1, sizeof(char *));
	bool listed = false;
	for (size_t i = 0; i < a->tree.n_layers; i++)
		listed = listed || a->tree.layers[i].n_catalogs > 0;
	for (size_t i = 0; i < a->tree.n_docs; i++)
		if (needs_runtime(&a->tree.docs[i]) && resolve(a, i, err) < 0)
			return -1;
	if (check_mixed(a, err) < 0)
		return -1;
	char cwd[PATH_MAX];
	if (realpath(".", cwd) == NULL)
		return err_set_sys(err, ERR_IO, errno, "the working directory");
	if (!listed && a->resolved == 0) {
		out->work_dir = xstrdup(cwd);
		return 0;
	}
	if (make_copy(a, err) < 0)
		return -1;
	if (rewrite(a, err) < 0)
		return -1;
	out->work_dir = target(a, cwd, err);
	if (out->work_dir == NULL)
		return -1;
	out->copy_root = a->root;
	a->root = NULL;
	out->resolved = a->resolved;
	out->idempotent_images = a->idempotent.len ? buf_steal(&a->idempotent, NULL) : NULL;
	return 0;
}

int catalog_apply(const struct settings *s, struct catalog_store *st, struct catalog_apply *out,
                  struct err **err)
{
	memset(out, 0, sizeof(*out));
	struct apply a = {.s = s, .st = st};
	buf_init(&a.idempotent, 0);
	int rc = run(&a, out, err);
	if (rc < 0) {
		tree_copy_remove(a.root);
		free(a.root);
		catalog_apply_free(out);
	}
	apply_free(&a);
	return rc;
}

void catalog_apply_free(struct catalog_apply *a)
{
	tree_copy_remove(a->copy_root);
	free(a->copy_root);
	free(a->work_dir);
	free(a->idempotent_images);
	memset(a, 0, sizeof(*a));
}

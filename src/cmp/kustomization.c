/* kustomization.c — see kustomization.h. */
#include "cmp/kustomization.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/json.h"
#include "base/size_limits.h"
#include "base/xalloc.h"

#define MAX_DEPTH 64

const char *kustomization_file(const char *dir)
{
	static const char *names[] = {"kustomization.yaml", "kustomization.yml", "Kustomization"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		cleanup_free char *p = xasprintf("%s/%s", dir, names[i]);
		struct stat st;
		if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
			return names[i];
	}
	return NULL;
}

struct walk {
	struct kfn *fns;
	size_t n, cap;
	char **seen; /* realpaths of the directories read */
	size_t n_seen;
	struct ktree *tree; /* kustomization_tree(): layers and documents are recorded here */
};

/* Where a function config document comes from. */
struct origin {
	size_t layer;
	const char *file; /* absolute path, or NULL for an inline entry */
	const char *field;
	size_t entry;
};

static bool is_remote(const char *entry)
{
	return strstr(entry, "://") != NULL || strncmp(entry, "github.com/", 11) == 0 ||
	       strncmp(entry, "git@", 4) == 0;
}

static void add_fn(struct walk *w, const char *where, const char *image, const char *cpu,
                   const char *memory, const struct json *container)
{
	if (w->n == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 8;
		w->fns = xrealloc(w->fns, w->cap * sizeof(*w->fns));
	}
	w->fns[w->n].where = xstrdup(where);
	w->fns[w->n].image = xstrdup(image);
	w->fns[w->n].cpu_limit = cpu ? xstrdup(cpu) : NULL;
	w->fns[w->n].memory_limit = memory ? xstrdup(memory) : NULL;
	const struct json *envs = json_get(container, "envs");
	w->fns[w->n].envs = xcalloc(json_len(envs) + 1, sizeof(char *));
	w->fns[w->n].n_envs = 0;
	for (size_t i = 0; i < json_len(envs); i++) {
		const char *e = json_scalar(json_at(envs, i));
		if (e)
			w->fns[w->n].envs[w->fns[w->n].n_envs++] = xstrdup(e);
	}
	bool net = false;
	w->fns[w->n].network = json_bool(json_get(container, "network"), &net) && net;
	w->fns[w->n].has_mounts = json_len(json_get(container, "mounts")) > 0;
	w->n++;
}

/* True when a YAML document holds only blanks and comments. */
static bool blank_doc(const char *text, size_t len)
{
	bool comment = false;
	for (size_t i = 0; i < len; i++) {
		char c = text[i];
		if (c == '\n')
			comment = false;
		else if (c == '#')
			comment = true;
		else if (!comment && c != ' ' && c != '\t' && c != '\r')
			return false;
	}
	return true;
}

/* Records a function config document for kustomization_tree(). */
static void add_doc(struct walk *w, const struct origin *o, const char *where,
                    const struct json *doc, bool has_runtime)
{
	struct ktree *t = w->tree;
	t->docs = xrealloc(t->docs, (t->n_docs + 1) * sizeof(*t->docs));
	struct kdoc *d = &t->docs[t->n_docs++];
	const char *api = json_str(json_get(doc, "apiVersion"));
	const char *kind = json_str(json_get(doc, "kind"));
	const char *mounts =
	        json_str(json_get(json_path(doc, "metadata.annotations"), "krmpod.dev/mounts"));
	*d = (struct kdoc){.layer = o->layer,
	                   .file = o->file ? xstrdup(o->file) : NULL,
	                   .field = o->field,
	                   .entry = o->entry,
	                   .where = xstrdup(where),
	                   .api_version = api ? xstrdup(api) : NULL,
	                   .kind = kind ? xstrdup(kind) : NULL,
	                   .has_runtime = has_runtime,
	                   .mounts = mounts ? xstrdup(mounts) : NULL};
}

/* Looks at one YAML document: a function config with a container image? */
static int check_doc(struct walk *w, const struct origin *o, const char *text, size_t len,
                     const char *where, struct err **err)
{
	if (blank_doc(text, len))
		return 0;
	cleanup_json struct json *doc = NULL;
	if (json_parse(text, len, where, &doc, err) < 0)
		return -1;
	const struct json *ann = json_path(doc, "metadata.annotations");
	const char *spec = json_str(json_get(ann, "config.kubernetes.io/function"));
	if (spec == NULL)
		spec = json_str(json_get(ann, "config.k8s.io/function"));
	if (w->tree)
		add_doc(w, o, where, doc, spec != NULL);
	if (spec == NULL)
		return 0;
	cleanup_json struct json *fn = NULL;
	if (json_parse(spec, strlen(spec), where, &fn, err) < 0)
		return err_wrap(err, "annotation config.kubernetes.io/function");
	const char *image = json_str(json_path(fn, "container.image"));
	if (image && *image)
		add_fn(w, where, image, json_scalar(json_get(ann, "krmpod.dev/cpu-limit")),
		       json_scalar(json_get(ann, "krmpod.dev/memory-limit")),
		       json_get(fn, "container"));
	return 0;
}

/* Splits a YAML stream on "---" lines and checks each document. */
static int check_stream(struct walk *w, const struct origin *o, const char *text, size_t len,
                        const char *where, struct err **err)
{
	const char *doc = text, *end = text + len;
	for (const char *line = text; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *next = nl ? nl + 1 : end;
		if (strncmp(line, "---", 3) == 0 &&
		    (line + 3 == end || line[3] == '\n' || line[3] == ' ' || line[3] == '\r')) {
			if (check_doc(w, o, doc, (size_t)(line - doc), where, err) < 0)
				return -1;
			doc = next;
		}
		line = next;
	}
	return check_doc(w, o, doc, (size_t)(end - doc), where, err);
}

static int walk_dir(struct walk *w, const char *dir, const char *rel, bool fn_slot, int depth,
                    struct err **err);

/* An entry of generators/transformers/validators: inline YAML, a file, or a directory. */
static int walk_fn_entry(struct walk *w, const struct origin *at, const char *dir, const char *rel,
                         const char *kfile, const char *entry, int depth, struct err **err)
{
	cleanup_free char *where = xasprintf("%s%s: %s: %s", rel, kfile, at->field, entry);
	struct origin o = *at;
	if (strchr(entry, '\n'))
		return check_stream(w, &o, entry, strlen(entry), where, err);
	if (is_remote(entry))
		return 0;
	cleanup_free char *path = xasprintf("%s/%s", dir, entry);
	struct stat st;
	if (stat(path, &st) < 0)
		return err_set(err, ERR_IO, "%s: %s does not exist", where, path);
	if (S_ISDIR(st.st_mode)) {
		cleanup_free char *sub = xasprintf("%s%s/", rel, entry);
		return walk_dir(w, path, sub, true, depth + 1, err);
	}
	cleanup_free char *text = NULL;
	size_t len = 0;
	if (buf_read_file(path, LIMIT_KUSTOMIZE_FILE, "function config", ERR_IO, &text, &len, err) <
	    0)
		return -1;
	char real[PATH_MAX];
	o.file = realpath(path, real) ? real : path;
	return check_stream(w, &o, text, len, where, err);
}

/* An entry of resources/components/bases: follow local directories. In a function slot
 * (a kustomization used as a transformer list) resource files are function configs too. */
static int walk_res_entry(struct walk *w, const struct origin *at, const char *dir, const char *rel,
                          const char *kfile, const char *entry, bool fn_slot, int depth,
                          struct err **err)
{
	if (is_remote(entry))
		return 0;
	cleanup_free char *path = xasprintf("%s/%s", dir, entry);
	struct stat st;
	if (stat(path, &st) < 0)
		return 0; /* kustomize reports missing resources itself */
	if (S_ISDIR(st.st_mode)) {
		if (kustomization_file(path) == NULL)
			return 0;
		cleanup_free char *sub = xasprintf("%s%s/", rel, entry);
		return walk_dir(w, path, sub, fn_slot, depth + 1, err);
	}
	if (fn_slot)
		return walk_fn_entry(w, at, dir, rel, kfile, entry, depth, err);
	return 0;
}

/* Records a layer for kustomization_tree(): its directory and its catalogs. */
static size_t add_layer(struct walk *w, const char *real, const char *kfile, const char *rel,
                        const struct json *k)
{
	struct ktree *t = w->tree;
	t->layers = xrealloc(t->layers, (t->n_layers + 1) * sizeof(*t->layers));
	struct klayer *l = &t->layers[t->n_layers];
	const struct json *cats = json_get(k, "catalogs");
	*l = (struct klayer){.dir = xstrdup(real),
	                     .kfile = xstrdup(kfile),
	                     .where = xasprintf("%s%s", rel, kfile),
	                     .catalogs = xcalloc(json_len(cats) + 1, sizeof(char *))};
	for (size_t i = 0; i < json_len(cats); i++)
		if (json_scalar(json_at(cats, i)))
			l->catalogs[l->n_catalogs++] = xstrdup(json_scalar(json_at(cats, i)));
	return t->n_layers++;
}

static int walk_dir(struct walk *w, const char *dir, const char *rel, bool fn_slot, int depth,
                    struct err **err)
{
	if (depth > MAX_DEPTH)
		return err_set(err, ERR_IO, "%s: kustomizations nest deeper than %d levels", dir,
		               MAX_DEPTH);
	char real[PATH_MAX];
	if (realpath(dir, real) == NULL)
		return err_set(err, ERR_IO, "%s: cannot resolve the directory", dir);
	for (size_t i = 0; i < w->n_seen; i++)
		if (strcmp(w->seen[i], real) == 0)
			return 0;
	w->seen = xrealloc(w->seen, (w->n_seen + 1) * sizeof(char *));
	w->seen[w->n_seen++] = xstrdup(real);

	const char *kfile = kustomization_file(dir);
	if (kfile == NULL)
		return err_set(err, ERR_CONFIG,
		               "%s: no kustomization.yaml, kustomization.yml or Kustomization here",
		               rel[0] ? rel : dir);
	cleanup_free char *path = xasprintf("%s/%s", dir, kfile);
	cleanup_free char *text = NULL;
	size_t len = 0;
	if (buf_read_file(path, LIMIT_KUSTOMIZE_FILE, "kustomization", ERR_IO, &text, &len, err) <
	    0)
		return -1;
	cleanup_json struct json *k = NULL;
	if (json_parse(text, len, path, &k, err) < 0)
		return -1;
	size_t layer = w->tree ? add_layer(w, real, kfile, rel, k) : 0;
	static const char *fn_fields[] = {"generators", "transformers", "validators"};
	static const char *res_fields[] = {"resources", "components", "bases"};
	for (size_t f = 0; f < 3; f++) {
		const struct json *list = json_get(k, fn_fields[f]);
		for (size_t i = 0; i < json_len(list); i++) {
			const char *e = json_str(json_at(list, i));
			struct origin o = {layer, NULL, fn_fields[f], i};
			if (e && walk_fn_entry(w, &o, dir, rel, kfile, e, depth, err) < 0)
				return -1;
		}
		list = json_get(k, res_fields[f]);
		for (size_t i = 0; i < json_len(list); i++) {
			const char *e = json_str(json_at(list, i));
			struct origin o = {layer, NULL, res_fields[f], i};
			if (e && walk_res_entry(w, &o, dir, rel, kfile, e, fn_slot, depth, err) < 0)
				return -1;
		}
	}
	return 0;
}

int kustomization_functions(const char *dir, struct kfn **fns, size_t *n, struct err **err)
{
	struct walk w = {0};
	int rc = walk_dir(&w, dir, "", false, 0, err);
	for (size_t i = 0; i < w.n_seen; i++)
		free(w.seen[i]);
	free(w.seen);
	if (rc < 0) {
		kustomization_functions_free(w.fns, w.n);
		return -1;
	}
	*fns = w.fns;
	*n = w.n;
	return 0;
}

int kustomization_tree(const char *dir, struct ktree *out, struct err **err)
{
	memset(out, 0, sizeof(*out));
	struct walk w = {.tree = out};
	int rc = walk_dir(&w, dir, "", false, 0, err);
	for (size_t i = 0; i < w.n_seen; i++)
		free(w.seen[i]);
	free(w.seen);
	kustomization_functions_free(w.fns, w.n);
	if (rc < 0)
		kustomization_tree_free(out);
	return rc;
}

void kustomization_tree_free(struct ktree *t)
{
	for (size_t i = 0; i < t->n_layers; i++) {
		struct klayer *l = &t->layers[i];
		free(l->dir);
		free(l->kfile);
		free(l->where);
		for (size_t c = 0; c < l->n_catalogs; c++)
			free(l->catalogs[c]);
		free(l->catalogs);
	}
	free(t->layers);
	for (size_t i = 0; i < t->n_docs; i++) {
		struct kdoc *d = &t->docs[i];
		free(d->file);
		free(d->where);
		free(d->api_version);
		free(d->kind);
		free(d->mounts);
	}
	free(t->docs);
	memset(t, 0, sizeof(*t));
}

void kustomization_functions_free(struct kfn *fns, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(fns[i].where);
		free(fns[i].image);
		free(fns[i].cpu_limit);
		free(fns[i].memory_limit);
		for (size_t j = 0; j < fns[i].n_envs; j++)
			free(fns[i].envs[j]);
		free(fns[i].envs);
	}
	free(fns);
}

/* catalog.c — see catalog.h. */
#include "catalog/catalog.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/json.h"
#include "base/strv.h"
#include "base/xalloc.h"

#define API_VERSION "config.kubernetes.io/v1alpha1"

/* Where in the document a check is: "spec.krmFunctions[2].versions[0]". */
struct at {
	const char *source;
	char path[256];
};

static int bad(const struct at *a, const char *field, struct err **err, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static int bad(const struct at *a, const char *field, struct err **err, const char *fmt, ...)
{
	char why[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return err_set(err, ERR_CONFIG, "catalog %s: %s%s%s: %s", a->source, a->path,
	               a->path[0] && field[0] ? "." : "", field, why);
}

static void at_sub(const struct at *a, struct at *sub, const char *field, long index)
{
	sub->source = a->source;
	int n;
	if (index >= 0)
		n = snprintf(sub->path, sizeof(sub->path), "%s%s%s[%ld]", a->path,
		             a->path[0] ? "." : "", field, index);
	else
		n = snprintf(sub->path, sizeof(sub->path), "%s%s%s", a->path, a->path[0] ? "." : "",
		             field);
	if (n < 0 || (size_t)n >= sizeof(sub->path)) /* cut: a path this deep is not ours */
		memcpy(sub->path + sizeof(sub->path) - 4, "...", 4);
}

/* Every key of obj must be one of `known` (NULL-terminated). */
static int only_fields(const struct at *a, const struct json *obj, const char *const *known,
                       struct err **err)
{
	for (size_t i = 0; i < json_len(obj); i++) {
		const char *k = json_key_at(obj, i);
		bool ok = false;
		for (const char *const *p = known; *p && !ok; p++)
			ok = strcmp(k, *p) == 0;
		if (!ok) {
			cleanup_buf struct buf list;
			buf_init(&list, 0);
			for (const char *const *p = known; *p; p++)
				buf_printf(&list, "%s%s", p == known ? "" : ", ", *p);
			return bad(a, k, err, "unknown field (known here: %s)", list.data);
		}
	}
	return 0;
}

static int need_object(const struct at *a, const char *field, const struct json *j,
                       struct err **err)
{
	if (json_type(j) != JSON_OBJECT)
		return bad(a, field, err, "%s", j ? "must be a mapping" : "is required");
	return 0;
}

/* A string field: required or optional; *out is a copy (NULL when absent). */
static int get_str(const struct at *a, const struct json *obj, const char *field, bool required,
                   char **out, struct err **err)
{
	*out = NULL;
	const struct json *j = json_get(obj, field);
	if (j == NULL || json_type(j) == JSON_NULL)
		return required ? bad(a, field, err, "is required") : 0;
	const char *v = json_str(j);
	if (v == NULL)
		return bad(a, field, err, "must be a string");
	if (required && *v == '\0')
		return bad(a, field, err, "must not be empty");
	*out = xstrdup(v);
	return 0;
}

static int get_bool(const struct at *a, const struct json *obj, const char *field, bool *out,
                    struct err **err)
{
	*out = false;
	const struct json *j = json_get(obj, field);
	if (j == NULL || json_type(j) == JSON_NULL)
		return 0;
	if (!json_bool(j, out))
		return bad(a, field, err, "must be true or false");
	return 0;
}

/* An optional list of strings (krmpod's recorded entrypoint and cmd): *out a new
 * NULL-terminated vector, NULL when absent. */
static int get_strv(const struct at *a, const struct json *obj, const char *field, char ***out,
                    struct err **err)
{
	const struct json *j = json_get(obj, field);
	if (json_strv(j, false, out) < 0)
		return bad(a, field, err, "must be a list of strings");
	return 0;
}

bool catalog_tag_is_semver(const char *tag)
{
	const char *p = tag;
	if (*p == 'v')
		p++;
	for (int part = 0; part < 3; part++) {
		if (!isdigit((unsigned char)*p))
			return false;
		while (isdigit((unsigned char)*p))
			p++;
		if (part < 2 && *p++ != '.')
			return false;
	}
	return *p == '\0' || *p == '-' || *p == '+';
}

int catalog_image_split(const char *image, char **name, char **tag, char **digest)
{
	if (name)
		*name = NULL;
	if (tag)
		*tag = NULL;
	if (digest)
		*digest = NULL;
	if (image == NULL || *image == '\0' || strpbrk(image, " \t\n"))
		return -1;
	const char *at = strchr(image, '@');
	size_t end = at ? (size_t)(at - image) : strlen(image);
	/* The tag is after the last ':' that comes after the last '/' (a ':' before it is a
	 * registry's port). */
	const char *slash = memrchr(image, '/', end);
	const char *colon = memrchr(slash ? slash : image, ':',
	                            end - (size_t)((slash ? slash : image) - image));
	size_t name_end = colon ? (size_t)(colon - image) : end;
	if (name_end == 0 || (colon && colon + 1 == image + end) || (at && at[1] == '\0'))
		return -1;
	if (name)
		*name = xstrndup(image, name_end);
	if (tag && colon)
		*tag = xstrndup(colon + 1, end - name_end - 1);
	if (digest && at)
		*digest = xstrdup(at + 1);
	return 0;
}

/* runtime.container of a version. */
static int parse_container(const struct at *a, const struct json *c, struct catalog_version *v,
                           struct err **err)
{
	static const char *const known[] = {"image",
	                                    "sha256",
	                                    "requireNetwork",
	                                    "requireStorageMount",
	                                    "shareAcrossApplications",
	                                    "entrypoint",
	                                    "cmd",
	                                    NULL};
	if (only_fields(a, c, known, err) < 0 || get_str(a, c, "image", true, &v->image, err) < 0 ||
	    get_bool(a, c, "requireNetwork", &v->require_network, err) < 0 ||
	    get_bool(a, c, "requireStorageMount", &v->require_storage_mount, err) < 0 ||
	    get_bool(a, c, "shareAcrossApplications", &v->share_across_apps, err) < 0 ||
	    get_strv(a, c, "entrypoint", &v->entrypoint, err) < 0 ||
	    get_strv(a, c, "cmd", &v->cmd, err) < 0)
		return -1;
	if (v->cmd && v->entrypoint == NULL)
		return bad(a, "cmd", err,
		           "is recorded without entrypoint: record the image config's Entrypoint "
		           "too (entrypoint: [] for an image that has none)");
	if (v->entrypoint && strv_len(v->entrypoint) + strv_len(v->cmd) == 0)
		return bad(a, "entrypoint", err,
		           "and cmd are both empty: nothing to run; record the image config's "
		           "Entrypoint and Cmd");
	cleanup_free char *tag = NULL, *digest = NULL, *sha = NULL;
	if (catalog_image_split(v->image, NULL, &tag, &digest) < 0)
		return bad(a, "image", err, "\"%s\" is not an image reference", v->image);
	if (digest && !sha256_digest_valid(digest))
		return bad(a, "image", err, "\"%s\": the digest is not sha256:<64 lowercase hex>",
		           v->image);
	if (get_str(a, c, "sha256", false, &sha, err) < 0)
		return -1;
	if (sha) {
		cleanup_free char *full = strncmp(sha, "sha256:", 7) == 0
		                                  ? xstrdup(sha)
		                                  : xasprintf("sha256:%s", sha);
		if (!sha256_digest_valid(full))
			return bad(a, "sha256", err, "\"%s\" is not 64 lowercase hex digits", sha);
		if (digest && strcmp(digest, full) != 0)
			return bad(a, "sha256", err,
			           "%s disagrees with the digest in the image (%s)", full,
			           v->image);
		v->sha256 = xstrdup(full);
	} else if (digest) {
		v->sha256 = xstrdup(digest);
	}
	if (v->sha256 == NULL && tag && catalog_tag_is_semver(tag))
		return bad(a, "sha256", err,
		           "is required: the image's tag %s is a semantic version, so the KEP asks "
		           "for "
		           "the digest the admin vouches for (sha256: <64 hex>)",
		           tag);
	return 0;
}

static int parse_runtime(const struct at *a, const struct json *r, struct catalog_version *v,
                         struct err **err)
{
	if (json_get(r, "exec"))
		return bad(a, "exec", err,
		           "exec runtimes are not supported: krmpod runs functions only as pods "
		           "(give the function a runtime.container.image)");
	static const char *const known[] = {"container", NULL};
	if (only_fields(a, r, known, err) < 0)
		return -1;
	const struct json *c = json_get(r, "container");
	if (need_object(a, "container", c, err) < 0)
		return -1;
	struct at sub;
	at_sub(a, &sub, "container", -1);
	return parse_container(&sub, c, v, err);
}

static int parse_version(const struct at *a, const struct json *j, struct catalog_version *v,
                         struct err **err)
{
	static const char *const known[] = {"name",    "schema",      "idempotent",
	                                    "runtime", "usage",       "examples",
	                                    "license", "maintainers", NULL};
	if (need_object(a, "", j, err) < 0 || only_fields(a, j, known, err) < 0 ||
	    get_str(a, j, "name", true, &v->name, err) < 0 ||
	    get_bool(a, j, "idempotent", &v->idempotent, err) < 0 ||
	    get_str(a, j, "usage", false, &v->usage, err) < 0 ||
	    get_str(a, j, "license", false, &v->license, err) < 0)
		return -1;
	const struct json *schema = json_get(j, "schema");
	if (schema && need_object(a, "schema", schema, err) < 0)
		return -1;
	const struct json *r = json_get(j, "runtime");
	if (need_object(a, "runtime", r, err) < 0)
		return -1;
	struct at sub;
	at_sub(a, &sub, "runtime", -1);
	return parse_runtime(&sub, r, v, err);
}

static int parse_fn(const struct at *a, const struct json *j, struct catalog_fn *f,
                    struct err **err)
{
	static const char *const known[] = {"group",       "names",    "description",
	                                    "publisher",   "versions", "home",
	                                    "maintainers", "tags",     NULL};
	static const char *const known_names[] = {"kind", NULL};
	if (need_object(a, "", j, err) < 0 || only_fields(a, j, known, err) < 0 ||
	    get_str(a, j, "group", false, &f->group, err) < 0 ||
	    get_str(a, j, "description", false, &f->description, err) < 0 ||
	    get_str(a, j, "publisher", false, &f->publisher, err) < 0 ||
	    get_str(a, j, "home", false, &f->home, err) < 0)
		return -1;
	if (f->group == NULL)
		f->group = xstrdup("");
	const struct json *names = json_get(j, "names");
	struct at sub;
	at_sub(a, &sub, "names", -1);
	if (need_object(a, "names", names, err) < 0 ||
	    only_fields(&sub, names, known_names, err) < 0 ||
	    get_str(&sub, names, "kind", true, &f->kind, err) < 0)
		return -1;
	const struct json *vs = json_get(j, "versions");
	if (json_type(vs) != JSON_ARRAY || json_len(vs) == 0)
		return bad(a, "versions", err, "must be a list with at least one version");
	f->versions = xcalloc(json_len(vs), sizeof(*f->versions));
	for (size_t i = 0; i < json_len(vs); i++) {
		at_sub(a, &sub, "versions", (long)i);
		f->n_versions++;
		if (parse_version(&sub, json_at(vs, i), &f->versions[i], err) < 0)
			return -1;
	}
	return 0;
}

static int parse_doc(const struct json *doc, struct catalog *c, struct err **err)
{
	struct at top = {.source = c->source};
	static const char *const known[] = {"apiVersion", "kind", "metadata", "spec", NULL};
	if (need_object(&top, "(the document)", doc, err) < 0 ||
	    only_fields(&top, doc, known, err) < 0)
		return -1;
	const char *api = json_str(json_get(doc, "apiVersion"));
	const char *kind = json_str(json_get(doc, "kind"));
	if (api == NULL || strcmp(api, API_VERSION) != 0)
		return bad(&top, "apiVersion", err, "must be %s (got %s)", API_VERSION,
		           api ? api : "nothing");
	if (kind == NULL ||
	    (strcmp(kind, "Catalog") != 0 && strcmp(kind, "KRMFunctionCatalog") != 0))
		return bad(&top, "kind", err, "must be Catalog or KRMFunctionCatalog (got %s)",
		           kind ? kind : "nothing");
	c->kind = xstrdup(kind);
	const char *name = json_str(json_path(doc, "metadata.name"));
	c->name = xstrdup(name ? name : "(unnamed)");
	const struct json *spec = json_get(doc, "spec");
	static const char *const known_spec[] = {"krmFunctions", NULL};
	struct at sub;
	at_sub(&top, &sub, "spec", -1);
	if (need_object(&top, "spec", spec, err) < 0 ||
	    only_fields(&sub, spec, known_spec, err) < 0)
		return -1;
	const struct json *fns = json_get(spec, "krmFunctions");
	if (json_type(fns) != JSON_ARRAY)
		return bad(&sub, "krmFunctions", err, "must be a list of functions");
	c->fns = xcalloc(json_len(fns) + 1, sizeof(*c->fns));
	for (size_t i = 0; i < json_len(fns); i++) {
		at_sub(&sub, &top, "krmFunctions", (long)i);
		c->n_fns++;
		if (parse_fn(&top, json_at(fns, i), &c->fns[i], err) < 0)
			return -1;
	}
	return 0;
}

int catalog_parse(const char *text, size_t len, const char *source, struct catalog **out,
                  struct err **err)
{
	*out = NULL;
	struct catalog *c = xcalloc(1, sizeof(*c));
	c->source = xstrdup(source);
	sha256_digest(text, len, c->digest);
	cleanup_free char *what = xasprintf("catalog %s", source);
	cleanup_json struct json *doc = NULL;
	if (json_parse(text, len, what, &doc, err) < 0 || parse_doc(doc, c, err) < 0) {
		catalog_free(c);
		return -1;
	}
	*out = c;
	return 0;
}

void catalog_free(struct catalog *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->n_fns; i++) {
		struct catalog_fn *f = &c->fns[i];
		for (size_t k = 0; k < f->n_versions; k++) {
			struct catalog_version *v = &f->versions[k];
			free(v->name);
			free(v->image);
			free(v->sha256);
			strv_free(v->entrypoint);
			strv_free(v->cmd);
			free(v->usage);
			free(v->license);
		}
		free(f->versions);
		free(f->group);
		free(f->kind);
		free(f->description);
		free(f->publisher);
		free(f->home);
	}
	free(c->fns);
	free(c->source);
	free(c->name);
	free(c->kind);
	free(c);
}

const struct catalog_version *catalog_find(const struct catalog *c, const char *group,
                                           const char *version, const char *kind,
                                           const struct catalog_fn **fn)
{
	for (size_t i = 0; c && i < c->n_fns; i++) {
		const struct catalog_fn *f = &c->fns[i];
		if (strcmp(f->group, group) != 0 || strcmp(f->kind, kind) != 0)
			continue;
		for (size_t k = 0; k < f->n_versions; k++) {
			if (strcmp(f->versions[k].name, version) == 0) {
				if (fn)
					*fn = f;
				return &f->versions[k];
			}
		}
	}
	return NULL;
}

char *catalog_version_image(const struct catalog_version *v)
{
	if (v->sha256 == NULL)
		return xstrdup(v->image);
	cleanup_free char *name = NULL;
	catalog_image_split(v->image, &name, NULL, NULL);
	return xasprintf("%s@%s", name ? name : v->image, v->sha256);
}

const struct catalog_version *catalog_resolve(const struct catalog *const *list, size_t n,
                                              const char *group, const char *version,
                                              const char *kind, const struct catalog **which,
                                              const struct catalog_fn **fn)
{
	for (size_t i = 0; i < n; i++) {
		const struct catalog_version *v = catalog_find(list[i], group, version, kind, fn);
		if (v) {
			if (which)
				*which = list[i];
			return v;
		}
	}
	return NULL;
}

char *catalog_api_group(const char *api, const char **version)
{
	const char *slash = strchr(api, '/');
	*version = slash ? slash + 1 : api;
	return slash ? xstrndup(api, (size_t)(slash - api)) : xstrdup("");
}

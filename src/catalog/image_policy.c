/* image_policy.c — see image_policy.h. */
#include "catalog/image_policy.h"

#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/glob.h"
#include "base/json.h"
#include "base/sha256.h"
#include "base/strv.h"
#include "base/xalloc.h"
#include "catalog/catalog.h"

static const char *mode_name(enum image_policy m)
{
	return m == IMAGE_POLICY_CATALOG     ? "catalog"
	       : m == IMAGE_POLICY_ALLOWLIST ? "allowlist"
	                                     : "any";
}

void policy_init(struct policy *p, const struct settings *s)
{
	memset(p, 0, sizeof(*p));
	p->mode = s->image_policy;
	p->require_digest = s->require_digest;
	p->allowlist = xcalloc(s->n_image_allowlist + 1, sizeof(char *));
	for (size_t i = 0; i < s->n_image_allowlist; i++)
		p->allowlist[i] = xstrdup(s->image_allowlist[i]);
	p->n_allowlist = s->n_image_allowlist;
}

void policy_clear(struct policy *p)
{
	for (size_t i = 0; i < p->n_allowlist; i++)
		free(p->allowlist[i]);
	free(p->allowlist);
	for (size_t i = 0; i < p->n_images; i++) {
		free(p->images[i].image);
		free(p->images[i].origin);
		free(p->images[i].catalog);
		strv_free(p->images[i].entrypoint);
		strv_free(p->images[i].cmd);
	}
	free(p->images);
	for (size_t i = 0; i < p->n_named; i++) {
		free(p->named[i].image);
		free(p->named[i].where);
	}
	free(p->named);
	memset(p, 0, sizeof(*p));
}

void policy_add_image(struct policy *p, const struct policy_image *e)
{
	p->images = xrealloc(p->images, (p->n_images + 1) * sizeof(*p->images));
	struct policy_image *n = &p->images[p->n_images++];
	*n = *e;
	n->image = xstrdup(e->image);
	n->origin = xstrdup(e->origin);
	n->catalog = e->catalog ? xstrdup(e->catalog) : NULL;
	n->entrypoint = strv_dup(e->entrypoint);
	n->cmd = strv_dup(e->cmd);
}

void policy_add_named(struct policy *p, const char *image, const char *where)
{
	p->named = xrealloc(p->named, (p->n_named + 1) * sizeof(*p->named));
	p->named[p->n_named++] = (struct policy_named){xstrdup(image), xstrdup(where)};
}

/* Whether catalog entry e allows image (name, digest: image split). */
static bool entry_allows(const struct policy_image *e, const char *image, const char *name,
                         const char *digest)
{
	if (digest == NULL)
		return strcmp(e->image, image) == 0 && strchr(e->image, '@') == NULL;
	cleanup_free char *ename = NULL, *edigest = NULL;
	return catalog_image_split(e->image, &ename, NULL, &edigest) == 0 && edigest &&
	       strcmp(ename, name) == 0 && strcmp(edigest, digest) == 0;
}

/* The first catalog entry from index `from` on that allows image; p->n_images if none. */
static size_t catalog_image_from(const struct policy *p, const char *image, size_t from)
{
	cleanup_free char *name = NULL, *digest = NULL;
	if (catalog_image_split(image, &name, NULL, &digest) < 0)
		return p->n_images;
	for (size_t i = from; i < p->n_images; i++)
		if (entry_allows(&p->images[i], image, name, digest))
			return i;
	return p->n_images;
}

/* The catalog entry that allows image, or NULL. */
static const struct policy_image *catalog_image(const struct policy *p, const char *image)
{
	size_t i = catalog_image_from(p, image, 0);
	return i < p->n_images ? &p->images[i] : NULL;
}

size_t policy_catalogs_of(const struct policy *p, const char *image, const char **out, size_t max)
{
	size_t n = 0;
	for (size_t i = catalog_image_from(p, image, 0); i < p->n_images;
	     i = catalog_image_from(p, image, i + 1)) {
		const char *c = p->images[i].catalog;
		bool seen = c == NULL;
		for (size_t k = 0; !seen && k < n && k < max; k++)
			seen = strcmp(out[k], c) == 0;
		if (seen)
			continue;
		if (n < max)
			out[n] = c;
		n++;
	}
	return n;
}

char *policy_describe_run(char *const *entrypoint, char *const *cmd)
{
	struct buf b;
	buf_init(&b, 0);
	struct jw w; /* one writer per array: each is a document of its own */
	buf_printf(&b, "entrypoint ");
	jw_init(&w, &b);
	jw_strv(&w, entrypoint);
	buf_printf(&b, " cmd ");
	jw_init(&w, &b);
	jw_strv(&w, cmd);
	return buf_steal(&b, NULL);
}

int policy_recorded(const struct policy *p, const char *image, const struct policy_image **out,
                    struct err **err)
{
	*out = NULL;
	for (size_t i = catalog_image_from(p, image, 0); i < p->n_images;
	     i = catalog_image_from(p, image, i + 1)) {
		const struct policy_image *e = &p->images[i];
		if (e->entrypoint == NULL)
			continue;
		if (*out == NULL) {
			*out = e;
			continue;
		}
		if (strv_equal((*out)->entrypoint, e->entrypoint) &&
		    strv_equal((*out)->cmd, e->cmd))
			continue;
		cleanup_free char *a = policy_describe_run((*out)->entrypoint, (*out)->cmd);
		cleanup_free char *b = policy_describe_run(e->entrypoint, e->cmd);
		const char *first = (*out)->origin;
		*out = NULL;
		return err_set(err, ERR_CONFIG,
		               "image %s: %s records %s, %s records %s: make them agree with the "
		               "image's config",
		               image, first, a, e->origin, b);
	}
	return 0;
}

bool policy_shared(const struct policy *p, const char *image)
{
	const struct policy_image *e = catalog_image(p, image);
	return e && e->share_across_apps;
}

static const char *named_where(const struct policy *p, const char *image)
{
	for (size_t i = 0; i < p->n_named; i++)
		if (strcmp(p->named[i].image, image) == 0)
			return p->named[i].where;
	return "the function config";
}

static int refuse(const struct policy *p, const char *image, const char *where, const char *setting,
                  const char *why, const char *fix, struct err **err)
{
	return err_set(err, ERR_CONFIG,
	               "%s names image %s, which the image policy (%s) refuses: %s; %s",
	               where ? where : named_where(p, image), image, setting, why, fix);
}

static int check_catalog(const struct policy *p, const char *image, bool network, bool mounts,
                         const char *where, struct err **err)
{
	const struct policy_image *e = catalog_image(p, image);
	if (e == NULL)
		return refuse(
		        p, image, where, "KRMPOD_IMAGE_POLICY=catalog",
		        "it is not an image of the admin's catalogs (KRMPOD_TRUSTED_CATALOGS, "
		        "KRMPOD_DEFAULT_CATALOGS)",
		        "name the function by kind only (no config.kubernetes.io/function "
		        "annotation) so that a catalog resolves it, or reference the image as a "
		        "catalog lists it (by digest), or ask the admin to add it to a catalog",
		        err);
	bool no_net = network && !e->require_network;
	if (no_net || (mounts && !e->require_storage_mount)) {
		cleanup_free char *why =
		        xasprintf("it asks for %s, which its catalog entry (%s) does not require",
		                  no_net ? "network" : "storage mounts", e->origin);
		return refuse(
		        p, image, where, "KRMPOD_IMAGE_POLICY=catalog", why,
		        no_net ? "drop network: true from its runtime, or ask the admin for an "
		                 "entry with requireNetwork: true"
		               : "drop its mounts, or ask the admin for an entry with "
		                 "requireStorageMount: true",
		        err);
	}
	return 0;
}

int policy_check(const struct policy *p, const char *image, bool network, bool mounts,
                 const char *where, struct err **err)
{
	if (p->require_digest) {
		const char *at = strchr(image, '@');
		if (at == NULL || !sha256_digest_valid(at + 1))
			return refuse(
			        p, image, where, "KRMPOD_REQUIRE_DIGEST=true",
			        "it is not referenced by digest",
			        "reference it as NAME@sha256:<digest>, or name the function by "
			        "kind and let a catalog resolve it",
			        err);
	}
	if (p->mode == IMAGE_POLICY_CATALOG)
		return check_catalog(p, image, network, mounts, where, err);
	if (p->mode == IMAGE_POLICY_ALLOWLIST) {
		for (size_t i = 0; i < p->n_allowlist; i++)
			if (glob_match(p->allowlist[i], image))
				return 0;
		cleanup_buf struct buf pats;
		buf_init(&pats, 0);
		for (size_t i = 0; i < p->n_allowlist; i++)
			buf_printf(&pats, "%s%s", i ? ", " : "", p->allowlist[i]);
		cleanup_free char *why = xasprintf("it matches none of %s", pats.data);
		return refuse(p, image, where, "KRMPOD_IMAGE_POLICY=allowlist", why,
		              "use an image the admin allows, or ask the admin to add a pattern to "
		              "KRMPOD_IMAGE_ALLOWLIST",
		              err);
	}
	return 0;
}

void policy_write(const struct policy *p, struct buf *out)
{
	struct jw w;
	jw_init(&w, out);
	jw_obj_begin(&w);
	jw_kv_str(&w, "mode", mode_name(p->mode));
	jw_kv_bool(&w, "requireDigest", p->require_digest);
	jw_key(&w, "allowlist");
	jw_arr_begin(&w);
	for (size_t i = 0; i < p->n_allowlist; i++)
		jw_str(&w, p->allowlist[i]);
	jw_arr_end(&w);
	jw_key(&w, "images");
	jw_arr_begin(&w);
	for (size_t i = 0; i < p->n_images; i++) {
		jw_obj_begin(&w);
		jw_kv_str(&w, "image", p->images[i].image);
		jw_kv_str(&w, "origin", p->images[i].origin);
		if (p->images[i].catalog)
			jw_kv_str(&w, "catalog", p->images[i].catalog);
		jw_kv_bool(&w, "requireNetwork", p->images[i].require_network);
		jw_kv_bool(&w, "requireStorageMount", p->images[i].require_storage_mount);
		jw_kv_bool(&w, "shareAcrossApplications", p->images[i].share_across_apps);
		if (p->images[i].entrypoint) {
			jw_key(&w, "entrypoint");
			jw_strv(&w, p->images[i].entrypoint);
			jw_key(&w, "cmd");
			jw_strv(&w, p->images[i].cmd);
		}
		jw_obj_end(&w);
	}
	jw_arr_end(&w);
	jw_key(&w, "named");
	jw_arr_begin(&w);
	for (size_t i = 0; i < p->n_named; i++) {
		jw_obj_begin(&w);
		jw_kv_str(&w, "image", p->named[i].image);
		jw_kv_str(&w, "where", p->named[i].where);
		jw_obj_end(&w);
	}
	jw_arr_end(&w);
	jw_obj_end(&w);
}

/* The arrays of a policy document into p. */
static void read_lists(const struct json *doc, struct policy *p)
{
	const struct json *al = json_get(doc, "allowlist");
	p->allowlist = xcalloc(json_len(al) + 1, sizeof(char *));
	for (size_t i = 0; i < json_len(al); i++)
		if (json_str(json_at(al, i)))
			p->allowlist[p->n_allowlist++] = xstrdup(json_str(json_at(al, i)));
	const struct json *im = json_get(doc, "images");
	for (size_t i = 0; i < json_len(im); i++) {
		const struct json *e = json_at(im, i);
		struct policy_image pi = {.image = (char *)json_str(json_get(e, "image")),
		                          .origin = (char *)json_str(json_get(e, "origin")),
		                          .catalog = (char *)json_str(json_get(e, "catalog"))};
		json_bool(json_get(e, "requireNetwork"), &pi.require_network);
		json_bool(json_get(e, "requireStorageMount"), &pi.require_storage_mount);
		json_bool(json_get(e, "shareAcrossApplications"), &pi.share_across_apps);
		if (json_strv(json_get(e, "entrypoint"), false, &pi.entrypoint) == 0 &&
		    pi.entrypoint && json_strv(json_get(e, "cmd"), true, &pi.cmd) < 0) {
			strv_free(pi.entrypoint);
			pi.entrypoint = NULL;
		}
		if (pi.image && pi.origin)
			policy_add_image(p, &pi);
		strv_free(pi.entrypoint);
		strv_free(pi.cmd);
	}
	const struct json *nm = json_get(doc, "named");
	for (size_t i = 0; i < json_len(nm); i++) {
		const struct json *e = json_at(nm, i);
		if (json_str(json_get(e, "image")) && json_str(json_get(e, "where")))
			policy_add_named(p, json_str(json_get(e, "image")),
			                 json_str(json_get(e, "where")));
	}
}

int policy_read(const char *text, size_t len, const char *what, struct policy *out,
                struct err **err)
{
	memset(out, 0, sizeof(*out));
	cleanup_json struct json *doc = NULL;
	if (json_parse(text, len, what, &doc, err) < 0)
		return -1;
	const char *mode = json_str(json_get(doc, "mode"));
	if (mode == NULL || (strcmp(mode, "any") != 0 && strcmp(mode, "catalog") != 0 &&
	                     strcmp(mode, "allowlist") != 0))
		return err_set(err, ERR_CONFIG, "%s: not a policy krmpod generate wrote", what);
	out->mode = strcmp(mode, "catalog") == 0     ? IMAGE_POLICY_CATALOG
	            : strcmp(mode, "allowlist") == 0 ? IMAGE_POLICY_ALLOWLIST
	                                             : IMAGE_POLICY_ANY;
	json_bool(json_get(doc, "requireDigest"), &out->require_digest);
	read_lists(doc, out);
	return 0;
}

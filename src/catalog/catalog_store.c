/* catalog_store.c — see catalog_store.h. */
#include "catalog/catalog_store.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/sha256.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "registry/registry.h"
#include "registry/registry_cache.h"

struct loaded {
	struct catalog_ref ref;
	struct catalog *cat;
};

struct catalog_store {
	const struct settings *s;
	struct registry_opts ro;
	struct loaded *loaded;
	size_t n_loaded;
	const struct catalog **defaults;
	size_t n_defaults;
	bool defaults_done;
};

void catalog_store_open(const struct settings *s, atomic_int *cancel, int64_t deadline_ms,
                        struct catalog_store **out)
{
	struct catalog_store *st = xcalloc(1, sizeof(*st));
	st->s = s;
	registry_opts_init(&st->ro, s, cancel, deadline_ms);
	*out = st;
}

void catalog_store_free(struct catalog_store *st)
{
	if (st == NULL)
		return;
	for (size_t i = 0; i < st->n_loaded; i++) {
		catalog_ref_clear(&st->loaded[i].ref);
		catalog_free(st->loaded[i].cat);
	}
	free(st->loaded);
	free(st->defaults);
	free(st);
}

/* --- loading -------------------------------------------------------------------------------- */

/* The bytes of a catalog reference: the cache for a pinned one, else the file, the URL or
 * the registry. */
static int fetch(struct catalog_store *st, const struct catalog_ref *ref, struct buf *out,
                 struct err **err)
{
	if (ref->pin && ref->type != CATALOG_REF_FILE && st->s->cache_dir &&
	    registry_cache_get(st->s->cache_dir, ref->pin, LIMIT_CATALOG, out)) {
		log_debug("catalog %s: from the cache (%s)", ref->text, ref->pin);
		return 0;
	}
	if (ref->type == CATALOG_REF_FILE) {
		cleanup_free char *text = NULL;
		size_t len = 0;
		if (buf_read_file(ref->location, LIMIT_CATALOG, "catalog", ERR_CONFIG, &text, &len,
		                  err) < 0)
			return -1;
		buf_append(out, text, len, "catalog", NULL);
		return 0;
	}
	if (ref->type == CATALOG_REF_HTTPS)
		return registry_https_get(&st->ro, ref->location, LIMIT_CATALOG, out, err);
	struct oci_ref oci;
	if (oci_ref_parse(ref->location, &oci, err) < 0)
		return -1;
	char digest[SHA256_DIGEST_LEN + 1];
	int rc = registry_pull_layer(&st->ro, &oci, CATALOG_MEDIA_TYPE, LIMIT_CATALOG, out, digest,
	                             err);
	oci_ref_clear(&oci);
	return rc;
}

static int load_bytes(struct catalog_store *st, const struct catalog_ref *ref, const struct buf *bb,
                      const struct catalog **out, struct err **err);

/* A catalog already loaded for ref (NULL when none). */
static const struct catalog *loaded_for(const struct catalog_store *st,
                                        const struct catalog_ref *ref)
{
	for (size_t i = 0; i < st->n_loaded; i++) {
		const struct loaded *l = &st->loaded[i];
		if (catalog_ref_same(&l->ref, ref) &&
		    (ref->pin == NULL || strcmp(ref->pin, l->cat->digest) == 0))
			return l->cat;
	}
	return NULL;
}

int catalog_store_load(struct catalog_store *st, const struct catalog_ref *ref,
                       const struct catalog **out, struct err **err)
{
	const struct catalog *have = loaded_for(st, ref);
	if (have) {
		*out = have;
		return 0;
	}
	cleanup_buf struct buf b;
	buf_init(&b, LIMIT_CATALOG);
	if (fetch(st, ref, &b, err) < 0)
		return err_wrap(err, "catalog %s", ref->text);
	return load_bytes(st, ref, &b, out, err);
}

/* Parses and keeps the bytes of ref (checked against its pin): the bytes hashed are the
 * bytes parsed, never read twice. */
static int load_bytes(struct catalog_store *st, const struct catalog_ref *ref, const struct buf *bb,
                      const struct catalog **out, struct err **err)
{
	const struct buf b = *bb;
	char digest[SHA256_DIGEST_LEN + 1];
	sha256_digest(b.data ? b.data : "", b.len, digest);
	if (ref->pin && strcmp(ref->pin, digest) != 0)
		return err_set(
		        err, ERR_CONFIG,
		        "catalog %s: its content has digest %s, but the reference pins %s: the "
		        "catalog changed, or the pin is wrong",
		        ref->text, digest, ref->pin);
	if (ref->type != CATALOG_REF_FILE && st->s->cache_dir)
		registry_cache_put(st->s->cache_dir, digest, b.data ? b.data : "", b.len);
	struct catalog *c = NULL;
	const char *source = ref->type == CATALOG_REF_FILE ? ref->location : ref->text;
	if (catalog_parse(b.data ? b.data : "", b.len, source, &c, err) < 0)
		return -1;
	st->loaded = xrealloc(st->loaded, (st->n_loaded + 1) * sizeof(*st->loaded));
	struct loaded *l = &st->loaded[st->n_loaded++];
	catalog_ref_copy(ref, &l->ref);
	l->cat = c;
	log_debug("catalog %s (%s): %zu functions, %s", c->name, ref->text, c->n_fns, c->digest);
	*out = c;
	return 0;
}

int catalog_store_defaults(struct catalog_store *st, const struct catalog *const **out, size_t *n,
                           struct err **err)
{
	if (!st->defaults_done) {
		const struct settings *s = st->s;
		st->defaults = xcalloc(s->n_default_catalogs + 1, sizeof(*st->defaults));
		for (size_t i = 0; i < s->n_default_catalogs; i++) {
			if (catalog_store_load(st, &s->default_catalogs[i], &st->defaults[i], err) <
			    0)
				return err_wrap(err, "KRMPOD_DEFAULT_CATALOGS");
			st->n_defaults++;
		}
		st->defaults_done = true;
	}
	*out = st->defaults;
	*n = st->n_defaults;
	return 0;
}

/* The admin entries, trusted then default: entry i of n. */
static const struct catalog_ref *admin_ref(const struct settings *s, size_t i, const char **setting)
{
	if (i < s->n_trusted_catalogs) {
		*setting = "KRMPOD_TRUSTED_CATALOGS";
		return &s->trusted_catalogs[i];
	}
	*setting = "KRMPOD_DEFAULT_CATALOGS";
	return &s->default_catalogs[i - s->n_trusted_catalogs];
}

/* Which admin entry vouches for a repository file with content digest d (NULL: none).
 * Pins are compared first; unpinned admin catalogs are loaded to learn their digest. */
static const struct catalog_ref *trust_by_digest(struct catalog_store *st, const char *d,
                                                 struct err **err)
{
	size_t n = st->s->n_trusted_catalogs + st->s->n_default_catalogs;
	const char *setting;
	for (size_t i = 0; i < n; i++) {
		const struct catalog_ref *a = admin_ref(st->s, i, &setting);
		if (a->pin && strcmp(a->pin, d) == 0)
			return a;
	}
	for (size_t i = 0; i < n; i++) {
		const struct catalog_ref *a = admin_ref(st->s, i, &setting);
		const struct catalog *c = NULL;
		if (a->pin)
			continue;
		if (catalog_store_load(st, a, &c, err) < 0) {
			err_wrap(err, "%s", setting);
			return NULL;
		}
		if (strcmp(c->digest, d) == 0)
			return a;
	}
	return NULL;
}

static int untrusted(const struct catalog_ref *r, const char *listed_in, const char *digest,
                     struct err **err)
{
	if (r->type == CATALOG_REF_FILE)
		return err_set(err, ERR_CONFIG,
		               "catalog %s, listed in %s, is not trusted: a catalog file of the "
		               "repository is used only when its content (%s) is that of a catalog "
		               "the admin trusts: add the catalog to KRMPOD_TRUSTED_CATALOGS (for "
		               "example as a ConfigMap file, or pinned: REFERENCE#%s)",
		               r->text, listed_in, digest, digest);
	return err_set(
	        err, ERR_CONFIG,
	        "catalog %s, listed in %s, is not trusted: add %s to KRMPOD_TRUSTED_CATALOGS "
	        "(the admin's list of catalogs a kustomization may name)",
	        r->text, listed_in, r->text);
}

/* A repository file: read, and trusted by its digest. */
static int listed_file(struct catalog_store *st, const struct catalog_ref *r, const char *listed_in,
                       const struct catalog **out, const struct catalog_ref **by, struct err **err)
{
	cleanup_free char *text = NULL;
	size_t len = 0;
	if (buf_read_file(r->location, LIMIT_CATALOG, "catalog", ERR_CONFIG, &text, &len, err) < 0)
		return err_wrap(err, "%s: catalogs", listed_in);
	char d[SHA256_DIGEST_LEN + 1];
	sha256_digest(text ? text : "", len, d);
	if (r->pin && strcmp(r->pin, d) != 0)
		return err_set(err, ERR_CONFIG,
		               "catalog %s, listed in %s: its content has digest %s, but the entry "
		               "pins %s",
		               r->text, listed_in, d, r->pin);
	cleanup_err struct err *e = NULL;
	const struct catalog_ref *a = trust_by_digest(st, d, &e);
	if (e) {
		*err = e;
		e = NULL;
		return -1;
	}
	if (a == NULL)
		return untrusted(r, listed_in, d, err);
	*by = a;
	const struct catalog *have = loaded_for(st, r);
	if (have && strcmp(have->digest, d) == 0) {
		*out = have;
		return 0;
	}
	/* the bytes trusted by their digest are the bytes parsed: no second read */
	struct buf b = {.data = text, .len = len, .cap = len, .limit = LIMIT_CATALOG};
	return load_bytes(st, r, &b, out, err);
}

/* A repository catalog's path: relative, and inside the directory of the kustomization that
 * lists it once symlinks and ".." are resolved (kustomize's own rule for the files a
 * kustomization reads): never a file of the sidecar's (/proc/self/environ) or another
 * Application's. *out is the resolved path. */
static int confine(const char *location, const char *layer_dir, const char *listed_in, char **out,
                   struct err **err)
{
	if (location[0] == '/')
		return err_set(
		        err, ERR_CONFIG,
		        "%s: catalogs: %s is an absolute path: a catalog file must be inside "
		        "the kustomization's directory (a relative path), or come from an "
		        "admin's KRMPOD_TRUSTED_CATALOGS",
		        listed_in, location);
	cleanup_free char *joined = xasprintf("%s/%s", layer_dir, location);
	cleanup_free char *root = realpath(layer_dir, NULL);
	char *real = realpath(joined, NULL);
	if (root == NULL || real == NULL) {
		int e = errno;
		free(real);
		return err_set(err, ERR_CONFIG, "%s: catalogs: %s: %s", listed_in, location,
		               strerror(e));
	}
	size_t n = strlen(root);
	if (strncmp(real, root, n) != 0 || (real[n] != '/' && real[n] != '\0')) {
		free(real);
		return err_set(err, ERR_CONFIG,
		               "%s: catalogs: %s is outside the kustomization's directory %s: a "
		               "catalog file must be inside it (kustomize's rule for the files a "
		               "kustomization reads), or come from an admin's "
		               "KRMPOD_TRUSTED_CATALOGS",
		               listed_in, location, layer_dir);
	}
	*out = real;
	return 0;
}

int catalog_store_listed(struct catalog_store *st, const char *entry, const char *layer_dir,
                         const char *listed_in, const struct catalog **out,
                         const struct catalog_ref **trusted_by, struct err **err)
{
	struct catalog_ref r;
	cleanup_free char *source = xasprintf("%s: catalogs", listed_in);
	if (catalog_ref_parse(entry, source, false, &r, err) < 0)
		return -1;
	if (r.type == CATALOG_REF_FILE) {
		char *inside = NULL;
		if (confine(r.location, layer_dir, listed_in, &inside, err) < 0) {
			catalog_ref_clear(&r);
			return -1;
		}
		free(r.location);
		r.location = inside;
	}
	const struct catalog_ref *by = NULL;
	int rc;
	if (r.type == CATALOG_REF_FILE) {
		rc = listed_file(st, &r, listed_in, out, &by, err);
	} else {
		size_t n = st->s->n_trusted_catalogs + st->s->n_default_catalogs;
		const char *setting;
		for (size_t i = 0; i < n && by == NULL; i++) {
			const struct catalog_ref *a = admin_ref(st->s, i, &setting);
			if (catalog_ref_same(a, &r))
				by = a;
		}
		rc = by ? catalog_store_load(st, by->pin ? by : &r, out, err)
		        : untrusted(&r, listed_in, "", err);
		if (rc == 0 && r.pin && strcmp(r.pin, (*out)->digest) != 0)
			rc = err_set(err, ERR_CONFIG,
			             "catalog %s, listed in %s: its content has digest %s, but the "
			             "entry pins %s",
			             r.text, listed_in, (*out)->digest, r.pin);
	}
	if (rc == 0 && trusted_by)
		*trusted_by = by;
	catalog_ref_clear(&r);
	return rc;
}

int catalog_store_policy(const struct settings *s, atomic_int *cancel, bool with_images,
                         struct policy *p, struct err **err)
{
	if (s->policy_file) {
		cleanup_free char *text = NULL;
		size_t len = 0;
		cleanup_free char *what = xasprintf("KRMPOD_POLICY_FILE %s", s->policy_file);
		if (buf_read_file(s->policy_file, LIMIT_CATALOG, what, ERR_CONFIG, &text, &len,
		                  err) < 0)
			return -1;
		return policy_read(text, len, what, p, err);
	}
	policy_init(p, s);
	if (s->image_policy != IMAGE_POLICY_CATALOG && !with_images)
		return 0;
	struct catalog_store *st = NULL;
	catalog_store_open(s, cancel, now_ms() + s->start_timeout_ms, &st);
	int rc = catalog_store_admin_images(st, p, err);
	catalog_store_free(st);
	return rc;
}

/* Adds the images of catalog c to p, with what each entry allows and records. */
static void add_catalog_images(struct policy *p, const struct catalog *c)
{
	for (size_t f = 0; f < c->n_fns; f++) {
		const struct catalog_fn *fn = &c->fns[f];
		for (size_t v = 0; v < fn->n_versions; v++) {
			const struct catalog_version *ver = &fn->versions[v];
			cleanup_free char *image = catalog_version_image(ver);
			cleanup_free char *origin = xasprintf(
			        "%s%s%s %s in catalog %s (%s)", fn->group, fn->group[0] ? "/" : "",
			        ver->name, fn->kind, c->name, c->source);
			policy_add_image(
			        p, &(struct policy_image){
			                   .image = image,
			                   .origin = origin,
			                   .catalog = c->name,
			                   .require_network = ver->require_network,
			                   .require_storage_mount = ver->require_storage_mount,
			                   .share_across_apps = ver->share_across_apps,
			                   .entrypoint = ver->entrypoint,
			                   .cmd = ver->cmd});
		}
	}
}

int catalog_store_admin_images(struct catalog_store *st, struct policy *p, struct err **err)
{
	size_t n = st->s->n_trusted_catalogs + st->s->n_default_catalogs;
	for (size_t i = 0; i < n; i++) {
		const char *setting;
		const struct catalog_ref *a = admin_ref(st->s, i, &setting);
		const struct catalog *c = NULL;
		if (catalog_store_load(st, a, &c, err) < 0)
			return err_wrap(err, "%s", setting);
		add_catalog_images(p, c);
	}
	return 0;
}

void catalog_store_admin_records(struct catalog_store *st, struct policy *p)
{
	size_t n = st->s->n_trusted_catalogs + st->s->n_default_catalogs;
	for (size_t i = 0; i < n; i++) {
		const char *setting;
		const struct catalog_ref *a = admin_ref(st->s, i, &setting);
		const struct catalog *c = NULL;
		cleanup_err struct err *e = NULL;
		if (catalog_store_load(st, a, &c, &e) < 0) {
			log_debug("%s: %s: the entrypoints it may record are not used", setting,
			          e->msg);
			continue;
		}
		add_catalog_images(p, c);
	}
}

/* cmp_view.c — see cmp_view.h. One model, built as JSON, printed three ways. */
#include "cmp/cmp_view.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "admit/trust.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/json.h"
#include "base/xalloc.h"
#include "base/yaml_edit.h"
#include "catalog/catalog.h"
#include "catalog/catalog_store.h"
#include "catalog/image_policy.h"
#include "cmp/kustomization.h"
#include "sign/sig_policy.h"

static const char *mode_name(enum image_policy m)
{
	return m == IMAGE_POLICY_CATALOG     ? "catalog"
	       : m == IMAGE_POLICY_ALLOWLIST ? "allowlist"
	                                     : "any";
}

/* The signature policy a view shows for each function, when there is one. */
struct view_trust {
	const struct settings *s;
	const struct sig_policy *sp; /* NULL: no policy, or it cannot be read */
	struct policy admin;         /* the admin catalogs' images, when sp names catalogs */
};

static void write_signature(struct jw *w, const struct view_trust *vt, const char *image,
                            const char *catalog)
{
	if (vt == NULL || vt->sp == NULL)
		return;
	/* every admin catalog listing the image, and the one shown */
	const char *catalogs[FN_TRUST_MAX_CATALOGS + 1];
	size_t n = policy_catalogs_of(&vt->admin, image, catalogs, FN_TRUST_MAX_CATALOGS);
	bool listed = false;
	for (size_t i = 0; i < n && i < FN_TRUST_MAX_CATALOGS; i++)
		listed = listed || strcmp(catalogs[i], catalog) == 0;
	if (!listed && n < FN_TRUST_MAX_CATALOGS)
		catalogs[n++] = catalog;
	struct fn_trust_view v;
	fn_trust_view(vt->s, vt->sp, image, catalogs, n, &v);
	jw_key(w, "signature");
	jw_obj_begin(w);
	jw_kv_bool(w, "required", v.required);
	if (v.required) {
		jw_kv_str(w, "keys", v.keys);
		jw_kv_bool(w, "valid", v.valid);
		jw_kv_str(w, "detail", v.detail);
	}
	jw_obj_end(w);
	fn_trust_view_clear(&v);
}

static void write_functions(struct jw *w, const struct catalog *c, const struct view_trust *vt)
{
	jw_key(w, "functions");
	jw_arr_begin(w);
	for (size_t i = 0; i < c->n_fns; i++) {
		const struct catalog_fn *f = &c->fns[i];
		for (size_t k = 0; k < f->n_versions; k++) {
			const struct catalog_version *v = &f->versions[k];
			cleanup_free char *image = catalog_version_image(v);
			jw_obj_begin(w);
			jw_kv_str(w, "group", f->group);
			jw_kv_str(w, "version", v->name);
			jw_kv_str(w, "kind", f->kind);
			jw_kv_str(w, "image", image);
			jw_kv_str(w, "digest", v->sha256 ? v->sha256 : "");
			jw_kv_bool(w, "idempotent", v->idempotent);
			jw_kv_bool(w, "requireNetwork", v->require_network);
			jw_kv_bool(w, "requireStorageMount", v->require_storage_mount);
			jw_kv_str(w, "publisher", f->publisher ? f->publisher : "");
			jw_kv_str(w, "description", f->description ? f->description : "");
			write_signature(w, vt, image, c->name);
			jw_obj_end(w);
		}
	}
	jw_arr_end(w);
}

static void write_catalog(struct jw *w, const struct catalog *c, const struct view_trust *vt)
{
	jw_kv_str(w, "name", c->name);
	jw_kv_str(w, "kind", c->kind);
	jw_kv_str(w, "source", c->source);
	jw_kv_str(w, "digest", c->digest);
	write_functions(w, c, vt);
}

/* Loads the signature policy for vt (vt->sp stays NULL without one); *sp holds it. With
 * requirements naming catalogs, the admin catalogs' images too (from st); cleared by
 * clear_trust. */
static void load_trust(const struct settings *s, struct catalog_store *st, struct sig_policy *sp,
                       struct view_trust *vt, struct err **load_err)
{
	*vt = (struct view_trust){.s = s};
	policy_init(&vt->admin, s);
	if (s->signature_policy &&
	    sig_policy_load(s->signature_policy, "KRMPOD_SIGNATURE_POLICY", sp, load_err) == 0)
		vt->sp = sp;
	if (vt->sp && sig_policy_has_catalogs(sp) &&
	    catalog_store_admin_images(st, &vt->admin, load_err) < 0)
		err_wrap(load_err, "the admin catalogs a requirement names");
}

static void clear_trust(struct view_trust *vt)
{
	policy_clear(&vt->admin);
}

static void write_trust(struct jw *w, const struct settings *s, const struct view_trust *vt,
                        const struct err *load_err)
{
	jw_key(w, "signaturePolicy");
	jw_obj_begin(w);
	jw_kv_str(w, "file", s->signature_policy ? s->signature_policy : "");
	if (load_err)
		jw_kv_str(w, "error", load_err->msg);
	jw_key(w, "requirements");
	jw_arr_begin(w);
	for (size_t i = 0; vt->sp && i < vt->sp->n_rules; i++) {
		cleanup_buf struct buf b;
		buf_init(&b, 0);
		buf_printf(&b, "%s: keys ", vt->sp->rules[i].name);
		sig_rule_key_names(vt->sp, &vt->sp->rules[i], ", ", &b);
		jw_str(w, b.data);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

static void write_policy(struct jw *w, const struct settings *s)
{
	jw_key(w, "policy");
	jw_obj_begin(w);
	jw_kv_str(w, "mode", mode_name(s->image_policy));
	jw_kv_bool(w, "requireDigest", s->require_digest);
	jw_key(w, "allowlist");
	jw_arr_begin(w);
	for (size_t i = 0; i < s->n_image_allowlist; i++)
		jw_str(w, s->image_allowlist[i]);
	jw_arr_end(w);
	jw_obj_end(w);
}

/* The catalogs each layer lists: loaded when trusted; *cats[l] receives layer l's. */
static void write_listed(struct jw *w, struct catalog_store *st, const struct ktree *t,
                         const struct catalog ***cats, size_t *n_cats, const struct view_trust *vt)
{
	jw_key(w, "catalogs");
	jw_arr_begin(w);
	for (size_t l = 0; l < t->n_layers; l++) {
		const struct klayer *layer = &t->layers[l];
		cats[l] = xcalloc(layer->n_catalogs + 1, sizeof(**cats));
		for (size_t i = 0; i < layer->n_catalogs; i++) {
			const struct catalog *c = NULL;
			const struct catalog_ref *by = NULL;
			cleanup_err struct err *e = NULL;
			jw_obj_begin(w);
			jw_kv_str(w, "listedIn", layer->where);
			jw_kv_str(w, "reference", layer->catalogs[i]);
			bool ok = catalog_store_listed(st, layer->catalogs[i], layer->dir,
			                               layer->where, &c, &by, &e) == 0;
			jw_kv_bool(w, "trusted", ok);
			if (ok) {
				jw_kv_str(w, "trustedBy", by->text);
				write_catalog(w, c, vt);
				cats[l][n_cats[l]++] = c;
			} else {
				jw_kv_str(w, "error", e->msg);
			}
			jw_obj_end(w);
		}
	}
	jw_arr_end(w);
}

static void write_defaults(struct jw *w, struct catalog_store *st, const struct settings *s,
                           const struct catalog *const **defaults, size_t *n,
                           const struct view_trust *vt)
{
	jw_key(w, "defaults");
	jw_arr_begin(w);
	*n = 0;
	cleanup_err struct err *e = NULL;
	if (catalog_store_defaults(st, defaults, n, &e) < 0) {
		for (size_t i = 0; i < s->n_default_catalogs; i++) {
			jw_obj_begin(w);
			jw_kv_str(w, "reference", s->default_catalogs[i].text);
			jw_kv_str(w, "error", e->msg);
			jw_obj_end(w);
		}
	}
	for (size_t i = 0; i < *n; i++) {
		jw_obj_begin(w);
		jw_kv_str(w, "reference", s->default_catalogs[i].text);
		write_catalog(w, (*defaults)[i], vt);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

/* The function configs of the tree that name no runtime, and what catalogs make of them. */
static void write_resolved(struct jw *w, const struct ktree *t, const struct catalog ***cats,
                           const size_t *n_cats, const struct catalog *const *defaults,
                           size_t n_defaults)
{
	jw_key(w, "resolved");
	jw_arr_begin(w);
	for (size_t i = 0; i < t->n_docs; i++) {
		const struct kdoc *d = &t->docs[i];
		if (d->has_runtime || d->kind == NULL || d->api_version == NULL ||
		    strncmp(d->api_version, "builtin", 7) == 0)
			continue;
		cleanup_free const struct catalog **list =
		        xcalloc(n_cats[d->layer] + n_defaults + 1, sizeof(*list));
		size_t n = 0;
		for (size_t c = 0; c < n_cats[d->layer]; c++)
			list[n++] = cats[d->layer][c];
		for (size_t c = 0; c < n_defaults; c++)
			list[n++] = defaults[c];
		const char *version;
		cleanup_free char *group = catalog_api_group(d->api_version, &version);
		const struct catalog *from = NULL;
		const struct catalog_version *v =
		        catalog_resolve(list, n, group, version, d->kind, &from, NULL);
		jw_obj_begin(w);
		jw_kv_str(w, "where", d->where);
		jw_kv_str(w, "apiVersion", d->api_version);
		jw_kv_str(w, "kind", d->kind);
		if (v) {
			cleanup_free char *image = catalog_version_image(v);
			jw_kv_str(w, "image", image);
			jw_kv_str(w, "catalog", from->name);
		} else {
			jw_kv_str(w, "error", "no catalog has it");
		}
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

/* --- printing ------------------------------------------------------------------------------- */

static const char *str(const struct json *o, const char *key)
{
	const char *v = json_str(json_get(o, key));
	return v ? v : "";
}

static bool flag(const struct json *o, const char *key)
{
	bool b = false;
	json_bool(json_get(o, key), &b);
	return b;
}

static void print_catalog(FILE *out, const struct json *c, const char *indent)
{
	fprintf(out, "%scatalog %s (%s), %s\n", indent, str(c, "name"), str(c, "kind"),
	        str(c, "digest"));
	const struct json *fns = json_get(c, "functions");
	for (size_t i = 0; i < json_len(fns); i++) {
		const struct json *f = json_at(fns, i);
		const char *g = str(f, "group");
		fprintf(out, "%s  %s%s%s %s -> %s%s%s%s%s%s\n", indent, g, *g ? "/" : "",
		        str(f, "version"), str(f, "kind"), str(f, "image"),
		        *str(f, "digest") ? "" : " (no digest)",
		        flag(f, "requireNetwork") ? ", requires network" : "",
		        flag(f, "requireStorageMount") ? ", requires storage mounts" : "",
		        *str(f, "publisher") ? ", publisher " : "", str(f, "publisher"));
		const struct json *sig = json_get(f, "signature");
		if (flag(sig, "required"))
			fprintf(out, "%s    signature by %s required: %s%s\n", indent,
			        str(sig, "keys"),
			        flag(sig, "valid") ? "valid, " : "NOT VALID: ", str(sig, "detail"));
	}
}

static void print_text(FILE *out, const struct json *m)
{
	const struct json *p = json_get(m, "policy");
	fprintf(out, "kustomization %s\nimage policy: %s%s\n", str(m, "kustomization"),
	        str(p, "mode"), flag(p, "requireDigest") ? ", by digest only" : "");
	const struct json *sp = json_get(m, "signaturePolicy");
	const struct json *reqs = json_get(sp, "requirements");
	if (*str(sp, "file"))
		fprintf(out, "signature policy: %s%s%s\n", str(sp, "file"),
		        *str(sp, "error") ? ": CANNOT BE READ: " : "", str(sp, "error"));
	for (size_t i = 0; i < json_len(reqs); i++)
		fprintf(out, "  %s\n", json_str(json_at(reqs, i)));
	const struct json *cats = json_get(m, "catalogs");
	fprintf(out, "catalogs the kustomization lists: %s\n", json_len(cats) ? "" : "none");
	for (size_t i = 0; i < json_len(cats); i++) {
		const struct json *c = json_at(cats, i);
		if (flag(c, "trusted")) {
			fprintf(out, "  %s, in %s: trusted (%s)\n", str(c, "reference"),
			        str(c, "listedIn"), str(c, "trustedBy"));
			print_catalog(out, c, "    ");
		} else {
			fprintf(out, "  %s, in %s: NOT USABLE: %s\n", str(c, "reference"),
			        str(c, "listedIn"), str(c, "error"));
		}
	}
	const struct json *defs = json_get(m, "defaults");
	fprintf(out, "the admin's default catalogs: %s\n", json_len(defs) ? "" : "none");
	for (size_t i = 0; i < json_len(defs); i++) {
		const struct json *c = json_at(defs, i);
		fprintf(out, "  %s%s%s\n", str(c, "reference"), *str(c, "error") ? ": " : "",
		        str(c, "error"));
		if (!*str(c, "error"))
			print_catalog(out, c, "    ");
	}
	const struct json *res = json_get(m, "resolved");
	fprintf(out, "function configs named by kind: %s\n", json_len(res) ? "" : "none");
	for (size_t i = 0; i < json_len(res); i++) {
		const struct json *r = json_at(res, i);
		fprintf(out, "  %s: %s %s -> %s%s%s\n", str(r, "where"), str(r, "apiVersion"),
		        str(r, "kind"), *str(r, "error") ? str(r, "error") : str(r, "image"),
		        *str(r, "error") ? "" : ", from catalog ", str(r, "catalog"));
	}
}

/* Prints the model m (JSON text in b) in format f. */
static int print_model(const struct buf *b, enum catalog_view_format f, bool validate, FILE *out,
                       struct err **err)
{
	if (f == CATALOG_VIEW_JSON) {
		fprintf(out, "%s\n", b->data);
		return 0;
	}
	if (f == CATALOG_VIEW_YAML) {
		struct yaml_edit e = {.block = true};
		cleanup_buf struct buf y;
		buf_init(&y, 0);
		if (yaml_edit(b->data, b->len, "the view", &e, &y, err) < 0)
			return -1;
		fputs(y.data, out);
		return 0;
	}
	cleanup_json struct json *m = NULL;
	if (json_parse(b->data, b->len, "the view", &m, err) < 0)
		return -1;
	if (validate)
		print_catalog(out, m, "");
	else
		print_text(out, m);
	return 0;
}

int catalog_view(const struct settings *s, const char *dir, enum catalog_view_format f, FILE *out,
                 struct err **err)
{
	struct ktree t;
	if (kustomization_tree(dir, &t, err) < 0)
		return err_wrap(err, "catalog view");
	struct catalog_store *st = NULL;
	catalog_store_open(s, NULL, 0, &st);
	cleanup_free const struct catalog ***cats = xcalloc(t.n_layers + 1, sizeof(*cats));
	cleanup_free size_t *n_cats = xcalloc(t.n_layers + 1, sizeof(*n_cats));
	const struct catalog *const *defaults = NULL;
	size_t n_defaults = 0;
	cleanup_buf struct buf b;
	buf_init(&b, 0);
	struct jw w;
	jw_init(&w, &b);
	jw_obj_begin(&w);
	jw_kv_str(&w, "kustomization", dir);
	write_policy(&w, s);
	struct sig_policy sp = {0};
	struct view_trust vt;
	cleanup_err struct err *load_err = NULL;
	load_trust(s, st, &sp, &vt, &load_err);
	write_trust(&w, s, &vt, load_err);
	write_listed(&w, st, &t, cats, n_cats, &vt);
	write_defaults(&w, st, s, &defaults, &n_defaults, &vt);
	write_resolved(&w, &t, cats, n_cats, defaults, n_defaults);
	jw_obj_end(&w);
	int rc = print_model(&b, f, false, out, err);
	clear_trust(&vt);
	sig_policy_clear(&sp);
	for (size_t l = 0; l < t.n_layers; l++)
		free(cats[l]);
	catalog_store_free(st);
	kustomization_tree_free(&t);
	return rc;
}

int catalog_validate(const struct settings *s, const char *text, enum catalog_view_format f,
                     FILE *out, struct err **err)
{
	struct catalog_ref ref;
	if (catalog_ref_parse(text, "krmpod catalog validate", false, &ref, err) < 0)
		return -1;
	if (ref.type == CATALOG_REF_FILE && ref.location[0] != '/') {
		char abs[PATH_MAX];
		if (realpath(ref.location, abs)) {
			free(ref.location);
			ref.location = xstrdup(abs);
		}
	}
	struct catalog_store *st = NULL;
	catalog_store_open(s, NULL, 0, &st);
	const struct catalog *c = NULL;
	int rc = catalog_store_load(st, &ref, &c, err);
	if (rc == 0) {
		cleanup_buf struct buf b;
		buf_init(&b, 0);
		struct jw w;
		jw_init(&w, &b);
		struct sig_policy sp = {0};
		struct view_trust vt;
		cleanup_err struct err *load_err = NULL;
		load_trust(s, st, &sp, &vt, &load_err);
		jw_obj_begin(&w);
		write_catalog(&w, c, &vt);
		jw_obj_end(&w);
		rc = print_model(&b, f, true, out, err);
		clear_trust(&vt);
		sig_policy_clear(&sp);
	}
	catalog_store_free(st);
	catalog_ref_clear(&ref);
	return rc;
}

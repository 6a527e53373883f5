/* cosign.c — see cosign.h. */
#include "sign/cosign.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "base/json.h"
#include "base/log.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "registry/oci_manifest.h"

void cosign_sigs_clear(struct cosign_sigs *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].where);
		buf_free(&s->v[i].signed_bytes);
		free(s->v[i].sig);
		free(s->v[i].problem);
	}
	free(s->v);
	free(s->searched);
	memset(s, 0, sizeof(*s));
}

/* A new entry of s (zeroed), or NULL when s holds LIMIT_COSIGN_SIGNATURES already. */
static struct cosign_sig *add(struct cosign_sigs *s, enum cosign_format format, char *where)
{
	if (s->n >= LIMIT_COSIGN_SIGNATURES) {
		log_warn("%s: more than %d signatures found; the rest is not read", where,
		         LIMIT_COSIGN_SIGNATURES);
		free(where);
		return NULL;
	}
	s->v = xrealloc(s->v, (s->n + 1) * sizeof(*s->v));
	struct cosign_sig *g = &s->v[s->n++];
	memset(g, 0, sizeof(*g));
	g->format = format;
	g->where = where;
	buf_init(&g->signed_bytes, 0);
	return g;
}

static void set_problem(struct cosign_sig *g, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static void set_problem(struct cosign_sig *g, const char *fmt, ...)
{
	va_list ap, again;
	va_start(ap, fmt);
	va_copy(again, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	char *p = xmalloc(n > 0 ? (size_t)n + 1 : 1);
	vsnprintf(p, n > 0 ? (size_t)n + 1 : 1, fmt, again);
	va_end(again);
	va_end(ap);
	free(g->problem);
	g->problem = p;
}

/* Decodes the base64 DER signature text into g, or sets its problem. */
static void take_signature(struct cosign_sig *g, const char *text)
{
	cleanup_err struct err *e = NULL;
	char *raw = NULL;
	size_t n = 0;
	if (text == NULL || *text == '\0')
		return set_problem(g, "it holds no signature");
	if (base64_decode(text, strlen(text), "the signature", &raw, &n, &e) < 0)
		return set_problem(g, "%s", e->msg);
	if (n == 0) {
		free(raw);
		return set_problem(g, "it holds no signature");
	}
	g->sig = (unsigned char *)raw;
	g->sig_len = n;
}

/* Whether e ended the search as a whole rather than one signature's read. */
static bool fatal(const struct err *e)
{
	return e->code == ERR_SIGNAL || e->code == ERR_TIMEOUT;
}

/* --- the legacy format ------------------------------------------------------------------- */

char *cosign_payload_problem(const char *payload, size_t len, const char *digest)
{
	cleanup_json struct json *j = NULL;
	cleanup_err struct err *e = NULL;
	if (json_parse(payload, len, "the simple-signing payload", &j, &e) < 0)
		return xasprintf("%s", e->msg);
	const char *type = json_str(json_path(j, "critical.type"));
	const char *named =
	        json_str(json_get(json_path(j, "critical.image"), "docker-manifest-digest"));
	if (type == NULL || strcmp(type, COSIGN_SIMPLESIGNING_TYPE) != 0)
		return xasprintf("its payload's critical.type is %s%s%s, not \"%s\"",
		                 type ? "\"" : "", type ? type : "missing", type ? "\"" : "",
		                 COSIGN_SIMPLESIGNING_TYPE);
	if (named == NULL)
		return xasprintf("its payload names no critical.image.docker-manifest-digest");
	if (strcmp(named, digest) != 0)
		return xasprintf("its payload signs %s, another digest", named);
	return NULL;
}

static int legacy(struct registry_repo *repo, const char *digest, struct cosign_sigs *out,
                  struct err **err)
{
	cleanup_free char *tag = xasprintf("sha256-%s.sig", digest + 7);
	cleanup_registry_manifest struct registry_manifest m = {0};
	cleanup_err struct err *e = NULL;
	if (registry_repo_manifest(repo, tag, NULL, &m, &e) < 0) {
		if (e->http_status == 404)
			return 0;
		*err = e;
		e = NULL;
		return err_wrap(err, "the signature tag %s", tag);
	}
	const struct json *layers = json_get(m.json, "layers");
	for (size_t i = 0; i < json_len(layers); i++) {
		const struct json *l = json_at(layers, i);
		const char *type = json_str(json_get(l, "mediaType"));
		if (type == NULL || strcmp(type, COSIGN_SIMPLESIGNING) != 0)
			continue;
		struct cosign_sig *g =
		        add(out, COSIGN_LEGACY, xasprintf("tag %s, layer %zu", tag, i));
		if (g == NULL)
			break;
		struct oci_descriptor d;
		cleanup_err struct err *le = NULL;
		if (oci_descriptor_read(l, "layer", &d, &le) < 0) {
			set_problem(g, "%s", le->msg);
			continue;
		}
		take_signature(g, json_str(json_get(json_get(l, "annotations"),
		                                    COSIGN_SIGNATURE_ANNOTATION)));
		if (g->problem)
			continue;
		buf_init(&g->signed_bytes, LIMIT_COSIGN_PAYLOAD);
		if (registry_repo_blob(repo, &d, LIMIT_COSIGN_PAYLOAD, "payload", &g->signed_bytes,
		                       &le) < 0) {
			if (fatal(le)) {
				*err = le;
				le = NULL;
				return -1;
			}
			set_problem(g, "%s", le->msg);
			continue;
		}
		g->problem =
		        cosign_payload_problem(g->signed_bytes.data ? g->signed_bytes.data : "",
		                               g->signed_bytes.len, digest);
	}
	return 0;
}

/* --- the bundle format ------------------------------------------------------------------- */

void cosign_dsse_pae(const char *type, const char *body, size_t body_len, struct buf *out)
{
	buf_printf(out, "DSSEv1 %zu %s %zu ", strlen(type), type, body_len);
	struct err *e = NULL;
	size_t limit = out->limit;
	out->limit = 0;
	buf_append(out, body, body_len, "PAE", &e);
	out->limit = limit;
	err_free(e);
}

/* Whether the in-toto statement st names digest among its subjects. */
static bool names_digest(const struct json *st, const char *digest)
{
	const struct json *subjects = json_get(st, "subject");
	for (size_t i = 0; i < json_len(subjects); i++) {
		const char *hex = json_str(json_path(json_at(subjects, i), "digest.sha256"));
		if (hex && strcmp(hex, digest + 7) == 0)
			return true;
	}
	return false;
}

void cosign_bundle_read(const char *text, size_t len, const char *digest, struct cosign_sig *out)
{
	out->format = COSIGN_FORMAT_BUNDLE;
	cleanup_json struct json *b = NULL;
	cleanup_err struct err *e = NULL;
	if (json_parse(text, len, "the bundle", &b, &e) < 0)
		return set_problem(out, "%s", e->msg);
	const char *mt = json_str(json_get(b, "mediaType"));
	if (mt == NULL || strncmp(mt, "application/vnd.dev.sigstore.bundle", 35) != 0)
		return set_problem(out, "it is not a sigstore bundle (mediaType %s)",
		                   mt ? mt : "missing");
	const struct json *env = json_get(b, "dsseEnvelope");
	if (env == NULL)
		return set_problem(out, json_get(b, "messageSignature")
		                                ? "it signs a blob (messageSignature), not an image"
		                                : "it has no dsseEnvelope");
	const char *ptype = json_str(json_get(env, "payloadType"));
	const char *payload = json_str(json_get(env, "payload"));
	if (ptype == NULL || strcmp(ptype, DSSE_INTOTO) != 0)
		return set_problem(out, "its envelope's payloadType is %s, not %s",
		                   ptype ? ptype : "missing", DSSE_INTOTO);
	cleanup_free char *body = NULL;
	size_t body_len = 0;
	if (payload == NULL || base64_decode(payload, strlen(payload), "the envelope's payload",
	                                     &body, &body_len, &e) < 0)
		return set_problem(out, "%s", e ? e->msg : "its envelope has no payload");
	cleanup_json struct json *st = NULL;
	if (json_parse(body, body_len, "the in-toto statement", &st, &e) < 0)
		return set_problem(out, "%s", e->msg);
	const char *pred = json_str(json_get(st, "predicateType"));
	if (pred == NULL || strcmp(pred, COSIGN_SIGN_PREDICATE) != 0)
		return set_problem(out,
		                   "it is an attestation (predicate type %s), not a signature "
		                   "(%s)",
		                   pred ? pred : "missing", COSIGN_SIGN_PREDICATE);
	if (!names_digest(st, digest))
		return set_problem(out, "its statement's subjects do not name %s", digest);
	take_signature(out, json_str(json_get(json_at(json_get(env, "signatures"), 0), "sig")));
	if (out->problem)
		return;
	buf_reset(&out->signed_bytes);
	cosign_dsse_pae(ptype, body, body_len, &out->signed_bytes);
}

static bool is_bundle_type(const char *t)
{
	return t && (strcmp(t, COSIGN_BUNDLE) == 0 || strcmp(t, COSIGN_BUNDLE_ALT) == 0);
}

/* Reads the referrer d into g: its manifest, its subject, its layer. Returns 1 when the
 * manifest is no bundle after all (its index entry did not say: check_type), 0 when g is
 * read, -1 when a read fails (g's problem is then the caller's to set). */
static int bundle_read(struct registry_repo *repo, const struct oci_descriptor *d,
                       const char *digest, bool check_type, struct cosign_sig *g, struct err **err)
{
	cleanup_registry_manifest struct registry_manifest m = {0};
	struct oci_descriptor layer;
	if (registry_repo_manifest(repo, d->digest, d->digest, &m, err) < 0)
		return -1;
	if (check_type && !is_bundle_type(json_str(json_get(m.json, "artifactType"))))
		return 1;
	const char *subject = json_str(json_path(m.json, "subject.digest"));
	if (subject == NULL || strcmp(subject, digest) != 0) {
		set_problem(g, "its manifest's subject is %s, not %s",
		            subject ? subject : "missing", digest);
		return 0;
	}
	if (oci_manifest_layer(m.json, COSIGN_BUNDLE, &layer, NULL) < 0 &&
	    oci_manifest_layer(m.json, COSIGN_BUNDLE_ALT, &layer, err) < 0)
		return -1;
	cleanup_buf struct buf text;
	buf_init(&text, LIMIT_COSIGN_BUNDLE);
	if (registry_repo_blob(repo, &layer, LIMIT_COSIGN_BUNDLE, "bundle layer", &text, err) < 0)
		return -1;
	cosign_bundle_read(text.data ? text.data : "", text.len, digest, g);
	return 0;
}

/* Forgets the last entry of s. */
static void drop_last(struct cosign_sigs *s)
{
	struct cosign_sig *g = &s->v[--s->n];
	free(g->where);
	buf_free(&g->signed_bytes);
	free(g->sig);
	free(g->problem);
}

/* One referrer that is, or may be (check_type), a bundle. */
static int bundle(struct registry_repo *repo, const struct oci_descriptor *d, const char *digest,
                  const char *via, bool check_type, struct cosign_sigs *out, struct err **err)
{
	struct cosign_sig *g =
	        add(out, COSIGN_FORMAT_BUNDLE, xasprintf("bundle %s (%s)", d->digest, via));
	cleanup_err struct err *e = NULL;
	int rc = g ? bundle_read(repo, d, digest, check_type, g, &e) : 0;
	if (rc == 1)
		drop_last(out);
	if (rc >= 0)
		return 0;
	if (fatal(e)) {
		*err = e;
		e = NULL;
		return -1;
	}
	set_problem(g, "%s", e->msg);
	return 0;
}

/* The referrers index of digest: through the API, or the fallback tag; *via says which.
 * Returns 1 with *idx filled, 0 when there is none. */
static int referrers(struct registry_repo *repo, const char *digest, struct json **idx, char **via,
                     struct err **err)
{
	cleanup_free char *path = xasprintf("referrers/%s", digest);
	cleanup_buf struct buf body;
	buf_init(&body, LIMIT_REGISTRY_MANIFEST);
	cleanup_err struct err *e = NULL;
	if (registry_repo_get(repo, path, OCI_INDEX, LIMIT_REGISTRY_MANIFEST, ERR_CONFIG, &body,
	                      &e) == 0) {
		*via = xstrdup("the referrers API");
		if (json_parse(body.data ? body.data : "", body.len, "the referrers index", idx,
		               err) < 0)
			return err_wrap(err, "GET referrers/%s", digest);
		return 1;
	}
	if (e->http_status != 404) {
		*err = e;
		e = NULL;
		return -1;
	}
	/* No referrers API: the fallback tag (OCI distribution spec 1.1). */
	err_free(e);
	e = NULL;
	cleanup_free char *tag = xasprintf("sha256-%s", digest + 7);
	*via = xasprintf("the fallback tag %s (the registry has no referrers API)", tag);
	cleanup_registry_manifest struct registry_manifest m = {0};
	if (registry_repo_manifest(repo, tag, NULL, &m, &e) < 0) {
		if (e->http_status == 404)
			return 0;
		*err = e;
		e = NULL;
		return err_wrap(err, "the referrers tag %s", tag);
	}
	*idx = m.json;
	m.json = NULL;
	return 1;
}

static int bundles(struct registry_repo *repo, const char *digest, struct cosign_sigs *out,
                   struct err **err)
{
	cleanup_json struct json *idx = NULL;
	char *via = NULL;
	int rc = referrers(repo, digest, &idx, &via, err);
	free(out->searched);
	out->searched = via;
	if (rc <= 0)
		return rc;
	const struct json *ms = json_get(idx, "manifests");
	for (size_t i = 0; i < json_len(ms); i++) {
		const struct json *d = json_at(ms, i);
		const char *type = json_str(json_get(d, "artifactType"));
		/* Some registries give the config's media type as the artifactType (the empty
		 * config of a bundle's manifest), or none: such a referrer is read to know. */
		bool unsure = type == NULL || strcmp(type, OCI_EMPTY_CONFIG) == 0;
		if (!unsure && !is_bundle_type(type))
			continue;
		struct oci_descriptor desc;
		cleanup_err struct err *e = NULL;
		if (oci_descriptor_read(d, "referrer", &desc, &e) < 0) {
			struct cosign_sig *g = add(out, COSIGN_FORMAT_BUNDLE,
			                           xasprintf("referrer %zu (%s)", i, via));
			if (g)
				set_problem(g, "%s", e->msg);
			continue;
		}
		if (bundle(repo, &desc, digest, via, unsure, out, err) < 0)
			return -1;
	}
	return 0;
}

int cosign_find(struct registry_repo *repo, const char *digest, struct cosign_sigs *out,
                struct err **err)
{
	if (legacy(repo, digest, out, err) < 0 || bundles(repo, digest, out, err) < 0)
		return err_wrap(err, "find the signatures of %s", digest);
	return 0;
}

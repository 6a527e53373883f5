/* sig_policy.c — see sig_policy.h. */
#include "sign/sig_policy.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/glob.h"
#include "base/json.h"
#include "base/size_limits.h"
#include "base/xalloc.h"

#define API_VERSION "krmpod.dev/v1alpha1"
#define KIND        "SignaturePolicy"

/* Fields of cosign's and other verifiers' policies that ask for what krmpod does not do. */
static const char *const ONLINE_FIELDS[] = {
        "transparencyLog",
        "tlog",
        "rekor",
        "rekorURL",
        "rekorUrl",
        "ctlog",
        "keyless",
        "fulcio",
        "issuer",
        "subject",
        "identities",
        "identity",
        "certificateIdentity",
        "certificateOidcIssuer",
        "attestations",
};

static int refuse_online(const char *what, const char *where, const char *field, struct err **err)
{
	return err_set(err, ERR_CONFIG,
	               "%s: %s: the field %s asks for a transparency log, keyless signing or "
	               "attestations, which krmpod does not verify: it checks signatures offline, "
	               "against the public keys the policy lists (docs/signatures.md); remove %s",
	               what, where, field, field);
}

/* Checks that obj (at `where`) has only the fields in known. */
static int only_fields(const struct json *obj, const char *what, const char *where,
                       const char *const *known, size_t n_known, struct err **err)
{
	if (json_type(obj) != JSON_OBJECT)
		return err_set(err, ERR_CONFIG, "%s: %s is not a mapping", what, where);
	for (size_t i = 0; i < json_len(obj); i++) {
		const char *k = json_key_at(obj, i);
		bool ok = false;
		for (size_t j = 0; j < n_known && !ok; j++)
			ok = strcmp(k, known[j]) == 0;
		for (size_t j = 0; j < sizeof(ONLINE_FIELDS) / sizeof(*ONLINE_FIELDS) && !ok; j++)
			if (strcmp(k, ONLINE_FIELDS[j]) == 0)
				return refuse_online(what, where, k, err);
		if (!ok) {
			cleanup_buf struct buf b;
			buf_init(&b, 0);
			for (size_t j = 0; j < n_known; j++)
				buf_printf(&b, "%s%s", j ? ", " : "", known[j]);
			return err_set(err, ERR_CONFIG, "%s: %s: unknown field %s (known: %s)",
			               what, where, k, b.data);
		}
	}
	return 0;
}

/* A list of non-empty strings at field of obj (absent: none). */
static int strings(const struct json *obj, const char *field, const char *what, const char *where,
                   char ***out, size_t *n, struct err **err)
{
	const struct json *a = json_get(obj, field);
	*out = NULL;
	*n = 0;
	if (a == NULL)
		return 0;
	if (json_type(a) != JSON_ARRAY)
		return err_set(err, ERR_CONFIG, "%s: %s.%s is not a list", what, where, field);
	*out = xcalloc(json_len(a) + 1, sizeof(char *));
	for (size_t i = 0; i < json_len(a); i++) {
		const char *v = json_str(json_at(a, i));
		if (v == NULL || *v == '\0')
			return err_set(err, ERR_CONFIG, "%s: %s.%s[%zu] is not a non-empty string",
			               what, where, field, i);
		(*out)[(*n)++] = xstrdup(v);
	}
	return 0;
}

static void free_strings(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int read_key(const struct json *k, size_t i, const char *what, struct sig_policy *p,
                    struct err **err)
{
	static const char *const known[] = {"name", "publicKey", "publicKeyFile"};
	cleanup_free char *where = xasprintf("keys[%zu]", i);
	if (only_fields(k, what, where, known, 3, err) < 0)
		return -1;
	const char *name = json_str(json_get(k, "name"));
	const char *pem = json_str(json_get(k, "publicKey"));
	const char *file = json_str(json_get(k, "publicKeyFile"));
	if (name == NULL || *name == '\0')
		return err_set(err, ERR_CONFIG, "%s: %s has no name", what, where);
	for (size_t j = 0; j < p->n_keys; j++)
		if (strcmp(p->keys[j].name, name) == 0)
			return err_set(err, ERR_CONFIG, "%s: %s: a second key named %s", what,
			               where, name);
	if ((pem == NULL) == (file == NULL))
		return err_set(err, ERR_CONFIG,
		               "%s: key %s needs exactly one of publicKey (PEM text) and "
		               "publicKeyFile (a path)",
		               what, name);
	cleanup_free char *text = NULL;
	size_t len = pem ? strlen(pem) : 0;
	cleanup_free char *src = xasprintf("%s", what);
	if (file) {
		free(src);
		src = xasprintf("%s (publicKeyFile %s)", what, file);
		if (buf_read_file(file, LIMIT_PEM_FILE, "public key file", ERR_CONFIG, &text, &len,
		                  err) < 0)
			return err_wrap(err, "%s: key %s", what, name);
	}
	struct sig_key key;
	if (sig_key_parse(name, src, file ? text : pem, len, &key, err) < 0)
		return -1;
	p->keys = xrealloc(p->keys, (p->n_keys + 1) * sizeof(*p->keys));
	p->keys[p->n_keys++] = key;
	return 0;
}

static int read_rule(const struct json *r, size_t i, const char *what, struct sig_policy *p,
                     struct err **err)
{
	static const char *const known[] = {"images", "catalogs", "keys"};
	cleanup_free char *where = xasprintf("requirements[%zu]", i);
	if (only_fields(r, what, where, known, 3, err) < 0)
		return -1;
	p->rules = xrealloc(p->rules, (p->n_rules + 1) * sizeof(*p->rules));
	struct sig_rule *rule = &p->rules[p->n_rules++];
	memset(rule, 0, sizeof(*rule));
	char **names = NULL;
	size_t n_names = 0;
	int rc = strings(r, "images", what, where, &rule->images, &rule->n_images, err);
	if (rc == 0)
		rc = strings(r, "catalogs", what, where, &rule->catalogs, &rule->n_catalogs, err);
	if (rc == 0)
		rc = strings(r, "keys", what, where, &names, &n_names, err);
	if (rc == 0 && rule->n_images + rule->n_catalogs == 0)
		rc = err_set(err, ERR_CONFIG,
		             "%s: %s covers nothing: give it images (patterns) or catalogs "
		             "(names)",
		             what, where);
	if (rc == 0 && n_names == 0)
		rc = err_set(err, ERR_CONFIG, "%s: %s names no keys", what, where);
	rule->keys = xcalloc(n_names + 1, sizeof(size_t));
	for (size_t k = 0; rc == 0 && k < n_names; k++) {
		size_t j = 0;
		while (j < p->n_keys && strcmp(p->keys[j].name, names[k]) != 0)
			j++;
		if (j == p->n_keys)
			rc = err_set(err, ERR_CONFIG,
			             "%s: %s names the key %s, which keys: does not list", what,
			             where, names[k]);
		else
			rule->keys[rule->n_keys++] = j;
	}
	free_strings(names, n_names);
	if (rc == 0) {
		cleanup_buf struct buf b;
		buf_init(&b, 0);
		buf_printf(&b, "%s (", where);
		for (size_t k = 0; k < rule->n_images; k++)
			buf_printf(&b, "%s%s", k ? ", " : "images ", rule->images[k]);
		for (size_t k = 0; k < rule->n_catalogs; k++)
			buf_printf(&b, "%s%s",
			           k ? ", " : (rule->n_images ? "; catalogs " : "catalogs "),
			           rule->catalogs[k]);
		buf_puts(&b, ")");
		rule->name = buf_steal(&b, NULL);
	}
	return rc;
}

static int parse(const struct json *doc, const char *what, struct sig_policy *p, struct err **err)
{
	static const char *const known[] = {"apiVersion", "kind", "metadata", "keys",
	                                    "requirements"};
	if (only_fields(doc, what, "the document", known, 5, err) < 0)
		return -1;
	const char *api = json_str(json_get(doc, "apiVersion"));
	const char *kind = json_str(json_get(doc, "kind"));
	if (api == NULL || strcmp(api, API_VERSION) != 0 || kind == NULL || strcmp(kind, KIND) != 0)
		return err_set(err, ERR_CONFIG,
		               "%s: not a signature policy: apiVersion must be %s and kind %s (it "
		               "has %s %s)",
		               what, API_VERSION, KIND, api ? api : "no apiVersion",
		               kind ? kind : "no kind");
	const struct json *keys = json_get(doc, "keys");
	const struct json *rules = json_get(doc, "requirements");
	/* Both lists are required, and both may be empty: the manifests ship a policy that
	 * requires nothing, so that the admin's edit is the only step to requiring signatures. */
	if (json_type(keys) != JSON_ARRAY)
		return err_set(err, ERR_CONFIG,
		               "%s: keys: must be a list of public keys ([] for none)", what);
	if (json_type(rules) != JSON_ARRAY)
		return err_set(
		        err, ERR_CONFIG,
		        "%s: requirements: must be a list (of images or catalogs, and the keys "
		        "that must have signed them; [] for none)",
		        what);
	for (size_t i = 0; i < json_len(keys); i++)
		if (read_key(json_at(keys, i), i, what, p, err) < 0)
			return -1;
	for (size_t i = 0; i < json_len(rules); i++)
		if (read_rule(json_at(rules, i), i, what, p, err) < 0)
			return -1;
	return 0;
}

int sig_policy_parse(const char *text, size_t len, const char *what, struct sig_policy *out,
                     struct err **err)
{
	memset(out, 0, sizeof(*out));
	cleanup_json struct json *doc = NULL;
	if (json_parse(text, len, what, &doc, err) < 0) {
		if (err && *err)
			(*err)->code = ERR_CONFIG; /* the admin's file, not our I/O */
		return -1;
	}
	out->what = xstrdup(what);
	if (parse(doc, what, out, err) < 0) {
		sig_policy_clear(out);
		return -1;
	}
	return 0;
}

int sig_policy_load(const char *path, const char *setting, struct sig_policy *out, struct err **err)
{
	cleanup_free char *text = NULL;
	size_t len = 0;
	cleanup_free char *what = xasprintf("the signature policy %s (%s)", path, setting);
	memset(out, 0, sizeof(*out));
	if (buf_read_file(path, LIMIT_SIGNATURE_POLICY, "signature policy", ERR_CONFIG, &text, &len,
	                  err) < 0)
		return err_wrap(err, "%s", setting);
	return sig_policy_parse(text, len, what, out, err);
}

void sig_policy_clear(struct sig_policy *p)
{
	for (size_t i = 0; i < p->n_keys; i++)
		sig_key_clear(&p->keys[i]);
	free(p->keys);
	for (size_t i = 0; i < p->n_rules; i++) {
		struct sig_rule *r = &p->rules[i];
		free(r->name);
		free_strings(r->images, r->n_images);
		free_strings(r->catalogs, r->n_catalogs);
		free(r->keys);
	}
	free(p->rules);
	free(p->what);
	memset(p, 0, sizeof(*p));
}

bool sig_policy_has_catalogs(const struct sig_policy *p)
{
	for (size_t i = 0; i < p->n_rules; i++)
		if (p->rules[i].n_catalogs)
			return true;
	return false;
}

void sig_rule_key_names(const struct sig_policy *p, const struct sig_rule *r, const char *sep,
                        struct buf *out)
{
	for (size_t k = 0; k < r->n_keys; k++)
		buf_printf(out, "%s%s", k ? sep : "", p->keys[r->keys[k]].name);
}

static bool covers(const struct sig_rule *r, const char *image, const char *const *catalogs,
                   size_t n_catalogs)
{
	for (size_t i = 0; i < r->n_images; i++)
		if (glob_match(r->images[i], image))
			return true;
	for (size_t i = 0; i < r->n_catalogs; i++)
		for (size_t k = 0; k < n_catalogs; k++)
			if (strcmp(r->catalogs[i], catalogs[k]) == 0)
				return true;
	return false;
}

size_t sig_policy_rules_for(const struct sig_policy *p, const char *image,
                            const char *const *catalogs, size_t n_catalogs,
                            const struct sig_rule **out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < p->n_rules; i++)
		if (covers(&p->rules[i], image, catalogs, n_catalogs)) {
			if (n < max)
				out[n] = &p->rules[i];
			n++;
		}
	return n;
}

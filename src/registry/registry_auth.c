/* registry_auth.c — see registry_auth.h. */
#include "registry/registry_auth.h"

#include <ctype.h>
#include <fnmatch.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <mbedtls/base64.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/json.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "http/http_util.h"

#define DOCKER_HUB      "docker.io"
#define DOCKER_HUB_HOST "registry-1.docker.io"

void registry_creds_clear(struct registry_creds *c)
{
	if (c->password) {
		explicit_bzero(c->password, strlen(c->password));
		free(c->password);
	}
	free(c->user);
	free(c->key);
	c->user = c->password = c->key = NULL;
}

const char *registry_host(const char *registry)
{
	return strcmp(registry, DOCKER_HUB) == 0 ? DOCKER_HUB_HOST : registry;
}

/* --- dockerconfigjson ------------------------------------------------------------------- */

/* A registry name or an `auths` key, read the way the kubelet's credential keyring reads it
 * (docs/internals/registry.md, "Credentials"). */
struct auth_key {
	char *host;  /* lowercase, without brackets; Docker Hub's names as "docker.io" */
	char *port;  /* "" for none */
	char *path;  /* "" for none, else "/..." (a leading /v1/ or /v2/ counts as none) */
	char *order; /* host[:port]path: of several matching keys the greatest wins */
};

static void auth_key_clear(struct auth_key *k)
{
	free(k->host);
	free(k->port);
	free(k->path);
	free(k->order);
	memset(k, 0, sizeof(*k));
}

static bool docker_hub_host(const char *host)
{
	static const char *const hub[] = {DOCKER_HUB, "index.docker.io", DOCKER_HUB_HOST};
	for (size_t i = 0; i < sizeof(hub) / sizeof(hub[0]); i++)
		if (strcmp(host, hub[i]) == 0)
			return true;
	return false;
}

/* Splits "host[:port]" (n bytes at p; "[v6]:port" too) into k->host and k->port. */
static bool split_host_port(const char *p, size_t n, struct auth_key *k)
{
	const char *end = p + n, *host = p, *colon = NULL;
	size_t hlen = n;
	if (n > 0 && *p == '[') {
		const char *rb = memchr(p, ']', n);
		if (rb == NULL || (rb + 1 < end && rb[1] != ':'))
			return false;
		host = p + 1;
		hlen = (size_t)(rb - host);
		colon = rb + 1 < end ? rb + 1 : NULL;
	} else {
		colon = memrchr(p, ':', n);
		hlen = colon ? (size_t)(colon - p) : n;
	}
	if (hlen == 0)
		return false;
	k->host = xstrndup(host, hlen);
	for (char *c = k->host; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	k->port = colon ? xstrndup(colon + 1, (size_t)(end - colon - 1)) : xstrdup("");
	if (*k->port == '\0' && docker_hub_host(k->host)) {
		free(k->host);
		k->host = xstrdup(DOCKER_HUB);
	}
	return true;
}

/* Reads an `auths` key: an optional http:// or https:// (any other scheme names no
 * registry), host[:port], an optional path. False when it names no registry. */
static bool parse_key(const char *key, struct auth_key *k)
{
	memset(k, 0, sizeof(*k));
	const char *p = key, *sep = strstr(key, "://");
	if (sep) {
		size_t n = (size_t)(sep - key);
		if (!(n == 5 && strncasecmp(key, "https", 5) == 0) &&
		    !(n == 4 && strncasecmp(key, "http", 4) == 0))
			return false;
		p = sep + 3;
	}
	size_t alen = strcspn(p, "/");
	if (!split_host_port(p, alen, k)) {
		auth_key_clear(k);
		return false;
	}
	const char *path = p + alen;
	if (strncmp(path, "/v1/", 4) == 0 || strncmp(path, "/v2/", 4) == 0)
		path += 3;
	k->path = xstrdup(strcmp(path, "/") == 0 ? "" : path);
	k->order = xasprintf("%s%s%s%s", k->host, *k->port ? ":" : "", k->port, k->path);
	return true;
}

/* The host glob of a key against a registry's host: the same number of labels, each label
 * a shell pattern (fnmatch: "*", "?", "[...]") matched against the registry's label. */
static bool hosts_match(const char *glob, const char *host)
{
	for (;;) {
		size_t gl = strcspn(glob, "."), hl = strcspn(host, ".");
		cleanup_free char *g = xstrndup(glob, gl);
		cleanup_free char *h = xstrndup(host, hl);
		if (fnmatch(g, h, 0) != 0)
			return false;
		if (glob[gl] == '\0' || host[hl] == '\0')
			return glob[gl] == host[hl];
		glob += gl + 1;
		host += hl + 1;
	}
}

/* Whether key k names the image at registry reg, repository path repo_path ("/team/app"):
 * the same port (none on both, or equal), k's path a prefix of repo_path, the hosts
 * matching label by label. */
static bool key_matches(const struct auth_key *k, const struct auth_key *reg, const char *repo_path)
{
	return strcmp(k->port, reg->port) == 0 &&
	       strncmp(repo_path, k->path, strlen(k->path)) == 0 && hosts_match(k->host, reg->host);
}

/* The index in auths of the most specific key that names registry/repository, or
 * SIZE_MAX: of the matching keys the greatest in byte order (the kubelet sorts its keys in
 * reverse order and tries them in turn), the first of equal ones. */
static size_t best_key(const struct json *auths, const char *registry, const char *repository)
{
	struct auth_key reg = {0};
	if (!split_host_port(registry, strlen(registry), &reg))
		return SIZE_MAX;
	cleanup_free char *repo_path = xasprintf("/%s", repository ? repository : "");
	cleanup_free char *order = NULL;
	size_t best = SIZE_MAX;
	for (size_t i = 0; i < json_len(auths); i++) {
		struct auth_key k;
		if (!parse_key(json_key_at(auths, i), &k))
			continue;
		if (key_matches(&k, &reg, repo_path) &&
		    (order == NULL || strcmp(k.order, order) > 0)) {
			best = i;
			free(order);
			order = k.order;
			k.order = NULL;
		}
		auth_key_clear(&k);
	}
	auth_key_clear(&reg);
	return best;
}

/* The credentials of one `auths` entry. */
static int entry_creds(const struct json *entry, const char *what, const char *key,
                       struct registry_creds *out, struct err **err)
{
	const char *auth = json_str(json_get(entry, "auth"));
	if (auth && *auth) {
		cleanup_free char *field = xasprintf("%s: auths.\"%s\".auth", what, key);
		cleanup_free char *plain = NULL;
		size_t len = 0;
		if (base64_decode(auth, strlen(auth), field, &plain, &len, err) < 0)
			return -1;
		const char *colon = memchr(plain, ':', len);
		int rc = 0;
		if (colon == NULL || colon == plain)
			rc = err_set(err, ERR_CONFIG, "%s is not the base64 of user:password",
			             field);
		else
			*out = (struct registry_creds){
			        .user = xstrndup(plain, (size_t)(colon - plain)),
			        .password = xstrndup(colon + 1, len - (size_t)(colon + 1 - plain))};
		explicit_bzero(plain, len);
		return rc;
	}
	const char *user = json_str(json_get(entry, "username"));
	const char *password = json_str(json_get(entry, "password"));
	if (user == NULL || *user == '\0' || password == NULL)
		return err_set(err, ERR_CONFIG,
		               "%s: auths.\"%s\" has no credentials: krmpod reads \"auth\" (base64 "
		               "of user:password) or \"username\" and \"password\"",
		               what, key);
	out->user = xstrdup(user);
	out->password = xstrdup(password);
	return 0;
}

int registry_auth_lookup(const char *text, size_t len, const char *what, const char *registry,
                         const char *repository, struct registry_creds *out, struct err **err)
{
	memset(out, 0, sizeof(*out));
	cleanup_json struct json *doc = NULL;
	if (json_parse(text, len, what, &doc, err) < 0) {
		if (err)
			(*err)->code = ERR_CONFIG;
		return -1;
	}
	const struct json *auths = json_get(doc, "auths");
	if (json_type(auths) != JSON_OBJECT)
		return err_set(err, ERR_CONFIG,
		               "%s is not a dockerconfigjson: it has no \"auths\" object", what);
	size_t i = best_key(auths, registry, repository);
	if (i == SIZE_MAX)
		return 0;
	const char *key = json_key_at(auths, i);
	if (json_type(json_at(auths, i)) != JSON_OBJECT)
		return err_set(err, ERR_CONFIG, "%s: auths.\"%s\" is not an object", what, key);
	if (entry_creds(json_at(auths, i), what, key, out, err) < 0)
		return -1;
	out->key = xstrdup(key);
	return 1;
}

int registry_auth_load(const char *path, const char *registry, const char *repository,
                       struct registry_creds *out, struct err **err)
{
	cleanup_free char *text = NULL;
	size_t len = 0;
	memset(out, 0, sizeof(*out));
	if (buf_read_file(path, LIMIT_REGISTRY_AUTH_FILE, "registry auth file", ERR_CONFIG, &text,
	                  &len, err) < 0)
		return -1;
	cleanup_free char *what = xasprintf("registry auth file %s", path);
	int rc = registry_auth_lookup(text, len, what, registry, repository, out, err);
	explicit_bzero(text, len);
	return rc;
}

int registry_auth_find(const struct registry_opts *o, const char *registry, const char *repository,
                       struct registry_creds *out, const char **from, struct err **err)
{
	memset(out, 0, sizeof(*out));
	*from = NULL;
	int rc = 0;
	if (o->auth_file) {
		rc = registry_auth_load(o->auth_file, registry, repository, out, err);
		*from = o->auth_file;
	}
	for (size_t i = 0; rc == 0 && i < o->n_auth_docs; i++) {
		const struct registry_auth_doc *d = &o->auth_docs[i];
		rc = registry_auth_lookup(d->json, d->len, d->what, registry, repository, out, err);
		*from = d->what;
	}
	if (rc <= 0)
		*from = NULL;
	return rc;
}

bool registry_auth_any(const struct registry_opts *o)
{
	return o->auth_file != NULL || o->n_auth_docs > 0;
}

char *registry_auth_basic(const struct registry_creds *c)
{
	cleanup_free char *plain = xasprintf("%s:%s", c->user, c->password);
	size_t n = strlen(plain), cap = 4 * ((n + 2) / 3) + 1, written = 0;
	char *out = xmalloc(6 + cap);
	memcpy(out, "Basic ", 6);
	/* Fails only when the output does not fit, and cap always fits. */
	(void)mbedtls_base64_encode((unsigned char *)out + 6, cap, &written,
	                            (const unsigned char *)plain, n);
	out[6 + written] = '\0';
	explicit_bzero(plain, n);
	return out;
}

/* --- WWW-Authenticate ------------------------------------------------------------------- */

/* RFC 9110's tchar, plus '/' and '=' inside token68-like plain values. */
static bool tchar(char c)
{
	return isalnum((unsigned char)c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* Reads a value at *pp (a quoted string or a plain token) into a new string; NULL (with
 * *why) when it is malformed. */
static char *read_value(const char **pp, const char **why)
{
	const char *p = *pp;
	struct buf v;
	buf_init(&v, 0);
	if (*p != '"') {
		while (*p && *p != ',' && *p != ' ' && *p != '\t')
			buf_putc(&v, *p++);
	} else {
		for (p++; *p != '"'; p++) {
			if (*p == '\\' && p[1])
				p++;
			if (*p == '\0') {
				buf_free(&v);
				*why = "a quoted value does not end";
				return NULL;
			}
			buf_putc(&v, *p);
		}
		p++;
	}
	*pp = p;
	return buf_steal(&v, NULL);
}

/* Stores one parameter's value when it is one we use. */
static void keep_param(struct registry_challenge *c, const char *name, size_t n, char *value)
{
	char **slot = NULL;
	if (n == 5 && strncasecmp(name, "realm", 5) == 0)
		slot = &c->realm;
	else if (n == 7 && strncasecmp(name, "service", 7) == 0)
		slot = &c->service;
	else if (n == 5 && strncasecmp(name, "scope", 5) == 0)
		slot = &c->scope;
	if (slot && *slot == NULL) {
		*slot = value;
		return;
	}
	free(value);
}

/* Parses the parameters after the scheme; returns what is wrong, or NULL. */
static const char *parse_params(const char *p, struct registry_challenge *c)
{
	for (;;) {
		while (*p == ',' || *p == ' ' || *p == '\t')
			p++;
		if (*p == '\0')
			return NULL;
		const char *name = p;
		while (tchar(*p))
			p++;
		size_t n = (size_t)(p - name);
		if (n == 0)
			return "expected a parameter name";
		p = skip_ws(p);
		if (*p != '=')
			return NULL; /* the next challenge begins: only the first one is read */
		p = skip_ws(p + 1);
		const char *why = NULL;
		char *value = read_value(&p, &why);
		if (value == NULL)
			return why;
		keep_param(c, name, n, value);
		p = skip_ws(p);
		if (*p != ',' && *p != '\0')
			return "expected a ',' between parameters";
	}
}

int registry_challenge_parse(const char *value, struct registry_challenge *out, struct err **err)
{
	memset(out, 0, sizeof(*out));
	const char *p = skip_ws(value ? value : ""), *scheme = p;
	while (tchar(*p))
		p++;
	const char *why = NULL;
	if (p == scheme)
		why = "it has no scheme";
	else if (*p != '\0' && *p != ' ' && *p != '\t')
		why = "the scheme is not a token";
	if (why == NULL) {
		out->scheme = xstrndup(scheme, (size_t)(p - scheme));
		why = parse_params(p, out);
	}
	if (why == NULL)
		return 0;
	registry_challenge_clear(out);
	return err_set(err, ERR_NET, "bad WWW-Authenticate header \"%s\": %s", value ? value : "",
	               why);
}

void registry_challenge_clear(struct registry_challenge *c)
{
	free(c->scheme);
	free(c->realm);
	free(c->service);
	free(c->scope);
	memset(c, 0, sizeof(*c));
}

/* --- The token request ------------------------------------------------------------------ */

static char *token_url(const struct registry_challenge *ch, const char *default_scope)
{
	struct buf url;
	buf_init(&url, 0);
	buf_puts(&url, ch->realm);
	char sep = strchr(ch->realm, '?') ? '&' : '?';
	const char *scope = ch->scope ? ch->scope : default_scope;
	if (ch->service) {
		cleanup_free char *v = url_query_escape(ch->service);
		buf_printf(&url, "%cservice=%s", sep, v);
		sep = '&';
	}
	if (scope) {
		cleanup_free char *v = url_query_escape(scope);
		buf_printf(&url, "%cscope=%s", sep, v);
	}
	return buf_steal(&url, NULL);
}

int registry_auth_token(struct registry_http *h, const struct registry_challenge *ch,
                        const char *default_scope, const struct registry_creds *creds, char **token,
                        struct err **err)
{
	if (ch->realm == NULL || *ch->realm == '\0')
		return err_set(err, ERR_NET, "the registry's Bearer challenge names no realm");
	cleanup_free char *url = token_url(ch, default_scope);
	cleanup_free char *basic = creds && creds->user ? registry_auth_basic(creds) : NULL;
	struct registry_get g = {
	        .url = url,
	        .authorization = basic,
	        .accept = "application/json",
	        .max_bytes = LIMIT_REGISTRY_TOKEN,
	        .follow = true,
	};
	struct registry_response r;
	registry_response_init(&r);
	int rc = registry_http_get(h, &g, &r, err);
	if (basic)
		explicit_bzero(basic, strlen(basic));
	if (rc == 0 && (r.status < 200 || r.status > 299))
		rc = registry_http_status_error(url, &r, ERR_NET, err);
	cleanup_json struct json *doc = NULL;
	if (rc == 0 &&
	    json_parse(r.body.data ? r.body.data : "", r.body.len, "token answer", &doc, err) < 0) {
		rc = err_wrap(err, "GET %s", url);
		if (err)
			(*err)->code = ERR_NET;
	}
	registry_response_free(&r);
	if (rc < 0)
		return -1;
	const char *t = json_str(json_get(doc, "token"));
	if (t == NULL || *t == '\0')
		t = json_str(json_get(doc, "access_token"));
	if (t == NULL || *t == '\0')
		return err_set(err, ERR_NET, "GET %s: the answer has no \"token\"", url);
	*token = xstrdup(t);
	return 0;
}

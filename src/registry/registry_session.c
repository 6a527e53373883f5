/* registry_session.c — see registry_session.h. */
#include "registry/registry_session.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/xalloc.h"

int registry_session_open(const struct registry_opts *o, const struct oci_ref *ref,
                          struct registry_session *s, struct err **err)
{
	memset(s, 0, sizeof(*s));
	s->o = o;
	if (registry_http_new(o, &s->http, err) < 0)
		return -1;
	const char *registry = ref->registry;
	for (size_t i = 0; i < o->n_mirrors; i++)
		if (strcmp(o->mirrors[i].key, ref->registry) == 0)
			registry = o->mirrors[i].value;
	s->registry = xstrdup(registry);
	s->repository = xstrdup(ref->repository);
	s->base = xasprintf("%s://%s/v2/%s/", o->plain_http ? "http" : "https",
	                    registry_host(registry), ref->repository);
	return 0;
}

void registry_session_close(struct registry_session *s)
{
	registry_http_free(s->http);
	free(s->registry);
	free(s->repository);
	free(s->base);
	if (s->authorization) {
		explicit_bzero(s->authorization, strlen(s->authorization));
		free(s->authorization);
	}
	registry_creds_clear(&s->creds);
	memset(s, 0, sizeof(*s));
}

/* The registry wants credentials that we do not have; detail says what it answered. */
static int need_credentials(const struct registry_session *s, const char *detail, struct err **err)
{
	if (!registry_auth_any(s->o))
		err_set(err, ERR_CONFIG,
		        "the registry %s requires credentials: set KRMPOD_REGISTRY_AUTH to a "
		        "dockerconfigjson that has them, or let the sidecar read the function "
		        "pods' pull Secret (%s)",
		        s->registry, detail);
	else if (s->o->n_auth_docs == 0)
		err_set(err, ERR_CONFIG,
		        "the registry %s requires credentials: the registry auth file %s "
		        "(KRMPOD_REGISTRY_AUTH) has none for it: no key of its auths matches %s/%s "
		        "(%s)",
		        s->registry, s->o->auth_file, s->registry, s->repository, detail);
	else
		err_set(err, ERR_CONFIG,
		        "the registry %s requires credentials: no key of auths matches %s/%s in "
		        "%s%s"
		        "%s%s (%s)",
		        s->registry, s->registry, s->repository,
		        s->o->auth_file ? s->o->auth_file : "", s->o->auth_file ? ", " : "",
		        s->o->auth_docs[0].what,
		        s->o->n_auth_docs > 1 ? " or the other pull Secrets" : "", detail);
	if (err)
		(*err)->http_status = 401;
	return -1;
}

/* The registry (or its token service) said no: to our credentials, or to none. */
static int denied(const struct registry_session *s, const char *detail, struct err **err)
{
	if (s->creds.user == NULL)
		return need_credentials(s, detail, err);
	bool file = s->creds_from && s->o->auth_file && strcmp(s->creds_from, s->o->auth_file) == 0;
	err_set(err, ERR_CONFIG,
	        "the registry %s refused the credentials for %s in %s (%sauths.\"%s\"): %s",
	        s->registry, s->repository, s->creds_from ? s->creds_from : "?",
	        file ? "KRMPOD_REGISTRY_AUTH, " : "", s->creds.key, detail);
	if (err)
		(*err)->http_status = 401;
	return -1;
}

static int load_creds(struct registry_session *s, struct err **err)
{
	if (s->creds_loaded || !registry_auth_any(s->o))
		return 0;
	s->creds_loaded = true;
	int rc = registry_auth_find(s->o, s->registry, s->repository, &s->creds, &s->creds_from,
	                            err);
	if (rc > 0)
		log_debug("%s/%s: credentials of auths.\"%s\" in %s", s->registry, s->repository,
		          s->creds.key, s->creds_from);
	else if (rc == 0)
		log_debug("%s/%s: no key of auths in its credential sources matches it",
		          s->registry, s->repository);
	return rc < 0 ? -1 : 0;
}

static void set_authorization(struct registry_session *s, char *value)
{
	if (s->authorization) {
		explicit_bzero(s->authorization, strlen(s->authorization));
		free(s->authorization);
	}
	s->authorization = value;
}

/* The token flow: a token for the challenge's scope, with our credentials if any. */
static int bearer(struct registry_session *s, const struct registry_challenge *ch, struct err **err)
{
	cleanup_free char *scope = xasprintf("repository:%s:pull", s->repository);
	cleanup_free char *token = NULL;
	cleanup_err struct err *e = NULL;
	if (registry_auth_token(s->http, ch, scope, &s->creds, &token, &e) < 0) {
		if (e && (e->http_status == 401 || e->http_status == 403))
			return denied(s, e->msg, err);
		if (err) {
			*err = e;
			e = NULL;
		}
		return -1;
	}
	set_authorization(s, xasprintf("Bearer %s", token));
	explicit_bzero(token, strlen(token));
	return 0;
}

/* Answers a 401 as its challenge says. */
static int authorize(struct registry_session *s, const char *url, const struct registry_response *r,
                     struct err **err)
{
	if (r->challenge.len == 0)
		return err_set(err, ERR_NET,
		               "GET %s: 401 Unauthorized without a WWW-Authenticate "
		               "challenge",
		               url);
	struct registry_challenge ch;
	if (registry_challenge_parse(r->challenge.data, &ch, err) < 0)
		return err_wrap(err, "GET %s", url);
	int rc = load_creds(s, err);
	if (rc == 0 && strcasecmp(ch.scheme, "Bearer") == 0) {
		rc = bearer(s, &ch, err);
	} else if (rc == 0 && strcasecmp(ch.scheme, "Basic") == 0) {
		if (s->creds.user == NULL)
			rc = need_credentials(s, "it asks for Basic authentication", err);
		else
			set_authorization(s, registry_auth_basic(&s->creds));
	} else if (rc == 0) {
		rc = err_set(err, ERR_NET,
		             "GET %s: the registry asks for %s authentication, which "
		             "krmpod does not speak",
		             url, ch.scheme);
	}
	registry_challenge_clear(&ch);
	return rc;
}

/* Another host answered 401 after the registry redirected the request there (a blob
 * store): its challenge is answered with that host's own credentials in opts->auth_file,
 * or none, never the registry's (containerd keys challenges by the host that sent them).
 * *authorization receives the header for that host, or NULL to go on anonymously. */
static int authorize_elsewhere(struct registry_session *s, const char *host, const char *url,
                               const struct registry_response *r, char **authorization,
                               struct err **err)
{
	if (r->challenge.len == 0)
		return err_set(err, ERR_NET,
		               "GET %s (where the registry %s redirected): 401 Unauthorized "
		               "without a WWW-Authenticate challenge",
		               url, s->registry);
	struct registry_challenge ch;
	if (registry_challenge_parse(r->challenge.data, &ch, err) < 0)
		return err_wrap(err, "GET %s", url);
	struct registry_creds creds = {0};
	const char *from = NULL;
	int rc = registry_auth_find(s->o, host, "", &creds, &from, err) < 0 ? -1 : 0;
	cleanup_free char *scope = xasprintf("repository:%s:pull", s->repository);
	cleanup_free char *token = NULL;
	if (rc == 0 && strcasecmp(ch.scheme, "Bearer") == 0) {
		cleanup_err struct err *e = NULL;
		rc = registry_auth_token(s->http, &ch, scope, &creds, &token, &e);
		if (rc == 0)
			*authorization = xasprintf("Bearer %s", token);
		else if (e && (e->http_status == 401 || e->http_status == 403) &&
		         creds.user == NULL) {
			err_set(err, ERR_CONFIG,
			        "%s: %s, where the registry %s redirected the request, wants "
			        "credentials, and KRMPOD_REGISTRY_AUTH has none for %s: krmpod "
			        "sends a "
			        "registry's credentials to that registry only; add an auths entry "
			        "for "
			        "%s if it needs its own",
			        e->msg, host, s->registry, host, host);
			if (err)
				(*err)->http_status = 401;
		} else if (err) {
			*err = e;
			e = NULL;
		}
		if (token)
			explicit_bzero(token, strlen(token));
	} else if (rc == 0 && strcasecmp(ch.scheme, "Basic") == 0 && creds.user) {
		*authorization = registry_auth_basic(&creds);
	} else if (rc == 0) {
		rc = err_set(
		        err, ERR_CONFIG,
		        "GET %s: %s, where the registry %s redirected the request, asks for %s "
		        "authentication, and KRMPOD_REGISTRY_AUTH has no credentials for %s: "
		        "krmpod sends a registry's credentials to that registry only; add an "
		        "auths entry for %s if it needs its own",
		        url, host, s->registry, ch.scheme, host, host);
		if (err)
			(*err)->http_status = 401;
	}
	registry_creds_clear(&creds);
	registry_challenge_clear(&ch);
	return rc;
}

int registry_session_get(struct registry_session *s, const char *path, const char *accept,
                         size_t max_bytes, struct registry_response *r, char **url_out,
                         struct err **err)
{
	cleanup_free char *url = xasprintf("%s%s", s->base, path);
	cleanup_free char *home = registry_url_authority(url);
	/* after a 401 from another host: its URL and its own Authorization, this request only */
	cleanup_free char *elsewhere = NULL, *elsewhere_auth = NULL;
	int rc = 0;
	for (int round = 0;; round++) {
		struct registry_get g = {
		        .url = elsewhere ? elsewhere : url,
		        .authorization = elsewhere ? elsewhere_auth : s->authorization,
		        .accept = accept,
		        .max_bytes = max_bytes,
		        .follow = true,
		};
		if (registry_http_get(s->http, &g, r, err) < 0) {
			rc = -1;
			break;
		}
		if (r->status != 401)
			break;
		cleanup_free char *from = registry_url_authority(r->url ? r->url : g.url);
		bool home_answered = from && home && strcmp(from, home) == 0;
		if (round > 0) {
			cleanup_err struct err *e = NULL;
			registry_http_status_error(g.url, r, ERR_CONFIG, &e);
			if (home_answered) {
				rc = denied(s, e->msg, err);
			} else {
				rc = err_set(err, ERR_CONFIG,
				             "%s (where the registry %s redirected)", e->msg,
				             s->registry);
				if (err)
					(*err)->http_status = 401;
			}
			break;
		}
		if (home_answered) {
			log_debug("GET %s: 401; authenticating", url);
			rc = authorize(s, url, r, err);
		} else {
			/* the redirect's target challenged: answer it, and ask it again directly */
			elsewhere = xstrdup(r->url ? r->url : g.url);
			log_debug("GET %s: 401 from %s after a redirect; its own credentials only",
			          elsewhere, from ? from : "?");
			rc = authorize_elsewhere(s, from ? from : "?", elsewhere, r,
			                         &elsewhere_auth, err);
		}
		if (rc < 0)
			break;
	}
	if (elsewhere_auth)
		explicit_bzero(elsewhere_auth, strlen(elsewhere_auth));
	if (rc < 0)
		return -1;
	if (url_out) {
		*url_out = url;
		url = NULL;
	}
	return 0;
}

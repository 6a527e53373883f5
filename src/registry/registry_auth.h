/* registry_auth.h — registry credentials and challenges: the dockerconfigjson lookup, the
 * WWW-Authenticate parser and the token request of the distribution token flow
 * (docs/internals/registry.md). The parsers are pure, for unit tests.
 */
#ifndef KRMPOD_REGISTRY_AUTH_H
#define KRMPOD_REGISTRY_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "registry/registry.h"
#include "registry/registry_http.h"

/* A user name and password, and the `auths` key they came from (for errors and logs); all
 * NULL when there are none. */
struct registry_creds {
	char *user;
	char *password;
	char *key;
};

/* Frees the strings (the password wiped first). */
void registry_creds_clear(struct registry_creds *c);

/* The host a registry is reached at: "registry-1.docker.io" for "docker.io", else the
 * registry itself. Borrowed (from registry or static). */
const char *registry_host(const char *registry);

/* Looks up the credentials for one repository of a registry in a dockerconfigjson's text
 * (`what` names it in errors), matching the keys of `auths` as the kubelet's credential
 * keyring does, so that krmpod reads with the credential the kubelet pulls with:
 *   - a key is host[:port][/path], with or without http:// or https:// (another scheme
 *     names nothing); a leading /v1/ or /v2/ of its path counts as no path;
 *   - the hosts have the same number of labels, and each label of the key is a shell
 *     pattern (fnmatch: "*.example.com" matches "a.example.com", not "a.b.example.com")
 *     for the registry's label; hosts compare without regard to case;
 *   - a key with a port matches that port only, a key without one only a registry without;
 *   - the key's path is a prefix of "/" + repository (a string prefix, as the kubelet's:
 *     "reg.io/team" also covers "reg.io/team-b/x"; "reg.io/team/" does not);
 *   - "docker.io", "index.docker.io", "registry-1.docker.io" (any of them with a scheme or a
 *     path, such as "https://index.docker.io/v1/") all name Docker Hub, "docker.io";
 *   - of several matching keys the most specific wins: the greatest "host[:port]path" in byte
 *     order (the kubelet's reverse-sorted keys; a path beats none, a name beats a glob), the
 *     first of equal ones. krmpod sends that one only (the kubelet tries the others after a
 *     refusal).
 * registry is "host[:port]" ("docker.io" for Docker Hub) and repository the image's path
 * ("library/alpine"; NULL as ""). It is the registry krmpod connects to: for a mirror
 * (KRMPOD_REGISTRY_MIRRORS) the mirror's host, so a credential is only ever sent to a
 * registry its key matches. Its credentials are `auth` (base64 of user:password) or else
 * `username` and `password`. Returns 1 with *out filled (out->key the key that matched), 0
 * when no key matches, -1 with ERR_CONFIG for a file that is not a dockerconfigjson or a
 * matching entry without usable credentials (naming the key). */
int registry_auth_lookup(const char *text, size_t len, const char *what, const char *registry,
                         const char *repository, struct registry_creds *out, struct err **err);

/* registry_auth_lookup on the file at path (at most LIMIT_REGISTRY_AUTH_FILE bytes; an
 * unreadable file is ERR_CONFIG naming it). */
int registry_auth_load(const char *path, const char *registry, const char *repository,
                       struct registry_creds *out, struct err **err);

/* The credentials for a repository from every source of o, in order: KRMPOD_REGISTRY_AUTH's
 * file (o->auth_file), then o->auth_docs. 1 with *out (and *from: the source, borrowed),
 * 0 when none has a key for the registry, -1 as registry_auth_lookup. */
int registry_auth_find(const struct registry_opts *o, const char *registry, const char *repository,
                       struct registry_creds *out, const char **from, struct err **err);

/* Whether o has any source of credentials. */
bool registry_auth_any(const struct registry_opts *o);

/* "Basic <base64 of user:password>". A new string. */
char *registry_auth_basic(const struct registry_creds *c);

/* One challenge of a WWW-Authenticate header: its scheme ("Bearer", "Basic"; as sent) and
 * the parameters the token flow uses (NULL when absent). */
struct registry_challenge {
	char *scheme;
	char *realm;
	char *service;
	char *scope;
};

/* Parses the first challenge of a WWW-Authenticate value: a scheme, then name=value
 * parameters separated by commas, values plain tokens or quoted strings (which may hold
 * commas and backslash escapes); names are matched without regard to case. Fails with
 * ERR_NET naming what is wrong. */
int registry_challenge_parse(const char *value, struct registry_challenge *out, struct err **err);
void registry_challenge_clear(struct registry_challenge *c);

/* The token flow's request: GET realm?service=…&scope=… (URL-escaped; scope defaults to
 * default_scope when the challenge names none), with creds as Basic authentication when
 * there are some (NULL: anonymous), and reads "token" (or "access_token") from the JSON
 * answer (at most LIMIT_REGISTRY_TOKEN bytes) into *token (a new string). A realm that is
 * not https is refused (ERR_CONFIG, from registry_http_get). A non-2xx answer is ERR_NET with
 * err->http_status set. */
int registry_auth_token(struct registry_http *h, const struct registry_challenge *ch,
                        const char *default_scope, const struct registry_creds *creds, char **token,
                        struct err **err);

#endif

/* registry_session.h — requests to one repository of one registry for the length of a pull,
 * with its authentication: anonymous first; on 401 the challenge decides (the token flow for
 * Bearer, the credentials for Basic), and the Authorization so won is kept for the rest of
 * the pull. The credentials are read from opts->auth_file on the first challenge, for the
 * registry the session connects to (a mirror's host for a mirrored registry) and its
 * repository (registry_auth_lookup): never sent to a registry their key does not match.
 */
#ifndef KRMPOD_REGISTRY_SESSION_H
#define KRMPOD_REGISTRY_SESSION_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "registry/registry.h"
#include "registry/registry_auth.h"
#include "registry/registry_http.h"

struct registry_session {
	const struct registry_opts *o; /* borrowed */
	struct registry_http *http;
	char *registry;      /* as in the reference ("docker.io"), or its mirror */
	char *repository;    /* "library/alpine" */
	char *base;          /* "https://registry-1.docker.io/v2/library/alpine/" */
	char *authorization; /* the header value that worked, or NULL (anonymous) */
	struct registry_creds creds;
	bool creds_loaded;      /* the sources were read (creds may still be empty) */
	const char *creds_from; /* the source creds came from (borrowed from opts), or NULL */
};

/* Prepares a session for ref's repository (no request is sent yet). Fails like
 * registry_http_new. */
int registry_session_open(const struct registry_opts *o, const struct oci_ref *ref,
                          struct registry_session *s, struct err **err);
void registry_session_close(struct registry_session *s);

/* GETs base + path ("manifests/v1", "blobs/sha256:…"), following redirects, and leaves the
 * answer in *r: returns 0 for any answer but 401. A 401 is answered once per request as its
 * challenge says, with the credentials of the host that sent it: the registry's own for
 * the registry (to the token realm its challenge names), and for another host that a
 * redirect led to (a blob store), that host's own auths entry or none: the registry's
 * credentials never go there, and the token so won is sent to that host's URL for this
 * request only. A second 401 fails with ERR_CONFIG: "the registry R requires credentials:
 * set KRMPOD_REGISTRY_AUTH …" without credentials, "the registry R refused the credentials
 * for REPO in FILE (KRMPOD_REGISTRY_AUTH, auths."KEY") …" with them. Other failures as registry_http_get and registry_auth_token.
 * *url_out (when not NULL) receives the URL, to free. */
int registry_session_get(struct registry_session *s, const char *path, const char *accept,
                         size_t max_bytes, struct registry_response *r, char **url_out,
                         struct err **err);

#endif

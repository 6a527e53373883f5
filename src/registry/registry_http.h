/* registry_http.h — the HTTP client under every registry and catalog fetch: one GET at a
 * time over libcurl (mbedTLS), driven in 50 ms slices so that the cancel flag and the
 * deadline of struct registry_opts end any transfer at once.
 *
 * Trust: the system CA bundle, plus opts->ca_file (both are handed to curl as one bundle).
 * Only https:// URLs are fetched (http:// too with opts->plain_http, for tests), redirects
 * included. An Authorization header goes to the first host only: when a redirect leads to
 * another host, port or scheme (a blob store), libcurl leaves it out.
 */
#ifndef KRMPOD_REGISTRY_HTTP_H
#define KRMPOD_REGISTRY_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/err.h"
#include "registry/registry.h"

struct registry_http;

/* One GET. */
struct registry_get {
	const char *url;
	const char *authorization; /* the Authorization header's value, or NULL */
	const char *accept;        /* the Accept header's value, or NULL */
	size_t max_bytes;          /* the most bytes of a 2xx body */
	bool follow;               /* follow redirects (at most 5) */
};

/* One answer: the last one when redirects were followed. */
struct registry_response {
	long status;
	struct buf body;      /* a 2xx body (limit max_bytes); else its first bytes, up to
	                       * LIMIT_REGISTRY_ERROR_BODY (the rest is dropped) */
	struct buf challenge; /* the answer's first WWW-Authenticate header (trimmed) */
	char *url;            /* the URL that gave the answer, after redirects; NULL before */
};

void registry_response_init(struct registry_response *r);
void registry_response_free(struct registry_response *r);

/* Creates a client for o (borrowed: it must outlive the client). Reads the CA files; fails
 * with ERR_CONFIG naming one that cannot be read. */
int registry_http_new(const struct registry_opts *o, struct registry_http **out, struct err **err);
void registry_http_free(struct registry_http *h);
DEFINE_CLEANUP_FUNC(registry_http, struct registry_http, registry_http_free)
#define cleanup_registry_http __attribute__((cleanup(cleanup_registry_httpp)))

/* Sends g and reads the answer into *r (emptied first). An answer 429 or 5xx is retried up
 * to 3 times, after its Retry-After or a backoff of 200, 400, 800 ms, when that wait is at
 * most 5 s and ends before the deadline (each retry said at info level); the last answer
 * is returned. Returns 0 when an answer of any status arrived. Fails with ERR_CONFIG for a URL whose scheme is not allowed, ERR_NET for a
 * connection, TLS or protocol error and for a 2xx body over g->max_bytes (naming the limit),
 * ERR_TIMEOUT when opts->deadline_ms passes, ERR_SIGNAL when *opts->cancel is set. Messages
 * start with "GET URL". */
int registry_http_get(struct registry_http *h, const struct registry_get *g,
                      struct registry_response *r, struct err **err);

/* Fills *err with code for a non-2xx answer: "GET URL: 404 Not Found: MANIFEST_UNKNOWN:
 * manifest unknown" (the distribution API's error codes and messages when the body has
 * them, else the body quoted and cut), err->http_status set. Always returns -1. */
int registry_http_status_error(const char *url, const struct registry_response *r,
                               enum err_code code, struct err **err);

/* The authority of an http(s) URL, "host[:port]" in lower case without user info (a new
 * string), or NULL when url has none. Credentials and challenges are keyed by it. */
char *registry_url_authority(const char *url);

/* Whether url's scheme is one o allows (https, and http with o->plain_http). */
bool registry_url_allowed(const struct registry_opts *o, const char *url);

#endif

/* registry_http.c — see registry_http.h.
 *
 * Transfers run on the engine of http/http_xfer.h, as the API server's client does (one
 * easy and one multi handle per client, 50 ms slices that check the cancel flag and the
 * deadline, the retry policy per method). Connecting may take 10 s and a whole request 5
 * minutes (or what is left before the deadline); a transfer that moves no byte for 30 s is
 * dropped.
 */
#include "registry/registry_http.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "http/http_util.h"
#include "http/http_xfer.h"

#define CONNECT_TIMEOUT_MS 10000  /* connecting (TCP + TLS) */
#define REQUEST_TIMEOUT_MS 300000 /* a whole request */
#define STALL_SECONDS      30L    /* a transfer that moves no byte this long is dropped */
#define MAX_REDIRECTS      5L
#define ERROR_QUOTE_MAX    512 /* bytes of an error body quoted in messages */
#define ERRORS_NAMED_MAX   3   /* entries of a distribution "errors" list in messages */
/* A GET answered 429 or 5xx: 3 retries, after Retry-After or 200, 400, 800 ms; a registry
 * that asks for more than 5 s gets its answer as it stands. */
static const struct http_retry_policy RETRIES = {
        .max_retries = 3, .base_ms = 200, .cap_ms = 5000, .longer_stands = true};

struct registry_http {
	const struct registry_opts *o; /* borrowed */
	struct http_engine eng;
	struct http_stop stop; /* o's cancel flag and deadline */
};

/* The state of one exchange, shared with curl's callbacks. */
struct xfer {
	CURL *curl;
	struct registry_response *r;
	size_t max_bytes;
	bool too_big;        /* a 2xx body passed max_bytes */
	bool header_too_big; /* a WWW-Authenticate header passed LIMIT_REGISTRY_HEADER */
	char retry_after[HTTP_RETRY_AFTER_MAX_LEN]; /* the answer's Retry-After header, or "" */
};

bool registry_url_allowed(const struct registry_opts *o, const char *url)
{
	return strncasecmp(url, "https://", 8) == 0 ||
	       (o->plain_http && strncasecmp(url, "http://", 7) == 0);
}

void registry_response_init(struct registry_response *r)
{
	r->status = 0;
	r->url = NULL;
	buf_init(&r->body, 0);
	buf_init(&r->challenge, LIMIT_REGISTRY_HEADER);
}

void registry_response_free(struct registry_response *r)
{
	buf_free(&r->body);
	buf_free(&r->challenge);
	free(r->url);
	r->url = NULL;
}

char *registry_url_authority(const char *url)
{
	const char *p = strstr(url, "://");
	if (p == NULL)
		return NULL;
	p += 3;
	size_t n = strcspn(p, "/?#");
	const char *at = memchr(p, '@', n);
	if (at) {
		n -= (size_t)(at + 1 - p);
		p = at + 1;
	}
	if (n == 0)
		return NULL;
	char *a = xstrndup(p, n);
	for (char *c = a; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	return a;
}

/* --- Errors ----------------------------------------------------------------------------- */

/* Appends the distribution API's errors ("CODE: message; ...") of body; false if it has
 * none. */
static bool describe_errors(struct buf *out, const char *body, size_t len)
{
	cleanup_json struct json *doc = NULL;
	if (len == 0 || json_parse(body, len, "registry error", &doc, NULL) < 0)
		return false;
	const struct json *errors = json_get(doc, "errors");
	size_t n = json_len(errors), named = 0;
	for (size_t i = 0; i < n && named < ERRORS_NAMED_MAX; i++) {
		const char *code = json_str(json_get(json_at(errors, i), "code"));
		const char *message = json_str(json_get(json_at(errors, i), "message"));
		if (code == NULL && message == NULL)
			continue;
		buf_puts(out, named ? "; " : ": ");
		buf_printf(out, "%s%s%s", code ? code : "", code && message ? ": " : "",
		           message ? message : "");
		named++;
	}
	if (named && n > named)
		buf_puts(out, "; ...");
	return named > 0;
}

int registry_http_status_error(const char *url, const struct registry_response *r,
                               enum err_code code, struct err **err)
{
	cleanup_buf struct buf text;
	buf_init(&text, 0);
	const char *phrase = http_status_phrase(r->status);
	buf_printf(&text, "%ld%s%s", r->status, *phrase ? " " : "", phrase);
	const char *body = r->body.data ? r->body.data : "";
	if (!describe_errors(&text, body, r->body.len)) {
		struct buf q;
		buf_init(&q, 0);
		if (http_quote_body(&q, body, r->body.len, ERROR_QUOTE_MAX))
			buf_printf(&text, ": %s", q.data);
		buf_free(&q);
	}
	err_set(err, code, "GET %s: %s", url, text.data);
	if (err)
		(*err)->http_status = (int)r->status;
	return -1;
}

/* --- The client ------------------------------------------------------------------------- */

static size_t on_write(char *p, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	size_t len = size * n;
	long status = 0;
	curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &status);
	struct buf *body = &x->r->body;
	if (status >= 200 && status < 300) {
		body->limit = x->max_bytes;
		if (buf_append(body, p, len, "body", NULL) < 0) {
			x->too_big = true;
			return 0; /* stops the transfer with CURLE_WRITE_ERROR */
		}
		return len;
	}
	body->limit = 0;
	size_t room = LIMIT_REGISTRY_ERROR_BODY - body->len;
	buf_append(body, p, len < room ? len : room, "error body", NULL);
	return len;
}

/* Keeps the first WWW-Authenticate header of each answer (a redirect starts a new one), and
 * its Retry-After. */
static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	size_t len = size * n;
	static const char name[] = "WWW-Authenticate:";
	if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) {
		buf_reset(&x->r->challenge);
		buf_reset(&x->r->body);
		x->retry_after[0] = '\0';
		return len;
	}
	http_keep_retry_after(p, len, x->retry_after);
	if (len < sizeof(name) - 1 || strncasecmp(p, name, sizeof(name) - 1) != 0 ||
	    x->r->challenge.len > 0)
		return len;
	const char *v = p + sizeof(name) - 1, *end = p + len;
	while (v < end && isspace((unsigned char)*v))
		v++;
	while (end > v && isspace((unsigned char)end[-1]))
		end--;
	if (buf_append(&x->r->challenge, v, (size_t)(end - v), "header", NULL) < 0) {
		x->header_too_big = true;
		return 0;
	}
	return len;
}

/* Trust: the system bundle alone by its path; with opts->ca_file, both as one blob. */
static int setup_ca(struct registry_http *h, struct err **err)
{
	const char *system = system_ca_file();
	if (h->o->ca_file == NULL) {
		if (system)
			curl_easy_setopt(h->eng.curl, CURLOPT_CAINFO, system);
		return 0;
	}
	cleanup_free char *extra = NULL, *base = NULL;
	size_t extra_len = 0, base_len = 0;
	if (buf_read_file(h->o->ca_file, LIMIT_PEM_FILE, "registry CA file", ERR_CONFIG, &extra,
	                  &extra_len, err) < 0)
		return -1;
	cleanup_buf struct buf bundle;
	buf_init(&bundle, LIMIT_CA_BUNDLE);
	if (system && buf_read_file(system, LIMIT_CA_BUNDLE, "system CA bundle", ERR_CONFIG, &base,
	                            &base_len, err) < 0)
		return -1;
	if (buf_append(&bundle, base ? base : "", base_len, "the CA bundle", err) < 0 ||
	    buf_append(&bundle, "\n", 1, "the CA bundle", err) < 0 ||
	    buf_append(&bundle, extra, extra_len, "the CA bundle", err) < 0) {
		if (err)
			(*err)->code = ERR_CONFIG;
		return -1;
	}
	struct curl_blob blob = {.data = bundle.data, .len = bundle.len, .flags = CURL_BLOB_COPY};
	CURLcode rc = curl_easy_setopt(h->eng.curl, CURLOPT_CAINFO_BLOB, &blob);
	if (rc != CURLE_OK)
		return err_set(err, ERR_CONFIG,
		               "cannot use the registry CA file %s: %s (libcurl %s)", h->o->ca_file,
		               curl_easy_strerror(rc), curl_version());
	return 0;
}

int registry_http_new(const struct registry_opts *o, struct registry_http **out, struct err **err)
{
	if (http_global_init(err) < 0)
		return -1;
	cleanup_registry_http struct registry_http *h = xcalloc(1, sizeof(*h));
	h->o = o;
	if (http_engine_init(&h->eng, o->plain_http ? "https,http" : "https", on_write, on_header,
	                     err) < 0)
		return -1;
	CURL *curl = h->eng.curl;
	curl_easy_setopt(curl, CURLOPT_MAXREDIRS, MAX_REDIRECTS);
	curl_easy_setopt(curl, CURLOPT_UNRESTRICTED_AUTH, 0L);
	curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, STALL_SECONDS);
	if (setup_ca(h, err) < 0)
		return -1;
	*out = h;
	h = NULL;
	return 0;
}

void registry_http_free(struct registry_http *h)
{
	if (h == NULL)
		return;
	http_engine_clear(&h->eng);
	free(h);
}

/* --- Running one exchange --------------------------------------------------------------- */

/* Sets h->eng.curl up for g: URL, headers (kept in *headers until the transfer is done),
 * redirects, size cap and timeouts. */
static void setup_transfer(struct registry_http *h, const struct registry_get *g, struct xfer *x,
                           struct curl_slist **headers)
{
	*headers = curl_slist_append(*headers, "Expect:");
	if (g->accept) {
		cleanup_free char *accept = xasprintf("Accept: %s", g->accept);
		*headers = curl_slist_append(*headers, accept);
	}
	if (g->authorization) {
		cleanup_free char *auth = xasprintf("Authorization: %s", g->authorization);
		*headers = curl_slist_append(*headers, auth);
	}
	CURL *curl = h->eng.curl;
	curl_easy_setopt(curl, CURLOPT_URL, g->url);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, *headers);
	curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, g->follow ? 1L : 0L);
	curl_easy_setopt(curl, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)g->max_bytes);
	int64_t left = h->stop.deadline_ms ? h->stop.deadline_ms - now_ms() : REQUEST_TIMEOUT_MS;
	if (left < 1)
		left = 1;
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)min64(CONNECT_TIMEOUT_MS, left));
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)min64(REQUEST_TIMEOUT_MS, left));
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(curl, CURLOPT_HEADERDATA, x);
}

/* What a finished transfer means. */
static int transfer_result(struct registry_http *h, const struct registry_get *g,
                           const struct xfer *x, CURLcode rc, bool stopped, struct err **err)
{
	if ((stopped || rc == CURLE_OPERATION_TIMEDOUT) &&
	    http_check_stop(&h->stop, "GET", g->url, err) < 0)
		return -1;
	if (stopped)
		return err_set(err, ERR_INTERNAL, "GET %s: transfer aborted", g->url);
	if (x->too_big || rc == CURLE_FILESIZE_EXCEEDED)
		return err_set(err, ERR_NET, "GET %s: the response exceeds the limit of %zu bytes",
		               g->url, g->max_bytes);
	if (x->header_too_big)
		return err_set(err, ERR_NET,
		               "GET %s: the WWW-Authenticate header exceeds the limit of %u bytes",
		               g->url, (unsigned)LIMIT_REGISTRY_HEADER);
	if (rc == CURLE_OK)
		return 0;
	const char *detail = http_engine_detail(&h->eng, rc);
	const char *hint = "";
	if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE)
		hint = " (is the server's CA in the system bundle or KRMPOD_REGISTRY_CA?)";
	else if (rc == CURLE_UNSUPPORTED_PROTOCOL || rc == CURLE_TOO_MANY_REDIRECTS)
		hint = " (redirects are followed to https:// URLs only, at most 5)";
	return err_set(err, ERR_NET, "GET %s: %s%s", g->url, detail, hint);
}

/* One exchange, no retry. */
static int get_once(struct registry_http *h, const struct registry_get *g, struct xfer *x,
                    struct err **err)
{
	struct registry_response *r = x->r;
	r->status = 0;
	buf_reset(&r->body);
	buf_reset(&r->challenge);
	x->retry_after[0] = '\0';
	x->too_big = x->header_too_big = false;
	cleanup_slist struct curl_slist *headers = NULL;
	setup_transfer(h, g, x, &headers);
	int64_t t0 = now_ms();
	bool stopped = false;
	CURLcode rc = http_engine_run(&h->eng, &h->stop, &stopped);
	curl_easy_setopt(h->eng.curl, CURLOPT_HTTPHEADER, NULL);
	curl_easy_getinfo(h->eng.curl, CURLINFO_RESPONSE_CODE, &r->status);
	char *effective = NULL;
	curl_easy_getinfo(h->eng.curl, CURLINFO_EFFECTIVE_URL, &effective);
	free(r->url);
	r->url = xstrdup(effective ? effective : g->url);
	log_debug("GET %s -> %ld in %lld ms", g->url, r->status, (long long)(now_ms() - t0));
	return transfer_result(h, g, x, rc, stopped, err);
}

int registry_http_get(struct registry_http *h, const struct registry_get *g,
                      struct registry_response *r, struct err **err)
{
	if (!registry_url_allowed(h->o, g->url))
		return err_set(err, ERR_CONFIG, "GET %s: only https:// URLs are fetched", g->url);
	h->stop = (struct http_stop){.cancel = h->o->cancel, .deadline_ms = h->o->deadline_ms};
	if (http_check_stop(&h->stop, "GET", g->url, err) < 0)
		return -1;
	struct xfer x = {.curl = h->eng.curl, .r = r, .max_bytes = g->max_bytes};
	for (int retries = 0;; retries++) {
		if (get_once(h, g, &x, err) < 0)
			return -1;
		int64_t wait = http_retry_wait_ms(&RETRIES, &h->stop, "GET", g->url, r->status,
		                                  x.retry_after, NULL, retries);
		if (wait < 0)
			return 0;
		if (http_wait(&h->stop, "GET", g->url, wait, err) < 0)
			return -1;
	}
}

int registry_https_get(const struct registry_opts *o, const char *url, size_t max_bytes,
                       struct buf *out, struct err **err)
{
	cleanup_registry_http struct registry_http *h = NULL;
	if (registry_http_new(o, &h, err) < 0)
		return -1;
	struct registry_response r;
	registry_response_init(&r);
	struct registry_get g = {.url = url, .max_bytes = max_bytes, .follow = true};
	int rc = registry_http_get(h, &g, &r, err);
	if (rc == 0 && (r.status < 200 || r.status > 299))
		rc = registry_http_status_error(url, &r, ERR_NET, err);
	if (rc == 0)
		rc = buf_append(out, r.body.data, r.body.len, url, err);
	registry_response_free(&r);
	return rc;
}

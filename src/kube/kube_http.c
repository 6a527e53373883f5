/* kube_http.c — see kube_http.h.
 *
 * Transfers run on the engine of http/http_xfer.h (one easy and one multi handle per client,
 * driven in 50 ms slices that check the cancel flag and the deadline; the retry policy per
 * method). What is the API server's own here: the TLS and CONNECT_TO set-up of a
 * kubeconfig, the bearer token (re-read once after a 401), Status errors, and the limits:
 * connecting may take 10 s (or what is left before the deadline); a non-streaming request
 * may take 60 s (or what is left). Streams have no total limit of their own (a watch ends by
 * its timeoutSeconds; the caller sets a deadline around it) and run with TCP keepalive so a
 * dead peer is noticed.
 */
#include "kube/kube_http.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "http/http_util.h"
#include "http/http_xfer.h"

#define CONNECT_TIMEOUT_MS 10000 /* connecting (TCP + TLS) */
#define REQUEST_TIMEOUT_MS 60000 /* a whole non-streaming request */
#define ERROR_QUOTE_MAX    512   /* bytes of a non-Status error body quoted in messages */
#define ERROR_CAUSES_MAX   3     /* causes of a 400/422 added to the message */
#define TCP_KEEPIDLE_S     30
#define TCP_KEEPINTVL_S    10

/* Retries after the first attempt (429, 5xx of idempotent methods, connection failures):
 * 5, after Retry-After or 100, 200, 400... ms, each wait at most 10 s. */
static const struct http_retry_policy RETRIES = {
        .max_retries = 5, .base_ms = 100, .cap_ms = 10000, .longer_stands = false};

struct kube_client {
	struct kube_config *cfg; /* borrowed */
	struct http_engine eng;
	struct http_stop stop;         /* the cancel flag and the deadline */
	char *base_url;                /* scheme://host:port[/prefix], host = tls_server_name */
	struct curl_slist *connect_to; /* "name:port:realhost:port" when tls_server_name is set */
	unsigned requests;
	time_t server_time; /* the Date of the last answer: the API server's clock; 0: none */
};

/* One request as the caller asked for it. */
struct req {
	const char *method;
	const char *path;
	const char *content_type;
	const char *body;
	size_t body_len;
	bool stream;
	kube_data_fn on_data;
	void *ud;
};

/* The state of one HTTP exchange, shared with curl's callbacks. */
struct xfer {
	CURL *curl;
	const struct req *req;
	struct buf body;   /* the response body (for streams: only a non-2xx body) */
	long status;       /* known from the first body byte on, and after the transfer */
	bool stopped;      /* the stream's on_data asked to stop */
	bool body_too_big; /* the body passed LIMIT_API_BODY */
	char retry_after[HTTP_RETRY_AFTER_MAX_LEN];
	char date[HTTP_RETRY_AFTER_MAX_LEN];
};

/* --- Errors ----------------------------------------------------------------------------- */

/* The Status reason the API server uses for a status code (for answers that carry no
 * Status); the HTTP phrase is http/http_util.c's. */
static const struct {
	long status;
	const char *reason;
} status_names[] = {
        {400, "BadRequest"},
        {401, "Unauthorized"},
        {403, "Forbidden"},
        {404, "NotFound"},
        {405, "MethodNotAllowed"},
        {406, "NotAcceptable"},
        {409, "Conflict"},
        {410, "Expired"},
        {413, "RequestEntityTooLarge"},
        {415, "UnsupportedMediaType"},
        {422, "Invalid"},
        {429, "TooManyRequests"},
        {500, "InternalError"},
        {502, ""},
        {503, "ServiceUnavailable"},
        {504, "Timeout"},
};

const char *kube_status_reason(long status)
{
	for (size_t i = 0; i < sizeof(status_names) / sizeof(status_names[0]); i++)
		if (status_names[i].status == status)
			return status_names[i].reason;
	return "";
}

/* Appends the causes of a Status that its message does not already contain. */
static void add_causes(struct buf *out, const struct json *status, const char *message)
{
	const struct json *causes = json_path(status, "details.causes");
	size_t added = 0;
	for (size_t i = 0; i < json_len(causes) && added < ERROR_CAUSES_MAX; i++) {
		const struct json *cause = json_at(causes, i);
		const char *cmsg = json_str(json_get(cause, "message"));
		const char *field = json_str(json_get(cause, "field"));
		if (cmsg == NULL || *cmsg == '\0' || strstr(message, cmsg) != NULL)
			continue;
		buf_puts(out, added == 0 ? " (" : "; ");
		if (field && *field)
			buf_printf(out, "%s: ", field);
		buf_puts(out, cmsg);
		added++;
	}
	if (added > 0) {
		if (json_len(causes) > added && added == ERROR_CAUSES_MAX)
			buf_puts(out, "; ...");
		buf_putc(out, ')');
	}
}

int kube_status_error(const char *method, const char *path, long status, const char *body,
                      size_t body_len, struct err **err)
{
	if (body == NULL)
		body_len = 0;
	cleanup_json struct json *doc = NULL;
	const struct json *st = NULL;
	if (body_len > 0 && json_parse(body, body_len, "API error response", &doc, NULL) == 0) {
		const char *kind = json_str(json_get(doc, "kind"));
		if (kind && strcmp(kind, "Status") == 0)
			st = doc;
	}
	const char *reason = st ? json_str(json_get(st, "reason")) : NULL;
	if (reason == NULL || *reason == '\0')
		reason = NULL;

	cleanup_buf struct buf text;
	buf_init(&text, 0);
	buf_printf(&text, "%ld %s: ", status, reason ? reason : http_status_phrase(status));
	if (st) {
		const char *message = json_str(json_get(st, "message"));
		if (message == NULL || *message == '\0')
			message = reason ? reason : http_status_phrase(status);
		buf_puts(&text, message);
		if (status == 400 || status == 422)
			add_causes(&text, st, message);
	} else if (!http_quote_body(&text, body, body_len, ERROR_QUOTE_MAX)) {
		buf_puts(&text, "(empty body)");
	}

	/* A full ResourceQuota: the quota admission plugin's 403 Forbidden, which no field tells
	 * from an RBAC refusal; its message says "exceeded quota" (k8s.io/apiserver's
	 * resourcequota admission), so that is read here, once, into err->cause. */
	const char *st_message = st ? json_str(json_get(st, "message")) : NULL;
	bool quota = status == 403 && st_message && strstr(st_message, "exceeded quota") != NULL;
	err_set(err, ERR_API, "%s %s: %s", method, path, text.data);
	if (err) {
		(*err)->http_status = (int)status;
		(*err)->cause = quota ? ERR_CAUSE_QUOTA : ERR_CAUSE_NONE;
		snprintf((*err)->reason, sizeof((*err)->reason), "%s",
		         reason ? reason : kube_status_reason(status));
	}
	return -1;
}

/* --- The client ------------------------------------------------------------------------- */

static size_t on_write(char *p, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	size_t len = size * n;
	if (x->status == 0)
		curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &x->status);
	if (x->req->on_data && x->status >= 200 && x->status < 300) {
		if (x->req->on_data(p, len, x->req->ud) != 0) {
			x->stopped = true;
			return 0; /* stops the transfer with CURLE_WRITE_ERROR */
		}
		return len;
	}
	if (buf_append(&x->body, p, len, "API response body", NULL) < 0) {
		x->body_too_big = true;
		return 0;
	}
	return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	size_t len = size * n;
	if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) {
		x->retry_after[0] = '\0'; /* a new response (after a 1xx) */
		x->date[0] = '\0';
	} else {
		http_keep_retry_after(p, len, x->retry_after);
		http_keep_header("Date:", p, len, x->date);
	}
	return len;
}

/* Base URL and CONNECT_TO entry: with tls_server_name the URL names that host (curl then
 * sends it as SNI and verifies the certificate against it) while CONNECT_TO sends the
 * connection to the real server. The server's path prefix stays in the base URL. */
static void setup_url(struct kube_client *c)
{
	const struct kube_config *cfg = c->cfg;
	const char *name = cfg->tls_server_name;
	if (name == NULL || *name == '\0') {
		c->base_url = xstrdup(cfg->server);
		return;
	}
	const struct kube_server *srv = &cfg->srv;
	bool v6 = strchr(name, ':') != NULL, host_v6 = strchr(srv->host, ':') != NULL;
	c->base_url = xasprintf("%s://%s%s%s:%d%s", srv->scheme, v6 ? "[" : "", name, v6 ? "]" : "",
	                        srv->port, srv->prefix);
	cleanup_free char *entry =
	        xasprintf("%s%s%s:%d:%s%s%s:%d", v6 ? "[" : "", name, v6 ? "]" : "", srv->port,
	                  host_v6 ? "[" : "", srv->host, host_v6 ? "]" : "", srv->port);
	c->connect_to = curl_slist_append(NULL, entry);
}

static int set_blob(CURL *curl, CURLoption opt, const char *data, size_t len, const char *what,
                    struct err **err)
{
	struct curl_blob blob = {.data = (void *)data, .len = len, .flags = CURL_BLOB_COPY};
	CURLcode rc = curl_easy_setopt(curl, opt, &blob);
	if (rc != CURLE_OK)
		return err_set(err, ERR_CONFIG, "cannot use the %s: %s (libcurl %s)", what,
		               curl_easy_strerror(rc), curl_version());
	return 0;
}

static int setup_tls(struct kube_client *c, struct err **err)
{
	struct kube_config *cfg = c->cfg;
	CURL *curl = c->eng.curl;
	const char *ca_pem, *ca_file;
	size_t ca_len;
	kube_config_ca(cfg, &ca_pem, &ca_len, &ca_file);
	if (cfg->insecure) {
		curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
	} else if (ca_pem) {
		if (set_blob(curl, CURLOPT_CAINFO_BLOB, ca_pem, ca_len, "certificate authority",
		             err) < 0)
			return -1;
	} else if (ca_file) {
		curl_easy_setopt(curl, CURLOPT_CAINFO, ca_file);
	}
	if (cfg->cert_pem) {
		curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
		if (set_blob(curl, CURLOPT_SSLCERT_BLOB, cfg->cert_pem, cfg->cert_len,
		             "client certificate", err) < 0)
			return -1;
	}
	if (cfg->key_pem) {
		curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
		/* mbedtls_pk_parse_key() reads PEM only when the length counts the final NUL
		 * (curl passes the blob as is; kubeconfig's blobs are NUL-terminated). */
		if (set_blob(curl, CURLOPT_SSLKEY_BLOB, cfg->key_pem, cfg->key_len + 1,
		             "client key", err) < 0)
			return -1;
	}
	return 0;
}

/* One process-wide share for every client: TLS sessions and DNS answers, so the REST client
 * and the watch thread's client can resume a session instead of each doing a full
 * handshake. (Against kubesim, TLS 1.3 with tickets issued after the handshake, the
 * benchmark shows no measurable CPU change; docs/benchmarks.md.) Locked per data kind. */
static CURLSH *share;
static pthread_once_t share_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *ud)
{
	(void)h, (void)access, (void)ud;
	pthread_mutex_lock(&share_locks[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *ud)
{
	(void)h, (void)ud;
	pthread_mutex_unlock(&share_locks[data]);
}

static void share_init(void)
{
	for (size_t i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&share_locks[i], NULL);
	share = curl_share_init();
	if (share == NULL)
		return; /* no sharing: every client does its own handshakes */
	curl_share_setopt(share, CURLSHOPT_LOCKFUNC, share_lock);
	curl_share_setopt(share, CURLSHOPT_UNLOCKFUNC, share_unlock);
	curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
	curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
}

int kube_client_new(struct kube_config *cfg, struct kube_client **out, struct err **err)
{
	if (http_global_init(err) < 0)
		return -1;
	struct kube_client *c = xcalloc(1, sizeof(*c));
	c->cfg = cfg;
	if (http_engine_init(&c->eng, "https,http", on_write, on_header, err) < 0) {
		kube_client_free(c);
		return -1;
	}
	CURL *curl = c->eng.curl;
	curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(curl, CURLOPT_TCP_KEEPIDLE, (long)TCP_KEEPIDLE_S);
	curl_easy_setopt(curl, CURLOPT_TCP_KEEPINTVL, (long)TCP_KEEPINTVL_S);
	setup_url(c);
	if (setup_tls(c, err) < 0) {
		kube_client_free(c);
		return -1;
	}
	if (c->connect_to)
		curl_easy_setopt(curl, CURLOPT_CONNECT_TO, c->connect_to);
	pthread_once(&share_once, share_init);
	if (share)
		curl_easy_setopt(curl, CURLOPT_SHARE, share);
	*out = c;
	return 0;
}

void kube_client_free(struct kube_client *c)
{
	if (c == NULL)
		return;
	http_engine_clear(&c->eng);
	curl_slist_free_all(c->connect_to);
	free(c->base_url);
	free(c);
}

int kube_parse_time(const char *text, time_t *out)
{
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	const char *end = text ? strptime(text, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
	if (end == NULL)
		return -1;
	if (*end == '.') /* fractional seconds (MicroTime) */
		while (*++end >= '0' && *end <= '9')
			;
	if (strcmp(end, "Z") != 0)
		return -1;
	*out = timegm(&tm);
	return 0;
}

void kube_client_wakeup(struct kube_client *c)
{
	curl_multi_wakeup(c->eng.multi); /* thread-safe (libcurl docs) */
}

void kube_client_set_cancel(struct kube_client *c, atomic_int *flag)
{
	c->stop.cancel = flag;
}

atomic_int *kube_client_get_cancel(const struct kube_client *c)
{
	return c->stop.cancel;
}

void kube_client_set_deadline(struct kube_client *c, int64_t deadline_ms)
{
	c->stop.deadline_ms = deadline_ms;
}

time_t kube_client_server_time(const struct kube_client *c)
{
	return c->server_time;
}

unsigned kube_client_requests(const struct kube_client *c)
{
	return c->requests;
}

/* --- Running one exchange ----------------------------------------------------------------- */

static long min_long(long a, long b)
{
	return a < b ? a : b;
}

/* Sets c->curl up for r: URL (the server's base with its path prefix, then r->path),
 * headers (kept in *headers until the transfer is done), body, method and timeouts. */
static void setup_transfer(struct kube_client *c, const struct req *r, const char *token,
                           struct xfer *x, struct curl_slist **headers)
{
	*headers = curl_slist_append(*headers, "Accept: application/json");
	*headers = curl_slist_append(*headers, "Expect:");
	if (r->body) {
		cleanup_free char *ctype = xasprintf(
		        "Content-Type: %s", r->content_type ? r->content_type : "application/json");
		*headers = curl_slist_append(*headers, ctype);
	}
	if (token) {
		cleanup_free char *auth = xasprintf("Authorization: Bearer %s", token);
		*headers = curl_slist_append(*headers, auth);
	}
	cleanup_free char *url = xasprintf("%s%s", c->base_url, r->path);
	CURL *curl = c->eng.curl;
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, *headers);
	if (r->body) {
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, r->body);
		curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
	} else {
		curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
	}
	curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST,
	                 strcmp(r->method, r->body ? "POST" : "GET") == 0 ? NULL : r->method);
	long left =
	        c->stop.deadline_ms ? (long)(c->stop.deadline_ms - now_ms()) : REQUEST_TIMEOUT_MS;
	if (left < 1)
		left = 1;
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, min_long(CONNECT_TIMEOUT_MS, left));
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS,
	                 r->stream ? 0L : min_long(REQUEST_TIMEOUT_MS, left));
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(curl, CURLOPT_HEADERDATA, x);
}

/* What a finished transfer means (attempt()); ms is how long it took. */
static int transfer_result(struct kube_client *c, const struct req *r, struct xfer *x, CURLcode rc,
                           bool stopped, long ms, bool *retry, struct err **err)
{
	if (stopped) {
		log_debug("%s %s -> stopped (cancel or deadline) after %ld ms", r->method, r->path,
		          ms);
		if (http_check_stop(&c->stop, r->method, r->path, err) < 0)
			return -1;
		return err_set(err, ERR_INTERNAL, "%s %s: transfer aborted", r->method, r->path);
	}
	if (x->stopped) {
		log_debug("%s %s -> %ld, stopped by the reader after %ld ms", r->method, r->path,
		          x->status, ms);
		return 0;
	}
	if (x->body_too_big) {
		log_debug("%s %s -> %ld, body too large after %ld ms", r->method, r->path,
		          x->status, ms);
		return err_set(err, ERR_NET,
		               "%s %s: the response body exceeds the limit of %u bytes", r->method,
		               r->path, (unsigned)LIMIT_API_BODY);
	}
	if (rc == CURLE_OK) {
		log_debug("%s %s -> %ld in %ld ms", r->method, r->path, x->status, ms);
		return 0;
	}
	const char *detail = http_engine_detail(&c->eng, rc);
	log_debug("%s %s -> error after %ld ms: %s", r->method, r->path, ms, detail);
	if (rc == CURLE_OPERATION_TIMEDOUT &&
	    http_check_stop(&c->stop, r->method, r->path, err) < 0)
		return -1;
	*retry = http_failure_retryable(r->method, rc);
	if (x->status != 0 && r->stream)
		return err_set(err, ERR_NET, "%s %s: the stream broke: %s", r->method, r->path,
		               detail);
	return err_set(err, ERR_NET, "%s %s: %s (API server %s from %s)", r->method, r->path,
	               detail, c->cfg->server, c->cfg->source);
}

/* Sends the request once. Returns 0 when an answer arrived (x->status, x->body), or -1 with
 * *err: ERR_SIGNAL, ERR_TIMEOUT, ERR_CONFIG (token), ERR_NET (*retry tells whether the
 * request may be sent again). */
static int attempt(struct kube_client *c, const struct req *r, bool reread_token, struct xfer *x,
                   bool *retry, struct err **err)
{
	*retry = false;
	if (http_check_stop(&c->stop, r->method, r->path, err) < 0)
		return -1;
	cleanup_free char *token = NULL;
	if (kube_config_token(c->cfg, reread_token, &token, err) < 0)
		return err_wrap(err, "%s %s", r->method, r->path);
	cleanup_slist struct curl_slist *headers = NULL;
	setup_transfer(c, r, token, x, &headers);
	c->requests++;
	int64_t t0 = now_ms();
	bool stopped;
	CURLcode rc = http_engine_run(&c->eng, &c->stop, &stopped);
	long ms = (long)(now_ms() - t0);
	curl_easy_setopt(c->eng.curl, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(c->eng.curl, CURLOPT_POSTFIELDS, NULL);
	if (x->status == 0)
		curl_easy_getinfo(c->eng.curl, CURLINFO_RESPONSE_CODE, &x->status);
	return transfer_result(c, r, x, rc, stopped, ms, retry, err);
}

/* Sends r with the retries described in the header. On return x holds the last answer. */
static int do_request(struct kube_client *c, const struct req *r, struct xfer *x, long *out_status,
                      struct err **err)
{
	bool reread_token = false, token_retried = false;
	int retries = 0;
	x->curl = c->eng.curl;
	x->req = r;
	if (out_status)
		*out_status = 0;
	for (;;) {
		buf_reset(&x->body);
		x->status = 0;
		x->stopped = x->body_too_big = false;
		x->retry_after[0] = x->date[0] = '\0';
		bool retry = false;
		cleanup_err struct err *e = NULL;
		int rc = attempt(c, r, reread_token, x, &retry, &e);
		reread_token = false;
		if (rc < 0) {
			int64_t wait = retry && !r->stream
			                       ? http_retry_wait_ms(&RETRIES, &c->stop, r->method,
			                                            r->path, 0, "", e->msg, retries)
			                       : -1;
			if (wait >= 0) {
				if (http_wait(&c->stop, r->method, r->path, wait, err) < 0)
					return -1;
				retries++;
				continue;
			}
			if (err) {
				*err = e;
				e = NULL;
			}
			return -1;
		}
		if (out_status)
			*out_status = x->status;
		time_t date;
		if (http_parse_date(x->date, &date) == 0)
			c->server_time = date;
		if (x->status >= 200 && x->status < 300)
			return 0;
		if (x->status == 401 && !token_retried && c->cfg->token_file) {
			log_info("%s %s: 401 Unauthorized; re-reading the token and retrying",
			         r->method, r->path);
			reread_token = token_retried = true;
			continue;
		}
		int64_t wait = http_retry_wait_ms(&RETRIES, &c->stop, r->method, r->path, x->status,
		                                  x->retry_after, NULL, retries);
		if (wait >= 0) {
			if (http_wait(&c->stop, r->method, r->path, wait, err) < 0)
				return -1;
			retries++;
			continue;
		}
		return kube_status_error(r->method, r->path, x->status, x->body.data, x->body.len,
		                         err);
	}
}

int kube_request(struct kube_client *c, const char *method, const char *path,
                 const char *content_type, const char *body, size_t body_len, long *out_status,
                 struct json **out_json, struct err **err)
{
	struct req r = {
	        .method = method,
	        .path = path,
	        .content_type = content_type,
	        .body = body,
	        .body_len = body ? body_len : 0,
	};
	struct xfer x = {0};
	buf_init(&x.body, LIMIT_API_BODY);
	if (out_json)
		*out_json = NULL;
	int rc = do_request(c, &r, &x, out_status, err);
	if (rc == 0 && out_json && x.body.len > 0 &&
	    json_parse(x.body.data, x.body.len, "API response", out_json, err) < 0)
		rc = err_wrap(err, "%s %s", method, path);
	buf_free(&x.body);
	return rc;
}

int kube_stream_get(struct kube_client *c, const char *path, kube_data_fn on_data, void *ud,
                    struct err **err)
{
	struct req r = {
	        .method = "GET",
	        .path = path,
	        .stream = true,
	        .on_data = on_data,
	        .ud = ud,
	};
	struct xfer x = {0};
	buf_init(&x.body, LIMIT_API_BODY);
	int rc = do_request(c, &r, &x, NULL, err);
	buf_free(&x.body);
	return rc;
}

/* kube_http.c — see kube_http.h.
 *
 * How transfers run: each client owns one CURL easy handle and one CURL multi handle, and
 * drives the transfer itself (curl_multi_perform + curl_multi_poll with a 50 ms timeout).
 * Between two polls it checks the cancel flag and the deadline, so a signal, a deadline or
 * pod_watch_stop() ends any transfer — a long idle watch included — within ~50 ms. (With
 * curl_easy_perform the progress callback runs only about once a second on an idle
 * connection.) The multi handle also holds the client's connection cache, so consecutive
 * requests of a client reuse one TLS connection.
 *
 * Time limits: connecting may take 10 s (or what is left before the deadline); a
 * non-streaming request may take 60 s (or what is left). Streams have no total limit of
 * their own (a watch ends by its timeoutSeconds; the caller sets a deadline around it) and
 * run with TCP keepalive so a dead peer is noticed.
 *
 * HTTP/1.1 is used throughout: one request at a time per client, and the same protocol the
 * attach path speaks.
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
#include "base/http_util.h"
#include "base/log.h"
#include "base/size_limits.h"
#include "base/xalloc.h"

#ifndef KRMPOD_VERSION
#define KRMPOD_VERSION "0.0.0-dev"
#endif

#define POLL_SLICE_MS      50    /* longest time between two checks of cancel/deadline */
#define CONNECT_TIMEOUT_MS 10000 /* connecting (TCP + TLS) */
#define REQUEST_TIMEOUT_MS 60000 /* a whole non-streaming request */
#define MAX_RETRIES        5     /* retries after the first attempt (429, 5xx, connection) */
#define RETRY_WAIT_CAP_MS  10000 /* longest single wait, Retry-After included */
#define RETRY_BASE_MS      100   /* backoff without Retry-After: 100, 200, 400... ms */
#define ERROR_QUOTE_MAX    512   /* bytes of a non-Status error body quoted in messages */
#define ERROR_CAUSES_MAX   3     /* causes of a 400/422 added to the message */
#define TCP_KEEPIDLE_S     30
#define TCP_KEEPINTVL_S    10

struct kube_client {
	struct kube_config *cfg; /* borrowed */
	CURL *curl;
	CURLM *multi;
	char *base_url;                /* scheme://host:port[/prefix], host = tls_server_name */
	struct curl_slist *connect_to; /* "name:port:realhost:port" when tls_server_name is set */
	atomic_int *cancel;
	int64_t deadline_ms;
	unsigned requests;
	char errbuf[CURL_ERROR_SIZE];
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
};

enum abort_reason { ABORT_NONE, ABORT_CANCEL, ABORT_DEADLINE };

/* --- Errors ----------------------------------------------------------------------------- */

/* The Status reason the API server uses for a status code (for answers that carry no
 * Status); the HTTP phrase is base/http_util.c's. */
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

/* Quotes a body that is not a Status, cut to ERROR_QUOTE_MAX bytes on a UTF-8 boundary. */
static void quote_body(struct buf *out, const char *body, size_t len)
{
	while (len > 0 && isspace((unsigned char)body[len - 1]))
		len--;
	if (len == 0) {
		buf_puts(out, "(empty body)");
		return;
	}
	size_t n = len;
	if (n > ERROR_QUOTE_MAX) {
		n = ERROR_QUOTE_MAX;
		while (n > 0 && ((unsigned char)body[n] & 0xC0) == 0x80)
			n--;
	}
	buf_putc(out, '"');
	json_escape(out, body, n);
	buf_putc(out, '"');
	if (n < len)
		buf_printf(out, " (%zu more bytes)", len - n);
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
	} else {
		quote_body(&text, body, body_len);
	}

	err_set(err, ERR_API, "%s %s: %s", method, path, text.data);
	if (err) {
		(*err)->http_status = (int)status;
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
	if (len >= 5 && memcmp(p, "HTTP/", 5) == 0)
		x->retry_after[0] = '\0'; /* a new response (after a 1xx) */
	else
		http_keep_retry_after(p, len, x->retry_after);
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
	CURL *curl = c->curl;
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
	c->curl = curl_easy_init();
	c->multi = curl_multi_init();
	if (c->curl == NULL || c->multi == NULL) {
		kube_client_free(c);
		return err_set(err, ERR_INTERNAL, "cannot create a curl handle");
	}
	CURL *curl = c->curl;
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_USERAGENT, "krmpod/" KRMPOD_VERSION);
	curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, c->errbuf);
	curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "https,http");
	curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(curl, CURLOPT_TCP_KEEPIDLE, (long)TCP_KEEPIDLE_S);
	curl_easy_setopt(curl, CURLOPT_TCP_KEEPINTVL, (long)TCP_KEEPINTVL_S);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
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
	if (c->curl)
		curl_easy_cleanup(c->curl);
	if (c->multi)
		curl_multi_cleanup(c->multi);
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
	curl_multi_wakeup(c->multi); /* thread-safe (libcurl docs) */
}

void kube_client_set_cancel(struct kube_client *c, atomic_int *flag)
{
	c->cancel = flag;
}

atomic_int *kube_client_get_cancel(const struct kube_client *c)
{
	return c->cancel;
}

void kube_client_set_deadline(struct kube_client *c, int64_t deadline_ms)
{
	c->deadline_ms = deadline_ms;
}

unsigned kube_client_requests(const struct kube_client *c)
{
	return c->requests;
}

/* --- Running one exchange ----------------------------------------------------------------- */

/* Fails with ERR_SIGNAL / ERR_TIMEOUT if the client was cancelled or its deadline passed. */
static int check_stop(struct kube_client *c, const struct req *r, struct err **err)
{
	if (c->cancel && *c->cancel) {
		int signo = *c->cancel;
		err_set(err, ERR_SIGNAL, "%s %s: interrupted by signal %d", r->method, r->path,
		        signo);
		if (err)
			(*err)->signo = signo;
		return -1;
	}
	if (c->deadline_ms && now_ms() >= c->deadline_ms)
		return err_set(err, ERR_TIMEOUT, "%s %s: the deadline passed", r->method, r->path);
	return 0;
}

/* Runs the transfer set up on c->curl to its end, or until cancellation or the deadline. */
static CURLcode run_transfer(struct kube_client *c, enum abort_reason *abort_reason)
{
	*abort_reason = ABORT_NONE;
	if (curl_multi_add_handle(c->multi, c->curl) != CURLM_OK)
		return CURLE_FAILED_INIT;
	CURLcode result = CURLE_OK;
	for (;;) {
		int running = 0;
		CURLMcode mc = curl_multi_perform(c->multi, &running);
		if (mc != CURLM_OK) {
			snprintf(c->errbuf, sizeof(c->errbuf), "%s", curl_multi_strerror(mc));
			result = CURLE_RECV_ERROR;
			break;
		}
		if (running == 0) {
			int left = 0;
			CURLMsg *msg;
			result = CURLE_GOT_NOTHING;
			while ((msg = curl_multi_info_read(c->multi, &left)) != NULL)
				if (msg->msg == CURLMSG_DONE && msg->easy_handle == c->curl)
					result = msg->data.result;
			break;
		}
		if (c->cancel && *c->cancel) {
			*abort_reason = ABORT_CANCEL;
			break;
		}
		int timeout = POLL_SLICE_MS;
		if (c->deadline_ms) {
			int64_t left = c->deadline_ms - now_ms();
			if (left <= 0) {
				*abort_reason = ABORT_DEADLINE;
				break;
			}
			if (left < timeout)
				timeout = (int)left;
		}
		mc = curl_multi_poll(c->multi, NULL, 0, timeout, NULL);
		if (mc != CURLM_OK) {
			snprintf(c->errbuf, sizeof(c->errbuf), "%s", curl_multi_strerror(mc));
			result = CURLE_RECV_ERROR;
			break;
		}
	}
	curl_multi_remove_handle(c->multi, c->curl);
	return result;
}

/* Connection-level failures after which the request may be sent again. `sent` failures
 * (the request may have reached the server) only count for idempotent methods. */
static bool conn_retryable(CURLcode rc, bool idempotent)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
		return true; /* nothing was sent */
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return idempotent;
	default:
		return false;
	}
}

static bool idempotent(const char *method)
{
	return strcmp(method, "GET") == 0 || strcmp(method, "DELETE") == 0 ||
	       strcmp(method, "HEAD") == 0;
}

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
	CURL *curl = c->curl;
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
	long left = c->deadline_ms ? (long)(c->deadline_ms - now_ms()) : REQUEST_TIMEOUT_MS;
	if (left < 1)
		left = 1;
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, min_long(CONNECT_TIMEOUT_MS, left));
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS,
	                 r->stream ? 0L : min_long(REQUEST_TIMEOUT_MS, left));
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(curl, CURLOPT_HEADERDATA, x);
	c->errbuf[0] = '\0';
}

/* What a finished transfer means (attempt()); ms is how long it took. */
static int transfer_result(struct kube_client *c, const struct req *r, struct xfer *x, CURLcode rc,
                           enum abort_reason why, long ms, bool *retry, struct err **err)
{
	if (why != ABORT_NONE) {
		log_debug("%s %s -> %s after %ld ms", r->method, r->path,
		          why == ABORT_CANCEL ? "cancelled" : "deadline", ms);
		if (check_stop(c, r, err) < 0)
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
	size_t n = strlen(c->errbuf);
	while (n > 0 && isspace((unsigned char)c->errbuf[n - 1]))
		c->errbuf[--n] = '\0'; /* mbedTLS messages may end in a newline */
	const char *detail = c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc);
	log_debug("%s %s -> error after %ld ms: %s", r->method, r->path, ms, detail);
	if (rc == CURLE_OPERATION_TIMEDOUT && check_stop(c, r, err) < 0)
		return -1;
	*retry = conn_retryable(rc, idempotent(r->method));
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
	if (check_stop(c, r, err) < 0)
		return -1;
	cleanup_free char *token = NULL;
	if (kube_config_token(c->cfg, reread_token, &token, err) < 0)
		return err_wrap(err, "%s %s", r->method, r->path);
	cleanup_slist struct curl_slist *headers = NULL;
	setup_transfer(c, r, token, x, &headers);
	c->requests++;
	int64_t t0 = now_ms();
	enum abort_reason why;
	CURLcode rc = run_transfer(c, &why);
	long ms = (long)(now_ms() - t0);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, NULL);
	if (x->status == 0)
		curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &x->status);
	return transfer_result(c, r, x, rc, why, ms, retry, err);
}

/* Waits `ms` in POLL_SLICE_MS slices, failing early on cancellation. */
static int retry_wait(struct kube_client *c, const struct req *r, int64_t ms, struct err **err)
{
	int64_t until = now_ms() + ms;
	for (;;) {
		if (check_stop(c, r, err) < 0)
			return -1;
		int64_t left = until - now_ms();
		if (left <= 0)
			return 0;
		if (left > POLL_SLICE_MS)
			left = POLL_SLICE_MS;
		struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)left * 1000000};
		nanosleep(&ts, NULL);
	}
}

/* Whether a wait of `ms` ends before the deadline. */
static bool fits_deadline(const struct kube_client *c, int64_t ms)
{
	return c->deadline_ms == 0 || now_ms() + ms < c->deadline_ms;
}

static int64_t backoff_ms(int retries)
{
	int64_t ms = (int64_t)RETRY_BASE_MS << retries;
	return ms > RETRY_WAIT_CAP_MS ? RETRY_WAIT_CAP_MS : ms;
}

/* After a 429 or 5xx answer: waits for the retry (Retry-After, else the backoff) and
 * returns 1, or 0 when it is not retried (too many retries, or the deadline comes first),
 * or -1 when the wait was cancelled. */
static int retry_status(struct kube_client *c, const struct req *r, const struct xfer *x,
                        int retries, struct err **err)
{
	if ((x->status != 429 && (x->status < 500 || x->status > 599)) || retries >= MAX_RETRIES)
		return 0;
	/* A 5xx may come after the server applied the request: a POST or PATCH is not sent
	 * again (429 is refused before any work, so it is). Its caller knows how to find out. */
	if (x->status != 429 && !idempotent(r->method))
		return 0;
	int64_t hinted = http_retry_after_ms(x->retry_after, time(NULL));
	int64_t wait = hinted >= 0 ? hinted : backoff_ms(retries);
	if (wait > RETRY_WAIT_CAP_MS)
		wait = RETRY_WAIT_CAP_MS;
	if (!fits_deadline(c, wait)) {
		log_info("%s %s: %ld %s; not retrying: the deadline comes first", r->method,
		         r->path, x->status, http_status_phrase(x->status));
		return 0;
	}
	log_info("%s %s: %ld %s; retrying in %lld ms%s (retry %d of %d)", r->method, r->path,
	         x->status, http_status_phrase(x->status), (long long)wait,
	         hinted >= 0 ? " (Retry-After)" : "", retries + 1, MAX_RETRIES);
	return retry_wait(c, r, wait, err) < 0 ? -1 : 1;
}

/* Sends r with the retries described in the header. On return x holds the last answer. */
static int do_request(struct kube_client *c, const struct req *r, struct xfer *x, long *out_status,
                      struct err **err)
{
	bool reread_token = false, token_retried = false;
	int retries = 0;
	x->curl = c->curl;
	x->req = r;
	if (out_status)
		*out_status = 0;
	for (;;) {
		buf_reset(&x->body);
		x->status = 0;
		x->stopped = x->body_too_big = false;
		x->retry_after[0] = '\0';
		bool retry = false;
		cleanup_err struct err *e = NULL;
		int rc = attempt(c, r, reread_token, x, &retry, &e);
		reread_token = false;
		if (rc < 0) {
			if (retry && !r->stream && retries < MAX_RETRIES) {
				int64_t wait = backoff_ms(retries);
				if (fits_deadline(c, wait)) {
					log_info("%s; retrying in %lld ms (retry %d of %d)", e->msg,
					         (long long)wait, retries + 1, MAX_RETRIES);
					if (retry_wait(c, r, wait, err) < 0)
						return -1;
					retries++;
					continue;
				}
			}
			if (err) {
				*err = e;
				e = NULL;
			}
			return -1;
		}
		if (out_status)
			*out_status = x->status;
		if (x->status >= 200 && x->status < 300)
			return 0;
		if (x->status == 401 && !token_retried && c->cfg->token_file) {
			log_info("%s %s: 401 Unauthorized; re-reading the token and retrying",
			         r->method, r->path);
			reread_token = token_retried = true;
			continue;
		}
		int again = retry_status(c, r, x, retries, err);
		if (again < 0)
			return -1;
		if (again) {
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

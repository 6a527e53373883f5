/* kube_http.c — see kube_http.h.
 *
 * One CURL easy handle per client, driven through the client's own multi handle and reset
 * before each request (the multi handle keeps the connection cache, so keep-alive
 * connections are reused). The transfer loop polls in slices of at most 50 ms and checks the
 * cancellation flag and the deadline between them, so a signal, a deadline or
 * pod_watch_stop() ends even an idle watch stream within 50 ms; retry waits sleep in the
 * same slices.
 */
#include "kube_http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "cleanup.h"
#include "size_limits.h"
#include "log.h"
#include "xalloc.h"

#ifndef KRMPOD_VERSION
#define KRMPOD_VERSION "0.0.0-dev"
#endif

#define MAX_RETRIES 5
#define MAX_RETRY_WAIT_MS 10000
#define CONNECT_TIMEOUT_MS 10000
#define REQUEST_TIMEOUT_MS 60000

struct kube_client {
	struct kube_config *cfg;
	CURL *curl;
	CURLM *multi;
	char *base_url;                   /* https://host:port (host = tls-server-name if set) */
	struct curl_slist *connect_to;    /* maps tls-server-name to the real host */
	volatile sig_atomic_t *cancel;
	int64_t deadline_ms;
	unsigned requests;
};

int64_t kube_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

char *kube_query_escape(const char *s)
{
	struct buf b;
	buf_init(&b, 0);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    *p == '-' || *p == '.' || *p == '_' || *p == '~')
			buf_putc(&b, (char)*p);
		else
			buf_printf(&b, "%%%02X", *p);
	}
	return buf_steal(&b, NULL);
}

/* Splits "https://host:port" into host (without brackets) and port. */
static void split_server(const char *server, char **host, char **port)
{
	const char *p = server + strlen("https://");
	const char *end = p + strcspn(p, "/");
	if (*p == '[') {
		const char *rb = memchr(p, ']', (size_t)(end - p));
		if (rb) {
			*host = xstrndup(p + 1, (size_t)(rb - p - 1));
			*port = rb[1] == ':' ? xstrndup(rb + 2, (size_t)(end - rb - 2)) : xstrdup("443");
			return;
		}
	}
	const char *colon = memchr(p, ':', (size_t)(end - p));
	if (colon) {
		*host = xstrndup(p, (size_t)(colon - p));
		*port = xstrndup(colon + 1, (size_t)(end - colon - 1));
	} else {
		*host = xstrndup(p, (size_t)(end - p));
		*port = xstrdup("443");
	}
}

int kube_client_new(struct kube_config *cfg, struct kube_client **out, struct err **err)
{
	CURL *curl = curl_easy_init();
	if (curl == NULL)
		return err_set(err, ERR_INTERNAL, "cannot create a libcurl handle");
	struct kube_client *c = xcalloc(1, sizeof(*c));
	c->cfg = cfg;
	c->curl = curl;
	c->multi = curl_multi_init();
	if (c->multi == NULL) {
		curl_easy_cleanup(curl);
		free(c);
		return err_set(err, ERR_INTERNAL, "cannot create a libcurl multi handle");
	}
	if (cfg->tls_server_name) {
		cleanup_free char *host = NULL;
		cleanup_free char *port = NULL;
		split_server(cfg->server, &host, &port);
		bool v6 = strchr(host, ':') != NULL;
		c->base_url = xasprintf("https://%s:%s", cfg->tls_server_name, port);
		cleanup_free char *map = xasprintf("%s:%s:%s%s%s:%s", cfg->tls_server_name, port,
		                                   v6 ? "[" : "", host, v6 ? "]" : "", port);
		c->connect_to = curl_slist_append(NULL, map);
	} else {
		c->base_url = xstrdup(cfg->server);
	}
	*out = c;
	return 0;
}

void kube_client_free(struct kube_client *c)
{
	if (c == NULL)
		return;
	curl_easy_cleanup(c->curl);
	curl_multi_cleanup(c->multi);
	curl_slist_free_all(c->connect_to);
	free(c->base_url);
	free(c);
}

void kube_client_set_cancel(struct kube_client *c, volatile sig_atomic_t *flag)
{
	c->cancel = flag;
}

void kube_client_set_deadline(struct kube_client *c, int64_t deadline_ms)
{
	c->deadline_ms = deadline_ms;
}

unsigned kube_client_requests(const struct kube_client *c)
{
	return c->requests;
}

/* --- one transfer ------------------------------------------------------------------------ */

struct xfer {
	struct kube_client *c;
	struct buf body;        /* whole body (non-streaming) or error body (streaming) */
	kube_data_fn on_data;   /* streaming: 2xx data goes here */
	void *ud;
	bool checked_status;
	bool stream_ok;         /* streaming and the status is 2xx */
	bool stopped_by_callee; /* on_data asked to stop */
	bool over_limit;
	long retry_after_s;     /* from the Retry-After header, -1 if none */
	int stop_reason;        /* 0, ERR_SIGNAL or ERR_TIMEOUT when aborted by us */
};

static size_t on_write(char *data, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nmemb;
	if (x->on_data && !x->checked_status) {
		long code = 0;
		curl_easy_getinfo(x->c->curl, CURLINFO_RESPONSE_CODE, &code);
		x->stream_ok = code >= 200 && code < 300;
		x->checked_status = true;
	}
	if (x->on_data && x->stream_ok) {
		if (x->on_data(data, n, x->ud) != 0) {
			x->stopped_by_callee = true;
			return 0; /* abort the transfer */
		}
		return n;
	}
	if (buf_append(&x->body, data, n, "API response body", NULL) < 0) {
		x->over_limit = true;
		return 0;
	}
	return n;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nmemb;
	if (n > 12 && strncasecmp(data, "Retry-After:", 12) == 0) {
		char tmp[32];
		size_t len = n - 12 < sizeof(tmp) - 1 ? n - 12 : sizeof(tmp) - 1;
		memcpy(tmp, data + 12, len);
		tmp[len] = '\0';
		char *end = NULL;
		errno = 0;
		long v = strtol(tmp, &end, 10);
		if (!errno && end != tmp && v >= 0)
			x->retry_after_s = v;
	}
	return n;
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	struct xfer *x = ud;
	if (x->c->cancel && *x->c->cancel) {
		x->stop_reason = ERR_SIGNAL;
		return 1;
	}
	if (x->c->deadline_ms && kube_now_ms() >= x->c->deadline_ms) {
		x->stop_reason = ERR_TIMEOUT;
		return 1;
	}
	return 0;
}

/* Runs the transfer on the client's multi handle in slices of at most 50 ms, checking
 * cancellation and the deadline between slices. */
static CURLcode run_transfer(struct kube_client *c, CURL *h, struct xfer *x)
{
	curl_multi_add_handle(c->multi, h);
	CURLcode rc = CURLE_OK;
	int running = 1;
	while (running) {
		CURLMcode mc = curl_multi_perform(c->multi, &running);
		if (mc != CURLM_OK) {
			rc = CURLE_RECV_ERROR;
			break;
		}
		if (!running)
			break;
		if (on_progress(x, 0, 0, 0, 0)) {
			rc = CURLE_ABORTED_BY_CALLBACK;
			break;
		}
		curl_multi_poll(c->multi, NULL, 0, 50, NULL);
	}
	int left = 0;
	CURLMsg *m;
	while ((m = curl_multi_info_read(c->multi, &left)))
		if (m->msg == CURLMSG_DONE && m->easy_handle == h && rc == CURLE_OK)
			rc = m->data.result;
	curl_multi_remove_handle(c->multi, h);
	return rc;
}

/* Decodes a Status body (or quotes a non-Status one) into err. */
static void status_error(const char *method, const char *path, long code, const struct buf *body,
                         struct err **err)
{
	cleanup_json struct json *st = NULL;
	const char *message = NULL, *reason = NULL;
	if (body->len && json_parse(body->data, body->len, "Status", &st, NULL) == 0 &&
	    json_str(json_get(st, "kind")) && strcmp(json_str(json_get(st, "kind")), "Status") == 0) {
		message = json_str(json_get(st, "message"));
		reason = json_str(json_get(st, "reason"));
	}
	char causes[1024] = "";
	const struct json *cs = json_path(st, "details.causes");
	for (size_t i = 0; i < json_len(cs) && i < 3; i++) {
		const char *m = json_str(json_get(json_at(cs, i), "message"));
		const char *f = json_str(json_get(json_at(cs, i), "field"));
		if (m == NULL || (message && strstr(message, m)))
			continue;
		size_t used = strlen(causes);
		snprintf(causes + used, sizeof(causes) - used, "; %s%s%s", f ? f : "", f ? ": " : "",
		         m);
	}
	if (message) {
		err_set(err, ERR_API, "%s %s: %ld %s: %s%s", method, path, code,
		        reason && *reason ? reason : "Failure", message, causes);
	} else {
		int n = (int)(body->len < 512 ? body->len : 512);
		err_set(err, ERR_API, "%s %s: HTTP %ld%s%.*s", method, path, code, n ? ": " : "", n,
		        body->data ? body->data : "");
	}
	if (err && *err) {
		(*err)->http_status = (int)code;
		snprintf((*err)->reason, sizeof((*err)->reason), "%s",
		         reason ? reason
		                : code == 429 ? "TooManyRequests"
		                              : code == 401 ? "Unauthorized" : "");
	}
}

static bool retryable_conn_error(CURLcode rc)
{
	return rc == CURLE_COULDNT_CONNECT || rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR ||
	       rc == CURLE_GOT_NOTHING || rc == CURLE_PARTIAL_FILE || rc == CURLE_SSL_CONNECT_ERROR ||
	       rc == CURLE_OPERATION_TIMEDOUT;
}

/* Sleeps up to ms, in slices, stopping on cancellation or the deadline. */
static int wait_ms(struct kube_client *c, int64_t ms, struct err **err)
{
	int64_t until = kube_now_ms() + ms;
	if (c->deadline_ms && until > c->deadline_ms)
		until = c->deadline_ms;
	for (;;) {
		if (c->cancel && *c->cancel) {
			err_set(err, ERR_SIGNAL, "interrupted by signal %d", (int)*c->cancel);
			(*err)->signo = *c->cancel;
			return -1;
		}
		int64_t left = until - kube_now_ms();
		if (left <= 0)
			break;
		struct timespec ts = {0, (left < 50 ? left : 50) * 1000000L};
		nanosleep(&ts, NULL);
	}
	if (c->deadline_ms && kube_now_ms() >= c->deadline_ms)
		return err_set(err, ERR_TIMEOUT, "deadline reached while waiting to retry");
	return 0;
}

static int perform(struct kube_client *c, const char *method, const char *path,
                   const char *content_type, const char *body, size_t body_len,
                   kube_data_fn on_data, void *ud, long *out_status, struct buf *out_body,
                   struct err **err)
{
	bool reread_token = false;
	for (int attempt = 0;; attempt++) {
		CURL *h = c->curl;
		curl_easy_reset(h);
		cleanup_free char *url = xasprintf("%s%s", c->base_url, path);
		cleanup_free char *token = NULL;
		if (kube_config_token(c->cfg, reread_token, &token, err) < 0)
			return -1;
		cleanup_slist struct curl_slist *hdrs = NULL;
		hdrs = curl_slist_append(hdrs, "Accept: application/json");
		if (body) {
			cleanup_free char *ct =
			        xasprintf("Content-Type: %s", content_type ? content_type : "application/json");
			hdrs = curl_slist_append(hdrs, ct);
		}
		if (token) {
			cleanup_free char *auth = xasprintf("Authorization: Bearer %s", token);
			hdrs = curl_slist_append(hdrs, auth);
			explicit_bzero(auth, strlen(auth));
		}
		struct xfer x = {.c = c, .on_data = on_data, .ud = ud, .retry_after_s = -1};
		buf_init(&x.body, LIMIT_API_BODY);
		curl_easy_setopt(h, CURLOPT_URL, url);
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(h, CURLOPT_USERAGENT, "krmpod/" KRMPOD_VERSION);
		curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https");
		curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_TIMEOUT_MS);
		curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
		if (!on_data)
			curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)REQUEST_TIMEOUT_MS);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
		curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
		curl_easy_setopt(h, CURLOPT_HEADERDATA, &x);
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, &x);
		if (c->connect_to)
			curl_easy_setopt(h, CURLOPT_CONNECT_TO, c->connect_to);
		if (c->cfg->insecure) {
			curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
			curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
		} else if (c->cfg->ca_pem) {
			struct curl_blob ca = {c->cfg->ca_pem, c->cfg->ca_len, CURL_BLOB_COPY};
			curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &ca);
		} else {
			curl_easy_setopt(h, CURLOPT_CAINFO, "/etc/ssl/certs/ca-certificates.crt");
		}
		if (c->cfg->cert_pem) {
			struct curl_blob cert = {c->cfg->cert_pem, c->cfg->cert_len, CURL_BLOB_COPY};
			struct curl_blob key = {c->cfg->key_pem, c->cfg->key_len, CURL_BLOB_COPY};
			curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert);
			curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
			curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key);
			curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
		}
		if (strcmp(method, "GET") == 0) {
			curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
		} else {
			curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
			if (body) {
				curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
				curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
			}
		}
		int64_t t0 = kube_now_ms();
		c->requests++;
		CURLcode rc = run_transfer(c, h, &x);
		long code = 0;
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
		if (out_status)
			*out_status = code;
		log_debug("%s %s -> %ld (%lld ms)%s%s", method, path, code,
		          (long long)(kube_now_ms() - t0), rc != CURLE_OK ? ": " : "",
		          rc != CURLE_OK ? curl_easy_strerror(rc) : "");

		if (x.stop_reason) {
			buf_free(&x.body);
			if (x.stop_reason == ERR_SIGNAL) {
				err_set(err, ERR_SIGNAL, "%s %s: interrupted by signal %d", method, path,
				        (int)*c->cancel);
				(*err)->signo = *c->cancel;
				return -1;
			}
			return err_set(err, ERR_TIMEOUT, "%s %s: deadline reached", method, path);
		}
		if (x.stopped_by_callee) {
			buf_free(&x.body);
			return 0;
		}
		if (x.over_limit) {
			buf_free(&x.body);
			return err_set(err, ERR_NET, "%s %s: the response exceeds the limit of %u bytes",
			               method, path, (unsigned)LIMIT_API_BODY);
		}
		if (rc != CURLE_OK) {
			bool idempotent = strcmp(method, "GET") == 0 || strcmp(method, "DELETE") == 0;
			buf_free(&x.body);
			if (!on_data && idempotent && retryable_conn_error(rc) && attempt < MAX_RETRIES) {
				int64_t backoff = 100LL << attempt;
				log_info("%s %s: %s; retrying in %lld ms", method, path,
				         curl_easy_strerror(rc), (long long)backoff);
				if (wait_ms(c, backoff, err) < 0)
					return -1;
				continue;
			}
			return err_set(err, ERR_NET, "%s %s%s: %s", method, c->base_url, path,
			               curl_easy_strerror(rc));
		}
		if (code >= 200 && code < 300) {
			if (out_body)
				*out_body = x.body;
			else
				buf_free(&x.body);
			return 0;
		}
		if (code == 401 && !reread_token && c->cfg->token_file) {
			buf_free(&x.body);
			log_info("%s %s: 401 Unauthorized; re-reading the token file %s and retrying",
			         method, path, c->cfg->token_file);
			reread_token = true;
			continue;
		}
		if ((code == 429 || code >= 500) && attempt < MAX_RETRIES) {
			int64_t wait = x.retry_after_s >= 0 ? x.retry_after_s * 1000 : 100LL << attempt;
			if (wait > MAX_RETRY_WAIT_MS)
				wait = MAX_RETRY_WAIT_MS;
			log_info("%s %s: HTTP %ld; retry %d of %d in %lld ms", method, path, code,
			         attempt + 1, MAX_RETRIES, (long long)wait);
			buf_free(&x.body);
			if (wait_ms(c, wait, err) < 0)
				return -1;
			continue;
		}
		status_error(method, path, code, &x.body, err);
		buf_free(&x.body);
		return -1;
	}
}

int kube_request(struct kube_client *c, const char *method, const char *path, const char *content_type,
                 const char *body, size_t body_len, long *out_status, struct json **out_json,
                 struct err **err)
{
	struct buf resp;
	buf_init(&resp, 0);
	if (out_json)
		*out_json = NULL;
	if (perform(c, method, path, content_type, body, body_len, NULL, NULL, out_status, &resp,
	            err) < 0)
		return -1;
	int rc = 0;
	if (out_json && resp.len) {
		cleanup_free char *what = xasprintf("response to %s %s", method, path);
		rc = json_parse(resp.data, resp.len, what, out_json, err);
	}
	buf_free(&resp);
	return rc;
}

int kube_stream_get(struct kube_client *c, const char *path, kube_data_fn on_data, void *ud,
                    struct err **err)
{
	return perform(c, "GET", path, NULL, NULL, 0, on_data, ud, NULL, NULL, err);
}

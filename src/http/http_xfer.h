/* http_xfer.h — the transfer engine under both HTTP clients (kube/kube_http.c for the API
 * server, registry/registry_http.c for registries and catalogs): the curl handles with what
 * both set, the transfer loop that stops on a cancel flag or a deadline, the waits between
 * attempts, the retry policy per method, and the quoting of an error body.
 *
 * How a transfer runs: each client owns one engine (one CURL easy handle and one CURL multi
 * handle) and drives the transfer itself, curl_multi_perform + curl_multi_poll in
 * HTTP_POLL_SLICE_MS slices; between two polls it checks the cancel flag and the deadline,
 * so a signal or a deadline ends any transfer, a long idle watch included, within ~50 ms.
 * (With curl_easy_perform the progress callback runs only about once a second on an idle
 * connection.) The multi handle also holds the connection cache, so consecutive requests of
 * a client reuse one TLS connection. HTTP/1.1 throughout: one request at a time per client.
 *
 * The retry policy (docs/reliability.md): an answer 429 is refused before any work and may
 * be sent again whatever the method; a 5xx may come after the server applied the request,
 * so only idempotent methods (GET, HEAD, DELETE) are sent again after one; a connection
 * that failed before anything was sent is tried again for every method, one that failed
 * after (a reset, a timeout, nothing answered) for idempotent methods only. A POST or a
 * PATCH is never sent twice: its caller finds out what happened (kube_api.h).
 */
#ifndef KRMPOD_HTTP_XFER_H
#define KRMPOD_HTTP_XFER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "base/buf.h"
#include "base/err.h"

#define HTTP_POLL_SLICE_MS 50 /* longest time between two checks of cancel/deadline */

/* What ends a transfer or a wait early: a signal number stored in *cancel (NULL: none), or
 * the deadline passing (now_ms() clock; 0: none). */
struct http_stop {
	atomic_int *cancel;
	int64_t deadline_ms;
};

struct http_engine {
	CURL *curl;
	CURLM *multi;
	char errbuf[CURL_ERROR_SIZE];
};

/* Makes e's handles with what every client sets: no signals, krmpod's User-Agent, the error
 * buffer, HTTP/1.1, `protocols` (libcurl's CURLOPT_PROTOCOLS_STR, redirects included) and
 * the body and header callbacks (each gets the data pointer the client sets per transfer
 * with CURLOPT_WRITEDATA / CURLOPT_HEADERDATA). Fails with ERR_INTERNAL; e is then cleared
 * by http_engine_clear() as always. */
int http_engine_init(struct http_engine *e, const char *protocols, curl_write_callback on_body,
                     curl_write_callback on_header, struct err **err);
void http_engine_clear(struct http_engine *e);

/* Runs the transfer set up on e->curl to its end, or until *s->cancel or the deadline
 * (*stopped is then true, and the result CURLE_OK). A failure of the multi interface is
 * CURLE_RECV_ERROR with its text in e->errbuf. */
CURLcode http_engine_run(struct http_engine *e, const struct http_stop *s, bool *stopped);

/* libcurl's words for a failed transfer: e->errbuf without its trailing newline (mbedTLS
 * messages may end in one), else curl_easy_strerror(rc). Points into e or libcurl. */
const char *http_engine_detail(struct http_engine *e, CURLcode rc);

/* Fails with ERR_SIGNAL ("METHOD WHAT: interrupted by signal N", err->signo set) or
 * ERR_TIMEOUT ("METHOD WHAT: the deadline passed") when s says to stop; else 0. */
int http_check_stop(const struct http_stop *s, const char *method, const char *what,
                    struct err **err);

/* Waits ms in HTTP_POLL_SLICE_MS slices; fails as http_check_stop() as soon as s says to
 * stop. */
int http_wait(const struct http_stop *s, const char *method, const char *what, int64_t ms,
              struct err **err);

/* Appends body, without its trailing white space, quoted as a JSON string and cut to max
 * bytes on a UTF-8 boundary ("… (N more bytes)" says what was cut). Returns false, and
 * appends nothing, when nothing is left of it. */
bool http_quote_body(struct buf *out, const char *body, size_t len, size_t max);

/* Retries, per client. */
struct http_retry_policy {
	int max_retries;    /* retries after the first attempt */
	int64_t base_ms;    /* the backoff without Retry-After: base, 2 base, 4 base... */
	int64_t cap_ms;     /* the longest wait */
	bool longer_stands; /* a Retry-After over cap_ms ends the retries (else it is cut) */
};

bool http_method_idempotent(const char *method);

/* Whether an answer with status may be sent again to the same method (the header). */
bool http_status_retryable(const char *method, long status);

/* Whether a transfer that failed with rc may be sent again (the header). */
bool http_failure_retryable(const char *method, CURLcode rc);

/* The wait before retry number retries + 1, or -1 when there is none: not retryable, no
 * retry left, a Retry-After longer than the cap with longer_stands, or the deadline first.
 * After an answer: status and its Retry-After header (retry_after, "" when none), failure
 * NULL. After a failed transfer that may be sent again (http_failure_retryable): status 0,
 * failure its message. A retry, or why an answer is not retried, is said at info level. */
int64_t http_retry_wait_ms(const struct http_retry_policy *p, const struct http_stop *s,
                           const char *method, const char *what, long status,
                           const char *retry_after, const char *failure, int retries);

#endif

/* kube_http.h — REST calls to the Kubernetes API over libcurl.
 *
 * One struct kube_client per thread that makes requests (a client holds one CURL easy
 * handle and reuses its connection). Both share one struct kube_config (borrowed; it must
 * outlive the clients). TLS: CA, client certificate and key are handed to curl as in-memory
 * blobs; tls-server-name is honoured with CURLOPT_CONNECT_TO.
 *
 * Errors: a non-2xx answer becomes ERR_API with err->http_status and err->reason set from
 * the Status body, and a message "METHOD PATH: CODE REASON: server message". Bodies that are
 * not a Status (429 may be plain text) are quoted, cut to 512 bytes.
 *
 * Retries (bounded): 429 is retried up to 5 times, and so are 5xx answers to a GET or DELETE
 * (a POST or PATCH answered 5xx may have been applied: it is never sent again, and
 * kube_api.h's pod create finds out what happened instead), honouring Retry-After (capped at
 * 10 s per wait) or else backing off 100 ms, 200 ms, 400 ms...; a GET or DELETE (not a
 * stream) is also retried on connection errors (reset, empty reply, cut body), and any
 * request when the connection was refused (nothing was sent; a POST that may have reached
 * the server is never sent again). A 401 re-reads the token file once and retries (when the
 * token comes from a file). A wait that would pass the deadline is not started: the last
 * error is returned instead. Every wait stops on cancellation.
 *
 * At debug level every request is logged: method, path, status, time.
 */
#ifndef KRMPOD_KUBE_HTTP_H
#define KRMPOD_KUBE_HTTP_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "config/kubeconfig.h"

struct kube_client;

/* Creates a client on cfg (borrowed). */
int kube_client_new(struct kube_config *cfg, struct kube_client **out, struct err **err);
void kube_client_free(struct kube_client *c);
DEFINE_CLEANUP_FUNC(kube_client, struct kube_client, kube_client_free)
#define cleanup_kube_client __attribute__((cleanup(cleanup_kube_clientp)))

/* Requests made with this client stop (ERR_SIGNAL, signo = *flag) as soon as *flag becomes
 * non-zero; NULL disables this. Set it to NULL before requests that must run during cleanup
 * (deleting the pod after SIGTERM). */
void kube_client_set_cancel(struct kube_client *c, atomic_int *flag);
atomic_int *kube_client_get_cancel(const struct kube_client *c);

/* Wakes the client's transfer loop at once (from any thread), so that a cancel flag set just
 * before is seen now instead of at the end of the current 50 ms slice. */
void kube_client_wakeup(struct kube_client *c);

/* Absolute deadline (CLOCK_MONOTONIC, ms; 0 = none) after which requests and retry waits
 * fail with ERR_TIMEOUT. */
void kube_client_set_deadline(struct kube_client *c, int64_t deadline_ms);

/* Performs one request. `path` (from kube_api.h) includes the query; the server's path prefix
 * goes before it.
 * body may be NULL; content_type defaults to application/json when a body is given.
 * On 2xx: if out_json is not NULL the body is parsed into *out_json (NULL for an empty
 * body). If out_status is not NULL it receives the HTTP status (also on ERR_API errors).
 * The response body is limited to LIMIT_API_BODY. */
int kube_request(struct kube_client *c, const char *method, const char *path,
                 const char *content_type, const char *body, size_t body_len, long *out_status,
                 struct json **out_json, struct err **err);

/* Parses a Kubernetes timestamp ("2026-11-23T17:02:26Z", RFC 3339 in UTC) into *out. */
int kube_parse_time(const char *text, time_t *out);

/* A streaming GET (watch, log follow). on_data is called with each piece of the body as it
 * arrives; returning non-zero from it stops the stream (kube_stream_get then returns 0).
 * The status line is checked first: non-2xx fails as in kube_request (with the error body
 * read, up to LIMIT_API_BODY). No retries on connection errors: the caller re-establishes
 * the stream from its own position (resourceVersion). A clean end of the body returns 0. */
typedef int (*kube_data_fn)(const char *data, size_t len, void *ud);
int kube_stream_get(struct kube_client *c, const char *path, kube_data_fn on_data, void *ud,
                    struct err **err);

/* Number of HTTP requests this client has sent (retries included), for statistics. */
unsigned kube_client_requests(const struct kube_client *c);

/* The API server's clock: the Date header of the client's last answer (seconds since the
 * epoch), 0 when none carried one. Ages of objects are judged by it against the timestamps
 * the API server wrote, never by this machine's clock (gc.c). */
time_t kube_client_server_time(const struct kube_client *c);

/* The pure parts of the error and retry handling, exported for unit tests. */

/* Fills *err for a non-2xx answer as described at the top (ERR_API, http_status, reason,
 * "METHOD PATH: CODE REASON: message", the first causes of a 400/422 added when the message
 * does not already name them). body may be NULL. Always returns -1. */
int kube_status_error(const char *method, const char *path, long status, const char *body,
                      size_t body_len, struct err **err);

/* The Status reason the API server uses for an HTTP status ("NotFound" for 404), for
 * answers that carry no Status; "" for a status it has none for. */
const char *kube_status_reason(long status);

#endif

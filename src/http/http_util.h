/* http_util.h — what the two HTTP clients (kube/, registry/) share: libcurl's one-time
 * global set-up, URL query escaping, the HTTP reason phrases, the system CA bundle and the
 * Retry-After header. */
#ifndef KRMPOD_HTTP_UTIL_H
#define KRMPOD_HTTP_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/err.h"

/* curl_global_init, once per process, from any thread. Fails with ERR_INTERNAL naming
 * libcurl's reason (every later call fails the same way). */
int http_global_init(struct err **err);

/* Escapes s for a URL query value (RFC 3986 unreserved characters kept, the rest %XX).
 * Returns a new string. */
char *url_query_escape(const char *s);

/* The reason phrase of an HTTP status ("Not Found"); "" for one not in the table. */
const char *http_status_phrase(long status);

/* The system CA bundle, in the usual places of Linux distributions and BSDs; NULL when
 * there is none. */
const char *system_ca_file(void);

/* The most bytes of a Retry-After header value kept (a longer one is cut, and then not
 * valid). */
#define HTTP_RETRY_AFTER_MAX_LEN 64

/* When the header line (as libcurl hands it, CRLF included) is Retry-After, copies its
 * value, trimmed and cut to HTTP_RETRY_AFTER_MAX_LEN - 1 bytes, into out. */
void http_keep_retry_after(const char *line, size_t len, char out[HTTP_RETRY_AFTER_MAX_LEN]);

/* The same for any header `name` (with its colon: "Date:"). */
void http_keep_header(const char *name, const char *line, size_t len,
                      char out[HTTP_RETRY_AFTER_MAX_LEN]);

/* Parses an HTTP-date (RFC 9110 IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT") into *out.
 * -1 when it is not one. */
int http_parse_date(const char *value, time_t *out);

/* Parses a Retry-After header value: delta-seconds or an HTTP-date (relative to `now`).
 * Returns the wait in ms (0 for a date in the past), or -1 if the value is not valid. */
int64_t http_retry_after_ms(const char *value, time_t now);

#endif

/* http_util.c — see http_util.h. */
#include "http/http_util.h"

#include <ctype.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/buf.h"

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int http_global_init(struct err **err)
{
	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK)
		return err_set(err, ERR_INTERNAL, "curl_global_init: %s",
		               curl_easy_strerror(global_rc));
	return 0;
}

char *url_query_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	struct buf b;
	buf_init(&b, 0);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~') {
			buf_putc(&b, (char)*p);
		} else {
			buf_putc(&b, '%');
			buf_putc(&b, hex[*p >> 4]);
			buf_putc(&b, hex[*p & 15]);
		}
	}
	return buf_steal(&b, NULL);
}

const char *http_status_phrase(long status)
{
	static const struct {
		long status;
		const char *phrase;
	} names[] = {
	        {400, "Bad Request"},
	        {401, "Unauthorized"},
	        {403, "Forbidden"},
	        {404, "Not Found"},
	        {405, "Method Not Allowed"},
	        {406, "Not Acceptable"},
	        {408, "Request Timeout"},
	        {409, "Conflict"},
	        {410, "Gone"},
	        {413, "Content Too Large"},
	        {415, "Unsupported Media Type"},
	        {416, "Range Not Satisfiable"},
	        {422, "Unprocessable Content"},
	        {429, "Too Many Requests"},
	        {500, "Internal Server Error"},
	        {502, "Bad Gateway"},
	        {503, "Service Unavailable"},
	        {504, "Gateway Timeout"},
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].status == status)
			return names[i].phrase;
	return "";
}

const char *system_ca_file(void)
{
	static const char *const known[] = {
	        "/etc/ssl/certs/ca-certificates.crt", /* Debian, Ubuntu, Alpine, Arch */
	        "/etc/pki/tls/certs/ca-bundle.crt",   /* Fedora, RHEL */
	        "/etc/ssl/cert.pem",                  /* Alpine, macOS, BSDs */
	        "/etc/ssl/ca-bundle.pem",             /* openSUSE */
	};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (access(known[i], R_OK) == 0)
			return known[i];
	return NULL;
}

int64_t http_retry_after_ms(const char *value, time_t now)
{
	if (value == NULL)
		return -1;
	while (isspace((unsigned char)*value))
		value++;
	if (isdigit((unsigned char)*value)) {
		int64_t secs = 0;
		const char *p = value;
		for (; isdigit((unsigned char)*p); p++) {
			secs = secs * 10 + (*p - '0');
			if (secs > 365 * 86400)
				secs = 365 * 86400; /* far beyond any cap; avoids overflow */
		}
		while (isspace((unsigned char)*p))
			p++;
		return *p == '\0' ? secs * 1000 : -1;
	}
	time_t at;
	if (http_parse_date(value, &at) < 0)
		return -1;
	return at <= now ? 0 : (int64_t)(at - now) * 1000;
}

int http_parse_date(const char *value, time_t *out)
{
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	const char *end = strptime(value, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	if (end == NULL)
		return -1;
	while (isspace((unsigned char)*end))
		end++;
	if (*end != '\0')
		return -1;
	*out = timegm(&tm);
	return *out == (time_t)-1 ? -1 : 0;
}

void http_keep_retry_after(const char *line, size_t len, char out[HTTP_RETRY_AFTER_MAX_LEN])
{
	http_keep_header("Retry-After:", line, len, out);
}

void http_keep_header(const char *name, const char *line, size_t len,
                      char out[HTTP_RETRY_AFTER_MAX_LEN])
{
	size_t nlen = strlen(name);
	if (len < nlen || strncasecmp(line, name, nlen) != 0)
		return;
	const char *v = line + nlen, *end = line + len;
	while (v < end && isspace((unsigned char)*v))
		v++;
	while (end > v && isspace((unsigned char)end[-1]))
		end--;
	size_t n = (size_t)(end - v);
	if (n >= HTTP_RETRY_AFTER_MAX_LEN)
		n = HTTP_RETRY_AFTER_MAX_LEN - 1;
	memcpy(out, v, n);
	out[n] = '\0';
}

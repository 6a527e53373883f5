/* http_xfer.c — see http_xfer.h. */
#include "http/http_xfer.h"

#include <ctype.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "http/http_util.h"

#ifndef KRMPOD_VERSION
#define KRMPOD_VERSION "0.0.0-dev"
#endif

int http_engine_init(struct http_engine *e, const char *protocols, curl_write_callback on_body,
                     curl_write_callback on_header, struct err **err)
{
	memset(e, 0, sizeof(*e));
	if (http_global_init(err) < 0)
		return -1;
	e->curl = curl_easy_init();
	e->multi = curl_multi_init();
	if (e->curl == NULL || e->multi == NULL)
		return err_set(err, ERR_INTERNAL, "cannot create a curl handle");
	CURL *curl = e->curl;
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_USERAGENT, "krmpod/" KRMPOD_VERSION);
	curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, e->errbuf);
	curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, protocols);
	curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, protocols);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
	return 0;
}

void http_engine_clear(struct http_engine *e)
{
	if (e->curl)
		curl_easy_cleanup(e->curl);
	if (e->multi)
		curl_multi_cleanup(e->multi);
	e->curl = NULL;
	e->multi = NULL;
}

static bool stop_now(const struct http_stop *s)
{
	return (s->cancel && atomic_load(s->cancel)) ||
	       (s->deadline_ms && now_ms() >= s->deadline_ms);
}

/* The poll timeout of the next slice: what is left of it before the deadline. */
static int slice_ms(const struct http_stop *s)
{
	if (s->deadline_ms == 0)
		return HTTP_POLL_SLICE_MS;
	int64_t left = s->deadline_ms - now_ms();
	return left <= 0 ? 0 : (int)min64(left, HTTP_POLL_SLICE_MS);
}

CURLcode http_engine_run(struct http_engine *e, const struct http_stop *s, bool *stopped)
{
	*stopped = false;
	e->errbuf[0] = '\0';
	if (curl_multi_add_handle(e->multi, e->curl) != CURLM_OK)
		return CURLE_FAILED_INIT;
	CURLcode result = CURLE_OK;
	for (;;) {
		int running = 0, left = 0;
		CURLMcode mc = curl_multi_perform(e->multi, &running);
		if (mc == CURLM_OK && running == 0) {
			CURLMsg *msg;
			result = CURLE_GOT_NOTHING;
			while ((msg = curl_multi_info_read(e->multi, &left)) != NULL)
				if (msg->msg == CURLMSG_DONE && msg->easy_handle == e->curl)
					result = msg->data.result;
			break;
		}
		if (mc == CURLM_OK && stop_now(s)) {
			*stopped = true;
			break;
		}
		if (mc == CURLM_OK)
			mc = curl_multi_poll(e->multi, NULL, 0, slice_ms(s), NULL);
		if (mc != CURLM_OK) {
			snprintf(e->errbuf, sizeof(e->errbuf), "%s", curl_multi_strerror(mc));
			result = CURLE_RECV_ERROR;
			break;
		}
	}
	curl_multi_remove_handle(e->multi, e->curl);
	return result;
}

const char *http_engine_detail(struct http_engine *e, CURLcode rc)
{
	size_t n = strlen(e->errbuf);
	while (n > 0 && isspace((unsigned char)e->errbuf[n - 1]))
		e->errbuf[--n] = '\0';
	return e->errbuf[0] ? e->errbuf : curl_easy_strerror(rc);
}

int http_check_stop(const struct http_stop *s, const char *method, const char *what,
                    struct err **err)
{
	int signo = s->cancel ? atomic_load(s->cancel) : 0;
	if (signo) {
		err_set(err, ERR_SIGNAL, "%s %s: interrupted by signal %d", method, what, signo);
		if (err)
			(*err)->signo = signo;
		return -1;
	}
	if (s->deadline_ms && now_ms() >= s->deadline_ms)
		return err_set(err, ERR_TIMEOUT, "%s %s: the deadline passed", method, what);
	return 0;
}

int http_wait(const struct http_stop *s, const char *method, const char *what, int64_t ms,
              struct err **err)
{
	int64_t until = now_ms() + ms;
	for (;;) {
		if (http_check_stop(s, method, what, err) < 0)
			return -1;
		int64_t left = until - now_ms();
		if (left <= 0)
			return 0;
		left = min64(left, HTTP_POLL_SLICE_MS);
		struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)left * 1000000};
		nanosleep(&ts, NULL);
	}
}

bool http_quote_body(struct buf *out, const char *body, size_t len, size_t max)
{
	while (len > 0 && isspace((unsigned char)body[len - 1]))
		len--;
	if (len == 0)
		return false;
	size_t n = len;
	if (n > max) {
		n = max;
		while (n > 0 && ((unsigned char)body[n] & 0xC0) == 0x80)
			n--;
	}
	buf_putc(out, '"');
	json_escape(out, body, n);
	buf_putc(out, '"');
	if (n < len)
		buf_printf(out, " (%zu more bytes)", len - n);
	return true;
}

bool http_method_idempotent(const char *method)
{
	return strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0 ||
	       strcmp(method, "DELETE") == 0;
}

bool http_status_retryable(const char *method, long status)
{
	if (status == 429)
		return true;
	return status >= 500 && status <= 599 && http_method_idempotent(method);
}

bool http_failure_retryable(const char *method, CURLcode rc)
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
		return http_method_idempotent(method); /* the request may have reached the server */
	default:
		return false;
	}
}

int64_t http_retry_wait_ms(const struct http_retry_policy *p, const struct http_stop *s,
                           const char *method, const char *what, long status,
                           const char *retry_after, const char *failure, int retries)
{
	if (retries >= p->max_retries ||
	    (failure == NULL && !http_status_retryable(method, status)))
		return -1;
	int64_t hinted = failure ? -1 : http_retry_after_ms(retry_after, epoch_s());
	int64_t wait = hinted >= 0 ? hinted : min64(p->base_ms << retries, p->cap_ms);
	char head[128] = "";
	if (failure == NULL)
		snprintf(head, sizeof(head), "%s %s: %ld %s", method, what, status,
		         http_status_phrase(status));
	const char *said = failure ? failure : head;
	if (wait > p->cap_ms) {
		if (p->longer_stands) {
			log_info("%s; not retrying: the server asks for a longer wait", said);
			return -1;
		}
		wait = p->cap_ms;
	}
	if (s->deadline_ms && now_ms() + wait >= s->deadline_ms) {
		log_info("%s; not retrying: the deadline comes first", said);
		return -1;
	}
	log_info("%s; retrying in %lld ms%s (retry %d of %d)", said, (long long)wait,
	         hinted >= 0 ? " (Retry-After)" : "", retries + 1, p->max_retries);
	return wait;
}

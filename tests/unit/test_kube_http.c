/* Unit tests: kube_http. The pure parts (Status decoding into err, Retry-After, query
 * escaping), then the client's behaviour against a scripted plain-HTTP server on
 * 127.0.0.1 (retries of 429/5xx and of dropped connections, the 401 token re-read, deadlines
 * and cancellation, streaming, limits, tls-server-name routing). */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "check.h"
#include "fake_http.h"
#include "http/http_util.h"
#include "kube/kube_api.h"
#include "kube/kube_http.h"
#include "kube/kube_stream.h"

/* --- Status decoding -------------------------------------------------------------------- */

static struct err *status_err(long code, const char *body)
{
	struct err *e = NULL;
	CHECK_INT(kube_status_error("POST", "/api/v1/namespaces/fns/pods", code, body,
	                            body ? strlen(body) : 0, &e),
	          -1);
	return e;
}

TEST(status_forbidden)
{
	struct err *e = status_err(
	        403, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
	             "\"Failure\",\"message\":\"pods is forbidden: User "
	             "\\\"system:serviceaccount:argocd:argocd-repo-server\\\" cannot create "
	             "resource \\\"pods\\\" in API group \\\"\\\" in the namespace \\\"fns\\\"\","
	             "\"reason\":\"Forbidden\",\"details\":{\"kind\":\"pods\"},\"code\":403}\n");
	CHECK_INT(e->code, ERR_API);
	CHECK_INT(e->http_status, 403);
	CHECK_STR(e->reason, "Forbidden");
	CHECK_STR(e->msg, "POST /api/v1/namespaces/fns/pods: 403 Forbidden: pods is forbidden: "
	                  "User \"system:serviceaccount:argocd:argocd-repo-server\" cannot create "
	                  "resource \"pods\" in API group \"\" in the namespace \"fns\"");
	CHECK(e->cause == ERR_CAUSE_NONE && !kube_api_quota_full(e));
	err_free(e);
}

/* A full ResourceQuota is the same 403 Forbidden: the cause is read from the Status once,
 * where it is decoded, and callers branch on err->cause. */
TEST(status_quota_is_a_cause)
{
	struct err *e = status_err(
	        403, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
	             "\"message\":\"pods \\\"krmpod-x\\\" is forbidden: exceeded quota: "
	             "krmpod-functions, requested: pods=1, used: pods=16, limited: pods=16\","
	             "\"reason\":\"Forbidden\",\"code\":403}");
	CHECK(e->cause == ERR_CAUSE_QUOTA && kube_api_quota_full(e));
	err_free(e);
	/* the words in a body that is not a Status, or in another status, are not the cause */
	e = status_err(403, "exceeded quota");
	CHECK(e->cause == ERR_CAUSE_NONE && !kube_api_quota_full(e));
	err_free(e);
	e = status_err(422, "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":"
	                    "\"exceeded quota\",\"reason\":\"Invalid\",\"code\":422}");
	CHECK(e->cause == ERR_CAUSE_NONE);
	err_free(e);
}

TEST(status_invalid_adds_causes_not_in_the_message)
{
	struct err *e = status_err(
	        422, "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"Pod "
	             "\\\"krmpod-x\\\" is invalid: spec.containers[0].image: Required value\","
	             "\"reason\":\"Invalid\",\"details\":{\"name\":\"krmpod-x\",\"kind\":\"Pod\","
	             "\"causes\":[{\"reason\":\"FieldValueRequired\",\"message\":\"Required "
	             "value\",\"field\":\"spec.containers[0].image\"},{\"reason\":"
	             "\"FieldValueInvalid\",\"message\":\"must be no more than 63 characters\","
	             "\"field\":\"metadata.labels\"}]},\"code\":422}");
	CHECK_INT(e->http_status, 422);
	CHECK_STR(e->reason, "Invalid");
	CHECK_STR(e->msg, "POST /api/v1/namespaces/fns/pods: 422 Invalid: Pod \"krmpod-x\" is "
	                  "invalid: spec.containers[0].image: Required value (metadata.labels: "
	                  "must be no more than 63 characters)");
	err_free(e);

	/* A strict-decoding 400 names the fields only in its causes. */
	e = status_err(400,
	               "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"strict "
	               "decoding error\",\"reason\":\"BadRequest\",\"details\":{\"causes\":["
	               "{\"message\":\"unknown field \\\"spec.foo\\\"\"},{\"message\":"
	               "\"unknown field \\\"spec.bar\\\"\"},{\"message\":\"third\"},{\"message\":"
	               "\"fourth\"}]},\"code\":400}");
	CHECK_STR(e->msg,
	          "POST /api/v1/namespaces/fns/pods: 400 BadRequest: strict decoding "
	          "error (unknown field \"spec.foo\"; unknown field \"spec.bar\"; third; ...)");
	err_free(e);
}

TEST(status_plain_text_is_quoted)
{
	struct err *e = status_err(429, "Too many requests, please try again later.\n");
	CHECK_INT(e->code, ERR_API);
	CHECK_INT(e->http_status, 429);
	CHECK_STR(e->reason, "TooManyRequests");
	CHECK_STR(e->msg, "POST /api/v1/namespaces/fns/pods: 429 Too Many Requests: \"Too many "
	                  "requests, please try again later.\"");
	err_free(e);

	e = status_err(502, NULL);
	CHECK_STR(e->msg, "POST /api/v1/namespaces/fns/pods: 502 Bad Gateway: (empty body)");
	CHECK_STR(e->reason, "");
	err_free(e);

	/* JSON that is not a Status is quoted too. */
	e = status_err(404, "{\"kind\":\"Pod\"}");
	CHECK_STR(e->msg, "POST /api/v1/namespaces/fns/pods: 404 Not Found: "
	                  "\"{\\\"kind\\\":\\\"Pod\\\"}\"");
	CHECK_STR(e->reason, "NotFound");
	err_free(e);
}

TEST(status_long_body_is_cut)
{
	struct buf b;
	buf_init(&b, 0);
	buf_puts(&b, "<html>");
	for (int i = 0; i < 300; i++)
		buf_puts(&b, "é\t"); /* 3 bytes each: the cut must not split a character */
	struct err *e = status_err(503, b.data);
	CHECK_CONTAINS(e->msg, "503 Service Unavailable: \"<html>é\\té\\t");
	CHECK_CONTAINS(e->msg, "more bytes)");
	CHECK(strlen(e->msg) < 1200);
	CHECK_STR(e->reason, "ServiceUnavailable");
	err_free(e);
	buf_free(&b);
}

TEST(status_without_message)
{
	struct err *e = status_err(409, "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":"
	                                "\"AlreadyExists\",\"code\":409}");
	CHECK_STR(e->msg, "POST /api/v1/namespaces/fns/pods: 409 AlreadyExists: AlreadyExists");
	CHECK_STR(e->reason, "AlreadyExists");
	err_free(e);
	CHECK_INT(kube_status_error("GET", "/x", 500, "x", 1, NULL), -1); /* err may be NULL */
}

/* --- Retry-After, escaping, clock ------------------------------------------------------- */

TEST(retry_after)
{
	time_t now = 784111777; /* Sun, 06 Nov 1994 08:49:37 GMT */
	CHECK_INT(http_retry_after_ms("3", now), 3000);
	CHECK_INT(http_retry_after_ms(" 10 ", now), 10000);
	CHECK_INT(http_retry_after_ms("0", now), 0);
	CHECK_INT(http_retry_after_ms("", now), -1);
	CHECK_INT(http_retry_after_ms(NULL, now), -1);
	CHECK_INT(http_retry_after_ms("-1", now), -1);
	CHECK_INT(http_retry_after_ms("1.5", now), -1);
	CHECK_INT(http_retry_after_ms("soon", now), -1);
	CHECK(http_retry_after_ms("99999999999999999999999", now) > 10000); /* no overflow */
	CHECK_INT(http_retry_after_ms("Sun, 06 Nov 1994 08:49:42 GMT", now), 5000);
	CHECK_INT(http_retry_after_ms("Sun, 06 Nov 1994 08:49:00 GMT", now), 0); /* past */
	CHECK_INT(http_retry_after_ms("Sun, 06 Nov 1994 08:49:42 GMT trailing", now), -1);
}

TEST(query_escape)
{
	char *s = url_query_escape("metadata.name=krmpod-fn_x~1");
	CHECK_STR(s, "metadata.name%3Dkrmpod-fn_x~1");
	free(s);
	s = url_query_escape("a b/&?#%\xc3\xa9");
	CHECK_STR(s, "a%20b%2F%26%3F%23%25%C3%A9");
	free(s);
	s = url_query_escape("");
	CHECK_STR(s, "");
	free(s);
}

TEST(clock_is_monotonic)
{
	int64_t a = now_ms();
	struct timespec ts = {0, 20 * 1000000L};
	nanosleep(&ts, NULL);
	int64_t b = now_ms();
	CHECK(b - a >= 19 && b - a < 1000);
}

/* --- Against a scripted HTTP server (fake_http.h) -------------------------------------- */

static void pause_ms(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* A configuration for the fake server, its URL with the path `prefix` ("" for none). */
static struct kube_config *fake_config_at(int port, const char *prefix, const char *token)
{
	struct kube_config *cfg = kube_config_new();
	cfg->source = xstrdup("unit test");
	char *url = xasprintf("http://127.0.0.1:%d%s/", port, prefix);
	struct err *e = NULL;
	CHECK_INT(kube_config_set_server(cfg, url, &e), 0);
	err_free(e);
	free(url);
	cfg->token = token ? xstrdup(token) : NULL;
	return cfg;
}

static struct kube_config *fake_config(int port, const char *token)
{
	return fake_config_at(port, "", token);
}

#define POD_JSON "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"}}"
#define OK_200 \
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 38\r\n\r\n" POD_JSON
#define EMPTY_200 "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
#define R429(ra)                                                                                \
	"HTTP/1.1 429 Too Many Requests\r\nRetry-After: " ra "\r\nContent-Type: text/plain\r\n" \
	"Content-Length: 18\r\n\r\nToo many requests\n"
#define R500 "HTTP/1.1 500 Internal Server Error\r\nRetry-After: 0\r\nContent-Length: 0\r\n\r\n"
#define R503 "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n"
#define R401                                                                                       \
	"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: "          \
	"76\r\n\r\n"                                                                               \
	"{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"Unauthorized\",\"code\":401}  " \
	"  "

struct client {
	struct fake_http f;
	struct kube_config *cfg;
	struct kube_client *c;
};

static void client_start(struct client *k, const struct fake_http_step *steps, int n)
{
	fake_http_start(&k->f, steps, n);
	k->cfg = fake_config(k->f.port, "tok");
	struct err *e = NULL;
	if (kube_client_new(k->cfg, &k->c, &e) < 0) {
		fprintf(stderr, "kube_client_new: %s\n", e->msg);
		abort();
	}
}

static void client_stop(struct client *k)
{
	kube_client_free(k->c);
	fake_http_stop(&k->f);
	kube_config_free(k->cfg);
}

TEST(get_parses_json_and_sends_headers)
{
	static const struct fake_http_step steps[] = {{.response = OK_200}};
	struct client k;
	client_start(&k, steps, 1);
	struct json *pod = NULL;
	struct err *e = NULL;
	long status = 0;
	CHECK_INT(kube_request(k.c, "GET", "/api/v1/namespaces/a/pods/p", NULL, NULL, 0, &status,
	                       &pod, &e),
	          0);
	CHECK_INT(status, 200);
	CHECK_STR(json_str(json_path(pod, "metadata.name")), "p");
	CHECK_CONTAINS(fake_http_req(&k.f, 0), "GET /api/v1/namespaces/a/pods/p HTTP/1.1");
	CHECK_CONTAINS(fake_http_req(&k.f, 0), "Authorization: Bearer tok");
	CHECK_CONTAINS(fake_http_req(&k.f, 0), "Accept: application/json");
	CHECK_CONTAINS(fake_http_req(&k.f, 0), "User-Agent: krmpod/");
	CHECK_INT(kube_client_requests(k.c), 1);
	json_free(pod);
	client_stop(&k);
}

/* The API server's clock: the Date of the last answer (gc.c judges ages by it); an
 * answer without one keeps the last known, and a client that saw none has 0. */
TEST(server_time_is_the_last_date)
{
	static const struct fake_http_step steps[] = {
	        {.response =
	                 "HTTP/1.1 200 OK\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
	                 "Content-Type: application/json\r\nContent-Length: 38\r\n\r\n" POD_JSON},
	        {.response = "HTTP/1.1 404 Not Found\r\ndate: Sun, 06 Nov 1994 08:50:00 GMT\r\n"
	                     "Content-Length: 0\r\n\r\n"},
	        {.response = OK_200}};
	struct client k;
	client_start(&k, steps, 3);
	CHECK(kube_client_server_time(k.c) == 0);
	struct json *pod = NULL;
	struct err *e = NULL;
	CHECK_INT(kube_request(k.c, "GET", "/a", NULL, NULL, 0, NULL, &pod, &e), 0);
	CHECK(kube_client_server_time(k.c) == 784111777);
	json_free(pod);
	pod = NULL;
	CHECK_INT(kube_request(k.c, "GET", "/b", NULL, NULL, 0, NULL, &pod, &e), -1);
	CHECK(kube_client_server_time(k.c) == 784111800); /* lowercase, as HTTP/2 sends it */
	err_free(e);
	e = NULL;
	CHECK_INT(kube_request(k.c, "GET", "/c", NULL, NULL, 0, NULL, &pod, &e), 0);
	CHECK(kube_client_server_time(k.c) == 784111800);
	json_free(pod);
	client_stop(&k);
	time_t t = 0;
	CHECK(http_parse_date("Sun, 06 Nov 1994 08:49:37 GMT", &t) == 0 && t == 784111777);
	CHECK(http_parse_date("06 Nov 1994", &t) == -1 && http_parse_date("", &t) == -1);
}

TEST(post_and_delete_send_bodies_on_one_connection)
{
	static const struct fake_http_step steps[] = {
	        {.response = OK_200}, {.response = EMPTY_200}, {.response = OK_200}};
	struct client k;
	client_start(&k, steps, 3);
	struct err *e = NULL;
	struct json *j = NULL;
	CHECK_INT(kube_request(k.c, "POST", "/p?fieldValidation=Strict", NULL, "{\"a\":1}", 7, NULL,
	                       &j, &e),
	          0);
	json_free(j);
	CHECK_INT(kube_request(k.c, "DELETE", "/p/x", "application/json", "{}", 2, NULL, &j, &e),
	          0);
	CHECK(j == NULL); /* empty body */
	CHECK_INT(kube_request(k.c, "GET", "/p/x", NULL, NULL, 0, NULL, NULL, &e), 0);
	CHECK_CONTAINS(fake_http_req(&k.f, 0), "POST /p?fieldValidation=Strict HTTP/1.1");
	CHECK_CONTAINS(fake_http_req(&k.f, 0), "Content-Type: application/json");
	CHECK_CONTAINS(fake_http_req(&k.f, 0), "|body={\"a\":1}");
	CHECK(strstr(fake_http_req(&k.f, 0), "Expect:") == NULL);
	CHECK_CONTAINS(fake_http_req(&k.f, 1), "DELETE /p/x HTTP/1.1");
	CHECK_CONTAINS(fake_http_req(&k.f, 1), "|body={}");
	CHECK_CONTAINS(fake_http_req(&k.f, 2), "GET /p/x HTTP/1.1");
	CHECK(strstr(fake_http_req(&k.f, 2), "body=") == NULL);
	client_stop(&k); /* the fake serves connections one at a time: all three reused one */
}

TEST(retries_429_and_5xx)
{
	static const struct fake_http_step steps[] = {{.response = R429("0")},
	                                              {.response = R503},
	                                              {.response = R500},
	                                              {.response = OK_200}};
	struct client k;
	client_start(&k, steps, 4);
	struct err *e = NULL;
	long status = 0;
	int64_t t0 = now_ms();
	CHECK_INT(kube_request(k.c, "GET", "/x", NULL, NULL, 0, &status, NULL, &e), 0);
	int64_t ms = now_ms() - t0;
	CHECK_INT(status, 200);
	CHECK_INT(kube_client_requests(k.c), 4);
	CHECK(ms >= 200 && ms < 2000); /* 503 without Retry-After: backoff 200 ms (2nd retry) */
	client_stop(&k);
}

TEST(retries_are_bounded)
{
	static const struct fake_http_step steps[] = {
	        {.response = R500}, {.response = R500}, {.response = R500}, {.response = R500},
	        {.response = R500}, {.response = R500}, {.response = R500}};
	struct client k;
	client_start(&k, steps, 7);
	struct err *e = NULL;
	long status = 0;
	CHECK_INT(kube_request(k.c, "GET", "/x", NULL, NULL, 0, &status, NULL, &e), -1);
	CHECK_INT(status, 500);
	CHECK_INT(kube_client_requests(k.c), 6); /* 1 + 5 retries */
	CHECK(e && e->code == ERR_API && e->http_status == 500);
	err_free(e);
	client_stop(&k);
}

TEST(retry_after_never_passes_the_deadline)
{
	static const struct fake_http_step steps[] = {{.response = R429("5")},
	                                              {.response = OK_200}};
	struct client k;
	client_start(&k, steps, 2);
	kube_client_set_deadline(k.c, now_ms() + 1000);
	struct err *e = NULL;
	int64_t t0 = now_ms();
	CHECK_INT(kube_request(k.c, "POST", "/x", NULL, "{}", 2, NULL, NULL, &e), -1);
	CHECK(now_ms() - t0 < 500);
	CHECK(e && e->code == ERR_API && e->http_status == 429);
	CHECK_STR(e ? e->reason : NULL, "TooManyRequests");
	CHECK_STR(e ? e->msg : NULL, "POST /x: 429 Too Many Requests: \"Too many requests\"");
	err_free(e);
	client_stop(&k);
}

TEST(unauthorized_rereads_the_token_once)
{
	static const struct fake_http_step steps[] = {
	        {.response = R401}, {.response = OK_200}, {.response = R401}, {.response = R401}};
	struct client k;
	client_start(&k, steps, 4);
	char path[] = "/tmp/krmpod-test-token-XXXXXX";
	int fd = mkstemp(path);
	CHECK(write(fd, "new\n", 4) == 4);
	close(fd);
	k.cfg->token_file = xstrdup(path);
	k.cfg->token_read_at = time(NULL); /* "tok" is fresh: only a 401 makes us re-read */
	struct err *e = NULL;
	CHECK_INT(kube_request(k.c, "GET", "/x", NULL, NULL, 0, NULL, NULL, &e), 0);
	CHECK_CONTAINS(fake_http_req(&k.f, 0), "Authorization: Bearer tok");
	CHECK_CONTAINS(fake_http_req(&k.f, 1), "Authorization: Bearer new");
	/* A second 401 after the re-read is final. */
	long status = 0;
	CHECK_INT(kube_request(k.c, "GET", "/y", NULL, NULL, 0, &status, NULL, &e), -1);
	CHECK_INT(status, 401);
	CHECK_INT(kube_client_requests(k.c), 4);
	CHECK_STR(e ? e->msg : NULL, "GET /y: 401 Unauthorized: Unauthorized");
	err_free(e);
	unlink(path);
	client_stop(&k);
}

TEST(dropped_connection_is_retried_for_get_only)
{
	static const struct fake_http_step steps[] = {
	        {.response = NULL}, {.response = OK_200}, {.response = NULL}};
	struct client k;
	client_start(&k, steps, 3);
	struct err *e = NULL;
	CHECK_INT(kube_request(k.c, "GET", "/x", NULL, NULL, 0, NULL, NULL, &e), 0);
	CHECK_INT(kube_client_requests(k.c), 2);
	/* A POST that may have been applied is not sent again. */
	CHECK_INT(kube_request(k.c, "POST", "/x", NULL, "{}", 2, NULL, NULL, &e), -1);
	CHECK_INT(kube_client_requests(k.c), 3);
	CHECK(e && e->code == ERR_NET);
	err_free(e);
	client_stop(&k);
}

TEST(connection_refused_is_err_net)
{
	struct fake_http f;
	fake_http_start(&f, NULL, 0);
	fake_http_stop(&f); /* the port is closed now */
	struct kube_config *cfg = fake_config(f.port, NULL);
	struct kube_client *c = NULL;
	struct err *e = NULL;
	CHECK_INT(kube_client_new(cfg, &c, &e), 0);
	kube_client_set_deadline(c, now_ms() + 250); /* room for one 100 ms backoff */
	int64_t t0 = now_ms();
	CHECK_INT(kube_request(c, "POST", "/x", NULL, "{}", 2, NULL, NULL, &e), -1);
	CHECK(now_ms() - t0 < 1000);
	CHECK_INT(kube_client_requests(c), 2); /* refused: nothing was sent, so POST retries */
	CHECK(e && e->code == ERR_NET);
	CHECK_CONTAINS(e ? e->msg : NULL, "POST /x: ");
	CHECK_CONTAINS(e ? e->msg : NULL, "(API server http://127.0.0.1:");
	err_free(e);
	kube_client_free(c);
	kube_config_free(cfg);
}

static atomic_int cancel_flag;

static void *cancel_later(void *arg)
{
	(void)arg;
	pause_ms(100);
	cancel_flag = 15;
	return NULL;
}

TEST(cancel_interrupts_a_hanging_request)
{
	static const struct fake_http_step steps[] = {{.hang = true}};
	struct client k;
	client_start(&k, steps, 1);
	cancel_flag = 0;
	kube_client_set_cancel(k.c, &cancel_flag);
	pthread_t t;
	pthread_create(&t, NULL, cancel_later, NULL);
	struct err *e = NULL;
	int64_t t0 = now_ms();
	CHECK_INT(kube_request(k.c, "GET", "/hang", NULL, NULL, 0, NULL, NULL, &e), -1);
	int64_t ms = now_ms() - t0;
	pthread_join(t, NULL);
	CHECK(ms >= 90 && ms < 400); /* one 50 ms slice after the flag, plus slack */
	CHECK(e && e->code == ERR_SIGNAL && e->signo == 15);
	err_free(e);
	/* Cancelled before starting: fails at once without a request. */
	e = NULL;
	CHECK_INT(kube_request(k.c, "GET", "/x", NULL, NULL, 0, NULL, NULL, &e), -1);
	CHECK(e && e->code == ERR_SIGNAL);
	CHECK_INT(kube_client_requests(k.c), 1);
	err_free(e);
	client_stop(&k);
}

TEST(deadline_interrupts_a_hanging_stream)
{
	static const struct fake_http_step steps[] = {{.hang = true}};
	struct client k;
	client_start(&k, steps, 1);
	kube_client_set_deadline(k.c, now_ms() + 200);
	struct err *e = NULL;
	int64_t t0 = now_ms();
	CHECK_INT(kube_stream_get(k.c, "/watch", NULL, NULL, &e), -1);
	int64_t ms = now_ms() - t0;
	CHECK(ms >= 190 && ms < 600);
	CHECK(e && e->code == ERR_TIMEOUT);
	err_free(e);
	client_stop(&k);
}

struct sink {
	struct buf got;
	int calls;
	const char *stop_after; /* stop once this text has arrived */
};

static int sink_data(const char *data, size_t len, void *ud)
{
	struct sink *s = ud;
	s->calls++;
	buf_append(&s->got, data, len, "sink", NULL);
	return s->stop_after && strstr(s->got.data, s->stop_after) ? 1 : 0;
}

#define CHUNKED_200 "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"

TEST(stream_delivers_pieces_and_stops_on_request)
{
	static const struct fake_http_step steps[] = {
	        {.response = CHUNKED_200 "6\r\nline1\n\r\n",
	         .pieces = {"3\r\nlin\r\n", "3\r\ne2\n\r\n", "0\r\n\r\n"}},
	        {.response = CHUNKED_200 "6\r\nline1\n\r\n",
	         .close = true,
	         .pieces = {"6\r\nline2\n\r\n"}}, /* never ends */
	};
	struct client k;
	client_start(&k, steps, 2);
	struct sink s = {0};
	buf_init(&s.got, 0);
	struct err *e = NULL;
	CHECK_INT(kube_stream_get(k.c, "/w1", sink_data, &s, &e), 0);
	CHECK_STR(s.got.data, "line1\nline2\n");
	CHECK(s.calls >= 3);
	buf_reset(&s.got);
	s.stop_after = "line2\n";
	CHECK_INT(kube_stream_get(k.c, "/w2", sink_data, &s, &e), 0);
	CHECK_STR(s.got.data, "line1\nline2\n");
	buf_free(&s.got);
	client_stop(&k);
}

TEST(stream_errors)
{
	static const struct fake_http_step steps[] = {
	        {.response = "HTTP/1.1 410 Gone\r\nContent-Type: "
	                     "application/json\r\nContent-Length: 94\r\n\r\n"
	                     "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"too old "
	                     "resource "
	                     "version\",\"reason\":\"Expired\"}  "},
	        {.response = CHUNKED_200 "6\r\nline1\n\r\n",
	         .close = true}, /* the connection drops mid-stream */
	};
	struct client k;
	client_start(&k, steps, 2);
	struct sink s = {0};
	buf_init(&s.got, 0);
	struct err *e = NULL;
	CHECK_INT(kube_stream_get(k.c, "/w?rv=1", sink_data, &s, &e), -1);
	CHECK(e && e->code == ERR_API && e->http_status == 410);
	CHECK_STR(e ? e->reason : NULL, "Expired");
	CHECK_STR(e ? e->msg : NULL, "GET /w?rv=1: 410 Expired: too old resource version");
	CHECK_INT(s.calls, 0); /* an error body never reaches on_data */
	err_free(e);
	e = NULL;
	CHECK_INT(kube_stream_get(k.c, "/w", sink_data, &s, &e), -1);
	CHECK(e && e->code == ERR_NET);
	CHECK_STR(s.got.data, "line1\n");
	CHECK_INT(kube_client_requests(k.c), 2); /* streams are not retried */
	err_free(e);
	buf_free(&s.got);
	client_stop(&k);
}

TEST(response_body_limit)
{
	char *big = xasprintf("HTTP/1.1 200 OK\r\nContent-Length: %u\r\n\r\n", LIMIT_API_BODY + 1);
	struct buf resp;
	buf_init(&resp, 0);
	buf_puts(&resp, big);
	free(big);
	char spaces[4096];
	memset(spaces, ' ', sizeof(spaces));
	for (unsigned i = 0; i <= LIMIT_API_BODY; i += sizeof(spaces))
		buf_append(&resp, spaces, sizeof(spaces), "x", NULL);
	const struct fake_http_step steps[] = {{.response = resp.data, .close = true}};
	struct client k;
	client_start(&k, steps, 1);
	struct err *e = NULL;
	struct json *j = NULL;
	CHECK_INT(kube_request(k.c, "GET", "/big", NULL, NULL, 0, NULL, &j, &e), -1);
	CHECK(e && e->code == ERR_NET);
	CHECK_CONTAINS(e ? e->msg : NULL, "exceeds the limit of 8388608 bytes");
	err_free(e);
	client_stop(&k);
	buf_free(&resp);
}

TEST(tls_server_name_routes_to_the_real_server)
{
	static const struct fake_http_step steps[] = {{.response = OK_200}};
	struct fake_http f;
	fake_http_start(&f, steps, 1);
	struct kube_config *cfg = fake_config(f.port, NULL);
	cfg->tls_server_name = xstrdup("kubernetes.default.svc");
	struct kube_client *c = NULL;
	struct err *e = NULL;
	CHECK_INT(kube_client_new(cfg, &c, &e), 0);
	CHECK_INT(kube_request(c, "GET", "/version", NULL, NULL, 0, NULL, NULL, &e), 0);
	char host[64];
	snprintf(host, sizeof(host), "Host: kubernetes.default.svc:%d", f.port);
	CHECK_CONTAINS(fake_http_req(&f, 0), host);
	CHECK(strstr(fake_http_req(&f, 0), "Authorization") == NULL); /* no token configured */
	kube_client_free(c);
	fake_http_stop(&f);
	kube_config_free(cfg);
}

/* An API server behind a proxy at https://host/k8s/: every path, REST and stream alike,
 * goes under the prefix. The attach is refused with 403, so the stream client also reads
 * /version (through the REST client) to explain it: three requests, all under /k8s. */
TEST(server_under_a_path_prefix)
{
	static const struct fake_http_step steps[] = {
	        {.response = OK_200, .close = true}, /* one connection at a time */
	        {.response = "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n", .close = true},
	        {.response = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	                     "Content-Length: 49\r\n\r\n{\"major\":\"1\",\"minor\":\"34\","
	                     "\"gitVersion\":\"v1.34.0\"}"},
	};
	struct fake_http f;
	fake_http_start(&f, steps, 3);
	struct kube_config *cfg = fake_config_at(f.port, "/k8s", "tok");
	CHECK_STR(cfg->server, cfg->server); /* set */
	CHECK_STR(cfg->srv.prefix, "/k8s");
	struct kube_client *c = NULL;
	struct err *e = NULL;
	struct json *pod = NULL;
	CHECK_INT(kube_client_new(cfg, &c, &e), 0);
	CHECK_INT(kube_api_pod_get(c, "a", "p", NULL, &pod, &e), 0);
	CHECK_STR(json_str(json_path(pod, "metadata.name")), "p");
	CHECK_CONTAINS(fake_http_req(&f, 0), "GET /k8s/api/v1/namespaces/a/pods/p HTTP/1.1");
	char *path = kube_api_pod_attach_path("a", "p", "fn", true);
	struct kube_stream_opts o = {.path = path,
	                             .in_fd = -1,
	                             .out_fd = -1,
	                             .err_fd = -1,
	                             .deadline_ms = now_ms() + 5000};
	struct kube_stream *stream = NULL;
	CHECK_INT(kube_stream_open(cfg, &o, &stream, &e), -1);
	CHECK(e && e->http_status == 403);
	CHECK_CONTAINS(e ? e->msg : NULL, "it runs Kubernetes v1.34.0");
	CHECK_CONTAINS(fake_http_req(&f, 1),
	               "GET /k8s/api/v1/namespaces/a/pods/p/attach?container=fn"
	               "&stdin=true&stdout=true&stderr=true&tty=false HTTP/1.1");
	CHECK(strcasestr(fake_http_req(&f, 1), "authorization: Bearer tok") != NULL);
	CHECK_CONTAINS(fake_http_req(&f, 2), "GET /k8s/version HTTP/1.1");
	err_free(e);
	free(path);
	json_free(pod);
	kube_client_free(c);
	fake_http_stop(&f);
	kube_config_free(cfg);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	log_set_level(LOG_WARN); /* retries log at info; KRMPOD_LOG_LEVEL=debug shows them */
	const char *lvl = getenv("KRMPOD_LOG_LEVEL");
	enum log_level level;
	if (lvl && log_parse_level(lvl, "KRMPOD_LOG_LEVEL", &level, NULL) == 0)
		log_set_level(level);
	RUN(status_forbidden);
	RUN(status_quota_is_a_cause);
	RUN(status_invalid_adds_causes_not_in_the_message);
	RUN(status_plain_text_is_quoted);
	RUN(status_long_body_is_cut);
	RUN(status_without_message);
	RUN(retry_after);
	RUN(query_escape);
	RUN(clock_is_monotonic);
	RUN(get_parses_json_and_sends_headers);
	RUN(server_time_is_the_last_date);
	RUN(post_and_delete_send_bodies_on_one_connection);
	RUN(retries_429_and_5xx);
	RUN(retries_are_bounded);
	RUN(retry_after_never_passes_the_deadline);
	RUN(unauthorized_rereads_the_token_once);
	RUN(dropped_connection_is_retried_for_get_only);
	RUN(connection_refused_is_err_net);
	RUN(cancel_interrupts_a_hanging_request);
	RUN(deadline_interrupts_a_hanging_stream);
	RUN(stream_delivers_pieces_and_stops_on_request);
	RUN(stream_errors);
	RUN(response_body_limit);
	RUN(tls_server_name_routes_to_the_real_server);
	RUN(server_under_a_path_prefix);
	return check_summary();
}

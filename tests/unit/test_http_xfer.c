/* Unit tests: the transfer engine's retry policy per method, its waits and the quoting of
 * an error body (http_xfer.h). The transfers themselves are tested through both clients
 * (test_kube_http.c, test_registry.c). */
#include <stdatomic.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "check.h"
#include "http/http_xfer.h"

TEST(a_post_or_patch_is_never_sent_again_after_a_5xx)
{
	CHECK(http_status_retryable("GET", 503) && http_status_retryable("DELETE", 500));
	CHECK(!http_status_retryable("POST", 504) && !http_status_retryable("PATCH", 502));
	CHECK(!http_status_retryable("PUT", 500));
	/* 429 is refused before any work: every method */
	CHECK(http_status_retryable("POST", 429) && http_status_retryable("PATCH", 429));
	CHECK(!http_status_retryable("GET", 404) && !http_status_retryable("GET", 409));
}

TEST(a_failed_connection_is_sent_again_only_when_nothing_can_have_arrived)
{
	CHECK(http_failure_retryable("POST", CURLE_COULDNT_CONNECT));
	CHECK(http_failure_retryable("GET", CURLE_RECV_ERROR));
	CHECK(!http_failure_retryable("POST", CURLE_RECV_ERROR));
	CHECK(!http_failure_retryable("PATCH", CURLE_GOT_NOTHING));
	CHECK(!http_failure_retryable("PATCH", CURLE_OPERATION_TIMEDOUT));
	CHECK(!http_failure_retryable("GET", CURLE_PEER_FAILED_VERIFICATION));
}

TEST(the_wait_follows_the_policy)
{
	struct http_stop none = {0};
	struct http_retry_policy p = {.max_retries = 3, .base_ms = 100, .cap_ms = 1000};
	CHECK(http_retry_wait_ms(&p, &none, "GET", "/x", 503, "", NULL, 0) == 100);
	CHECK(http_retry_wait_ms(&p, &none, "GET", "/x", 503, "", NULL, 2) == 400);
	CHECK(http_retry_wait_ms(&p, &none, "GET", "/x", 503, "", NULL, 3) == -1);
	CHECK(http_retry_wait_ms(&p, &none, "POST", "/x", 503, "", NULL, 0) == -1);
	CHECK(http_retry_wait_ms(&p, &none, "POST", "/x", 429, "1", NULL, 0) == 1000);
	/* a longer hint is cut to the cap, or ends the retries with longer_stands */
	CHECK(http_retry_wait_ms(&p, &none, "GET", "/x", 429, "30", NULL, 0) == 1000);
	p.longer_stands = true;
	CHECK(http_retry_wait_ms(&p, &none, "GET", "/x", 429, "30", NULL, 0) == -1);
	/* a failed transfer: the backoff, no hint */
	CHECK(http_retry_wait_ms(&p, &none, "GET", "/x", 0, "", "GET /x: reset", 1) == 200);
	/* the deadline comes first */
	struct http_stop soon = {.deadline_ms = now_ms() + 50};
	CHECK(http_retry_wait_ms(&p, &soon, "GET", "/x", 503, "", NULL, 0) == -1);
}

TEST(a_wait_ends_at_the_cancel_flag)
{
	atomic_int cancel = 15;
	struct http_stop s = {.cancel = &cancel};
	struct err *e = NULL;
	int64_t t0 = now_ms();
	CHECK_INT(http_wait(&s, "GET", "/x", 5000, &e), -1);
	CHECK(now_ms() - t0 < 1000);
	CHECK(e && e->code == ERR_SIGNAL && e->signo == 15);
	CHECK_CONTAINS(e ? e->msg : NULL, "GET /x: interrupted by signal 15");
	err_free(e);
	e = NULL;
	atomic_store(&cancel, 0);
	struct http_stop past = {.cancel = &cancel, .deadline_ms = now_ms() - 1};
	CHECK_INT(http_wait(&past, "DELETE", "/y", 10, &e), -1);
	CHECK(e && e->code == ERR_TIMEOUT);
	CHECK_CONTAINS(e ? e->msg : NULL, "DELETE /y: the deadline passed");
	err_free(e);
	struct http_stop free_run = {.cancel = &cancel};
	CHECK_INT(http_wait(&free_run, "GET", "/x", 20, NULL), 0);
}

TEST(an_error_body_is_quoted_and_cut_on_a_character)
{
	struct buf b;
	buf_init(&b, 0);
	CHECK(!http_quote_body(&b, " \n", 2, 10) && b.len == 0);
	CHECK(http_quote_body(&b, "no \"such\" thing\n", 16, 100));
	CHECK_STR(b.data, "\"no \\\"such\\\" thing\"");
	buf_reset(&b);
	/* "aé" is 3 bytes: a cut at 2 would split é */
	CHECK(http_quote_body(&b, "a\xc3\xa9z", 4, 2));
	CHECK_STR(b.data, "\"a\" (3 more bytes)");
	buf_free(&b);
}

int main(void)
{
	RUN(a_post_or_patch_is_never_sent_again_after_a_5xx);
	RUN(a_failed_connection_is_sent_again_only_when_nothing_can_have_arrived);
	RUN(the_wait_follows_the_policy);
	RUN(a_wait_ends_at_the_cancel_flag);
	RUN(an_error_body_is_quoted_and_cut_on_a_character);
	return check_summary();
}

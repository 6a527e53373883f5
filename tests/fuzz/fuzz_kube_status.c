/* fuzz_kube_status.c — what krmpod decodes from the API server's answers: an error body
 * (a metav1.Status or anything else) into an ERR_API error (src/kube/kube_http.h), a Pod
 * into the pod state, watch stream lines and events, waiting reasons
 * (src/kube/kube_watch.h), Retry-After values and timestamps, and a /version answer
 * (src/kube/kube_version.h) with the refusal text it feeds (src/kube/kube_stream.h).
 *
 * The first two bytes of the input pick the HTTP status (100..599); the rest is the body.
 *
 * Invariants: the error is ERR_API with the status and a terminated reason and message;
 * decoded pod states have terminated strings; watch lines stay within their limit; a
 * failure sets its error. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/size_limits.h"
#include "fuzz_util.h"
#include "http/http_util.h"
#include "kube/kube_http.h"
#include "kube/kube_stream.h"
#include "kube/kube_version.h"
#include "kube/kube_watch.h"

#define TERMINATED(field) (memchr((field), '\0', sizeof(field)) != NULL)

static void check_state(const struct pod_state *st)
{
	if (!TERMINATED(st->phase) || !TERMINATED(st->pod_reason) || !TERMINATED(st->pod_message) ||
	    !TERMINATED(st->sched_reason) || !TERMINATED(st->sched_message) ||
	    !TERMINATED(st->c_reason) || !TERMINATED(st->c_message) || !TERMINATED(st->init_name) ||
	    !TERMINATED(st->init_reason) || !TERMINATED(st->init_message) ||
	    !TERMINATED(st->resource_version) || !TERMINATED(st->uid))
		fuzz_fail("a pod state field is not terminated");
	if (st->cstate < CS_UNKNOWN || st->cstate > CS_TERMINATED || st->init_cstate < CS_UNKNOWN ||
	    st->init_cstate > CS_TERMINATED)
		fuzz_fail("container state %d / %d", st->cstate, st->init_cstate);
	int64_t since = 0, recheck = 0;
	pod_waiting_is_fatal(st->c_reason, &since, 1000, &recheck);
	pod_waiting_is_fatal(st->c_reason, &since, 1000 + POD_IMAGE_PULL_GRACE_MS, &recheck);
	pod_waiting_is_fatal(st->init_reason, &since, 0, &recheck);
}

struct lines {
	struct pod_state st;
	unsigned n;
};

static int on_line(const char *line, size_t len, void *ud)
{
	struct lines *l = ud;
	if (len == 0 || memchr(line, '\n', len))
		fuzz_fail("a watch line of %zu bytes holding a newline", len);
	struct err *e = NULL;
	uint64_t gen = l->st.generation;
	int rc = pod_watch_apply_event(line, len, "function", &l->st, &e);
	if (rc < -1 || rc > POD_WATCH_EXPIRED)
		fuzz_fail("pod_watch_apply_event returned %d", rc);
	fuzz_check_err(rc, e, "pod_watch_apply_event");
	if (rc == POD_WATCH_CHANGED && l->st.generation != gen + 1)
		fuzz_fail("a change without a new generation");
	if (rc == -1 && e->code != ERR_API && e->code != ERR_NET)
		fuzz_fail("a watch event error of class %d", e->code);
	err_free(e);
	check_state(&l->st);
	return ++l->n >= 64; /* as the watch does after an error: stop at some point */
}

static void status_error(long status, const char *body, size_t len)
{
	struct err *e = NULL;
	int rc = kube_status_error("GET", "/api/v1/namespaces/fns/pods/p", status, body, len, &e);
	if (rc != -1 || e == NULL || e->code != ERR_API || e->http_status != status)
		fuzz_fail("kube_status_error: rc %d, no ERR_API error with status %ld", rc, status);
	if (!TERMINATED(e->reason) || !TERMINATED(e->msg))
		fuzz_fail("the error's reason or message is not terminated");
	err_free(e);
}

static void version(const char *body, size_t len)
{
	struct json *doc = NULL;
	if (json_parse(body, len, "version", &doc, NULL) < 0)
		return;
	struct kube_version v;
	memset(&v, 0, sizeof(v));
	struct err *e = NULL;
	int rc = kube_version_decode(doc, &v, &e);
	fuzz_check_err(rc, e, "kube_version_decode");
	if (rc == 0 && !TERMINATED(v.text))
		fuzz_fail("the version text is not terminated");
	kube_version_supported(&v);
	char *text = kube_stream_refusal_text("/api/v1/namespaces/fns/pods/p/attach?stdin=true",
	                                      rc == 0 ? &v : NULL, e ? e->msg : NULL);
	if (text == NULL || text[0] == '\0')
		fuzz_fail("an empty refusal text");
	free(text);
	err_free(e);
	const char *git = json_str(json_get(doc, "gitVersion"));
	if (git)
		kube_version_parse(git, &v);
	json_free(doc);
}

FUZZ_QUIET_LOG

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	long status = 404;
	if (size >= 2) {
		status = 100 + (long)((data[0] << 8 | data[1]) % 500);
		data += 2, size -= 2;
	}
	/* an exact copy, so that reading past the body is caught */
	char *body = malloc(size ? size : 1);
	if (body == NULL)
		abort();
	memcpy(body, data, size);
	status_error(status, body, size);
	status_error(status, NULL, 0);

	struct json *pod = NULL;
	if (json_parse(body, size, "pod", &pod, NULL) == 0) {
		struct pod_state st;
		memset(&st, 0, sizeof(st));
		pod_state_decode(pod, "function", &st);
		check_state(&st);
		pod_state_decode(pod, NULL, &st);
		check_state(&st);
		json_free(pod);
	}

	struct lines l;
	memset(&l, 0, sizeof(l));
	struct buf pending;
	buf_init(&pending, LIMIT_WATCH_EVENT);
	struct err *e = NULL;
	/* in two pieces, as a stream delivers it */
	size_t half = size / 2;
	int rc = pod_watch_split_lines(&pending, body, half, on_line, &l, &e);
	if (rc == 0)
		rc = pod_watch_split_lines(&pending, body + half, size - half, on_line, &l, &e);
	if (rc < 0 && e == NULL)
		fuzz_fail("pod_watch_split_lines failed without an error");
	if (pending.len > LIMIT_WATCH_EVENT)
		fuzz_fail("a pending watch line of %zu bytes", pending.len);
	err_free(e);
	buf_free(&pending);

	version(body, size);

	char *text = fuzz_cstr(data, size);
	int64_t ms = http_retry_after_ms(text, 1700000000);
	if (ms < -1)
		fuzz_fail("Retry-After %s: %lld ms", text, (long long)ms);
	time_t t = 0;
	kube_parse_time(text, &t);
	free(text);
	free(body);
	return 0;
}

/* Unit tests: the pure parts of kube_watch — decoding Pod objects in the shapes a cluster
 * reports (pending, image pull errors, running, terminated, OOMKilled, DeadlineExceeded,
 * Unschedulable), splitting a watch stream into lines whatever the chunking, and applying
 * events (bookmarks, deletions, 410 Expired, other ERROR events). */
#include <stdlib.h>

#include "base/size_limits.h"
#include "base/xalloc.h"
#include "check.h"
#include "kube/kube_watch.h"

/* Pod JSON as the API server sends it (trimmed to the fields that matter plus some that
 * must be ignored). */
#define META(rv)                                                                             \
	"\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"krmpod-fn-x7k2p\"," \
	"\"generateName\":\"krmpod-fn-\",\"namespace\":\"krmpod\",\"uid\":\"0b6e1c3a\","     \
	"\"resourceVersion\":\"" rv                                                          \
	"\",\"labels\":{\"app.kubernetes.io/managed-by\":\"krmpod\"}},"                      \
	"\"spec\":{\"containers\":[{\"name\":\"fn\",\"image\":\"example.com/fn:v1\","        \
	"\"stdin\":true,\"stdinOnce\":true}],\"restartPolicy\":\"Never\"}"

static const char pod_created[] = "{" META("100") ",\"status\":{\"phase\":\"Pending\","
                                                  "\"qosClass\":\"Guaranteed\"}}";

static const char pod_unschedulable[] =
        "{" META("101") ",\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":"
                        "\"PodScheduled\",\"status\":\"False\",\"lastProbeTime\":null,"
                        "\"lastTransitionTime\":\"2026-11-22T10:00:00Z\",\"reason\":"
                        "\"Unschedulable\",\"message\":\"0/3 nodes are available: 3 "
                        "Insufficient memory. preemption: 0/3 nodes are available: 3 No "
                        "preemption victims found for incoming pod.\"}]}}";

static const char pod_creating[] =
        "{" META("102") ",\"status\":{\"phase\":"
                        "\"Pending\",\"conditions\":[{\"type\":\"Initialized\",\"status\":"
                        "\"True\"},{\"type\":\"Ready\",\"status\":\"False\",\"reason\":"
                        "\"ContainersNotReady\"},{\"type\":\"PodScheduled\",\"status\":"
                        "\"True\"}],\"hostIP\":\"172.18.0.2\",\"containerStatuses\":[{\"name\":"
                        "\"fn\",\"state\":{\"waiting\":{\"reason\":\"ContainerCreating\"}},"
                        "\"lastState\":{},\"ready\":false,\"restartCount\":0,\"image\":"
                        "\"example.com/fn:v1\",\"imageID\":\"\",\"started\":false}]}}";

static const char pod_errimagepull[] =
        "{" META("103") ",\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":"
                        "\"PodScheduled\",\"status\":\"True\"}],\"containerStatuses\":[{"
                        "\"name\":\"fn\",\"state\":{\"waiting\":{\"reason\":\"ErrImagePull\","
                        "\"message\":\"rpc error: code = NotFound desc = failed to pull and "
                        "unpack image \\\"example.com/fn:v1\\\": not found\"}},\"lastState\":"
                        "{},\"ready\":false,\"restartCount\":0}]}}";

static const char pod_running[] =
        "{" META("104") ",\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":"
                        "\"PodScheduled\",\"status\":\"True\"}],\"podIP\":\"10.244.1.7\","
                        "\"startTime\":\"2026-11-22T10:00:01Z\",\"containerStatuses\":[{"
                        "\"name\":\"fn\",\"state\":{\"running\":{\"startedAt\":"
                        "\"2026-11-22T10:00:02Z\"}},\"lastState\":{},\"ready\":true,"
                        "\"restartCount\":0,\"started\":true}]}}";

/* lastState holds an older OOMKilled run: it must not leak into the decoded state. */
static const char pod_succeeded[] =
        "{" META("105") ",\"status\":{\"phase\":\"Succeeded\",\"conditions\":[{\"type\":"
                        "\"PodScheduled\",\"status\":\"True\"}],\"containerStatuses\":[{"
                        "\"name\":\"fn\",\"state\":{\"terminated\":{\"exitCode\":0,\"reason\":"
                        "\"Completed\",\"startedAt\":\"2026-11-22T10:00:02Z\",\"finishedAt\":"
                        "\"2026-11-22T10:00:03Z\",\"containerID\":\"containerd://abc\"}},"
                        "\"lastState\":{\"terminated\":{\"exitCode\":137,\"reason\":"
                        "\"OOMKilled\"}},\"ready\":false,\"restartCount\":0}]}}";

static const char pod_failed_exit[] =
        "{" META("106") ",\"status\":{\"phase\":\"Failed\",\"containerStatuses\":[{\"name\":"
                        "\"fn\",\"state\":{\"terminated\":{\"exitCode\":1,\"reason\":\"Error\","
                        "\"message\":\"function failed: bad input\\n\"}}}]}}";

static const char pod_oomkilled[] =
        "{" META("107") ",\"status\":{\"phase\":\"Failed\",\"containerStatuses\":[{\"name\":"
                        "\"fn\",\"state\":{\"terminated\":{\"exitCode\":137,\"reason\":"
                        "\"OOMKilled\",\"startedAt\":\"2026-11-22T10:00:02Z\"}}}]}}";

static const char pod_deadline[] =
        "{" META("108") ",\"status\":{\"phase\":\"Failed\",\"reason\":\"DeadlineExceeded\","
                        "\"message\":\"Pod was active on the node longer than the specified "
                        "deadline\",\"containerStatuses\":[{\"name\":\"fn\",\"state\":{"
                        "\"terminated\":{\"exitCode\":137,\"reason\":\"Error\"}}}]}}";

/* Two containers; the helper's entry comes first. */
static const char pod_two_containers[] =
        "{" META("109") ",\"status\":{\"phase\":\"Running\",\"initContainerStatuses\":[{"
                        "\"name\":\"unpack\",\"state\":{\"terminated\":{\"exitCode\":0,"
                        "\"reason\":\"Completed\"}}}],\"containerStatuses\":[{\"name\":"
                        "\"helper\",\"state\":{\"terminated\":{\"exitCode\":2,\"reason\":"
                        "\"Error\"}}},{\"name\":\"fn\",\"state\":{\"running\":{}}}]}}";

static struct json *parse(const char *text)
{
	struct json *j = NULL;
	struct err *e = NULL;
	if (json_parse(text, strlen(text), "fixture", &j, &e) < 0) {
		fprintf(stderr, "fixture does not parse: %s\n%s\n", e->msg, text);
		abort();
	}
	return j;
}

static struct pod_state decode(const char *text, const char *container)
{
	struct pod_state st;
	memset(&st, 0x5a, sizeof(st)); /* garbage: decode must clear what is absent */
	st.t_scheduled = 11, st.t_running = 22, st.t_terminated = 33, st.generation = 44;
	cleanup_json struct json *j = parse(text);
	pod_state_decode(j, container, &st);
	return st;
}

TEST(decode_created)
{
	struct pod_state st = decode(pod_created, "fn");
	CHECK_STR(st.phase, "Pending");
	CHECK_STR(st.resource_version, "100");
	CHECK(!st.scheduled);
	CHECK_STR(st.sched_reason, "");
	CHECK_INT(st.cstate, CS_UNKNOWN);
	CHECK_STR(st.c_reason, "");
	CHECK_STR(st.pod_reason, "");
	CHECK(!st.deleted);
	/* decode leaves the watch's bookkeeping alone */
	CHECK_INT(st.t_scheduled, 11);
	CHECK_INT(st.t_running, 22);
	CHECK_INT(st.t_terminated, 33);
	CHECK_INT(st.generation, 44);
}

TEST(decode_unschedulable)
{
	struct pod_state st = decode(pod_unschedulable, "fn");
	CHECK(!st.scheduled);
	CHECK_STR(st.sched_reason, "Unschedulable");
	CHECK_CONTAINS(st.sched_message, "0/3 nodes are available: 3 Insufficient memory");
	CHECK_INT(st.cstate, CS_UNKNOWN);
}

TEST(decode_creating)
{
	struct pod_state st = decode(pod_creating, "fn");
	CHECK(st.scheduled);
	CHECK_STR(st.sched_reason, "");
	CHECK_INT(st.cstate, CS_WAITING);
	CHECK_STR(st.c_reason, "ContainerCreating");
	CHECK_STR(st.c_message, "");
}

TEST(decode_errimagepull)
{
	struct pod_state st = decode(pod_errimagepull, "fn");
	CHECK_INT(st.cstate, CS_WAITING);
	CHECK_STR(st.c_reason, "ErrImagePull");
	CHECK_CONTAINS(st.c_message, "failed to pull and unpack image \"example.com/fn:v1\"");
}

TEST(decode_running)
{
	struct pod_state st = decode(pod_running, "fn");
	CHECK_STR(st.phase, "Running");
	CHECK(st.scheduled);
	CHECK_INT(st.cstate, CS_RUNNING);
	CHECK_STR(st.c_reason, "");
	CHECK_INT(st.exit_code, 0);
}

TEST(decode_terminated_ignores_last_state)
{
	struct pod_state st = decode(pod_succeeded, "fn");
	CHECK_STR(st.phase, "Succeeded");
	CHECK_INT(st.cstate, CS_TERMINATED);
	CHECK_STR(st.c_reason, "Completed");
	CHECK_INT(st.exit_code, 0);

	st = decode(pod_failed_exit, "fn");
	CHECK_STR(st.phase, "Failed");
	CHECK_INT(st.exit_code, 1);
	CHECK_STR(st.c_reason, "Error");
	CHECK_STR(st.c_message, "function failed: bad input\n");
}

TEST(decode_oomkilled)
{
	struct pod_state st = decode(pod_oomkilled, "fn");
	CHECK_INT(st.cstate, CS_TERMINATED);
	CHECK_STR(st.c_reason, "OOMKilled");
	CHECK_INT(st.exit_code, 137);
}

TEST(decode_deadline_exceeded)
{
	struct pod_state st = decode(pod_deadline, "fn");
	CHECK_STR(st.phase, "Failed");
	CHECK_STR(st.pod_reason, "DeadlineExceeded");
	CHECK_CONTAINS(st.pod_message, "longer than the specified deadline");
	CHECK_INT(st.cstate, CS_TERMINATED);
	CHECK_INT(st.exit_code, 137);
}

TEST(decode_picks_the_named_container)
{
	struct pod_state st = decode(pod_two_containers, "fn");
	CHECK_INT(st.cstate, CS_RUNNING);
	st = decode(pod_two_containers, "helper");
	CHECK_INT(st.cstate, CS_TERMINATED);
	CHECK_INT(st.exit_code, 2);
	st = decode(pod_two_containers, "unpack"); /* init containers are found too */
	CHECK_INT(st.cstate, CS_TERMINATED);
	CHECK_STR(st.c_reason, "Completed");
	st = decode(pod_two_containers, "absent");
	CHECK_INT(st.cstate, CS_UNKNOWN);
}

/* A pod status with the installer container "krmpod" in agent_state and "fn" creating. */
static struct pod_state beside(const char *agent_state, const char *container)
{
	char text[512];
	snprintf(text, sizeof(text),
	         "{\"status\":{\"containerStatuses\":[{\"name\":\"krmpod\",\"state\":{%s}},"
	         "{\"name\":\"fn\",\"state\":{\"waiting\":{\"reason\":\"ContainerCreating\"}}}]}}",
	         agent_state);
	return decode(text, container);
}

/* Exec mode's installer runs before the function container: its failure is reported as
 * init_* (the function container then waits or fails for want of krmpod). */
TEST(decode_reports_a_failing_container_beside)
{
	const char *pull = "\"waiting\":{\"reason\":\"ErrImagePull\",\"message\":\"not found\"}";
	struct pod_state st = beside(pull, "fn");
	CHECK_STR(st.init_name, "krmpod");
	CHECK_INT(st.init_cstate, CS_WAITING);
	CHECK_STR(st.init_reason, "ErrImagePull");
	CHECK_STR(st.init_message, "not found");
	CHECK(!st.init_done);
	/* one that only is being created, or runs, is not reported */
	st = beside("\"running\":{}", "fn");
	CHECK_STR(st.init_name, "");
	st = beside("\"waiting\":{\"reason\":\"ContainerCreating\"}", "fn");
	CHECK_STR(st.init_name, "");
	/* killed (a failed postStart hook) */
	const char *killed = "\"terminated\":{\"exitCode\":137,\"reason\":\"Error\"}";
	st = beside(killed, "fn");
	CHECK_STR(st.init_name, "krmpod");
	CHECK_INT(st.init_exit_code, 137);
	/* without a container named, nothing beside it is looked at */
	st = beside(killed, NULL);
	CHECK_STR(st.init_name, "");
}

TEST(decode_null_and_odd_shapes)
{
	struct pod_state st;
	memset(&st, 0, sizeof(st));
	pod_state_decode(NULL, "fn", &st);
	CHECK_STR(st.phase, "");
	CHECK_INT(st.cstate, CS_UNKNOWN);
	/* Strings longer than the fields are cut, never overflow. */
	struct buf b;
	buf_init(&b, 0);
	buf_puts(&b, "{\"status\":{\"phase\":\"");
	for (int i = 0; i < 100; i++)
		buf_puts(&b, "Pending");
	buf_puts(&b, "\"}}");
	st = decode(b.data, "fn");
	CHECK_INT(strlen(st.phase), sizeof(st.phase) - 1);
	buf_free(&b);
}

/* --- Line splitting --------------------------------------------------------------------- */

struct lines {
	char got[16][128];
	int n;
	int stop_at; /* return 1 from this line on (1-based); 0 = never */
};

static int collect(const char *line, size_t len, void *ud)
{
	struct lines *l = ud;
	if (l->n < 16)
		snprintf(l->got[l->n], sizeof(l->got[0]), "%.*s", (int)len, line);
	l->n++;
	return l->stop_at && l->n >= l->stop_at ? 1 : 0;
}

TEST(split_every_chunking)
{
	const char stream[] = "{\"a\":1}\n{\"b\":22}\r\n\n{\"c\":333}\n{\"tail\"";
	size_t len = sizeof(stream) - 1;
	/* Every split into two chunks, then byte by byte. */
	for (size_t cut = 0; cut <= len; cut++) {
		struct lines l = {0};
		struct buf pending;
		buf_init(&pending, LIMIT_WATCH_EVENT);
		CHECK_INT(pod_watch_split_lines(&pending, stream, cut, collect, &l, NULL), 0);
		CHECK_INT(
		        pod_watch_split_lines(&pending, stream + cut, len - cut, collect, &l, NULL),
		        0);
		CHECK_INT(l.n, 3);
		CHECK_STR(l.got[0], "{\"a\":1}");
		CHECK_STR(l.got[1], "{\"b\":22}"); /* CRLF stripped */
		CHECK_STR(l.got[2], "{\"c\":333}");
		CHECK_STR(pending.data, "{\"tail\""); /* waits for its newline */
		buf_free(&pending);
	}
	struct lines l = {0};
	struct buf pending;
	buf_init(&pending, LIMIT_WATCH_EVENT);
	for (size_t i = 0; i < len; i++)
		CHECK_INT(pod_watch_split_lines(&pending, stream + i, 1, collect, &l, NULL), 0);
	CHECK_INT(l.n, 3);
	CHECK_STR(l.got[2], "{\"c\":333}");
	buf_free(&pending);
}

TEST(split_stops_when_asked)
{
	const char stream[] = "one\ntwo\nthree\n";
	struct lines l = {.stop_at = 2};
	struct buf pending;
	buf_init(&pending, LIMIT_WATCH_EVENT);
	CHECK_INT(pod_watch_split_lines(&pending, stream, sizeof(stream) - 1, collect, &l, NULL),
	          1);
	CHECK_INT(l.n, 2);
	CHECK_STR(l.got[1], "two");
	buf_free(&pending);
}

TEST(split_enforces_the_limit)
{
	struct lines l = {0};
	struct buf pending;
	buf_init(&pending, 8);
	struct err *e = NULL;
	CHECK_INT(pod_watch_split_lines(&pending, "12345678\n", 9, collect, &l, &e), 0);
	CHECK_INT(l.n, 1);
	/* A line split across chunks that passes the limit. */
	CHECK_INT(pod_watch_split_lines(&pending, "12345", 5, collect, &l, &e), 0);
	CHECK_INT(pod_watch_split_lines(&pending, "6789\n", 5, collect, &l, &e), -1);
	CHECK(e != NULL && e->code == ERR_NET);
	CHECK_CONTAINS(e ? e->msg : NULL, "limit of 8 bytes");
	err_free(e);
	e = NULL;
	/* A whole line in one chunk over the limit. */
	buf_reset(&pending);
	CHECK_INT(pod_watch_split_lines(&pending, "123456789\n", 10, collect, &l, &e), -1);
	CHECK_INT(l.n, 1);
	err_free(e);
	buf_free(&pending);
}

/* --- Events ----------------------------------------------------------------------------- */

static int apply(struct pod_state *st, const char *type, const char *object, struct err **e)
{
	char *line = xasprintf("{\"type\":\"%s\",\"object\":%s}", type, object);
	int rc = pod_watch_apply_event(line, strlen(line), "fn", st, e);
	free(line);
	return rc;
}

TEST(events_update_state_and_generation)
{
	struct pod_state st = {0};
	CHECK_INT(apply(&st, "ADDED", pod_created, NULL), POD_WATCH_CHANGED);
	CHECK_INT(st.generation, 1); /* the first state counts as a change */
	CHECK_STR(st.resource_version, "100");
	CHECK_INT(st.t_scheduled, 0);

	CHECK_INT(apply(&st, "MODIFIED", pod_creating, NULL), POD_WATCH_CHANGED);
	CHECK_INT(st.generation, 2);
	CHECK(st.scheduled);
	CHECK(st.t_scheduled > 0);
	CHECK_INT(st.t_running, 0);
	int64_t t_sched = st.t_scheduled;

	/* Same state, new resourceVersion: no wake-up, but the RV follows. */
	CHECK_INT(apply(&st, "MODIFIED", pod_creating, NULL), POD_WATCH_UNCHANGED);
	CHECK_INT(st.generation, 2);

	CHECK_INT(apply(&st, "MODIFIED", pod_running, NULL), POD_WATCH_CHANGED);
	CHECK_INT(st.generation, 3);
	CHECK_STR(st.resource_version, "104");
	CHECK(st.t_running > 0);
	CHECK_INT(st.t_scheduled, t_sched); /* first sighting only */

	CHECK_INT(apply(&st, "MODIFIED", pod_succeeded, NULL), POD_WATCH_CHANGED);
	CHECK_INT(st.cstate, CS_TERMINATED);
	CHECK(st.t_terminated >= st.t_running);

	CHECK_INT(apply(&st, "DELETED", pod_succeeded, NULL), POD_WATCH_DELETED);
	CHECK(st.deleted);
	CHECK_INT(st.generation, 5);
	CHECK_INT(st.cstate, CS_TERMINATED); /* the final object is still decoded */
}

TEST(events_terminated_without_running_stamps_start)
{
	struct pod_state st = {0};
	CHECK_INT(apply(&st, "ADDED", pod_oomkilled, NULL), POD_WATCH_CHANGED);
	CHECK(st.t_running > 0);
	CHECK(st.t_terminated > 0);
	CHECK(st.t_scheduled > 0);
}

TEST(events_bookmark_moves_only_the_rv)
{
	struct pod_state st = {0};
	CHECK_INT(apply(&st, "ADDED", pod_running, NULL), POD_WATCH_CHANGED);
	struct pod_state before = st;
	CHECK_INT(apply(&st, "BOOKMARK",
	                "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"
	                "\"12345\",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}},"
	                "\"spec\":{\"containers\":null},\"status\":{}}",
	                NULL),
	          POD_WATCH_UNCHANGED);
	CHECK_STR(st.resource_version, "12345");
	CHECK_INT(st.generation, before.generation);
	CHECK_INT(st.cstate, CS_RUNNING); /* the empty bookmark object decodes nothing */
	CHECK_STR(st.phase, "Running");
}

TEST(events_errors)
{
	struct pod_state st = {0};
	struct err *e = NULL;
	CHECK_INT(apply(&st, "ERROR",
	                "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
	                "\"Failure\",\"message\":\"too old resource version: 100 (2000)\","
	                "\"reason\":\"Expired\",\"code\":410}",
	                &e),
	          POD_WATCH_EXPIRED);
	CHECK(e == NULL);

	CHECK_INT(apply(&st, "ERROR",
	                "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"etcdserver: "
	                "request timed out\",\"reason\":\"InternalError\",\"code\":500}",
	                &e),
	          -1);
	CHECK(e != NULL && e->code == ERR_API && e->http_status == 500);
	CHECK_STR(e ? e->reason : NULL, "InternalError");
	CHECK_CONTAINS(e ? e->msg : NULL, "500 InternalError: etcdserver: request timed out");
	err_free(e);
	e = NULL;

	const char garbage[] = "{\"type\":\"ADDED\",\"object\":{\"kind\":";
	CHECK_INT(pod_watch_apply_event(garbage, sizeof(garbage) - 1, "fn", &st, &e), -1);
	CHECK(e != NULL && e->code == ERR_NET);
	err_free(e);
	e = NULL;
	CHECK_INT(pod_watch_apply_event("[1,2]", 5, "fn", &st, &e), -1);
	CHECK(e != NULL && e->code == ERR_NET);
	err_free(e);
	e = NULL;

	/* A line is not NUL-terminated: the message quotes it, and nothing after it (it read
	 * past the line, out of its buffer: tests/fuzz/crashes/kube_status). */
	const char two[] = "{\"kind\":\"Status\"}\n{\"type\":\"ADDED\"}";
	char *line = xmalloc(sizeof(two) - 1); /* exactly the bytes: ASan sees a read past them */
	memcpy(line, two, sizeof(two) - 1);
	CHECK_INT(pod_watch_apply_event(line, 17, "fn", &st, &e), -1);
	CHECK_CONTAINS(e ? e->msg : NULL, "without type or object: {\"kind\":\"Status\"}");
	CHECK(e && strstr(e->msg, "ADDED") == NULL);
	err_free(e);
	e = NULL;
	CHECK_INT(pod_watch_apply_event(line + 18, sizeof(two) - 19, "fn", &st, &e), -1);
	CHECK_CONTAINS(e ? e->msg : NULL, "{\"type\":\"ADDED\"}");
	err_free(e);
	e = NULL;
	free(line);

	/* Unknown event types are ignored. */
	CHECK_INT(apply(&st, "SOMETHING", "{}", &e), POD_WATCH_UNCHANGED);
	CHECK(e == NULL);
	CHECK_INT(st.generation, 0);
}

/* A whole stream, chunked badly, through the splitter into the event decoder. */
struct feed {
	struct pod_state st;
	int changes, deleted;
};

static int feed_line(const char *line, size_t len, void *ud)
{
	struct feed *f = ud;
	int rc = pod_watch_apply_event(line, len, "fn", &f->st, NULL);
	if (rc == POD_WATCH_CHANGED)
		f->changes++;
	if (rc == POD_WATCH_DELETED) {
		f->deleted++;
		return 1;
	}
	return rc < 0 ? -1 : 0;
}

TEST(stream_in_odd_chunks)
{
	struct buf stream;
	buf_init(&stream, 0);
	buf_printf(&stream, "{\"type\":\"ADDED\",\"object\":%s}\n", pod_creating);
	buf_printf(&stream, "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":"
	                    "{\"resourceVersion\":\"200\"}}}\n");
	buf_printf(&stream, "{\"type\":\"MODIFIED\",\"object\":%s}\n", pod_running);
	buf_printf(&stream, "{\"type\":\"MODIFIED\",\"object\":%s}\n", pod_oomkilled);
	buf_printf(&stream, "{\"type\":\"DELETED\",\"object\":%s}\n", pod_oomkilled);
	buf_printf(&stream, "{\"type\":\"MODIFIED\",\"object\":%s}\n", pod_running); /* ignored */
	static const size_t chunk_sizes[] = {1, 7, 64, 1000, 1 << 20};
	for (size_t i = 0; i < sizeof(chunk_sizes) / sizeof(chunk_sizes[0]); i++) {
		struct feed f = {0};
		struct buf pending;
		buf_init(&pending, LIMIT_WATCH_EVENT);
		int rc = 0;
		for (size_t off = 0; off < stream.len && rc == 0; off += chunk_sizes[i]) {
			size_t n = stream.len - off < chunk_sizes[i] ? stream.len - off
			                                             : chunk_sizes[i];
			rc = pod_watch_split_lines(&pending, stream.data + off, n, feed_line, &f,
			                           NULL);
		}
		CHECK_INT(rc, 1);
		CHECK_INT(f.changes, 3);
		CHECK_INT(f.deleted, 1);
		CHECK(f.st.deleted);
		CHECK_STR(f.st.c_reason, "OOMKilled");
		CHECK_STR(f.st.resource_version, "107");
		buf_free(&pending);
	}
	buf_free(&stream);
}

int main(void)
{
	RUN(decode_created);
	RUN(decode_unschedulable);
	RUN(decode_creating);
	RUN(decode_errimagepull);
	RUN(decode_running);
	RUN(decode_terminated_ignores_last_state);
	RUN(decode_oomkilled);
	RUN(decode_deadline_exceeded);
	RUN(decode_picks_the_named_container);
	RUN(decode_reports_a_failing_container_beside);
	RUN(decode_null_and_odd_shapes);
	RUN(split_every_chunking);
	RUN(split_stops_when_asked);
	RUN(split_enforces_the_limit);
	RUN(events_update_state_and_generation);
	RUN(events_terminated_without_running_stamps_start);
	RUN(events_bookmark_moves_only_the_rv);
	RUN(events_errors);
	RUN(stream_in_odd_chunks);
	return check_summary();
}

/* Unit tests: call sessions (agent_frame.h, agent_serve in agent.h): the frame reader on
 * every cut of a stream, and whole sessions of /bin/sh calls. This binary is its own
 * `krmpod call` (main, below), as krmpod is in a pod. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/agent_frame.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/fdio.h"
#include "check.h"

/* What a reader delivered: "type:payload|" per frame. */
struct seen {
	char text[4096];
	size_t n;
};

static int seen_data(void *ud, char type, const char *data, size_t len)
{
	(void)type;
	struct seen *s = ud;
	memcpy(s->text + s->n, data, len);
	s->n += len;
	return 0;
}

static int seen_end(void *ud, char type)
{
	struct seen *s = ud;
	s->n += (size_t)snprintf(s->text + s->n, sizeof(s->text) - s->n, "<%c>", type);
	return 0;
}

static void put_frame(struct buf *b, char type, const char *payload)
{
	char head[FRAME_HEADER];
	frame_header(type, strlen(payload), head);
	buf_append(b, head, sizeof(head), "test", NULL);
	buf_append(b, payload, strlen(payload), "test", NULL);
}

TEST(frames_survive_every_cut)
{
	struct buf b;
	buf_init(&b, 0);
	put_frame(&b, FRAME_IN, "{\"argv\":[\"cat\"]}\nhello");
	put_frame(&b, FRAME_IN, "");
	put_frame(&b, FRAME_IN_END, "");
	put_frame(&b, FRAME_OUT, "out");
	put_frame(&b, FRAME_EXIT, "0");
	const char *want = "{\"argv\":[\"cat\"]}\nhello<i><i><e>out<o>0<x>";
	for (size_t cut = 0; cut <= b.len; cut++) {
		struct seen s = {0};
		struct frame_reader r = {.on_data = seen_data, .on_end = seen_end, .ud = &s};
		CHECK_INT(frame_feed(&r, b.data, cut, NULL), 0);
		CHECK_INT(frame_feed(&r, b.data + cut, b.len - cut, NULL), 0);
		s.text[s.n] = '\0';
		CHECK_STR(s.text, want);
		CHECK(frame_idle(&r));
	}
	buf_free(&b);
}

TEST(frames_out_of_step_fail)
{
	struct frame_reader r = {0};
	struct err *e = NULL;
	CHECK_INT(frame_feed(&r, "z\0\0\0\0", 5, &e), -1);
	CHECK(e && strstr(e->msg, "unknown type 0x7a"));
	err_free(e);
	e = NULL;
	struct frame_reader r2 = {0};
	CHECK_INT(frame_feed(&r2, "o\x7f\0\0\0", 5, &e), -1); /* 2 GiB: past the limit */
	CHECK(e && strstr(e->msg, "past the limit"));
	err_free(e);
	struct frame_reader r3 = {0};
	CHECK_INT(frame_feed(&r3, "o\0\0", 3, NULL), 0);
	CHECK(!frame_idle(&r3)); /* a frame begun */
}

/* --- Sessions: `serve` in a child, the test is the shim ------------------------------- */

struct session {
	pid_t pid;
	int to, from;
};

static void session_start(struct session *s, const char *work)
{
	int a[2], b[2]; /* close-on-exec: serve's calls get only their own pipes, as in a pod */
	CHECK(pipe2(a, O_CLOEXEC) == 0 && pipe2(b, O_CLOEXEC) == 0);
	s->pid = fork();
	if (s->pid == 0) {
		close(a[1]);
		close(b[0]);
		struct err *e = NULL;
		int rc = agent_serve("/proc/self/exe", work, a[0], b[1], &e);
		if (rc < 0)
			dprintf(2, "serve: %s\n", e->msg);
		_exit(rc < 0 ? 1 : 0);
	}
	close(a[0]);
	close(b[1]);
	s->to = a[1];
	s->from = b[0];
}

/* A session in a new scratch work directory (work: a mkdtemp template). */
static void session_in_scratch(char *work, struct session *s)
{
	CHECK(mkdtemp(work) != NULL);
	session_start(s, work);
}

static int session_end(struct session *s)
{
	close(s->to);
	int status = 0;
	CHECK(waitpid(s->pid, &status, 0) == s->pid);
	close(s->from);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct reply {
	struct buf out, err;
	char code[16];
};

static int reply_data(void *ud, char type, const char *data, size_t len)
{
	struct reply *r = ud;
	if (type == FRAME_OUT)
		buf_append(&r->out, data, len, "test", NULL);
	else if (type == FRAME_ERR)
		buf_append(&r->err, data, len, "test", NULL);
	else if (type == FRAME_EXIT)
		snprintf(r->code + strlen(r->code), sizeof(r->code) - strlen(r->code), "%.*s",
		         (int)len, data);
	return 0;
}

static int reply_end(void *ud, char type)
{
	(void)ud;
	return type == FRAME_EXIT ? 1 : 0; /* the call's end: stop reading */
}

/* One call: the header and stdin in chunks of `chunk` bytes, then 'e'; reads to 'x'. */
static int session_call(struct session *s, const char *header, const char *in, size_t in_len,
                        size_t chunk, struct reply *r)
{
	buf_init(&r->out, 0);
	buf_init(&r->err, 0);
	r->code[0] = '\0';
	pid_t writer = fork(); /* stdin goes in while the output comes out */
	if (writer == 0) {
		int rc = frame_write(s->to, FRAME_IN, header, strlen(header), NULL);
		for (size_t off = 0; rc == 0 && off < in_len; off += chunk) {
			size_t n = in_len - off < chunk ? in_len - off : chunk;
			rc = frame_write(s->to, FRAME_IN, in + off, n, NULL);
		}
		if (rc == 0)
			rc = frame_write(s->to, FRAME_IN_END, "", 0, NULL);
		_exit(rc == 0 ? 0 : 1);
	}
	int code = -1;
	struct frame_reader fr = {.on_data = reply_data, .on_end = reply_end, .ud = r};
	char c;
	for (;;) { /* byte by byte: nothing after 'x' is consumed */
		ssize_t n = read(s->from, &c, 1);
		if (n <= 0)
			break;
		if (frame_feed(&fr, &c, 1, NULL) == 1) {
			code = (int)strtol(r->code, NULL, 10);
			break;
		}
	}
	int status = 0;
	CHECK(waitpid(writer, &status, 0) == writer && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0);
	return code;
}

static void reply_free(struct reply *r)
{
	buf_free(&r->out);
	buf_free(&r->err);
}

static bool ends_with_trailer(const struct buf *err, size_t out_bytes, int code)
{
	char want[128];
	snprintf(want, sizeof(want), AGENT_TRAILER_PREFIX "out=%zu err=", out_bytes);
	const char *t = memmem(err->data, err->len, want, strlen(want));
	char tail[32];
	snprintf(tail, sizeof(tail), " exit=%d\n", code);
	return t && err->len >= strlen(tail) &&
	       memcmp(err->data + err->len - strlen(tail), tail, strlen(tail)) == 0;
}

TEST(a_session_runs_calls_one_after_another)
{
	char work[] = "/tmp/krmpod-serve-work-XXXXXX";
	struct session s;
	session_in_scratch(work, &s);
	struct reply r;
	/* stdin in small frames, the end in a frame of its own */
	CHECK_INT(session_call(&s, "{\"argv\":[\"/bin/cat\"]}\n", "hello\n", 6, 2, &r), 0);
	CHECK(r.out.len == 6 && memcmp(r.out.data, "hello\n", 6) == 0);
	CHECK(ends_with_trailer(&r.err, 6, 0));
	reply_free(&r);
	/* each call its own HOME, empty; what the last wrote is gone; exit codes pass */
	const char *h = "{\"argv\":[\"/bin/sh\",\"-c\",\"ls -A $HOME | wc -l; ls $HOME/.. | "
	                "grep -c call-; touch $HOME/x; echo e >&2; exit 3\"]}\n";
	for (int i = 0; i < 2; i++) {
		CHECK_INT(session_call(&s, h, "", 0, 1, &r), 3);
		CHECK(r.out.len == 4 && memcmp(r.out.data, "0\n1\n", 4) == 0);
		CHECK(r.err.len > 2 && memcmp(r.err.data, "e\n", 2) == 0);
		CHECK(ends_with_trailer(&r.err, 4, 3));
		reply_free(&r);
	}
	/* a function that reads little of a big stdin: the rest is dropped, the session goes on */
	size_t big = 1 << 20;
	char *in = malloc(big);
	memset(in, 'y', big);
	CHECK_INT(session_call(&s, "{\"argv\":[\"/usr/bin/head\",\"-c\",\"3\"]}\n", in, big, 65536,
	                       &r),
	          0);
	CHECK(r.out.len == 3 && memcmp(r.out.data, "yyy", 3) == 0);
	reply_free(&r);
	/* ... or none of it, ending before stdin does (what it did not take is dropped) */
	for (int i = 0; i < 5; i++) {
		CHECK_INT(session_call(&s, "{\"argv\":[\"/bin/true\"]}\n", in, big, 65536, &r), 0);
		CHECK(r.out.len == 0);
		reply_free(&r);
	}
	/* a big output both ways */
	CHECK_INT(session_call(&s, "{\"argv\":[\"/bin/cat\"]}\n", in, big, 65536, &r), 0);
	CHECK(r.out.len == big && memcmp(r.out.data, in, big) == 0);
	CHECK(ends_with_trailer(&r.err, big, 0));
	reply_free(&r);
	free(in);
	CHECK_INT(session_end(&s), 0); /* stdin ended between calls: a clean end */
	fd_remove_tree(work, "test", NULL);
}

/* Starts a call that runs for 30 s (its stdin ended or not), then ends the session's stdin
 * (a shim cut off, or the janitor closing the session): the call must be killed, not
 * waited for, and serve must fail. */
static bool read_full(int fd, char *p, size_t n)
{
	while (n > 0) {
		ssize_t r = read(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		p += r;
		n -= (size_t)r;
	}
	return true;
}

/* The number the first 'o' frame from the pod starts with (0 when none came). */
static long first_out_number(int fd)
{
	char head[FRAME_HEADER], payload[64];
	while (read_full(fd, head, sizeof(head))) {
		uint32_t len = (uint32_t)(unsigned char)head[1] << 24 |
		               (uint32_t)(unsigned char)head[2] << 16 |
		               (uint32_t)(unsigned char)head[3] << 8 | (unsigned char)head[4];
		if (len >= sizeof(payload) || !read_full(fd, payload, len))
			return 0;
		payload[len] = '\0';
		if (head[0] == FRAME_OUT)
			return strtol(payload, NULL, 10);
	}
	return 0;
}

static void cut_a_running_call(bool stdin_sent)
{
	char work[] = "/tmp/krmpod-serve-work-XXXXXX";
	struct session s;
	session_in_scratch(work, &s);
	/* the function prints its pid and goes on as `sleep` (the call's grandchild) */
	const char *h = "{\"argv\":[\"/bin/sh\",\"-c\",\"echo $$; exec sleep 30\"]}\n";
	CHECK_INT(frame_write(s.to, FRAME_IN, h, strlen(h), NULL), 0);
	if (stdin_sent)
		CHECK_INT(frame_write(s.to, FRAME_IN_END, "", 0, NULL), 0);
	long fn_pid = first_out_number(s.from);
	CHECK(fn_pid > 1);
	time_t t0 = time(NULL);
	CHECK_INT(session_end(&s), 1); /* stdin ended inside the call: an error */
	CHECK(time(NULL) - t0 < 10);   /* the call was killed, not waited for */
	/* and the function with it, not only `krmpod call` (it is reaped by whoever adopted
	 * it: its /proc entry goes, or stays a zombie for a moment) */
	bool gone = false;
	for (int i = 0; i < 200 && fn_pid > 1 && !gone; i++) {
		char path[64], st[256] = "";
		snprintf(path, sizeof(path), "/proc/%ld/stat", fn_pid);
		FILE *f = fopen(path, "r");
		gone = f == NULL || fgets(st, sizeof(st), f) == NULL || strstr(st, ") Z ") != NULL;
		if (f)
			fclose(f);
		if (!gone)
			usleep(10000);
	}
	if (!gone && fn_pid > 1)
		kill((pid_t)fn_pid, SIGKILL);
	CHECK(gone);
	fd_remove_tree(work, "test", NULL);
}

TEST(a_session_cut_during_a_call_kills_it)
{
	cut_a_running_call(false);
}

/* The janitor closes the session while a call whose stdin it had whole still runs (its
 * shim was interrupted, say). */
TEST(a_session_closed_during_a_call_with_its_stdin_sent_kills_it)
{
	cut_a_running_call(true);
}

TEST(a_wrong_frame_ends_the_session)
{
	char work[] = "/tmp/krmpod-serve-work-XXXXXX";
	struct session s;
	session_in_scratch(work, &s);
	CHECK_INT(frame_write(s.to, FRAME_OUT, "x", 1, NULL), 0); /* pods get no 'o' */
	char c;
	CHECK(read(s.from, &c, 1) == 0);
	CHECK_INT(session_end(&s), 1);
	fd_remove_tree(work, "test", NULL);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "call") == 0) { /* as `krmpod call WORKDIR` */
		int code = -1;
		struct err *e = NULL;
		if (agent_call(argv[2], 0, 1, 2, &code, &e) < 0) {
			dprintf(2, "call: %s\n", e->msg);
			return 125;
		}
		return code;
	}
	signal(SIGPIPE, SIG_IGN);
	RUN(frames_survive_every_cut);
	RUN(frames_out_of_step_fail);
	RUN(a_session_runs_calls_one_after_another);
	RUN(a_session_cut_during_a_call_kills_it);
	RUN(a_session_closed_during_a_call_with_its_stdin_sent_kills_it);
	RUN(a_wrong_frame_ends_the_session);
	return check_summary();
}

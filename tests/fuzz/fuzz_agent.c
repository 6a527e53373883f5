/* fuzz_agent.c — exec mode's framings (src/agent/agent.h, agent_frame.h): the call header
 * `krmpod call` reads (written by krmpod, but parsed inside a pod whose stdin is a stream),
 * the trailer krmpod looks for at the end of a call's stderr, the end of bytes that a
 * function writes itself, and a session's frames (first input byte 2: the rest is fed to
 * a frame reader, whole and then cut at the second byte's offset).
 *
 * Invariants: the header parser fails with an error or gives argv[0] non-empty (or, with
 * argv_pid1, no argv and not pooled) and env entries NAME=VALUE; a header it parsed, written again, parses to the same; the trailer
 * parser accepts only a tail that ends with a whole trailer line, and never reports a
 * trailer longer than the tail or than AGENT_TRAILER_MAX plus its prefix; the frame reader
 * hands out no more payload than the input holds, ends only frames it began, and says the
 * same however the input is cut. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/agent_frame.h"
#include "base/buf.h"
#include "fuzz_util.h"

static void check_header(const struct agent_call_header *h)
{
	if (h->argv_pid1 && (h->argv == NULL || h->argv[0] != NULL || h->pooled))
		fuzz_fail("an argv_pid1 header with argv or pooled");
	if (!h->argv_pid1 && (h->argv == NULL || h->argv[0] == NULL || h->argv[0][0] == '\0'))
		fuzz_fail("a parsed header without argv[0]");
	for (size_t i = 0; h->env && h->env[i]; i++) {
		const char *eq = strchr(h->env[i], '=');
		if (eq == NULL || eq == h->env[i])
			fuzz_fail("env %zu \"%s\" is not NAME=VALUE", i, h->env[i]);
	}
}

static void same(char **a, char **b, const char *what)
{
	size_t i = 0;
	for (; a[i] && b[i]; i++)
		if (strcmp(a[i], b[i]) != 0)
			fuzz_fail("%s[%zu] changed when written and read again", what, i);
	if (a[i] || b[i])
		fuzz_fail("%s has another length when written and read again", what);
}

static void header(const char *text, size_t len)
{
	struct agent_call_header h;
	struct err *e = NULL;
	int rc = agent_call_header_parse(text, len, &h, &e);
	fuzz_check_err(rc, e, "agent_call_header_parse");
	err_free(e);
	e = NULL;
	if (rc < 0)
		return;
	check_header(&h);
	struct buf b;
	buf_init(&b, 0);
	if (h.argv_pid1)
		agent_call_header_write_pid1(h.env, &b);
	else
		agent_call_header_write(h.argv, h.env, h.pooled, &b);
	if (b.len == 0 || b.data[b.len - 1] != '\n' ||
	    memchr(b.data, '\n', b.len) != b.data + b.len - 1)
		fuzz_fail("a written header is not one line");
	struct agent_call_header again;
	if (agent_call_header_parse(b.data, b.len - 1, &again, &e) < 0)
		fuzz_fail("a written header does not parse: %s", e->msg);
	if (again.argv_pid1 != h.argv_pid1)
		fuzz_fail("argv_pid1 changed when written and read again");
	same(h.argv, again.argv, "argv");
	same(h.env, again.env, "env");
	agent_call_header_clear(&again);
	agent_call_header_clear(&h);
	buf_free(&b);
}

static void trailer(const char *tail, size_t len)
{
	size_t tlen = 0;
	unsigned long long out = 0, errb = 0;
	int code = 0;
	if (agent_trailer_parse(tail, len, &tlen, &out, &errb, &code) < 0)
		return;
	if (tlen == 0 || tlen > len || tlen > AGENT_TRAILER_MAX + sizeof(AGENT_TRAILER_PREFIX))
		fuzz_fail("trailer length %zu of a %zu-byte tail", tlen, len);
	if (tail[len - 1] != '\n')
		fuzz_fail("a trailer that does not end the tail with a newline");
	if (memcmp(tail + len - tlen, AGENT_TRAILER_PREFIX, sizeof(AGENT_TRAILER_PREFIX) - 1) != 0)
		fuzz_fail("the trailer does not start with its prefix");
}

struct frames_seen {
	size_t payload, frames;
	uint64_t sum; /* of the payload bytes and the frame types, in order */
};

static int frame_data(void *ud, char type, const char *data, size_t len)
{
	struct frames_seen *f = ud;
	(void)type;
	f->payload += len;
	for (size_t i = 0; i < len; i++)
		f->sum = f->sum * 31 + (unsigned char)data[i];
	return 0;
}

static int frame_end(void *ud, char type)
{
	struct frames_seen *f = ud;
	f->frames++;
	f->sum = f->sum * 31 + (unsigned char)type;
	return 0;
}

static int feed(const char *data, size_t len, size_t cut, struct frames_seen *f)
{
	struct frame_reader r = {.on_data = frame_data, .on_end = frame_end, .ud = f};
	struct err *e = NULL;
	int rc = frame_feed(&r, data, cut, &e);
	if (rc == 0)
		rc = frame_feed(&r, data + cut, len - cut, &e);
	fuzz_check_err(rc, e, "frame_feed");
	err_free(e);
	if (f->payload + f->frames * FRAME_HEADER > len)
		fuzz_fail("%zu bytes of payload in %zu frames from %zu bytes", f->payload,
		          f->frames, len);
	return rc;
}

static void frames(const char *data, size_t len)
{
	if (len == 0)
		return;
	size_t cut = (unsigned char)data[0] % len;
	struct frames_seen whole = {0}, parts = {0};
	int a = feed(data + 1, len - 1, 0, &whole);
	int b = feed(data + 1, len - 1, cut > len - 1 ? len - 1 : cut, &parts);
	if (a != b || (a == 0 && (whole.sum != parts.sum || whole.frames != parts.frames)))
		fuzz_fail("the frames differ when the input is cut at %zu", cut);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	char *copy = malloc(size);
	if (copy == NULL)
		abort();
	memcpy(copy, data + 1, size - 1); /* no NUL: the parsers take lengths */
	if (data[0] == 2)
		frames(copy, size - 1);
	else if (data[0] & 1)
		header(copy, size - 1);
	else
		trailer(copy, size - 1);
	free(copy);
	return 0;
}

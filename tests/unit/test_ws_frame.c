/* Unit tests for ws_frame.c: the v5.channel.k8s.io framing (docs/internals/attach-framing.md):
 * messages in pieces, ready signals, the channel-3 Status, oversized and unknown input, and the
 * messages krmpod sends. */
#include <string.h>

#include "base/buf.h"
#include "base/size_limits.h"
#include "check.h"
#include "kube/ws_frame.h"

struct got {
	struct buf out, err;
	int calls;
};

static int sink(void *ud, int channel, const char *data, size_t len, struct err **err)
{
	struct got *g = ud;
	g->calls++;
	return buf_append(channel == WS_CH_STDOUT ? &g->out : &g->err, data, len, "test", err);
}

static int feed(struct ws_demux *d, struct got *g, const char *data, size_t len, bool last)
{
	struct err *e = NULL;
	int rc = ws_demux_feed(d, data, len, last, sink, g, &e);
	err_free(e);
	return rc;
}

TEST(message_in_pieces_keeps_its_channel)
{
	struct ws_demux d;
	struct got g = {0};
	buf_init(&g.out, 0);
	buf_init(&g.err, 0);
	ws_demux_init(&d);
	/* stdout "hello world" in three pieces: only the first carries the channel byte; a
	 * following piece that starts with 0x02 is data, not a stderr message */
	CHECK(feed(&d, &g, "\x01hel", 4, false) == 0);
	CHECK(feed(&d, &g, "\x02lo ", 4, false) == 0);
	CHECK(feed(&d, &g, "world", 5, true) == 0);
	CHECK(feed(&d, &g, "\x02oops\n", 6, true) == 0);
	CHECK(g.out.len == 12 && memcmp(g.out.data, "hel\x02lo world", 12) == 0);
	CHECK(g.err.len == 5 && memcmp(g.err.data, "oops\n", 5) == 0);
	ws_demux_free(&d);
	buf_free(&g.out);
	buf_free(&g.err);
}

TEST(a_channel_byte_alone_is_a_ready_signal_not_eof)
{
	struct ws_demux d;
	struct got g = {0};
	buf_init(&g.out, 0);
	buf_init(&g.err, 0);
	ws_demux_init(&d);
	CHECK(feed(&d, &g, "\x01", 1, true) == 0);
	CHECK(feed(&d, &g, "", 0, true) == 0); /* an empty message: nothing */
	CHECK(g.calls == 0 && !d.closed[WS_CH_STDOUT] && !d.st.got);
	CHECK(feed(&d, &g, "\x01x", 2, true) == 0);
	CHECK(g.out.len == 1);
	/* the server closing stdout is the 255 message naming channel 1 */
	CHECK(feed(&d, &g, "\xff\x01", 2, true) == 0);
	CHECK(d.closed[WS_CH_STDOUT] && !d.closed[WS_CH_STDERR]);
	ws_demux_free(&d);
	buf_free(&g.out);
	buf_free(&g.err);
}

TEST(status_success_failure_and_exit_code)
{
	struct ws_demux d;
	struct got g = {0};
	ws_demux_init(&d);
	const char *ok = "\x03{\"metadata\":{},\"status\":\"Success\"}";
	CHECK(feed(&d, &g, ok, strlen(ok), true) == 0);
	CHECK(d.st.got && d.st.success && d.st.exit_code == 0);
	/* exec's non-zero exit, the Status split in two pieces */
	const char *a = "\x03{\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\",\"message\":"
	                "\"command terminated with non-zero exit code: ";
	const char *b =
	        "exit 3\",\"details\":{\"causes\":[{\"reason\":\"ExitCode\",\"message\":\"3\"}"
	        "]}}";
	CHECK(feed(&d, &g, a, strlen(a), false) == 0);
	CHECK(feed(&d, &g, b, strlen(b), true) == 0);
	CHECK(d.st.got && !d.st.success && d.st.exit_code == 3 && !d.st.no_container);
	CHECK_STR(d.st.reason, "NonZeroExitCode");
	/* the kubelet found no container (a real 1.34 answer) */
	const char *nf = "\x03{\"status\":\"Failure\",\"reason\":\"InternalError\",\"message\":"
	                 "\"Internal error occurred: unable to upgrade connection: container fn "
	                 "not found in pod p_ns\",\"code\":500}";
	CHECK(feed(&d, &g, nf, strlen(nf), true) == 0);
	CHECK(!d.st.success && d.st.exit_code == -1 && strstr(d.st.message, "not found"));
	CHECK(d.st.no_container);
	/* not JSON: kept as the message */
	struct ws_status st = {0};
	ws_status_decode("garbage", 7, &st);
	CHECK(st.got && !st.success && strcmp(st.message, "garbage") == 0);
	/* an exit code out of range is not taken */
	ws_status_decode("{\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\",\"details\":{"
	                 "\"causes\":[{\"reason\":\"ExitCode\",\"message\":\"300\"}]}}",
	                 94, &st);
	CHECK(st.exit_code == -1);
	ws_demux_free(&d);
}

TEST(oversized_status_and_unknown_channel_fail)
{
	struct ws_demux d;
	struct got g = {0};
	ws_demux_init(&d);
	static char big[LIMIT_WS_STATUS + 2];
	memset(big, 'x', sizeof(big));
	big[0] = WS_CH_ERROR;
	CHECK(feed(&d, &g, big, sizeof(big), true) < 0);
	ws_demux_free(&d);
	ws_demux_init(&d);
	CHECK(feed(&d, &g,
	           "\x07"
	           "data",
	           5, true) < 0);
	ws_demux_free(&d);
}

TEST(messages_krmpod_sends)
{
	unsigned char m[8];
	CHECK(ws_frame_stdin(m, "abc", 3) == 4 && memcmp(m,
	                                                 "\x00"
	                                                 "abc",
	                                                 4) == 0);
	CHECK(ws_frame_stdin(m, "", 0) == 1 && m[0] == 0);
	/* stdin EOF: "channel 0 closed", never a WebSocket Close frame */
	CHECK(ws_frame_stdin_close(m) == 2 && m[0] == 0xff && m[1] == 0x00);
}

int main(void)
{
	RUN(message_in_pieces_keeps_its_channel);
	RUN(a_channel_byte_alone_is_a_ready_signal_not_eof);
	RUN(status_success_failure_and_exit_code);
	RUN(oversized_status_and_unknown_channel_fail);
	RUN(messages_krmpod_sends);
	return check_summary();
}

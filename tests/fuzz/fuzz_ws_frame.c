/* fuzz_ws_frame.c — the WebSocket v5.channel.k8s.io demultiplexer and the channel-3 Status
 * decode (src/kube/ws_frame.h), as kube_stream.c drives them.
 *
 * The input is a sequence of pieces, each a flags byte (bit 0: the piece ends its message;
 * bit 1: the sink fails on this piece), a length byte, then up to that many bytes. The whole
 * input is also decoded as one Status.
 *
 * Invariants: the sink sees channels 1 and 2 only, with the bytes of the piece (never
 * more); a failure sets its error and ends the feed (as kube_stream does); the status
 * buffer stays within LIMIT_WS_STATUS; a decoded Status has terminated strings and an exit
 * code from -1 to 255 (0 when it succeeded). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/size_limits.h"
#include "fuzz_util.h"
#include "kube/ws_frame.h"

struct sink_state {
	bool fail;
	const char *piece;
	size_t piece_len;
	uint64_t bytes;
};

static int sink(void *ud, int channel, const char *data, size_t len, struct err **err)
{
	struct sink_state *s = ud;
	if (channel != WS_CH_STDOUT && channel != WS_CH_STDERR)
		fuzz_fail("the sink got channel %d", channel);
	if (len == 0 || data < s->piece || data + len > s->piece + s->piece_len)
		fuzz_fail("the sink got %zu bytes outside the piece", len);
	s->bytes += len;
	if (s->fail)
		return err_set(err, ERR_IO, "write stdout: the reader closed it");
	return 0;
}

static void check_status(const struct ws_status *st)
{
	if (!st->got)
		return;
	if (memchr(st->reason, '\0', sizeof(st->reason)) == NULL ||
	    memchr(st->message, '\0', sizeof(st->message)) == NULL)
		fuzz_fail("a Status field is not terminated");
	if (st->exit_code < -1 || st->exit_code > 255)
		fuzz_fail("exit code %d", st->exit_code);
	if (st->success && st->exit_code != 0)
		fuzz_fail("a Success Status with exit code %d", st->exit_code);
}

FUZZ_QUIET_LOG

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ws_demux d;
	ws_demux_init(&d);
	struct sink_state s = {0};
	size_t off = 0;
	while (off + 2 <= size) {
		uint8_t flags = data[off], want = data[off + 1];
		off += 2;
		size_t len = size - off < want ? size - off : want;
		/* a copy of exactly the piece, so reading past it is caught */
		char *piece = malloc(len ? len : 1);
		if (piece == NULL)
			abort();
		memcpy(piece, data + off, len);
		off += len;
		s.fail = flags & 2;
		s.piece = piece;
		s.piece_len = len;
		struct err *e = NULL;
		int rc = ws_demux_feed(&d, piece, len, flags & 1, sink, &s, &e);
		free(piece);
		fuzz_check_err(rc, e, "ws_demux_feed");
		err_free(e);
		if (d.status.len > LIMIT_WS_STATUS)
			fuzz_fail("the status buffer holds %zu bytes", d.status.len);
		check_status(&d.st);
		if (rc < 0)
			break;
	}
	ws_demux_free(&d);

	struct ws_status st;
	memset(&st, 0, sizeof(st));
	ws_status_decode((const char *)data, size, &st);
	if (!st.got)
		fuzz_fail("ws_status_decode did not mark the status as received");
	check_status(&st);

	/* A stdin frame carries the payload after its channel byte. */
	size_t n = size < 512 ? size : 512;
	unsigned char frame[513];
	if (ws_frame_stdin(frame, data, n) != n + 1 || frame[0] != WS_CH_STDIN ||
	    (n && memcmp(frame + 1, data, n) != 0))
		fuzz_fail("a stdin frame does not carry its payload");
	return 0;
}

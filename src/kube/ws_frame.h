/* ws_frame.h — the channel framing of the Kubernetes stream protocol v5.channel.k8s.io
 * (docs/internals/attach-framing.md). Pure: no I/O; tests/unit/test_ws_frame.c.
 *
 * Every WebSocket message starts with one channel byte: 0 stdin, 1 stdout, 2 stderr,
 * 3 error (one metav1.Status JSON), 4 resize, 255 close (payload: the channel closed).
 * A message may reach us in several pieces; only the first carries the channel byte. A
 * message that is only a channel byte carries no data (a ready signal), not EOF.
 */
#ifndef KRMPOD_WS_FRAME_H
#define KRMPOD_WS_FRAME_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/err.h"

enum {
	WS_CH_STDIN = 0,
	WS_CH_STDOUT = 1,
	WS_CH_STDERR = 2,
	WS_CH_ERROR = 3,
	WS_CH_RESIZE = 4,
	WS_CH_CLOSE = 255,
};

/* The decoded channel-3 Status. */
struct ws_status {
	bool got;
	bool success;
	char reason[64];
	char message[1024];
	int exit_code; /* from NonZeroExitCode causes (exec); 0 on Success; -1 unknown */
	/* A failure because the kubelet found no such container running (it ended before the
	 * attach, or has not started): reason NotFound, or a message that says "not found"
	 * (the kubelet's "container not found", which comes as an InternalError). */
	bool no_container;
};

struct ws_demux {
	bool in_msg;       /* between the first and the last piece of a message */
	int channel;       /* of the current message */
	struct buf status; /* channel-3 bytes, bounded by LIMIT_WS_STATUS */
	struct ws_status st;
	bool closed[5]; /* channels the server closed with a 255 message */
};

/* Receives stdout/stderr payload bytes as they arrive. Return non-zero to fail the feed
 * (the callee has set *err). */
typedef int (*ws_sink_fn)(void *ud, int channel, const char *data, size_t len, struct err **err);

void ws_demux_init(struct ws_demux *d);
void ws_demux_free(struct ws_demux *d);

/* Feeds one piece of an incoming message. `last_piece` is true when this piece ends the
 * message. stdout/stderr payloads go to sink at once; channel 3 is collected and decoded into
 * d->st when its message ends. Fails (ERR_NET) on an unknown channel or an oversized
 * status. */
int ws_demux_feed(struct ws_demux *d, const char *data, size_t len, bool last_piece,
                  ws_sink_fn sink, void *ud, struct err **err);

/* Decodes a metav1.Status JSON into *st (st->got set). */
void ws_status_decode(const char *json, size_t len, struct ws_status *st);

/* Writes a stdin data message ([0x00] + payload) at dst, which must have room for n + 1
 * bytes; returns the message length. */
size_t ws_frame_stdin(unsigned char *dst, const void *payload, size_t n);

/* Writes the stdin close message [0xFF 0x00] at dst; returns 2. */
size_t ws_frame_stdin_close(unsigned char *dst);

#endif

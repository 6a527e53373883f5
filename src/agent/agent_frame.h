/* agent_frame.h — the frames of a call session (docs/internals/exec-mode.md, "Sessions").
 *
 * A session is one long-lived `krmpod serve` in an exec-mode pod, reached through one
 * pods/exec that generate's janitor holds for the whole render, and a local socket the
 * shims connect to. Both directions carry frames: a type byte, the payload's length (4
 * bytes, big-endian, at most LIMIT_SESSION_FRAME), the payload.
 *
 *   to the pod:   'i' stdin bytes of `krmpod call` (the call header line, then the
 *                     function's stdin), 'e' the end of that stdin (empty payload);
 *   from the pod: 'o' stdout bytes, 'r' stderr bytes (they end with the call's trailer,
 *                     agent.h), 'x' the call ended: its exit code in decimal ASCII.
 *
 * One call at a time: 'i'... 'e' goes in, 'o'/'r'... 'x' comes out; the pod discards
 * stdin frames still coming after its 'x', up to the 'e'. */
#ifndef KRMPOD_AGENT_FRAME_H
#define KRMPOD_AGENT_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define FRAME_IN       'i'
#define FRAME_IN_END   'e'
#define FRAME_OUT      'o'
#define FRAME_ERR      'r'
#define FRAME_EXIT     'x'
#define FRAME_HEADER   5
#define FRAME_EXIT_MAX 16 /* the longest 'x' payload */

/* Writes one frame (header and payload) to fd, blocking until all of it is written. */
int frame_write(int fd, char type, const void *data, size_t len, struct err **err);

/* Writes the header of a frame of len bytes into out[FRAME_HEADER]. */
void frame_header(char type, size_t len, char out[FRAME_HEADER]);

/* An incremental reader: bytes go in as they arrive, in any cuts; each frame's payload
 * comes out in pieces (on_data, possibly several per frame, possibly none when empty),
 * then on_end once the frame is complete. A callback's non-zero return stops the feed and
 * is returned. */
struct frame_reader {
	char head[FRAME_HEADER];
	size_t head_n;
	char type;
	uint32_t left; /* payload bytes still to come for the current frame */
	bool in_frame;
	int (*on_data)(void *ud, char type, const char *data, size_t len);
	int (*on_end)(void *ud, char type);
	void *ud;
};

/* Feeds len bytes. Returns 0, a callback's non-zero value, or -1 with *err (ERR_NET) for
 * a frame of an unknown type or past LIMIT_SESSION_FRAME. */
int frame_feed(struct frame_reader *r, const char *data, size_t len, struct err **err);

/* Whether the reader stopped between frames (no frame begun). */
bool frame_idle(const struct frame_reader *r);

#endif

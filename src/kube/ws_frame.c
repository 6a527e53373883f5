/* ws_frame.c — see ws_frame.h. */
#include "kube/ws_frame.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/json.h"
#include "base/size_limits.h"

void ws_demux_init(struct ws_demux *d)
{
	memset(d, 0, sizeof(*d));
	buf_init(&d->status, LIMIT_WS_STATUS);
	d->st.exit_code = -1;
}

void ws_demux_free(struct ws_demux *d)
{
	buf_free(&d->status);
}

void ws_status_decode(const char *text, size_t len, struct ws_status *st)
{
	st->got = true;
	st->success = false;
	st->no_container = false;
	st->exit_code = -1;
	cleanup_json struct json *j = NULL;
	/* Not a Status object (YAML also reads a bare word): the text itself is the message. */
	if (json_parse(text, len, "stream status", &j, NULL) < 0 || json_type(j) != JSON_OBJECT) {
		snprintf(st->message, sizeof(st->message), "%.*s", (int)(len < 512 ? len : 512),
		         text);
		return;
	}
	const char *status = json_str(json_get(j, "status"));
	st->success = status && strcmp(status, "Success") == 0;
	snprintf(st->reason, sizeof(st->reason), "%s",
	         json_str(json_get(j, "reason")) ? json_str(json_get(j, "reason")) : "");
	snprintf(st->message, sizeof(st->message), "%s",
	         json_str(json_get(j, "message")) ? json_str(json_get(j, "message")) : "");
	if (st->success) {
		st->exit_code = 0;
		return;
	}
	st->no_container =
	        strcmp(st->reason, "NotFound") == 0 || strstr(st->message, "not found") != NULL;
	if (strcmp(st->reason, "NonZeroExitCode") == 0) {
		const struct json *causes = json_path(j, "details.causes");
		for (size_t i = 0; i < json_len(causes); i++) {
			const struct json *c = json_at(causes, i);
			const char *r = json_str(json_get(c, "reason"));
			const char *m = json_str(json_get(c, "message"));
			if (r && m && strcmp(r, "ExitCode") == 0) {
				char *end = NULL;
				long v = strtol(m, &end, 10);
				if (end != m && *end == '\0' && v >= 0 && v < 256)
					st->exit_code = (int)v;
			}
		}
	}
}

int ws_demux_feed(struct ws_demux *d, const char *data, size_t len, bool last_piece,
                  ws_sink_fn sink, void *ud, struct err **err)
{
	if (!d->in_msg) {
		if (len == 0) {
			/* an empty message has no channel byte; nothing to do */
			return 0;
		}
		d->channel = (unsigned char)data[0];
		data++, len--;
		d->in_msg = true;
		if (d->channel == WS_CH_ERROR)
			buf_reset(&d->status);
		if (d->channel != WS_CH_STDOUT && d->channel != WS_CH_STDERR &&
		    d->channel != WS_CH_ERROR && d->channel != WS_CH_CLOSE &&
		    d->channel != WS_CH_STDIN && d->channel != WS_CH_RESIZE)
			return err_set(err, ERR_NET, "stream: message on unknown channel %d",
			               d->channel);
	}
	int rc = 0;
	switch (d->channel) {
	case WS_CH_STDOUT:
	case WS_CH_STDERR:
		if (len)
			rc = sink(ud, d->channel, data, len, err);
		break;
	case WS_CH_ERROR:
		if (buf_append(&d->status, data, len, "stream status message", err) < 0) {
			(*err)->code = ERR_NET; /* what the server sent, not local I/O */
			rc = -1;
		} else if (last_piece)
			ws_status_decode(d->status.data ? d->status.data : "", d->status.len,
			                 &d->st);
		break;
	case WS_CH_CLOSE:
		for (size_t i = 0; i < len; i++)
			if ((unsigned char)data[i] < sizeof(d->closed))
				d->closed[(unsigned char)data[i]] = true;
		break;
	default:
		break; /* stdin/resize echoes: ignored */
	}
	if (last_piece)
		d->in_msg = false;
	return rc;
}

size_t ws_frame_stdin(unsigned char *dst, const void *payload, size_t n)
{
	dst[0] = WS_CH_STDIN;
	if (n)
		memmove(dst + 1, payload, n);
	return n + 1;
}

size_t ws_frame_stdin_close(unsigned char *dst)
{
	dst[0] = WS_CH_CLOSE;
	dst[1] = WS_CH_STDIN;
	return 2;
}

/* agent_frame.c — see agent_frame.h. */
#include "agent/agent_frame.h"

#include <string.h>

#include "base/buf.h"
#include "base/fdio.h"
#include "base/size_limits.h"

void frame_header(char type, size_t len, char out[FRAME_HEADER])
{
	out[0] = type;
	out[1] = (char)((len >> 24) & 0xff);
	out[2] = (char)((len >> 16) & 0xff);
	out[3] = (char)((len >> 8) & 0xff);
	out[4] = (char)(len & 0xff);
}

int frame_write(int fd, char type, const void *data, size_t len, struct err **err)
{
	char head[FRAME_HEADER];
	frame_header(type, len, head);
	if (fd_write_all(fd, head, sizeof(head), "session", err) < 0)
		return -1;
	return len ? fd_write_all(fd, data, len, "session", err) : 0;
}

static bool known_type(char t)
{
	return t == FRAME_IN || t == FRAME_IN_END || t == FRAME_OUT || t == FRAME_ERR ||
	       t == FRAME_EXIT;
}

int frame_feed(struct frame_reader *r, const char *data, size_t len, struct err **err)
{
	while (len > 0) {
		if (!r->in_frame) {
			bytes_fill(r->head, &r->head_n, FRAME_HEADER, &data, &len);
			if (r->head_n < FRAME_HEADER)
				return 0;
			const unsigned char *h = (const unsigned char *)r->head;
			uint32_t n = (uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 |
			             (uint32_t)h[3] << 8 | (uint32_t)h[4];
			r->type = r->head[0];
			r->head_n = 0;
			if (!known_type(r->type))
				return err_set(
				        err, ERR_NET,
				        "session: a frame of unknown type 0x%02x (the stream is "
				        "out of step)",
				        (unsigned)h[0]);
			if (n > LIMIT_SESSION_FRAME)
				return err_set(err, ERR_NET,
				               "session: a frame of %u bytes, past the limit of %u",
				               (unsigned)n, (unsigned)LIMIT_SESSION_FRAME);
			r->left = n;
			r->in_frame = true;
		}
		size_t take = r->left < len ? r->left : len;
		if (take > 0 && r->on_data) {
			int rc = r->on_data(r->ud, r->type, data, take);
			if (rc)
				return rc;
		}
		data += take;
		len -= take;
		r->left -= (uint32_t)take;
		if (r->left == 0) {
			r->in_frame = false;
			if (r->on_end) {
				int rc = r->on_end(r->ud, r->type);
				if (rc) {
					/* the rest is the caller's to feed again */
					return rc;
				}
			}
		}
	}
	return 0;
}

bool frame_idle(const struct frame_reader *r)
{
	return !r->in_frame && r->head_n == 0;
}

/* buf.h — a growable byte buffer with a hard size limit.
 *
 * Every buffer filled from the network or a file has a named limit (see size_limits.h); buf
 * enforces it: an append that would pass `limit` fails with ERR_IO (or the caller's own
 * wrapping) instead of growing. The data is always NUL-terminated (not counted in len) so
 * text can be used as a C string.
 */
#ifndef KRMPOD_BUF_H
#define KRMPOD_BUF_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

struct buf {
	char *data; /* NULL until the first append; owned */
	size_t len;
	size_t cap;
	size_t limit; /* maximum len; 0 means no limit (only for buffers we fill ourselves) */
};

/* Initialises an empty buffer with the given limit (no allocation). */
void buf_init(struct buf *b, size_t limit);

/* Appends n bytes. Fails with ERR_IO "... exceeds the limit of N bytes" when the limit would
 * be passed; `what` names the buffer for that message (e.g. "API response body"). */
int buf_append(struct buf *b, const void *p, size_t n, const char *what, struct err **err);

/* Appends a C string / formatted text to a buffer we build ourselves (no limit check can
 * fail there: these abort only on OOM, like xalloc). */
void buf_puts(struct buf *b, const char *s);
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_putc(struct buf *b, char c);

/* Empties the buffer, keeping its memory. */
void buf_reset(struct buf *b);

/* Takes ownership of the data (NUL-terminated, never NULL) and leaves b empty. */
char *buf_steal(struct buf *b, size_t *len);

/* Frees the data. */
void buf_free(struct buf *b);

/* Fills a fixed array: copies as much of *data (*len bytes) as fits after the *n bytes
 * dst (cap bytes) holds, advancing *n, *data and *len. Returns the count copied. */
size_t bytes_fill(char *dst, size_t *n, size_t cap, const char **data, size_t *len);

/* `cleanup_buf struct buf b;` frees b's data when b goes out of scope (cleanup.h). */
static inline void cleanup_bufp(struct buf *b)
{
	buf_free(b);
}
#define cleanup_buf __attribute__((cleanup(cleanup_bufp)))

/* Reads a whole file into a new NUL-terminated string (*out, length *len), failing past
 * `limit` bytes. Errors carry `code` and name `what` and the path. */
int buf_read_file(const char *path, size_t limit, const char *what, enum err_code code, char **out,
                  size_t *len, struct err **err);

#endif

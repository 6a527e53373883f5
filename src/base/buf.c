/* buf.c — see buf.h. */
#include "base/buf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/xalloc.h"

void buf_init(struct buf *b, size_t limit)
{
	memset(b, 0, sizeof(*b));
	b->limit = limit;
}

static void grow(struct buf *b, size_t need)
{
	if (need + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < need + 1)
		cap *= 2;
	b->data = xrealloc(b->data, cap);
	b->cap = cap;
}

int buf_append(struct buf *b, const void *p, size_t n, const char *what, struct err **err)
{
	if (b->limit && (n > b->limit || b->len > b->limit - n))
		return err_set(err, ERR_IO, "%s exceeds the limit of %zu bytes", what, b->limit);
	grow(b, b->len + n);
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

void buf_puts(struct buf *b, const char *s)
{
	size_t n = strlen(s);
	grow(b, b->len + n);
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void buf_putc(struct buf *b, char c)
{
	grow(b, b->len + 1);
	b->data[b->len++] = c;
	b->data[b->len] = '\0';
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	grow(b, b->len + (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

char *buf_steal(struct buf *b, size_t *len)
{
	if (b->data == NULL)
		grow(b, 0), b->data[0] = '\0';
	char *p = b->data;
	if (len)
		*len = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}

void buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

int buf_read_file(const char *path, size_t limit, const char *what, enum err_code code, char **out,
                  size_t *len, struct err **err)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_set_sys(err, code, errno, "%s %s", what, path);
	cleanup_buf struct buf b;
	buf_init(&b, limit);
	char chunk[8192];
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_set_sys(err, code, errno, "read %s %s", what, path);
		if (n == 0)
			break;
		if (buf_append(&b, chunk, (size_t)n, what, err) < 0) {
			(*err)->code = code;
			return err_wrap(err, "%s", path);
		}
	}
	*out = buf_steal(&b, len);
	return 0;
}

size_t bytes_fill(char *dst, size_t *n, size_t cap, const char **data, size_t *len)
{
	size_t take = cap - *n;
	if (take > *len)
		take = *len;
	memcpy(dst + *n, *data, take);
	*n += take;
	*data += take;
	*len -= take;
	return take;
}

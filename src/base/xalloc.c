/* xalloc.c — see xalloc.h. */
#include "base/xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void oom(size_t n)
{
	char msg[96];
	int len = snprintf(msg, sizeof(msg), "krmpod: out of memory allocating %zu bytes\n", n);
	if (len > 0 && write(2, msg, (size_t)len) < 0) {
		/* nothing left to do */
	}
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (p == NULL)
		oom(n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (p == NULL)
		oom(n * size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (q == NULL)
		oom(n);
	return q;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *p = xmalloc(len + 1);
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int len = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (len < 0)
		abort();
	char *p = xmalloc((size_t)len + 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)len + 1, fmt, ap);
	va_end(ap);
	return p;
}

/* xalloc.h — allocation that cannot fail. Running out of memory is the one condition
 * that aborts inside the core (with a message on stderr); callers never check for NULL. */
#ifndef KRMPOD_XALLOC_H
#define KRMPOD_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* Duplicates at most n bytes of s and NUL-terminates. */
char *xstrndup(const char *s, size_t n);
/* Returns a newly allocated formatted string; the caller frees it. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif

/* strv.c — see strv.h. */
#include "base/strv.h"

#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

size_t strv_len(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

char **strv_dup(char *const *v)
{
	if (v == NULL)
		return NULL;
	size_t n = strv_len(v);
	char **out = xcalloc(n + 1, sizeof(*out));
	for (size_t i = 0; i < n; i++)
		out[i] = xstrdup(v[i]);
	return out;
}

void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

bool strv_equal(char *const *a, char *const *b)
{
	size_t n = strv_len(a);
	if (strv_len(b) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return true;
}

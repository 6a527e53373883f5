/* err.c — see err.h. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

int err_set(struct err **err, enum err_code code, const char *fmt, ...)
{
	if (err == NULL)
		return -1;
	if (*err == NULL)
		*err = xcalloc(1, sizeof(**err));
	else
		memset(*err, 0, sizeof(**err));
	(*err)->code = code;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf((*err)->msg, sizeof((*err)->msg), fmt, ap);
	va_end(ap);
	return -1;
}

int err_wrap(struct err **err, const char *fmt, ...)
{
	if (err == NULL)
		return -1;
	if (*err == NULL)
		err_set(err, ERR_INTERNAL, "error without a message");
	char ctx[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ctx, sizeof(ctx), fmt, ap);
	va_end(ap);
	char old[ERR_MSG_MAX];
	memcpy(old, (*err)->msg, sizeof(old));
	snprintf((*err)->msg, sizeof((*err)->msg), "%s: %s", ctx, old);
	return -1;
}

void err_free(struct err *e)
{
	free(e);
}

enum err_code err_code_of(struct err *const *err)
{
	if (err == NULL || *err == NULL)
		return ERR_OK;
	return (*err)->code;
}

/* err.c — see err.h. */
#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

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

int err_set_sys(struct err **err, enum err_code code, int errnum, const char *fmt, ...)
{
	if (err == NULL)
		return -1;
	char text[ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	err_set(err, code, "%s: %s", text, strerror(errnum));
	(*err)->sys_errno = errnum;
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
	char *msg = (*err)->msg;
	size_t clen = strlen(ctx), olen = strlen(msg);
	if (clen > ERR_MSG_MAX / 2)
		clen = ERR_MSG_MAX / 2;
	size_t keep = olen;
	if (clen + 2 + keep > ERR_MSG_MAX - 1)
		keep = ERR_MSG_MAX - 1 - clen - 2;
	memmove(msg + clen + 2, msg, keep);
	memcpy(msg, ctx, clen);
	msg[clen] = ':';
	msg[clen + 1] = ' ';
	msg[clen + 2 + keep] = '\0';
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

/* base64.c — see base64.h. */
#include "base/base64.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/xalloc.h"

static int value_of(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int base64_decode(const char *text, size_t len, const char *what, char **out, size_t *out_len,
                  struct err **err)
{
	char *res = xmalloc(len / 4 * 3 + 4);
	size_t n = 0, quad = 0, pad = 0;
	uint32_t acc = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
			continue;
		if (c == '=') {
			pad++;
			acc <<= 6;
			quad++;
		} else {
			int v = value_of(c);
			if (v < 0 || pad > 0) {
				free(res);
				return err_set(
				        err, ERR_CONFIG,
				        "%s: not valid base64 (unexpected character at offset %zu)",
				        what, i);
			}
			acc = (acc << 6) | (uint32_t)v;
			quad++;
		}
		if (quad == 4) {
			if (pad > 2) {
				free(res);
				return err_set(err, ERR_CONFIG,
				               "%s: not valid base64 (bad padding)", what);
			}
			res[n++] = (char)(acc >> 16);
			if (pad < 2)
				res[n++] = (char)(acc >> 8);
			if (pad < 1)
				res[n++] = (char)acc;
			quad = 0;
			acc = 0;
			if (pad)
				pad = 3; /* nothing may follow padding */
		}
	}
	if (quad != 0) {
		free(res);
		return err_set(err, ERR_CONFIG, "%s: not valid base64 (truncated)", what);
	}
	res[n] = '\0';
	*out = res;
	*out_len = n;
	return 0;
}

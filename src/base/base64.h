/* base64.h — standard base64 (RFC 4648, with padding), for kubeconfig *-data fields and the
 * WebSocket handshake key. */
#ifndef KRMPOD_BASE64_H
#define KRMPOD_BASE64_H

#include <stddef.h>

#include "base/err.h"

/* Decodes text (whitespace and newlines are skipped). On success *out is a newly allocated
 * NUL-terminated buffer of *out_len bytes. Fails with ERR_CONFIG naming `what` on a bad
 * character or bad padding. */
int base64_decode(const char *text, size_t len, const char *what, char **out, size_t *out_len,
                  struct err **err);

#endif

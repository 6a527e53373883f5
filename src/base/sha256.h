/* sha256.h — SHA-256 digests (mbedTLS), as content addresses: "sha256:<64 lowercase hex>". */
#ifndef KRMPOD_SHA256_H
#define KRMPOD_SHA256_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

#define SHA256_HEX_LEN    64
#define SHA256_DIGEST_LEN (7 + SHA256_HEX_LEN) /* "sha256:" + hex */

/* Writes the lowercase hex digest of data into hex (SHA256_HEX_LEN + 1 bytes). */
void sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_LEN + 1]);

/* Writes "sha256:<hex>" of data into digest (SHA256_DIGEST_LEN + 1 bytes). */
void sha256_digest(const void *data, size_t len, char digest[SHA256_DIGEST_LEN + 1]);

/* Whether text is "sha256:" followed by exactly 64 lowercase hex digits. */
bool sha256_digest_valid(const char *text);

#endif

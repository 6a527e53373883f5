/* sha256.c — see sha256.h. */
#include "base/sha256.h"

#include <mbedtls/sha256.h>
#include <stdio.h>
#include <string.h>

void sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char sum[32];
	mbedtls_sha256(data, len, sum, 0);
	for (size_t i = 0; i < sizeof(sum); i++) {
		hex[2 * i] = digits[sum[i] >> 4];
		hex[2 * i + 1] = digits[sum[i] & 15];
	}
	hex[SHA256_HEX_LEN] = '\0';
}

void sha256_digest(const void *data, size_t len, char digest[SHA256_DIGEST_LEN + 1])
{
	memcpy(digest, "sha256:", 7);
	sha256_hex(data, len, digest + 7);
}

bool sha256_digest_valid(const char *text)
{
	if (text == NULL || strncmp(text, "sha256:", 7) != 0 || strlen(text) != SHA256_DIGEST_LEN)
		return false;
	for (const char *p = text + 7; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

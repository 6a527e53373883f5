/* sha256.c — see sha256.h. */
#include "base/sha256.h"

#include <string.h>

#include <mbedtls/sha256.h>

void sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char sum[32];
	/* Only a bad argument makes mbedtls_sha256() fail; ours are always good. */
	(void)mbedtls_sha256(data, len, sum, 0);
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
	if (text == NULL || strncmp(text, "sha256:", 7) != 0)
		return false;
	const char *hex = text + 7;
	for (size_t i = 0; i < SHA256_HEX_LEN; i++)
		if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f')))
			return false;
	return hex[SHA256_HEX_LEN] == '\0';
}

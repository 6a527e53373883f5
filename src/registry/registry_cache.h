/* registry_cache.h — a content cache of what registries served, by sha256 digest:
 * DIR/sha256/<hex>, one file per manifest or blob. Shared by concurrent renders: a file is
 * written under a temporary name and renamed into place, so a reader sees it whole or not
 * at all. Every read hashes the file again; one that no longer matches its name is deleted
 * (and so fetched again). The cache is best effort: a problem with it is a warning, never a
 * failed pull.
 */
#ifndef KRMPOD_REGISTRY_CACHE_H
#define KRMPOD_REGISTRY_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/sha256.h"

/* Reads the object digest ("sha256:<hex>") from the cache in dir into out (emptied first;
 * at most max_bytes). True on a hit; false when it is not there, too large, unreadable or
 * corrupt (deleted). A hit makes the file the newest, for eviction. */
bool registry_cache_get(const char *dir, const char *digest, size_t max_bytes, struct buf *out);

/* Stores len bytes of data, which hash to digest, in the cache in dir (created when
 * missing), then evicts the oldest objects beyond LIMIT_REGISTRY_CACHE. An object larger
 * than that limit is not stored. */
void registry_cache_put(const char *dir, const char *digest, const void *data, size_t len);

/* Deletes the least recently used objects of the cache in dir until they take at most
 * limit bytes (and temporary files older than an hour, left by a crash). */
void registry_cache_evict(const char *dir, unsigned long long limit);

/* What a tag resolved to: DIR/tags/<sha256 of the reference>, holding the digest, trusted
 * for ttl_ms after it was written (a tag can move; a digest cannot). Get: true with
 * digest filled when a fresh entry is there. Put: best effort, like the objects. */
bool registry_tag_get(const char *dir, const char *reference, int64_t ttl_ms,
                      char digest[SHA256_DIGEST_LEN + 1]);
void registry_tag_put(const char *dir, const char *reference, const char *digest);

/* The path of the object digest in the cache in dir. A new string. */
char *registry_cache_path(const char *dir, const char *digest);

#endif

/* registry_cache.c — see registry_cache.h. */
#include "registry/registry_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/clock.h"
#include "base/fdio.h"
#include "base/log.h"
#include "base/sha256.h"
#include "base/size_limits.h"
#include "base/xalloc.h"

#define TMP_PREFIX        ".tmp-"
#define STALE_TMP_SECONDS 3600 /* a temporary file this old was left by a crash */

char *registry_cache_path(const char *dir, const char *digest)
{
	return xasprintf("%s/sha256/%s", dir, digest + 7);
}

/* Reads the whole regular file fd (at most max bytes) into out. */
static bool read_object(int fd, size_t max, struct buf *out)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (unsigned long long)st.st_size > max)
		return false;
	char chunk[65536];
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (n > 0 && out->len + (size_t)n > max))
			return false;
		if (n == 0)
			return true;
		if (buf_append(out, chunk, (size_t)n, "cached object", NULL) < 0)
			return false;
	}
}

bool registry_cache_get(const char *dir, const char *digest, size_t max_bytes, struct buf *out)
{
	buf_reset(out);
	if (dir == NULL || !sha256_digest_valid(digest))
		return false;
	cleanup_free char *path = registry_cache_path(dir, digest);
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	if (!read_object(fd, max_bytes, out)) {
		buf_reset(out);
		return false;
	}
	char hex[SHA256_HEX_LEN + 1];
	sha256_hex(out->data ? out->data : "", out->len, hex);
	if (strcmp(hex, digest + 7) != 0) {
		log_warn("registry cache: %s does not hash to its name (sha256:%s); deleting it",
		         path, hex);
		unlink(path);
		buf_reset(out);
		return false;
	}
	futimens(fd, NULL); /* the newest now, for eviction */
	log_debug("registry cache: hit %s", digest);
	return true;
}

/* mkdir -p with mode 0700 for what it creates. */
static int make_dirs(const char *path)
{
	cleanup_free char *p = xstrdup(path);
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, 0700) < 0 && errno != EEXIST)
			return -1;
		*s = c;
		if (c == '\0')
			return 0;
	}
}

/* Writes data to a new temporary file in sub and renames it to path. */
static int write_object(const char *sub, const char *path, const char *hex, const void *data,
                        size_t len, struct err **err)
{
	cleanup_free char *tmp = xasprintf("%s/" TMP_PREFIX "%.16s-XXXXXX", sub, hex);
	return fd_write_atomic(path, tmp, data, len, 0600, "a cache entry", err);
}

void registry_cache_put(const char *dir, const char *digest, const void *data, size_t len)
{
	if (dir == NULL || !sha256_digest_valid(digest) || len > LIMIT_REGISTRY_CACHE)
		return;
	cleanup_free char *sub = xasprintf("%s/sha256", dir);
	if (make_dirs(sub) < 0) {
		log_warn("registry cache: cannot create %s: %s", sub, strerror(errno));
		return;
	}
	cleanup_free char *path = registry_cache_path(dir, digest);
	cleanup_err struct err *e = NULL;
	if (write_object(sub, path, digest + 7, data, len, &e) < 0) {
		log_warn("registry cache: %s", e->msg);
		return;
	}
	registry_cache_evict(dir, LIMIT_REGISTRY_CACHE);
}

/* --- Tags ------------------------------------------------------------------------------- */

static char *tag_path(const char *dir, const char *reference)
{
	char hex[SHA256_HEX_LEN + 1];
	sha256_hex(reference, strlen(reference), hex);
	return xasprintf("%s/tags/%s", dir, hex);
}

bool registry_tag_get(const char *dir, const char *reference, int64_t ttl_ms,
                      char digest[SHA256_DIGEST_LEN + 1])
{
	if (dir == NULL || ttl_ms <= 0)
		return false;
	cleanup_free char *path = tag_path(dir, reference);
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	struct timespec now;
	if (fd < 0 || fstat(fd, &st) < 0)
		return false;
	file_clock_now(&now);
	int64_t age_ms = (int64_t)(now.tv_sec - st.st_mtim.tv_sec) * 1000 +
	                 (now.tv_nsec - st.st_mtim.tv_nsec) / 1000000;
	if (age_ms < 0 || age_ms > ttl_ms)
		return false;
	char text[SHA256_DIGEST_LEN + 2];
	ssize_t n = read(fd, text, sizeof(text) - 1);
	if (n != SHA256_DIGEST_LEN)
		return false;
	text[n] = '\0';
	if (!sha256_digest_valid(text))
		return false;
	memcpy(digest, text, SHA256_DIGEST_LEN + 1);
	log_debug("registry cache: %s is %s (resolved %lld ms ago)", reference, digest,
	          (long long)age_ms);
	return true;
}

void registry_tag_put(const char *dir, const char *reference, const char *digest)
{
	if (dir == NULL || !sha256_digest_valid(digest))
		return;
	cleanup_free char *sub = xasprintf("%s/tags", dir);
	if (make_dirs(sub) < 0) {
		log_warn("registry cache: cannot create %s: %s", sub, strerror(errno));
		return;
	}
	cleanup_free char *path = tag_path(dir, reference);
	char hex[SHA256_HEX_LEN + 1];
	sha256_hex(reference, strlen(reference), hex);
	cleanup_err struct err *e = NULL;
	if (write_object(sub, path, hex, digest, strlen(digest), &e) < 0)
		log_warn("registry cache: %s", e->msg);
}

/* --- Eviction --------------------------------------------------------------------------- */

struct object {
	char name[SHA256_HEX_LEN + 1];
	unsigned long long size;
	struct timespec mtime;
};

struct objects {
	struct object *v;
	size_t n, cap;
	unsigned long long total;
};

static bool hex_name(const char *name)
{
	return strlen(name) == SHA256_HEX_LEN && strspn(name, "0123456789abcdef") == SHA256_HEX_LEN;
}

/* Lists the objects of the directory sub (and deletes stale temporary files). */
static void list_objects(DIR *d, struct objects *objs)
{
	struct timespec ts;
	file_clock_now(&ts);
	time_t now = ts.tv_sec;
	struct dirent *ent;
	while ((ent = readdir(d)) != NULL) {
		struct stat st;
		if (fstatat(dirfd(d), ent->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (strncmp(ent->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0) {
			if (now - st.st_mtime > STALE_TMP_SECONDS)
				unlinkat(dirfd(d), ent->d_name, 0);
			continue;
		}
		if (!hex_name(ent->d_name))
			continue;
		if (objs->n == objs->cap) {
			objs->cap = objs->cap ? objs->cap * 2 : 64;
			objs->v = xrealloc(objs->v, objs->cap * sizeof(*objs->v));
		}
		struct object *o = &objs->v[objs->n++];
		memcpy(o->name, ent->d_name, sizeof(o->name));
		o->size = (unsigned long long)st.st_size;
		o->mtime = st.st_mtim;
		objs->total += o->size;
	}
}

static int older_first(const void *a, const void *b)
{
	const struct object *x = a, *y = b;
	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

void registry_cache_evict(const char *dir, unsigned long long limit)
{
	cleanup_free char *sub = xasprintf("%s/sha256", dir);
	DIR *d = opendir(sub);
	if (d == NULL)
		return;
	struct objects objs = {0};
	list_objects(d, &objs);
	if (objs.total > limit)
		qsort(objs.v, objs.n, sizeof(*objs.v), older_first);
	for (size_t i = 0; i < objs.n && objs.total > limit; i++) {
		if (unlinkat(dirfd(d), objs.v[i].name, 0) == 0 || errno == ENOENT) {
			log_debug("registry cache: evicted sha256:%s (%llu bytes)", objs.v[i].name,
			          objs.v[i].size);
			objs.total -= objs.v[i].size;
		}
	}
	free(objs.v);
	closedir(d);
}

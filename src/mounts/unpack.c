/* unpack.c — see unpack.h. */
#include "mounts/unpack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "mounts/tar.h"

#define COPY_CHUNK (64u << 10)

int unpack_check_path(const char *path, unsigned *index, const char **rest, struct err **err)
{
	const char *p = path;
	unsigned idx = 0;
	size_t digits = 0;
	while (*p >= '0' && *p <= '9' && digits < 6)
		idx = idx * 10 + (unsigned)(*p++ - '0'), digits++;
	if (digits == 0 || (digits > 1 && path[0] == '0') || idx >= LIMIT_MOUNTS ||
	    (*p != '\0' && *p != '/'))
		return err_set(err, ERR_IO,
		               "entry \"%.200s\": does not start with a mount number below %d",
		               path, LIMIT_MOUNTS);
	if (*p == '/')
		p++;
	if (strlen(p) > LIMIT_MOUNT_PATH)
		return err_set(err, ERR_IO, "entry \"%.200s...\": longer than %d bytes", path,
		               LIMIT_MOUNT_PATH);
	for (const char *c = p; *c;) {
		size_t n = strcspn(c, "/");
		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return err_set(
			        err, ERR_IO,
			        "entry \"%.200s\": empty, \".\" or \"..\" path components are "
			        "refused",
			        path);
		c += n;
		if (*c == '/' && c[1] == '\0')
			return err_set(err, ERR_IO, "entry \"%.200s\": a trailing '/'", path);
		if (*c == '/')
			c++;
	}
	*index = idx;
	*rest = p;
	return 0;
}

struct dir_fixup {
	unsigned index;
	char *rest;
	unsigned mode;
	int64_t mtime;
};

struct unpacker {
	int dir_fd;
	int index_fd[LIMIT_MOUNTS];
	const char *dir;
	int64_t max_bytes;
	struct tar_reader tr;
	struct unpack_stats st;
	struct dir_fixup *dirs;
	size_t n_dirs;
	char *chunk;
};

static ssize_t read_fd(void *ud, void *buf, size_t n)
{
	return read(*(int *)ud, buf, n);
}

/* The directory of mount `index` (opened once; the pod put it there, so a symlink there
 * is followed: only paths below it come from the archive). */
static int index_dir(struct unpacker *u, unsigned index, struct err **err)
{
	if (u->index_fd[index] >= 0)
		return u->index_fd[index];
	char name[16];
	snprintf(name, sizeof(name), "%u", index);
	int fd = openat(u->dir_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return err_set(err, ERR_IO,
		               "mount %u: %s/%s: %s (the pod mounts each volume there before "
		               "unpack runs)",
		               index, u->dir, name, strerror(errno));
	u->index_fd[index] = fd;
	return fd;
}

/* Opens the directory that will hold the last component of rest, without following any
 * symlink; *name points at that last component. Returns a new fd (the caller closes it). */
static int open_parent(struct unpacker *u, unsigned index, const char *rest, const char **name,
                       struct err **err)
{
	int base = index_dir(u, index, err);
	if (base < 0)
		return -1;
	int fd = dup(base);
	if (fd < 0)
		return err_set_sys(err, ERR_IO, errno, "dup");
	const char *p = rest;
	for (;;) {
		size_t n = strcspn(p, "/");
		if (p[n] == '\0') {
			*name = p;
			return fd;
		}
		char comp[256];
		if (n >= sizeof(comp)) {
			close(fd);
			return err_set(err, ERR_IO, "entry %u/%s: a path component is too long",
			               index, rest);
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		int next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		close(fd);
		if (next < 0)
			return err_set(err, ERR_IO, "entry %u/%s: %.*s is %s", index, rest,
			               (int)(p - rest + n), rest,
			               e == ENOENT ? "missing (its directory entry must come first)"
			               : e == ELOOP || e == ENOTDIR
			                       ? "not a directory (symlinks are never followed)"
			                       : strerror(e));
		fd = next;
		p += n + 1;
	}
}

static int make_dir(struct unpacker *u, unsigned index, const char *rest, const struct tar_entry *e,
                    struct err **err)
{
	if (rest[0] == '\0')
		return 0; /* the volume itself: the pod owns its mode */
	const char *name = NULL;
	cleanup_close int pfd = open_parent(u, index, rest, &name, err);
	if (pfd < 0)
		return -1;
	if (mkdirat(pfd, name, 0700) < 0)
		return err_set(err, ERR_IO, "entry %u/%s: mkdir: %s", index, rest,
		               errno == EEXIST ? "it exists already (duplicate entry)"
		                               : strerror(errno));
	u->dirs = xrealloc(u->dirs, (u->n_dirs + 1) * sizeof(*u->dirs));
	u->dirs[u->n_dirs++] = (struct dir_fixup){index, xstrdup(rest), e->mode & 0777, e->mtime};
	return 0;
}

static int make_file(struct unpacker *u, unsigned index, const char *rest,
                     const struct tar_entry *e, struct err **err)
{
	if (rest[0] == '\0')
		return err_set(err, ERR_IO, "entry %u: a file in place of the mount's volume",
		               index);
	if (e->size > (uint64_t)u->max_bytes || u->st.bytes > (uint64_t)u->max_bytes - e->size)
		return err_set(err, ERR_IO,
		               "entry %u/%s: the files pass KRMPOD_MOUNT_MAX_BYTES (%lld bytes)",
		               index, rest, (long long)u->max_bytes);
	const char *name = NULL;
	cleanup_close int pfd = open_parent(u, index, rest, &name, err);
	if (pfd < 0)
		return -1;
	cleanup_close int fd =
	        openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return err_set(err, ERR_IO, "entry %u/%s: create: %s", index, rest,
		               errno == EEXIST ? "it exists already (duplicate entry)"
		                               : strerror(errno));
	for (;;) {
		ssize_t n = tar_read_data(&u->tr, u->chunk, COPY_CHUNK, err);
		if (n < 0)
			return err_wrap(err, "entry %u/%s", index, rest);
		if (n == 0)
			break;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(fd, u->chunk + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				return err_set_sys(err, ERR_IO, errno, "entry %u/%s: write", index,
				                   rest);
			off += w;
		}
	}
	u->st.bytes += e->size;
	struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_sec = e->mtime}};
	if (fchmod(fd, e->mode & 0777) < 0 || futimens(fd, ts) < 0)
		return err_set_sys(err, ERR_IO, errno, "entry %u/%s: chmod/utime", index, rest);
	return 0;
}

static int make_link(struct unpacker *u, unsigned index, const char *rest,
                     const struct tar_entry *e, struct err **err)
{
	if (rest[0] == '\0' || !tar_link_inside(rest, e->link))
		return err_set(
		        err, ERR_IO,
		        "entry %u/%s: symlink to \"%.200s\" refused: it must be relative and "
		        "stay inside its mount",
		        index, rest, e->link);
	const char *name = NULL;
	cleanup_close int pfd = open_parent(u, index, rest, &name, err);
	if (pfd < 0)
		return -1;
	if (symlinkat(e->link, pfd, name) < 0)
		return err_set(err, ERR_IO, "entry %u/%s: symlink: %s", index, rest,
		               errno == EEXIST ? "it exists already (duplicate entry)"
		                               : strerror(errno));
	return 0;
}

/* Gives directories their modes and mtimes, deepest first, once all entries are in. */
static int fix_dirs(struct unpacker *u, struct err **err)
{
	for (size_t i = u->n_dirs; i-- > 0;) {
		struct dir_fixup *d = &u->dirs[i];
		const char *name = NULL;
		cleanup_close int pfd = open_parent(u, d->index, d->rest, &name, err);
		if (pfd < 0)
			return -1;
		cleanup_close int fd =
		        openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_sec = d->mtime}};
		if (fd < 0 || fchmod(fd, d->mode) < 0 || futimens(fd, ts) < 0)
			return err_set_sys(err, ERR_IO, errno, "directory %u/%s: chmod/utime",
			                   d->index, d->rest);
	}
	return 0;
}

static int run(struct unpacker *u, int in_fd, struct err **err)
{
	tar_reader_init(&u->tr, read_fd, &in_fd);
	for (;;) {
		struct tar_entry e;
		int rc = tar_next(&u->tr, &e, err);
		if (rc < 0)
			return -1;
		if (rc == 0)
			return fix_dirs(u, err);
		if (++u->st.entries > LIMIT_MOUNT_ENTRIES)
			return err_set(err, ERR_IO, "more than %d entries", LIMIT_MOUNT_ENTRIES);
		unsigned index;
		const char *rest;
		if (unpack_check_path(e.path, &index, &rest, err) < 0)
			return -1;
		if (e.type == TAR_DIR)
			rc = make_dir(u, index, rest, &e, err);
		else if (e.type == TAR_FILE)
			rc = make_file(u, index, rest, &e, err);
		else
			rc = make_link(u, index, rest, &e, err);
		if (rc < 0)
			return -1;
	}
}

int unpack_tar(int in_fd, const char *dir, int64_t max_bytes, struct unpack_stats *st,
               struct err **err)
{
	struct unpacker u = {.dir = dir, .max_bytes = max_bytes};
	for (size_t i = 0; i < LIMIT_MOUNTS; i++)
		u.index_fd[i] = -1;
	u.dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (u.dir_fd < 0)
		return err_set_sys(err, ERR_USAGE, errno, "unpack: cannot open %s", dir);
	u.chunk = xmalloc(COPY_CHUNK);
	int rc = run(&u, in_fd, err);
	if (rc < 0)
		err_wrap(err, "unpack into %s (after %llu entries)", dir,
		         (unsigned long long)u.st.entries);
	*st = u.st;
	tar_reader_free(&u.tr);
	for (size_t i = 0; i < u.n_dirs; i++)
		free(u.dirs[i].rest);
	free(u.dirs);
	free(u.chunk);
	for (size_t i = 0; i < LIMIT_MOUNTS; i++)
		if (u.index_fd[i] >= 0)
			close(u.index_fd[i]);
	close(u.dir_fd);
	return rc;
}

/* fdio.c — see fdio.h. */
#include "base/fdio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/xalloc.h"

int fd_write_all(int fd, const void *p, size_t n, const char *what, struct err **err)
{
	const char *c = p;
	while (n > 0) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return err_set(err, ERR_IO, "write %s: %s", what,
			               errno == EPIPE ? "the reader closed it" : strerror(errno));
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* What fd_write_atomic*() write: n bytes of p, or all of the file `from` (from >= 0). */
struct atomic_src {
	const void *p;
	size_t n;
	int from;
};

static int write_atomic(const char *path, const char *tmp, const struct atomic_src *src,
                        unsigned mode, const char *what, struct err **err)
{
	size_t len = strlen(tmp);
	char *name = xstrdup(tmp);
	int fd = len >= 6 && strcmp(tmp + len - 6, "XXXXXX") == 0
	                 ? mkostemp(name, O_CLOEXEC)
	                 : open(name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	                        (mode_t)mode);
	int rc = fd < 0 ? err_set_sys(err, ERR_IO, errno, "write %s: create %s", what, name) : 0;
	if (rc == 0 && fchmod(fd, (mode_t)mode) < 0)
		rc = err_set_sys(err, ERR_IO, errno, "write %s: chmod %s", what, name);
	if (rc == 0)
		rc = src->from >= 0 ? fd_copy_from_start(src->from, fd, name, err)
		                    : fd_write_all(fd, src->p, src->n, name, err);
	if (rc == 0 && src->from >= 0 && fsync(fd) < 0)
		rc = err_set_sys(err, ERR_IO, errno, "write %s: fsync %s", what, name);
	if (fd >= 0 && close(fd) < 0 && rc == 0)
		rc = err_set_sys(err, ERR_IO, errno, "write %s: close %s", what, name);
	if (rc == 0 && rename(name, path) < 0)
		rc = err_set_sys(err, ERR_IO, errno, "write %s: rename %s to %s", what, name, path);
	if (rc < 0 && fd >= 0)
		unlink(name);
	free(name);
	return rc;
}

int fd_write_atomic(const char *path, const char *tmp, const void *p, size_t n, unsigned mode,
                    const char *what, struct err **err)
{
	struct atomic_src src = {.p = p, .n = n, .from = -1};
	return write_atomic(path, tmp, &src, mode, what, err);
}

int fd_copy_atomic(const char *path, const char *tmp, int from, unsigned mode, const char *what,
                   struct err **err)
{
	struct atomic_src src = {.from = from};
	return write_atomic(path, tmp, &src, mode, what, err);
}

int fd_copy_from_start(int from, int to, const char *what, struct err **err)
{
	if (lseek(from, 0, SEEK_SET) < 0)
		return err_set_sys(err, ERR_IO, errno, "rewind the held %s", what);
	char chunk[64 << 10];
	for (;;) {
		ssize_t n = read(from, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_set_sys(err, ERR_IO, errno, "read the held %s", what);
		if (n == 0)
			return 0;
		if (fd_write_all(to, chunk, (size_t)n, what, err) < 0)
			return -1;
	}
}

const char *tmp_dir(void)
{
	const char *dir = getenv("TMPDIR");
	return dir && *dir ? dir : "/tmp";
}

int tmp_file_make(const char *prefix, const char *what, char **path_out, struct err **err)
{
	char *path = xasprintf("%s/%s-XXXXXX", tmp_dir(), prefix);
	int fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0) {
		err_set_sys(err, ERR_IO, errno,
		            "cannot make %s for %s (set TMPDIR to a writable directory)", path,
		            what);
		free(path);
		return -1;
	}
	if (path_out)
		*path_out = path;
	else
		free(path);
	return fd;
}

int tmp_dir_make(const char *prefix, const char *what, char **out, struct err **err)
{
	char *path = xasprintf("%s/%s-XXXXXX", tmp_dir(), prefix);
	if (mkdtemp(path) == NULL) {
		err_set_sys(err, ERR_IO, errno,
		            "cannot make %s for %s (set TMPDIR to a writable directory)", path,
		            what);
		free(path);
		return -1;
	}
	*out = path;
	return 0;
}

/* The first failure of a removal, kept while it goes on with the rest. */
struct removal {
	const char *what;
	struct err *first;
};

static void removal_failed(struct removal *r, const char *name, const char *op, int errnum)
{
	if (r->first == NULL)
		err_set(&r->first, ERR_IO, "cannot remove %s from %s (%s): %s", name, r->what, op,
		        strerror(errnum));
}

static void empty_at(int fd, const char *keep, int depth, struct removal *r);

/* Removes the entry `name` of dirfd, a directory's content first. */
static void remove_at(int parent, const char *name, int depth, struct removal *r)
{
	if (unlinkat(parent, name, 0) == 0 || errno == ENOENT)
		return;
	if (errno != EISDIR && errno != EPERM) {
		removal_failed(r, name, "unlink", errno);
		return;
	}
	if (depth >= FD_TREE_DEPTH) {
		removal_failed(r, name, "nested too deep", ELOOP);
		return;
	}
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		removal_failed(r, name, "open", errno);
		return;
	}
	fchmod(fd, 0700); /* a read-only directory's entries cannot be removed */
	empty_at(fd, NULL, depth + 1, r);
	if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		removal_failed(r, name, "rmdir", errno);
}

/* fd is consumed. */
static void empty_at(int fd, const char *keep, int depth, struct removal *r)
{
	DIR *d = fdopendir(fd);
	if (d == NULL) {
		removal_failed(r, ".", "read", errno);
		close(fd);
		return;
	}
	for (;;) {
		/* Entries are removed while the directory is read: start over until it is empty
		 * (readdir may skip entries of a directory that changes under it). */
		bool removed = false;
		rewinddir(d);
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
			    (keep && strcmp(e->d_name, keep) == 0))
				continue;
			struct err *before = r->first;
			remove_at(dirfd(d), e->d_name, depth, r);
			removed = removed || r->first == before;
		}
		if (!removed || r->first)
			break;
	}
	closedir(d);
}

int fd_empty_dir(int dir, const char *keep, const char *what, struct err **err)
{
	int fd = dup(dir);
	if (fd < 0)
		return err_set_sys(err, ERR_IO, errno, "cannot read %s", what);
	struct removal r = {what, NULL};
	empty_at(fd, keep, 0, &r);
	if (r.first == NULL)
		return 0;
	if (err)
		*err = r.first;
	else
		err_free(r.first);
	return -1;
}

int fd_remove_tree(const char *path, const char *what, struct err **err)
{
	struct removal r = {what, NULL};
	remove_at(AT_FDCWD, path, 0, &r);
	if (r.first == NULL)
		return 0;
	if (err)
		*err = r.first;
	else
		err_free(r.first);
	return -1;
}

/* path as a sockaddr_un name into a: itself, or (too long for sun_path) through an open
 * descriptor of its directory, *dir (to close; -1 when none). Returns -1 with errno. */
static int sock_name(const char *path, struct sockaddr_un *a, int *dir)
{
	*dir = -1;
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (strlen(path) < sizeof(a->sun_path)) {
		memcpy(a->sun_path, path, strlen(path) + 1);
		return 0;
	}
	const char *slash = strrchr(path, '/');
	if (slash == NULL) {
		errno = ENAMETOOLONG;
		return -1;
	}
	char *d = strndup(path, (size_t)(slash - path));
	*dir = d ? open(*d ? d : "/", O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	free(d);
	if (*dir < 0)
		return -1;
	int n = snprintf(a->sun_path, sizeof(a->sun_path), "/proc/self/fd/%d/%s", *dir, slash + 1);
	if (n < 0 || (size_t)n >= sizeof(a->sun_path)) {
		close(*dir);
		*dir = -1;
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* Binds and listens under a temporary name, then renames it to path: whoever sees the
 * socket's file can connect (a connect between bind and listen is refused). */
static int listen_at_path(int fd, const char *path, int backlog)
{
	char *tmp = xasprintf("%s.%d.tmp", path, (int)getpid());
	struct sockaddr_un t, f;
	int tdir = -1, fdir = -1;
	int rc = sock_name(tmp, &t, &tdir) < 0 || sock_name(path, &f, &fdir) < 0 ? -1 : 0;
	if (rc == 0) {
		unlink(t.sun_path);
		rc = bind(fd, (struct sockaddr *)&t, sizeof(t)) < 0 || listen(fd, backlog) < 0 ||
		                     chmod(t.sun_path, 0600) < 0 ||
		                     rename(t.sun_path, f.sun_path) < 0
		             ? -1
		             : 0;
		if (rc < 0) {
			int e = errno;
			unlink(t.sun_path);
			errno = e;
		}
	}
	int e = errno;
	if (tdir >= 0)
		close(tdir);
	if (fdir >= 0)
		close(fdir);
	free(tmp);
	errno = e;
	return rc;
}

int fd_unix_socket(const char *path, bool listen_, int backlog)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int rc;
	if (listen_) {
		rc = listen_at_path(fd, path, backlog);
	} else {
		struct sockaddr_un a;
		int dir = -1;
		rc = sock_name(path, &a, &dir) < 0 ? -1
		                                   : connect(fd, (struct sockaddr *)&a, sizeof(a));
		int e = errno;
		if (dir >= 0)
			close(dir);
		errno = e;
	}
	if (rc < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int fd_accept(int listen_fd, int wake_fd)
{
	for (int tries = 0;; tries++) {
		int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd >= 0)
			return fd;
		int e = errno;
		if (e != EMFILE && e != ENFILE && e != ENOBUFS && e != ENOMEM)
			return -1;
		if (tries == FD_ACCEPT_RETRIES)
			return -1;
		struct pollfd p = {.fd = wake_fd, .events = POLLIN};
		if (poll(&p, 1, FD_ACCEPT_RETRY_MS) > 0) {
			errno = ECANCELED;
			return -1;
		}
		errno = e;
	}
}

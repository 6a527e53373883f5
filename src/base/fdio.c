/* fdio.c — see fdio.h. */
#include "base/fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
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

int fd_copy_from_start(int from, int to, const char *what, struct err **err)
{
	if (lseek(from, 0, SEEK_SET) < 0)
		return err_set(err, ERR_IO, "rewind the held %s: %s", what, strerror(errno));
	char chunk[64 << 10];
	for (;;) {
		ssize_t n = read(from, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_set(err, ERR_IO, "read the held %s: %s", what, strerror(errno));
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
		err_set(err, ERR_IO,
		        "cannot make %s for %s (set TMPDIR to a writable directory): %s", path,
		        what, strerror(errno));
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
		err_set(err, ERR_IO,
		        "cannot make %s for %s (set TMPDIR to a writable directory): %s", path,
		        what, strerror(errno));
		free(path);
		return -1;
	}
	*out = path;
	return 0;
}

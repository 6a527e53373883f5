/* tree_copy.c — see tree_copy.h. */
#include "cmp/tree_copy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/log.h"
#include "base/size_limits.h"
#include "base/xalloc.h"

static int copy_file(const char *src, const char *dst, mode_t mode, uint64_t *budget,
                     struct err **err)
{
	cleanup_close int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return err_set_sys(err, ERR_IO, errno, "copy %s", src);
	cleanup_close int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 0777);
	if (out < 0)
		return err_set_sys(err, ERR_IO, errno, "copy to %s", dst);
	char chunk[64 << 10];
	for (;;) {
		ssize_t n = read(in, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_set_sys(err, ERR_IO, errno, "read %s", src);
		if (n == 0)
			return 0;
		if ((uint64_t)n > *budget)
			return err_set(err, ERR_IO,
			               "the kustomization's directories hold more than %u bytes: "
			               "too much to copy for applying catalogs",
			               (unsigned)LIMIT_TREE_COPY);
		*budget -= (uint64_t)n;
		if (fd_write_all(out, chunk, (size_t)n, dst, err) < 0)
			return -1;
	}
}

static int copy_dir(const char *src, const char *dst, uint64_t *budget, struct err **err);

/* One entry of a directory. */
static int copy_entry(const char *src, const char *dst, uint64_t *budget, struct err **err)
{
	struct stat st;
	if (lstat(src, &st) < 0)
		return err_set_sys(err, ERR_IO, errno, "copy %s", src);
	if (S_ISDIR(st.st_mode))
		return copy_dir(src, dst, budget, err);
	if (S_ISREG(st.st_mode))
		return copy_file(src, dst, st.st_mode, budget, err);
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(src, target, sizeof(target) - 1);
		if (n < 0)
			return err_set_sys(err, ERR_IO, errno, "readlink %s", src);
		target[n] = '\0';
		if (symlink(target, dst) < 0)
			return err_set_sys(err, ERR_IO, errno, "symlink %s", dst);
		return 0;
	}
	return err_set(err, ERR_IO,
	               "%s is neither a file, a directory nor a symlink: it cannot be copied to "
	               "apply catalogs",
	               src);
}

static int copy_dir(const char *src, const char *dst, uint64_t *budget, struct err **err)
{
	if (mkdir(dst, 0700) < 0 && errno != EEXIST)
		return err_set_sys(err, ERR_IO, errno, "mkdir %s", dst);
	DIR *d = opendir(src);
	if (d == NULL)
		return err_set_sys(err, ERR_IO, errno, "read the directory %s", src);
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
		    strcmp(e->d_name, ".git") == 0)
			continue;
		cleanup_free char *from = xasprintf("%s/%s", src, e->d_name);
		cleanup_free char *to = xasprintf("%s/%s", dst, e->d_name);
		struct stat st;
		if (lstat(to, &st) == 0)
			continue; /* copied already (a directory inside another one) */
		rc = copy_entry(from, to, budget, err);
	}
	closedir(d);
	return rc;
}

/* The longest common directory prefix of a and b (a new string). */
static char *common_dir(const char *a, const char *b)
{
	size_t n = 0, last = 0;
	while (a[n] && a[n] == b[n]) {
		if (a[n] == '/')
			last = n;
		n++;
	}
	if ((a[n] == '\0' || a[n] == '/') && (b[n] == '\0' || b[n] == '/'))
		last = n;
	return last == 0 ? xstrdup("/") : xstrndup(a, last);
}

char *tree_copy_path(const char *root, const char *ancestor, const char *path)
{
	size_t n = strcmp(ancestor, "/") == 0 ? 0 : strlen(ancestor);
	if (strncmp(path, ancestor, n) != 0 || (path[n] != '/' && path[n] != '\0'))
		return NULL; /* not under the ancestor (nor a path shorter than it) */
	/* no ".." may climb back out of the copy */
	for (const char *p = path + n; *p; p++)
		if (p[0] == '/' && p[1] == '.' && p[2] == '.' && (p[3] == '/' || p[3] == '\0'))
			return NULL;
	return xasprintf("%s%s", root, path + n);
}

int tree_copy(const char *const *dirs, size_t n, char **root, char **ancestor, struct err **err)
{
	*root = *ancestor = NULL;
	if (n == 0)
		return err_set(err, ERR_INTERNAL, "tree_copy: nothing to copy");
	char *anc = xstrdup(dirs[0]);
	for (size_t i = 1; i < n; i++) {
		char *c = common_dir(anc, dirs[i]);
		free(anc);
		anc = c;
	}
	char *top = NULL;
	if (tmp_dir_make("krmpod-catalogs", "the copy catalogs are applied to", &top, err) < 0) {
		free(anc);
		return -1;
	}
	uint64_t budget = LIMIT_TREE_COPY;
	for (size_t i = 0; i < n; i++) {
		cleanup_free char *dst = tree_copy_path(top, anc, dirs[i]);
		/* the directories between the top and this one */
		for (char *p = dst + strlen(top); *p; p++) {
			if (*p != '/' || p == dst + strlen(top))
				continue;
			*p = '\0';
			mkdir(dst, 0700);
			*p = '/';
		}
		if (copy_dir(dirs[i], dst, &budget, err) < 0) {
			tree_copy_remove(top);
			free(top);
			free(anc);
			return -1;
		}
	}
	*root = top;
	*ancestor = anc;
	return 0;
}

void tree_copy_remove(const char *root)
{
	cleanup_err struct err *e = NULL;
	if (root && fd_remove_tree(root, "the private copy of the tree", &e) < 0)
		log_warn("%s", e->msg);
}

/* mounts.c — see mounts.h. */
#include "mounts/mounts.h"

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

#include "base/buf.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "mounts/tar.h"

#define MAX_DEPTH  128 /* directory levels below a mount source */
#define COPY_CHUNK (64u << 10)

struct item {
	char *rel; /* path below the source; "" for the source itself */
	enum tar_type type;
	unsigned mode;
	uint64_t size;
	int64_t mtime;
	dev_t dev;
	ino_t ino;
	char *link; /* TAR_SYMLINK */
};

struct src {
	size_t index;    /* the mount's index among all --mount flags */
	char *spec;      /* the flag's value, for messages */
	char *root_rel;  /* the source relative to root ("" for root itself) */
	int fd;          /* the source directory, or the directory holding the source file */
	char *file_name; /* a file source: its name in fd's directory; NULL for a directory */
	struct item *items;
	size_t n_items;
	uint64_t bytes;
};

struct mount_plan {
	struct src *srcs;
	size_t n;
	uint64_t bytes;
	size_t entries;
};

/* A regular file with several hard links, as seen at one path. */
struct hardlink {
	dev_t dev;
	ino_t ino;
	nlink_t nlink;
	char *path; /* relative to root */
	const char *spec;
};

struct walk {
	struct mount_plan *p;
	struct src *s;
	struct hardlink *hl;
	size_t n_hl;
	struct err **err;
};

static void add_item(struct src *s, const char *rel, enum tar_type type, const struct stat *st,
                     char *link)
{
	s->items = xrealloc(s->items, (s->n_items + 1) * sizeof(*s->items));
	s->items[s->n_items++] = (struct item){
	        .rel = xstrdup(rel),
	        .type = type,
	        .mode = st->st_mode & 0777,
	        .size = type == TAR_FILE ? (uint64_t)st->st_size : 0,
	        .mtime = st->st_mtim.tv_sec,
	        .dev = st->st_dev,
	        .ino = st->st_ino,
	        .link = link,
	};
	if (type == TAR_FILE)
		s->bytes += (uint64_t)st->st_size;
}

static char *join(const char *a, const char *b)
{
	return a[0] ? xasprintf("%s/%s", a, b) : xstrdup(b);
}

static int refuse(struct walk *w, const char *rel, const char *why)
{
	cleanup_free char *path = join(w->s->root_rel, rel);
	return err_set(w->err, ERR_USAGE, "--mount %s: %s: %s", w->s->spec, path[0] ? path : ".",
	               why);
}

static int note_hardlink(struct walk *w, const char *rel, const struct stat *st)
{
	if (st->st_nlink <= 1)
		return 0;
	w->hl = xrealloc(w->hl, (w->n_hl + 1) * sizeof(*w->hl));
	w->hl[w->n_hl++] = (struct hardlink){st->st_dev, st->st_ino, st->st_nlink,
	                                     join(w->s->root_rel, rel), w->s->spec};
	return 0;
}

/* One entry below a source directory: records it, recursing into directories. */
static int walk_dir(struct walk *w, int dfd, const char *rel, int depth);

static int walk_entry(struct walk *w, int dfd, const char *name, const char *rel, int depth)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return refuse(w, rel, strerror(errno));
	if (strlen(rel) + strlen(w->s->root_rel) + 1 > LIMIT_MOUNT_PATH)
		return refuse(w, rel, "the path is too long");
	if (++w->p->entries > LIMIT_MOUNT_ENTRIES) {
		cleanup_free char *why =
		        xasprintf("the mounts hold more than %d files, directories and symlinks",
		                  LIMIT_MOUNT_ENTRIES);
		return refuse(w, rel, why);
	}
	if (S_ISREG(st.st_mode)) {
		add_item(w->s, rel, TAR_FILE, &st, NULL);
		return note_hardlink(w, rel, &st);
	}
	if (S_ISLNK(st.st_mode)) {
		char target[LIMIT_MOUNT_PATH + 1];
		ssize_t n = readlinkat(dfd, name, target, sizeof(target));
		if (n < 0)
			return refuse(w, rel, strerror(errno));
		if ((size_t)n >= sizeof(target))
			return refuse(w, rel, "a symlink with a target that is too long");
		target[n] = '\0';
		if (!tar_link_inside(rel, target)) {
			cleanup_free char *why = xasprintf("a symlink to \"%s\", which leaves the "
			                                   "mount: only relative symlinks "
			                                   "that stay inside the mounted directory "
			                                   "are sent (krmpod never sends "
			                                   "what a symlink points to)",
			                                   target);
			return refuse(w, rel, why);
		}
		add_item(w->s, rel, TAR_SYMLINK, &st, xstrdup(target));
		return 0;
	}
	if (S_ISDIR(st.st_mode)) {
		if (depth >= MAX_DEPTH)
			return refuse(w, rel, "directories nested more than 128 deep");
		int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return refuse(w, rel, strerror(errno));
		struct stat again;
		if (fstat(fd, &again) < 0 || again.st_dev != st.st_dev ||
		    again.st_ino != st.st_ino) {
			close(fd);
			return refuse(w, rel, "changed while being read");
		}
		add_item(w->s, rel, TAR_DIR, &st, NULL);
		int rc = walk_dir(w, fd, rel, depth + 1);
		close(fd);
		return rc;
	}
	return refuse(w, rel,
	              S_ISFIFO(st.st_mode) ? "a FIFO: only files, directories and symlinks are sent"
	              : S_ISSOCK(st.st_mode)
	                      ? "a socket: only files, directories and symlinks are sent"
	                      : "a device: only files, directories and symlinks are "
	                        "sent");
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int walk_dir(struct walk *w, int dfd, const char *rel, int depth)
{
	int fd = dup(dfd);
	if (fd < 0)
		return refuse(w, rel, strerror(errno));
	DIR *d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return refuse(w, rel, strerror(errno));
	}
	char **names = NULL;
	size_t n = 0;
	int rc = 0;
	errno = 0;
	for (struct dirent *de; (de = readdir(d)) != NULL; errno = 0) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (n >= LIMIT_MOUNT_ENTRIES) {
			rc = refuse(w, rel, "a directory with too many entries");
			break;
		}
		names = xrealloc(names, (n + 1) * sizeof(*names));
		names[n++] = xstrdup(de->d_name);
	}
	if (rc == 0 && errno != 0)
		rc = refuse(w, rel, strerror(errno));
	closedir(d);
	/* a sorted archive: the same tree always gives the same bytes */
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n && rc == 0; i++) {
		cleanup_free char *child = join(rel, names[i]);
		rc = walk_entry(w, dfd, names[i], child, depth);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

/* Whether path has a ".." component. */
static bool has_dotdot(const char *path)
{
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return true;
		p += n;
		while (*p == '/')
			p++;
	}
	return false;
}

/* Opens rel (relative to root_fd, already free of symlinks per realpath) one component at a
 * time without following symlinks. For a directory source, *fd is the directory; for a file
 * source, *fd is its parent and *file_name its name. */
static int open_source(struct walk *w, int root_fd, const char *rel, struct stat *st)
{
	struct src *s = w->s;
	int fd = dup(root_fd);
	if (fd < 0)
		return refuse(w, "", strerror(errno));
	const char *p = rel;
	while (*p) {
		size_t n = strcspn(p, "/");
		cleanup_free char *comp = xstrndup(p, n);
		p += n;
		while (*p == '/')
			p++;
		if (fstatat(fd, comp, st, AT_SYMLINK_NOFOLLOW) < 0) {
			close(fd);
			return refuse(w, "", strerror(errno));
		}
		if (S_ISLNK(st->st_mode)) {
			close(fd);
			return refuse(w, "",
			              "a path component became a symlink while being checked");
		}
		if (*p == '\0' && S_ISREG(st->st_mode)) {
			s->fd = fd;
			s->file_name = xstrdup(comp);
			return 0;
		}
		if (!S_ISDIR(st->st_mode)) {
			close(fd);
			return refuse(w, "", "not a regular file or directory");
		}
		int next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if (next < 0)
			return refuse(w, "", strerror(errno));
		fd = next;
	}
	if (fstat(fd, st) < 0) {
		close(fd);
		return refuse(w, "", strerror(errno));
	}
	s->fd = fd;
	return 0;
}

static int plan_source(struct walk *w, const struct fn_mount *m, const char *root_real, int root_fd)
{
	struct src *s = w->s;
	if (has_dotdot(m->source))
		return err_set(
		        w->err, ERR_USAGE,
		        "--mount %s: the source %s has a \"..\" component: mount sources must "
		        "lie inside the kustomization directory %s",
		        m->spec, m->source, root_real);
	char real[PATH_MAX];
	if (realpath(m->source, real) == NULL)
		return err_set_sys(w->err, ERR_USAGE, errno, "--mount %s: the source %s", m->spec,
		                   m->source);
	size_t rn = strlen(root_real);
	bool inside = strcmp(root_real, "/") == 0 ||
	              (strncmp(real, root_real, rn) == 0 && (real[rn] == '\0' || real[rn] == '/'));
	if (!inside)
		return err_set(
		        w->err, ERR_USAGE,
		        "--mount %s: the source %s resolves to %s, outside the kustomization "
		        "directory %s: krmpod sends only files under the directory kustomize "
		        "runs the function from (symlinks may not lead out of it)",
		        m->spec, m->source, real, root_real);
	const char *rel = strcmp(root_real, "/") == 0 ? real + 1 : real + rn;
	while (*rel == '/')
		rel++;
	s->root_rel = xstrdup(rel);
	struct stat st;
	if (open_source(w, root_fd, rel, &st) < 0)
		return -1;
	w->p->entries++;
	if (s->file_name) {
		add_item(s, "", TAR_FILE, &st, NULL);
		return note_hardlink(w, "", &st);
	}
	add_item(s, "", TAR_DIR, &st, NULL);
	return walk_dir(w, s->fd, "", 0);
}

static int cmp_hardlinks(const void *a, const void *b)
{
	const struct hardlink *x = a, *y = b;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* Every multiply-linked file must have all its links among the paths being sent. */
static int check_hardlinks(struct walk *w)
{
	if (w->n_hl == 0)
		return 0;
	qsort(w->hl, w->n_hl, sizeof(*w->hl), cmp_hardlinks);
	for (size_t i = 0; i < w->n_hl;) {
		size_t j = i, distinct = 0;
		for (; j < w->n_hl && w->hl[j].dev == w->hl[i].dev && w->hl[j].ino == w->hl[i].ino;
		     j++)
			if (j == i || strcmp(w->hl[j].path, w->hl[j - 1].path) != 0)
				distinct++;
		if (distinct < (size_t)w->hl[i].nlink)
			return err_set(
			        w->err, ERR_USAGE,
			        "--mount %s: %s has %lu hard links and only %zu of them are in "
			        "the mounts: krmpod cannot tell where the others are (perhaps "
			        "outside the kustomization directory), so it does not send it; "
			        "replace the hard link with a copy",
			        w->hl[i].spec, w->hl[i].path, (unsigned long)w->hl[i].nlink,
			        distinct);
		i = j;
	}
	return 0;
}

static int check_size(const struct mount_plan *p, int64_t max_bytes, struct err **err)
{
	if (p->bytes <= (uint64_t)max_bytes)
		return 0;
	struct buf b;
	buf_init(&b, 0);
	for (size_t i = 0; i < p->n; i++)
		buf_printf(&b, "%s--mount %s: %llu bytes", i ? "; " : "", p->srcs[i].spec,
		           (unsigned long long)p->srcs[i].bytes);
	err_set(err, ERR_USAGE,
	        "the mounts hold %llu bytes of files, more than KRMPOD_MOUNT_MAX_BYTES (%lld "
	        "bytes) allows: %s",
	        (unsigned long long)p->bytes, (long long)max_bytes, b.data);
	buf_free(&b);
	return -1;
}

int mount_plan_build(const struct fn_request *req, const char *root, int64_t max_bytes,
                     struct mount_plan **out, struct err **err)
{
	*out = NULL;
	size_t binds = 0;
	for (size_t i = 0; i < req->n_mounts; i++)
		binds += req->mounts[i].type == FN_MOUNT_BIND;
	if (binds == 0)
		return 0;
	char root_real[PATH_MAX];
	if (realpath(root, root_real) == NULL)
		return err_set_sys(err, ERR_IO, errno, "mounts: the kustomization directory %s",
		                   root);
	cleanup_close int root_fd = open(root_real, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0)
		return err_set_sys(err, ERR_IO, errno, "mounts: open %s", root_real);

	struct mount_plan *p = xcalloc(1, sizeof(*p));
	p->srcs = xcalloc(binds, sizeof(*p->srcs));
	struct walk w = {.p = p, .err = err};
	int rc = 0;
	for (size_t i = 0; i < req->n_mounts && rc == 0; i++) {
		const struct fn_mount *m = &req->mounts[i];
		if (m->type != FN_MOUNT_BIND)
			continue;
		struct src *s = &p->srcs[p->n++];
		s->index = i;
		s->spec = xstrdup(m->spec);
		s->fd = -1;
		w.s = s;
		rc = plan_source(&w, m, root_real, root_fd);
		p->bytes += s->bytes;
	}
	if (rc == 0)
		rc = check_hardlinks(&w);
	if (rc == 0)
		rc = check_size(p, max_bytes, err);
	for (size_t i = 0; i < w.n_hl; i++)
		free(w.hl[i].path);
	free(w.hl);
	if (rc < 0) {
		mount_plan_free(p);
		return -1;
	}
	*out = p;
	return 0;
}

void mount_plan_free(struct mount_plan *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->n; i++) {
		struct src *s = &p->srcs[i];
		for (size_t k = 0; k < s->n_items; k++) {
			free(s->items[k].rel);
			free(s->items[k].link);
		}
		free(s->items);
		free(s->spec);
		free(s->root_rel);
		free(s->file_name);
		if (s->fd >= 0)
			close(s->fd);
	}
	free(p->srcs);
	free(p);
}

uint64_t mount_plan_bytes(const struct mount_plan *p)
{
	return p ? p->bytes : 0;
}

size_t mount_plan_entries(const struct mount_plan *p)
{
	return p ? p->entries : 0;
}

/* --- Sending --------------------------------------------------------------------------- */

struct sender {
	int fd;
	uint64_t written;
	struct buf hdr;
	char *chunk;
};

static int send_bytes(struct sender *snd, const void *data, size_t n, struct err **err)
{
	const char *p = data;
	while (n > 0) {
		ssize_t w = write(snd->fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EPIPE) /* ERR_NET: the stream ended, see fn_mounts.c */
			return err_set(err, ERR_NET, "send the mounts: the receiving side closed");
		if (w < 0)
			return err_set_sys(err, ERR_IO, errno, "send the mounts");
		p += w;
		n -= (size_t)w;
		snd->written += (uint64_t)w;
	}
	return 0;
}

static int send_header(struct sender *snd, const struct tar_entry *e, struct err **err)
{
	buf_reset(&snd->hdr);
	if (tar_header(e, &snd->hdr, err) < 0)
		return -1;
	return send_bytes(snd, snd->hdr.data, snd->hdr.len, err);
}

/* Opens an item's file again, from the source's fd, without following symlinks. */
static int open_item(const struct src *s, const struct item *it, struct err **err)
{
	int fd;
	const char *p = s->file_name ? s->file_name : it->rel;
	fd = dup(s->fd);
	while (fd >= 0) {
		size_t n = strcspn(p, "/");
		cleanup_free char *comp = xstrndup(p, n);
		bool last = p[n] == '\0';
		int flags = last ? O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC
		                 : O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
		int next = openat(fd, comp, flags);
		close(fd);
		fd = next;
		if (last)
			break;
		p += n + 1;
	}
	if (fd < 0)
		err_set_sys(err, ERR_IO, errno, "--mount %s: %s/%s changed while being sent",
		            s->spec, s->root_rel, it->rel);
	return fd;
}

static int send_file(struct sender *snd, const struct src *s, const struct item *it,
                     const struct tar_entry *e, struct err **err)
{
	cleanup_close int fd = open_item(s, it, err);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_dev != it->dev ||
	    st.st_ino != it->ino || (uint64_t)st.st_size != it->size)
		return err_set(err, ERR_IO,
		               "--mount %s: %s%s%s changed while being sent (it is not the file "
		               "that was checked and measured)",
		               s->spec, s->root_rel, it->rel[0] ? "/" : "", it->rel);
	if (send_header(snd, e, err) < 0)
		return -1;
	uint64_t left = it->size;
	while (left > 0) {
		size_t want = left < COPY_CHUNK ? (size_t)left : COPY_CHUNK;
		ssize_t n = read(fd, snd->chunk, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return err_set(err, ERR_IO, "--mount %s: %s%s%s: %s", s->spec, s->root_rel,
			               it->rel[0] ? "/" : "", it->rel,
			               n < 0 ? strerror(errno) : "it shrank while being sent");
		if (send_bytes(snd, snd->chunk, (size_t)n, err) < 0)
			return -1;
		left -= (uint64_t)n;
	}
	static const char zeros[TAR_BLOCK];
	return send_bytes(snd, zeros, tar_padding(it->size), err);
}

static int send_all(struct sender *snd, const struct mount_plan *p, struct err **err)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct src *s = &p->srcs[i];
		for (size_t k = 0; k < s->n_items; k++) {
			const struct item *it = &s->items[k];
			cleanup_free char *path =
			        it->rel[0]
			                ? xasprintf("%zu/" MOUNTS_CONTENT "/%s", s->index, it->rel)
			                : xasprintf("%zu/" MOUNTS_CONTENT, s->index);
			struct tar_entry e = {.type = it->type,
			                      .path = path,
			                      .link = it->link,
			                      .mode = it->mode,
			                      .size = it->size,
			                      .mtime = it->mtime};
			int rc = it->type == TAR_FILE ? send_file(snd, s, it, &e, err)
			                              : send_header(snd, &e, err);
			if (rc < 0)
				return -1;
		}
	}
	buf_reset(&snd->hdr);
	tar_end(&snd->hdr);
	return send_bytes(snd, snd->hdr.data, snd->hdr.len, err);
}

int mount_plan_write(const struct mount_plan *p, int fd, uint64_t *written, struct err **err)
{
	struct sender snd = {.fd = fd};
	buf_init(&snd.hdr, 0);
	snd.chunk = xmalloc(COPY_CHUNK);
	int rc = send_all(&snd, p, err);
	if (written)
		*written = snd.written;
	buf_free(&snd.hdr);
	free(snd.chunk);
	return rc;
}

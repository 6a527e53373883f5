/* fuzz_tar_unpack.c — the tar reader (src/mounts/tar.h) and `krmpod unpack`
 * (src/mounts/unpack.h), which runs inside the function pod on whatever arrives on its
 * stdin.
 *
 * The input is the archive. It is read twice:
 *   - by tar_next()/tar_read_data() from memory: every entry the reader returns is written
 *     again with tar_header() (when the writer takes it) and must read back the same;
 *   - by unpack_tar() into DIR/a/b/target, where DIR is a fresh private directory and
 *     target holds the mount directories 0, 1 and 2 (the pod's emptyDir volumes).
 *
 * Invariant: nothing is ever created outside target, whatever the archive says ("..",
 * absolute names, symlinks, hard links, devices, huge sizes): after each input DIR holds
 * only a/b/target and what lies under it; under target there are only directories, regular
 * files with one link, and symlinks; the mount directories are still directories; and every
 * symlink, resolved as the kernel would (following the symlinks on its way, a missing part
 * taken as written), stays inside its own mount directory, as unpack.h promises. The total
 * file bytes stay within the cap. DIR is emptied after each input. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/buf.h"
#include "fuzz_util.h"
#include "mounts/tar.h"
#include "mounts/unpack.h"

#define MAX_BYTES (1 << 20)
#define MOUNTS    3

static char root[PATH_MAX];   /* DIR, resolved */
static char target[PATH_MAX]; /* DIR/a/b/target */

/* --- The reader from memory, and the writer's round trip ---------------------------------- */

struct mem {
	const uint8_t *p;
	size_t len, off;
};

static ssize_t mem_read(void *ud, void *buf, size_t n)
{
	struct mem *m = ud;
	size_t k = m->len - m->off < n ? m->len - m->off : n;
	memcpy(buf, m->p + m->off, k);
	m->off += k;
	return (ssize_t)k;
}

/* Writes e with tar_header() and reads it back: the same entry must come out. */
static void round_trip(const struct tar_entry *e)
{
	struct buf b;
	buf_init(&b, 0);
	struct tar_entry w = *e;
	if (tar_header(&w, &b, NULL) < 0) {
		buf_free(&b);
		return;
	}
	size_t pad = tar_padding(w.size);
	if (w.size > (1u << 20)) {
		buf_free(&b);
		return; /* not worth writing its data */
	}
	char *zeros = calloc(1, w.size + pad + 1);
	if (zeros == NULL)
		abort();
	buf_append(&b, zeros, w.size + pad, "data", NULL);
	free(zeros);
	tar_end(&b);
	struct mem m = {(const uint8_t *)b.data, b.len, 0};
	struct tar_reader r;
	tar_reader_init(&r, mem_read, &m);
	/* what the writer keeps of the time: 0 to 11 octal digits */
	int64_t mtime = e->mtime < 0 ? 0 : e->mtime > 077777777777LL ? 077777777777LL : e->mtime;
	struct tar_entry back;
	struct err *e2 = NULL;
	int rc = tar_next(&r, &back, &e2);
	if (rc != 1)
		fuzz_fail("tar: the writer's header for \"%s\" does not read back: %s", e->path,
		          e2 ? e2->msg : "end marker");
	if (back.type != e->type || strcmp(back.path, e->path) != 0 ||
	    (e->type == TAR_SYMLINK && strcmp(back.link, e->link) != 0) ||
	    (back.mode & 0777) != (e->mode & 0777) || back.size != e->size || back.mtime != mtime)
		fuzz_fail(
		        "tar: entry \"%s\" (type %c, mode %o, size %llu, mtime %lld) reads back as "
		        "\"%s\" (type %c, mode %o, size %llu, mtime %lld)",
		        e->path, e->type, e->mode, (unsigned long long)e->size, (long long)e->mtime,
		        back.path, back.type, back.mode, (unsigned long long)back.size,
		        (long long)back.mtime);
	tar_reader_free(&r);
	buf_free(&b);
}

static void read_archive(const uint8_t *data, size_t size)
{
	struct mem m = {data, size, 0};
	struct tar_reader r;
	tar_reader_init(&r, mem_read, &m);
	char chunk[700];
	for (int entries = 0; entries < 1000; entries++) {
		struct tar_entry e;
		struct err *err = NULL;
		int rc = tar_next(&r, &e, &err);
		fuzz_check_err(rc, err, "tar_next");
		err_free(err);
		if (rc <= 0)
			break;
		if (e.path == NULL ||
		    (e.type != TAR_FILE && e.type != TAR_DIR && e.type != TAR_SYMLINK) ||
		    (e.type == TAR_SYMLINK) != (e.link != NULL) || (e.type != TAR_FILE && e.size))
			fuzz_fail("tar_next gave a malformed entry");
		if (r.offset > size)
			fuzz_fail("the reader consumed %llu of %zu bytes",
			          (unsigned long long)r.offset, size);
		round_trip(&e);
		uint64_t got = 0;
		for (;;) {
			err = NULL;
			ssize_t n = tar_read_data(&r, chunk, sizeof(chunk), &err);
			fuzz_check_err(n < 0 ? -1 : 0, err, "tar_read_data");
			err_free(err);
			if (n <= 0)
				break;
			got += (uint64_t)n;
		}
		if (got > e.size)
			fuzz_fail("%llu data bytes for a file of %llu", (unsigned long long)got,
			          (unsigned long long)e.size);
	}
	tar_reader_free(&r);
}

/* --- Where unpack may write ---------------------------------------------------------------- */

/* Resolves an absolute path as the kernel would: every symlink on the way is followed (at
 * most 40), a part that does not exist is taken as written. false on a symlink loop. */
static bool resolve(const char *path, char *out)
{
	char rest[3 * PATH_MAX];
	snprintf(rest, sizeof(rest), "%s", path);
	char cur[PATH_MAX] = "";
	int hops = 0;
	char *p = rest;
	while (*p) {
		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		size_t n = strcspn(p, "/");
		char comp[PATH_MAX];
		snprintf(comp, sizeof(comp), "%.*s", (int)n, p);
		p += n;
		if (strcmp(comp, ".") == 0)
			continue;
		if (strcmp(comp, "..") == 0) {
			char *slash = strrchr(cur, '/');
			if (slash)
				*slash = '\0';
			continue;
		}
		char cand[2 * PATH_MAX];
		snprintf(cand, sizeof(cand), "%s/%s", cur, comp);
		struct stat st;
		if (lstat(cand, &st) == 0 && S_ISLNK(st.st_mode)) {
			if (++hops > 40)
				return false;
			char link[PATH_MAX];
			ssize_t k = readlink(cand, link, sizeof(link) - 1);
			if (k < 0)
				abort();
			link[k] = '\0';
			char next[3 * PATH_MAX];
			snprintf(next, sizeof(next), "%s/%s", link, p);
			snprintf(rest, sizeof(rest), "%s", next);
			p = rest;
			if (link[0] == '/')
				cur[0] = '\0';
			continue;
		}
		if (strlen(cand) >= sizeof(cur))
			return false;
		memcpy(cur, cand, strlen(cand) + 1);
	}
	snprintf(out, PATH_MAX, "%s", cur[0] ? cur : "/");
	return true;
}

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Checks everything under dir (a path below mount directory `mount`). */
static void check_tree(const char *dir, const char *mount)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		fuzz_fail("%s cannot be read", dir);
	for (struct dirent *de; (de = readdir(d)) != NULL;) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		struct stat st;
		if (lstat(path, &st) < 0)
			fuzz_fail("lstat %s", path);
		if (S_ISDIR(st.st_mode)) {
			check_tree(path, mount);
		} else if (S_ISLNK(st.st_mode)) {
			char to[PATH_MAX];
			if (resolve(path, to) && !under(to, mount))
				fuzz_fail("the symlink %s resolves to %s, outside its mount %s",
				          path, to, mount);
		} else if (S_ISREG(st.st_mode)) {
			if (st.st_nlink != 1)
				fuzz_fail("%s has %lu links", path, (unsigned long)st.st_nlink);
		} else {
			fuzz_fail("%s is neither a file, a directory nor a symlink (mode %o)", path,
			          st.st_mode);
		}
	}
	closedir(d);
}

/* DIR must hold a/b/target and nothing else, target the mount directories. */
static void check_root(void)
{
	static const char *const chain[] = {"a", "b", "target"};
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", root);
	for (size_t i = 0; i < 3; i++) {
		DIR *d = opendir(dir);
		if (d == NULL)
			fuzz_fail("%s cannot be read", dir);
		for (struct dirent *de; (de = readdir(d)) != NULL;)
			if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
			    strcmp(de->d_name, chain[i]) != 0)
				fuzz_fail("%s/%s was created outside the target directory", dir,
				          de->d_name);
		closedir(d);
		size_t n = strlen(dir);
		snprintf(dir + n, sizeof(dir) - n, "/%s", chain[i]);
		struct stat st;
		if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
			fuzz_fail("%s is no longer a directory", dir);
	}
	for (int i = 0; i < MOUNTS; i++) {
		char mount[PATH_MAX];
		snprintf(mount, sizeof(mount), "%s/%d", target, i);
		struct stat st;
		if (lstat(mount, &st) < 0 || !S_ISDIR(st.st_mode))
			fuzz_fail("the mount directory %s is gone or replaced", mount);
		check_tree(mount, mount);
	}
	DIR *d = opendir(target);
	for (struct dirent *de; d && (de = readdir(d)) != NULL;) {
		char *end = NULL;
		long i = strtol(de->d_name, &end, 10);
		if (de->d_name[0] != '.' && (*end || i < 0 || i >= MOUNTS))
			fuzz_fail("%s/%s was created beside the mount directories", target,
			          de->d_name);
	}
	if (d)
		closedir(d);
}

static void set_up(void)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/a", root);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/a/b", root);
	mkdir(path, 0700);
	mkdir(target, 0700);
	for (int i = 0; i < MOUNTS; i++) {
		snprintf(path, sizeof(path), "%s/%d", target, i);
		if (mkdir(path, 0700) < 0)
			abort();
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	log_set_level(LOG_ERROR);
	if (realpath(fuzz_scratch(), root) == NULL)
		abort();
	snprintf(target, sizeof(target), "%s/a/b/target", root);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	read_archive(data, size);

	set_up();
	int fd = memfd_create("archive", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	for (size_t off = 0; off < size;) {
		ssize_t w = write(fd, data + off, size - off);
		if (w <= 0)
			abort();
		off += (size_t)w;
	}
	lseek(fd, 0, SEEK_SET);
	struct unpack_stats st = {0};
	struct err *e = NULL;
	int rc = unpack_tar(fd, target, MAX_BYTES, &st, &e);
	close(fd);
	fuzz_check_err(rc, e, "unpack_tar");
	err_free(e);
	if (st.bytes > MAX_BYTES)
		fuzz_fail("%llu file bytes unpacked, over the cap of %d",
		          (unsigned long long)st.bytes, MAX_BYTES);
	check_root();
	fuzz_empty_dir(root);
	return 0;
}

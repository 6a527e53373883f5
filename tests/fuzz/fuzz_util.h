/* fuzz_util.h — what the fuzz targets share (tests/fuzz/README.md): a private scratch
 * directory for targets that read files, emptied after each input, inputs split into parts,
 * and the checks that stop a run.
 *
 * A broken invariant calls fuzz_fail(), which prints what was wrong and aborts: libFuzzer
 * records the input as a crash. Set-up failures (no temporary directory) abort too. */
#ifndef KRMPOD_FUZZ_UTIL_H
#define KRMPOD_FUZZ_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/fdio.h"
#include "base/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A target whose only set-up is krmpod's log at error level (the fuzzer's output stays
 * readable): FUZZ_QUIET_LOG defines its LLVMFuzzerInitialize. */
#define FUZZ_QUIET_LOG                                    \
	int LLVMFuzzerInitialize(int *argc, char ***argv) \
	{                                                 \
		(void)argc, (void)argv;                   \
		log_set_level(LOG_ERROR);                 \
		return 0;                                 \
	}

static void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fuzz_fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "fuzz: invariant broken: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	abort();
}

/* A failing call must say why: -1 without an error is a bug. */
static inline void fuzz_check_err(int rc, const struct err *e, const char *call)
{
	if (rc < 0 && e == NULL)
		fuzz_fail("%s failed without setting its error", call);
	if (rc >= 0 && e != NULL)
		fuzz_fail("%s succeeded but set an error: %s", call, e->msg);
	if (e && (memchr(e->msg, '\0', sizeof(e->msg)) == NULL || e->msg[0] == '\0'))
		fuzz_fail("%s: the error message is empty or not terminated", call);
}

/* A NUL-terminated copy of the input (parsers that take C strings). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (s == NULL)
		abort();
	if (size)
		memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* Removes everything inside the directory open at fd (not fd itself), following no
 * symlink; directories an input made unreadable are made readable first. */
static inline void fuzz_empty_fd(int fd)
{
	int dfd = dup(fd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (d == NULL)
		abort();
	for (struct dirent *de; (de = readdir(d)) != NULL;) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		struct stat st;
		if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			fchmodat(fd, de->d_name, 0700, 0);
			int sub = openat(fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
			if (sub >= 0) {
				fuzz_empty_fd(sub);
				close(sub);
			}
			unlinkat(fd, de->d_name, AT_REMOVEDIR);
		} else {
			unlinkat(fd, de->d_name, 0);
		}
	}
	closedir(d);
}

static inline void fuzz_empty_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	if (fd < 0)
		abort();
	fuzz_empty_fd(fd);
	close(fd);
}

static char *fuzz_scratch_path;

static inline void fuzz_scratch_remove(void)
{
	if (fuzz_scratch_path) {
		fuzz_empty_dir(fuzz_scratch_path);
		rmdir(fuzz_scratch_path);
	}
}

/* The process's private scratch directory (TMPDIR/krmpod-fuzz-XXXXXX, mode 0700), made on
 * the first call and removed at exit. */
static inline const char *fuzz_scratch(void)
{
	if (fuzz_scratch_path == NULL) {
		struct err *e = NULL;
		if (tmp_dir_make("krmpod-fuzz", "fuzzing", &fuzz_scratch_path, &e) < 0) {
			fprintf(stderr, "%s\n", e->msg);
			abort();
		}
		atexit(fuzz_scratch_remove);
	}
	return fuzz_scratch_path;
}

/* Writes a file dir/name (creating the directories of name on the way). Names are made
 * safe first: only [A-Za-z0-9._-] in '/'-separated components, no empty, "." or ".."
 * component, at most 200 bytes; false when nothing is left of the name or it cannot be
 * written (a directory of that name exists). */
static inline bool fuzz_write_file(const char *dir, const char *name, size_t name_len,
                                   const void *data, size_t len)
{
	char rel[256];
	size_t n = 0;
	for (size_t i = 0; i < name_len;) {
		char comp[256];
		size_t c = 0;
		for (; i < name_len && name[i] != '/'; i++) {
			char ch = name[i];
			if (c < 64 &&
			    ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			     (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
				comp[c++] = ch;
		}
		i++; /* the '/' */
		if (c == 0 || (c == 1 && comp[0] == '.') ||
		    (c == 2 && comp[0] == '.' && comp[1] == '.') || n + c + 1 > 200)
			continue;
		if (n)
			rel[n++] = '/';
		memcpy(rel + n, comp, c);
		n += c;
	}
	rel[n] = '\0';
	if (n == 0)
		return false;
	char path[4096];
	for (size_t i = 0; i < n; i++) {
		if (rel[i] != '/')
			continue;
		snprintf(path, sizeof(path), "%s/%.*s", dir, (int)i, rel);
		mkdir(path, 0700);
	}
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return false;
	for (size_t off = 0; off < len;) {
		ssize_t w = write(fd, (const char *)data + off, len - off);
		if (w <= 0)
			abort();
		off += (size_t)w;
	}
	close(fd);
	return true;
}

/* Splits the input into files under dir: the text before the first marker line goes to
 * `first`; each line "#@ NAME" starts the file NAME (a YAML comment, so seeds stay
 * readable). A later file of the same name replaces an earlier one. */
static inline void fuzz_write_tree(const char *dir, const char *first, const uint8_t *data,
                                   size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	const char *name = first, *body = p;
	size_t name_len = strlen(first);
	for (const char *line = p; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *next = nl ? nl + 1 : end;
		if (end - line >= 3 && memcmp(line, "#@ ", 3) == 0) {
			fuzz_write_file(dir, name, name_len, body, (size_t)(line - body));
			name = line + 3;
			name_len = (size_t)((nl ? nl : end) - name);
			body = next;
		}
		line = next;
	}
	fuzz_write_file(dir, name, name_len, body, (size_t)(end - body));
}

/* Calls fn(part, len, ud) for each part of the input between `sep` bytes. */
static inline void fuzz_split(const uint8_t *data, size_t size, char sep,
                              void (*fn)(const char *part, size_t len, void *ud), void *ud)
{
	const char *p = (const char *)data, *end = p + size;
	while (p <= end) {
		const char *s = memchr(p, sep, (size_t)(end - p));
		const char *e = s ? s : end;
		fn(p, (size_t)(e - p), ud);
		if (s == NULL)
			break;
		p = s + 1;
	}
}

#endif

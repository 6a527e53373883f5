/* Unit tests: the ustar writer and reader of mounts (tar.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/size_limits.h"
#include "check.h"
#include "mounts/tar.h"

/* A reader over memory that hands out at most `chunk` bytes per call. */
struct mem {
	const char *p;
	size_t len, off, chunk;
	int reads;
};

static ssize_t mem_read(void *ud, void *buf, size_t n)
{
	struct mem *m = ud;
	m->reads++;
	size_t k = m->len - m->off;
	if (k > n)
		k = n;
	if (m->chunk && k > m->chunk)
		k = m->chunk;
	memcpy(buf, m->p + m->off, k);
	m->off += k;
	return (ssize_t)k;
}

static void add(struct buf *b, enum tar_type type, const char *path, const char *link,
                unsigned mode, const char *data, size_t size)
{
	struct tar_entry e = {type, path, link, mode, size, 1700000000};
	struct err *e_ = NULL;
	CHECK_INT(tar_header(&e, b, &e_), 0);
	err_free(e_);
	if (size) {
		buf_append(b, data, size, "test", NULL);
		static const char zeros[TAR_BLOCK];
		buf_append(b, zeros, tar_padding(size), "test", NULL);
	}
}

static char *repeat(char c, size_t n)
{
	char *s = malloc(n + 1);
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

TEST(round_trip_with_long_paths_and_links)
{
	struct buf b;
	buf_init(&b, 0);
	char *data = repeat('x', 1000);
	/* 150 bytes: needs ustar's prefix field */
	char *mid = repeat('m', 60);
	char path150[200];
	snprintf(path150, sizeof(path150), "0/content/%s/%s/file", mid, mid);
	/* 300 bytes in one component run: needs a PAX path */
	char *longname = repeat('n', 120);
	char path300[400];
	snprintf(path300, sizeof(path300), "0/content/%s/%s/f", longname, longname);
	/* a 150-byte link target: needs a PAX linkpath */
	char link150[200];
	snprintf(link150, sizeof(link150), "%s/%s/x", mid, mid);

	add(&b, TAR_DIR, "0/content", NULL, 0755, NULL, 0);
	add(&b, TAR_FILE, "0/content/a.txt", NULL, 0640, data, 1000);
	add(&b, TAR_FILE, "0/content/empty", NULL, 0600, NULL, 0);
	add(&b, TAR_SYMLINK, "0/content/l", "a.txt", 0777, NULL, 0);
	add(&b, TAR_FILE, path150, NULL, 0644, "hi", 2);
	add(&b, TAR_FILE, path300, NULL, 0644, "yo", 2);
	add(&b, TAR_SYMLINK, "0/content/far", link150, 0777, NULL, 0);
	tar_end(&b);
	CHECK_INT(b.len % TAR_BLOCK, 0);
	size_t archive_len = b.len;
	buf_append(&b, "TRAILING", 8, "test", NULL); /* never read */

	struct mem m = {b.data, b.len, 0, 7, 0};
	struct tar_reader r;
	tar_reader_init(&r, mem_read, &m);
	struct tar_entry e;
	struct err *err = NULL;
	char got[1000];

	CHECK_INT(tar_next(&r, &e, &err), 1);
	CHECK_INT(e.type, TAR_DIR);
	CHECK_STR(e.path, "0/content");
	CHECK_INT(e.mode, 0755);
	CHECK_INT(e.mtime, 1700000000);

	CHECK_INT(tar_next(&r, &e, &err), 1);
	CHECK_INT(e.type, TAR_FILE);
	CHECK_STR(e.path, "0/content/a.txt");
	CHECK_INT(e.mode, 0640);
	CHECK_INT(e.size, 1000);
	size_t n = 0;
	for (ssize_t k; (k = tar_read_data(&r, got + n, sizeof(got) - n, &err)) > 0;)
		n += (size_t)k;
	CHECK_INT(n, 1000);
	CHECK(memcmp(got, data, 1000) == 0);

	CHECK_INT(tar_next(&r, &e, &err), 1);
	CHECK_STR(e.path, "0/content/empty");
	CHECK_INT(e.size, 0);

	CHECK_INT(tar_next(&r, &e, &err), 1);
	CHECK_INT(e.type, TAR_SYMLINK);
	CHECK_STR(e.link, "a.txt");

	CHECK_INT(tar_next(&r, &e, &err), 1); /* data left unread: skipped by the next call */
	CHECK_STR(e.path, path150);
	CHECK_INT(tar_next(&r, &e, &err), 1);
	CHECK_STR(e.path, path300);
	CHECK_INT(tar_read_data(&r, got, 1, &err), 1);
	CHECK_INT(tar_next(&r, &e, &err), 1);
	CHECK_STR(e.path, "0/content/far");
	CHECK_STR(e.link, link150);

	CHECK_INT(tar_next(&r, &e, &err), 0);
	CHECK(err == NULL);
	/* the reader stopped right after the end marker */
	CHECK_INT(m.off, archive_len);
	CHECK_INT(r.offset, archive_len);
	tar_reader_free(&r);
	err_free(err);
	buf_free(&b);
	free(data);
	free(mid);
	free(longname);
}

/* Reads every entry; returns the last tar_next result and leaves the error in *err. */
static int read_all(const char *p, size_t len, struct err **err)
{
	struct mem m = {p, len, 0, 0, 0};
	struct tar_reader r;
	tar_reader_init(&r, mem_read, &m);
	struct tar_entry e;
	int rc;
	while ((rc = tar_next(&r, &e, err)) == 1)
		;
	tar_reader_free(&r);
	return rc;
}

static void expect_bad(const char *p, size_t len, const char *needle)
{
	struct err *err = NULL;
	CHECK_INT(read_all(p, len, &err), -1);
	CHECK(err != NULL && err->code == ERR_IO);
	if (err)
		CHECK_CONTAINS(err->msg, needle);
	err_free(err);
}

static void fix_checksum(char *h)
{
	unsigned sum = 0;
	for (int i = 0; i < TAR_BLOCK; i++)
		sum += (i >= 148 && i < 156) ? ' ' : (unsigned char)h[i];
	snprintf(h + 148, 8, "%06o", sum);
}

TEST(bad_archives)
{
	struct buf b;
	buf_init(&b, 0);
	add(&b, TAR_FILE, "0/content/a", NULL, 0644, "abc", 3);
	size_t one = b.len;
	tar_end(&b);

	/* cut: inside the data, between entries, inside the end marker */
	expect_bad(b.data, TAR_BLOCK + 1, "the input ended");
	expect_bad(b.data, one, "the input ended");
	expect_bad(b.data, one + TAR_BLOCK, "the input ended");
	expect_bad(b.data, 0, "the input ended");

	/* a damaged header */
	char *copy = malloc(b.len);
	memcpy(copy, b.data, b.len);
	copy[5] ^= 1;
	expect_bad(copy, b.len, "bad header checksum");

	/* a lone zero block followed by a header */
	struct buf z;
	buf_init(&z, 0);
	static const char zeros[TAR_BLOCK];
	buf_append(&z, zeros, TAR_BLOCK, "test", NULL);
	buf_append(&z, b.data, b.len, "test", NULL);
	expect_bad(z.data, z.len, "a zero block followed by data");

	/* an entry type we never write: a character device ('3'), with a valid checksum */
	memcpy(copy, b.data, b.len);
	copy[156] = '3';
	fix_checksum(copy);
	expect_bad(copy, b.len, "unsupported entry type '3'");

	/* GNU's long name entries are not ours either */
	memcpy(copy, b.data, b.len);
	copy[156] = 'L';
	fix_checksum(copy);
	expect_bad(copy, b.len, "unsupported entry type 'L'");

	/* not ustar */
	memcpy(copy, b.data, b.len);
	memcpy(copy + 257, "ustar ", 6);
	fix_checksum(copy);
	expect_bad(copy, b.len, "not a ustar header");
	free(copy);
	buf_free(&z);
	buf_free(&b);
}

TEST(pax_records_other_than_path_are_refused)
{
	/* A PAX header whose record is not path or linkpath. */
	struct buf b;
	buf_init(&b, 0);
	char long_path[300];
	memset(long_path, 'a', 299);
	long_path[299] = '\0';
	long_path[0] = '0', long_path[1] = '/';
	add(&b, TAR_FILE, long_path, NULL, 0644, NULL, 0);
	/* the PAX data is in the second block: "NNN path=...\n"; turn "path" into "ptah" */
	char *p = memmem(b.data + TAR_BLOCK, TAR_BLOCK, " path=", 6);
	CHECK(p != NULL);
	if (p) {
		memcpy(p + 1, "ptah", 4);
		tar_end(&b);
		expect_bad(b.data, b.len, "unsupported PAX record \"ptah\"");
	}
	buf_free(&b);
}

TEST(writer_limits)
{
	struct buf b;
	buf_init(&b, 0);
	struct err *err = NULL;
	struct tar_entry e = {TAR_FILE, "", NULL, 0644, 0, 0};
	CHECK_INT(tar_header(&e, &b, &err), -1);
	char *huge = repeat('p', LIMIT_MOUNT_PATH + 1);
	e.path = huge;
	CHECK_INT(tar_header(&e, &b, &err), -1);
	e.path = "0/big";
	e.size = 1ULL << 33;
	CHECK_INT(tar_header(&e, &b, &err), -1);
	CHECK(err && strstr(err->msg, "larger than 8 GiB"));
	err_free(err);
	free(huge);
	buf_free(&b);
}

/* A time past the 11 octal digits of ustar is written as the largest they hold, not cut to
 * its last 11 digits (tests/fuzz/crashes/tar_unpack/mtime-past-11-digits). */
TEST(writer_clamps_times)
{
	static const int64_t in[] = {-5, 0, 1700000000, 077777777777LL, 0100000000000LL, INT64_MAX};
	static const int64_t out[] = {
	        0, 0, 1700000000, 077777777777LL, 077777777777LL, 077777777777LL};
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		struct buf b;
		buf_init(&b, 0);
		struct tar_entry e = {TAR_DIR, "0/d", NULL, 0755, 0, in[i]};
		CHECK_INT(tar_header(&e, &b, NULL), 0);
		tar_end(&b);
		struct mem m = {b.data, b.len, 0, 0, 0};
		struct tar_reader r;
		tar_reader_init(&r, mem_read, &m);
		struct tar_entry back;
		CHECK_INT(tar_next(&r, &back, NULL), 1);
		CHECK_INT(back.mtime, out[i]);
		tar_reader_free(&r);
		buf_free(&b);
	}
}

TEST(padding)
{
	CHECK_INT(tar_padding(0), 0);
	CHECK_INT(tar_padding(1), 511);
	CHECK_INT(tar_padding(512), 0);
	CHECK_INT(tar_padding(513), 511);
}

TEST(link_inside)
{
	CHECK(tar_link_inside("l", "a"));
	CHECK(tar_link_inside("a/l", "../b"));
	CHECK(tar_link_inside("a/b/l", "../../c/./d"));
	CHECK(tar_link_inside("a/l", ".."));
	CHECK(!tar_link_inside("l", ".."));
	CHECK(!tar_link_inside("l", "../x"));
	CHECK(!tar_link_inside("a/l", "../../x"));
	CHECK(!tar_link_inside("a/l", "b/../../../x"));
	CHECK(!tar_link_inside("l", "/etc/passwd"));
	CHECK(!tar_link_inside("l", ""));
	CHECK(!tar_link_inside("", "a"));
	CHECK(tar_link_inside("a//l", "..//b"));
	CHECK(tar_link_inside("a/b/l", "./../c"));
	/* A ".." after a name climbs from wherever the name leads, if it is a symlink: with
	 * d1/l -> "..", x -> "d1/l/../.." would leave the root (tests/fuzz/crashes/tar_unpack). */
	CHECK(tar_link_inside("d1/l", ".."));
	CHECK(!tar_link_inside("x", "d1/l/../.."));
	CHECK(!tar_link_inside("a/b/l", "c/.."));
	CHECK(!tar_link_inside("a/l", "./b/../c"));
}

int main(void)
{
	RUN(round_trip_with_long_paths_and_links);
	RUN(bad_archives);
	RUN(pax_records_other_than_path_are_refused);
	RUN(writer_limits);
	RUN(writer_clamps_times);
	RUN(padding);
	RUN(link_inside);
	return check_summary();
}

/* tar.c — see tar.h.
 *
 * The ustar header (POSIX.1-1988, pax "ustar" interchange format):
 *   name[100] mode[8] uid[8] gid[8] size[12] mtime[12] chksum[8] typeflag[1] linkname[100]
 *   magic[6]="ustar\0" version[2]="00" uname[32] gname[32] devmajor[8] devminor[8]
 *   prefix[155], padded to 512 bytes. Numbers are octal, NUL-terminated; the checksum is
 *   the sum of the header bytes with the checksum field counted as eight spaces.
 */
#include "mounts/tar.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/size_limits.h"
#include "base/xalloc.h"

#define OFF_NAME     0
#define OFF_MODE     100
#define OFF_UID      108
#define OFF_GID      116
#define OFF_SIZE     124
#define OFF_MTIME    136
#define OFF_CHKSUM   148
#define OFF_TYPE     156
#define OFF_LINKNAME 157
#define OFF_MAGIC    257
#define OFF_VERSION  263
#define OFF_PREFIX   345
#define LEN_NAME     100
#define LEN_LINKNAME 100
#define LEN_PREFIX   155
#define TAR_PAX      'x'
#define MAX_SIZE     077777777777ULL /* 11 octal digits: sizes and times */

/* --- Writing ------------------------------------------------------------------------------ */

static void put_octal(unsigned char *field, size_t len, unsigned long long v)
{
	/* len - 1 digits, zero-padded, then NUL */
	char tmp[32];
	snprintf(tmp, sizeof(tmp), "%0*llo", (int)(len - 1), v);
	memcpy(field, tmp, len - 1);
	field[len - 1] = '\0';
}

static unsigned checksum(const unsigned char *h)
{
	unsigned sum = 0;
	for (size_t i = 0; i < TAR_BLOCK; i++)
		sum += (i >= OFF_CHKSUM && i < OFF_CHKSUM + 8) ? ' ' : h[i];
	return sum;
}

static void finish_header(unsigned char *h)
{
	memcpy(h + OFF_MAGIC, "ustar", 6); /* with its NUL */
	memcpy(h + OFF_VERSION, "00", 2);
	put_octal(h + OFF_UID, 8, 0);
	put_octal(h + OFF_GID, 8, 0);
	char sum[8];
	snprintf(sum, sizeof(sum), "%06o", checksum(h));
	memcpy(h + OFF_CHKSUM, sum, 7); /* six digits and the NUL */
	h[OFF_CHKSUM + 7] = ' ';
}

/* Splits path into ustar prefix + name; false when it cannot. */
static bool split_name(const char *path, size_t *prefix_len)
{
	size_t n = strlen(path);
	if (n <= LEN_NAME) {
		*prefix_len = 0;
		return true;
	}
	/* the prefix is everything before some '/', the name everything after it */
	for (size_t i = n - 1; i > 0; i--) {
		if (path[i] != '/')
			continue;
		if (n - i - 1 > LEN_NAME)
			return false;
		if (i <= LEN_PREFIX && n - i - 1 > 0) {
			*prefix_len = i;
			return true;
		}
	}
	return false;
}

/* Appends one PAX record "LEN key=value\n" (LEN counts the whole record). */
static void pax_record(struct buf *b, const char *key, const char *value)
{
	size_t body = 1 + strlen(key) + 1 + strlen(value) + 1; /* " key=value\n" */
	size_t len = body + 1;
	for (;;) {
		char digits[24];
		int d = snprintf(digits, sizeof(digits), "%zu", len);
		if ((size_t)d + body == len)
			break;
		len = (size_t)d + body;
	}
	buf_printf(b, "%zu %s=%s\n", len, key, value);
}

static void append_block(struct buf *out, const unsigned char *block)
{
	buf_append(out, block, TAR_BLOCK, "tar header", NULL);
}

static void append_zeros(struct buf *out, size_t n)
{
	static const unsigned char zeros[TAR_BLOCK];
	while (n > 0) {
		size_t k = n < sizeof(zeros) ? n : sizeof(zeros);
		buf_append(out, zeros, k, "tar padding", NULL);
		n -= k;
	}
}

/* A PAX extended header (its own header block, the records, the padding) carrying the
 * path and the link target that do not fit the ustar fields (NULL: one that does). */
static void append_pax(struct buf *out, const char *path, const char *link)
{
	struct buf pax;
	buf_init(&pax, 0);
	if (path)
		pax_record(&pax, "path", path);
	if (link)
		pax_record(&pax, "linkpath", link);
	unsigned char h[TAR_BLOCK] = {0};
	memcpy(h + OFF_NAME, "././@PaxHeader", 14);
	put_octal(h + OFF_MODE, 8, 0644);
	put_octal(h + OFF_SIZE, 12, pax.len);
	put_octal(h + OFF_MTIME, 12, 0);
	h[OFF_TYPE] = TAR_PAX;
	finish_header(h);
	append_block(out, h);
	buf_append(out, pax.data, pax.len, "tar PAX header", NULL);
	append_zeros(out, tar_padding(pax.len));
	buf_free(&pax);
}

int tar_header(const struct tar_entry *e, struct buf *out, struct err **err)
{
	size_t plen = strlen(e->path);
	if (plen == 0 || plen > LIMIT_MOUNT_PATH)
		return err_set(err, ERR_IO,
		               "tar: the path \"%.64s\" is empty or longer than %d bytes", e->path,
		               LIMIT_MOUNT_PATH);
	if (e->type == TAR_SYMLINK && (e->link == NULL || strlen(e->link) > LIMIT_MOUNT_PATH))
		return err_set(err, ERR_IO,
		               "tar: the link %s has no target or a target longer "
		               "than %d bytes",
		               e->path, LIMIT_MOUNT_PATH);
	uint64_t size = e->type == TAR_FILE ? e->size : 0;
	if (size > MAX_SIZE)
		return err_set(err, ERR_IO, "tar: %s is larger than 8 GiB", e->path);

	/* Directories carry a trailing '/', as tar tools write them. */
	char *path = e->type == TAR_DIR ? xasprintf("%s/", e->path) : xstrdup(e->path);
	size_t prefix_len = 0;
	bool fits = split_name(path, &prefix_len);
	bool link_fits = e->type != TAR_SYMLINK || strlen(e->link) <= LEN_LINKNAME;
	if (!fits || !link_fits)
		append_pax(out, fits ? NULL : path, link_fits ? NULL : e->link);

	unsigned char h[TAR_BLOCK] = {0};
	if (fits) {
		memcpy(h + OFF_PREFIX, path, prefix_len);
		const char *name = prefix_len ? path + prefix_len + 1 : path;
		memcpy(h + OFF_NAME, name, strlen(name));
	} else {
		/* readers that ignore PAX still see something recognisable */
		memcpy(h + OFF_NAME, path, LEN_NAME);
	}
	if (e->type == TAR_SYMLINK)
		memcpy(h + OFF_LINKNAME, e->link, link_fits ? strlen(e->link) : LEN_LINKNAME);
	put_octal(h + OFF_MODE, 8, e->mode & 0777);
	put_octal(h + OFF_SIZE, 12, size);
	/* a time past what 11 octal digits hold (the year 2242) would lose its first digit */
	put_octal(h + OFF_MTIME, 12,
	          e->mtime <= 0                   ? 0
	          : (uint64_t)e->mtime > MAX_SIZE ? MAX_SIZE
	                                          : (unsigned long long)e->mtime);
	h[OFF_TYPE] = (unsigned char)e->type;
	finish_header(h);
	append_block(out, h);
	free(path);
	return 0;
}

size_t tar_padding(uint64_t size)
{
	return (size_t)((TAR_BLOCK - size % TAR_BLOCK) % TAR_BLOCK);
}

void tar_end(struct buf *out)
{
	append_zeros(out, 2 * TAR_BLOCK);
}

bool tar_link_inside(const char *path, const char *target)
{
	if (target == NULL || target[0] == '\0' || target[0] == '/')
		return false;
	/* depth of the directory that holds the link */
	long depth = 0;
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, "/");
		if (n > 0 && !(n == 1 && p[0] == '.'))
			depth++;
		p += n;
		while (*p == '/')
			p++;
	}
	depth--; /* the link itself */
	if (depth < 0)
		return false;
	/* Only leading ".." climb: after a name, ".." would climb from wherever that name leads
	 * when it is a symlink ("d/l -> .." makes "x -> d/l/../.." leave the root). */
	bool named = false;
	for (const char *p = target; *p;) {
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			if (named || --depth < 0)
				return false;
		} else if (n > 0 && !(n == 1 && p[0] == '.')) {
			named = true;
		}
		p += n;
		while (*p == '/')
			p++;
	}
	return true;
}

/* --- Reading ------------------------------------------------------------------------------ */

void tar_reader_init(struct tar_reader *r, tar_read_fn read_fn, void *ud)
{
	memset(r, 0, sizeof(*r));
	r->read = read_fn;
	r->ud = ud;
}

void tar_reader_free(struct tar_reader *r)
{
	free(r->path);
	free(r->link);
	r->path = r->link = NULL;
}

/* Reads exactly n bytes: the input ending first is an error (no end marker yet). */
static int read_exact(struct tar_reader *r, void *buf, size_t n, const char *what, struct err **err)
{
	size_t done = 0;
	while (done < n) {
		ssize_t k = r->read(r->ud, (char *)buf + done, n - done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return err_set_sys(err, ERR_IO, errno, "tar: read %s at byte %llu", what,
			                   (unsigned long long)r->offset);
		if (k == 0)
			return err_set(
			        err, ERR_IO,
			        "tar: the input ended at byte %llu, inside %s (before the end "
			        "marker: the transfer was cut short)",
			        (unsigned long long)r->offset, what);
		done += (size_t)k;
		r->offset += (uint64_t)k;
	}
	return 0;
}

static int skip(struct tar_reader *r, uint64_t n, const char *what, struct err **err)
{
	char tmp[TAR_BLOCK];
	while (n > 0) {
		size_t k = n < sizeof(tmp) ? (size_t)n : sizeof(tmp);
		if (read_exact(r, tmp, k, what, err) < 0)
			return -1;
		n -= k;
	}
	return 0;
}

/* Parses an octal field (leading spaces allowed; ends at NUL, space or the field's end). */
static bool get_octal(const unsigned char *f, size_t len, unsigned long long *out)
{
	size_t i = 0;
	while (i < len && f[i] == ' ')
		i++;
	unsigned long long v = 0;
	bool any = false;
	for (; i < len && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v > (~0ULL >> 3))
			return false;
		v = v * 8 + (unsigned)(f[i] - '0');
		any = true;
	}
	if (i < len && f[i] != '\0' && f[i] != ' ')
		return false;
	*out = v;
	return any;
}

static char *field_str(const unsigned char *f, size_t len)
{
	size_t n = 0;
	while (n < len && f[n])
		n++;
	return xstrndup((const char *)f, n);
}

static bool all_zero(const unsigned char *b)
{
	for (size_t i = 0; i < TAR_BLOCK; i++)
		if (b[i])
			return false;
	return true;
}

/* Parses PAX records into *path / *link (replacing them). */
static int parse_pax(const char *data, size_t len, char **path, char **link, struct err **err)
{
	size_t i = 0;
	while (i < len) {
		size_t j = i, rec = 0;
		while (j < len && data[j] >= '0' && data[j] <= '9' && rec < LIMIT_TAR_PAX)
			rec = rec * 10 + (size_t)(data[j++] - '0');
		if (j == i || j >= len || data[j] != ' ' || rec <= j - i + 1 || rec > len - i ||
		    data[i + rec - 1] != '\n')
			return err_set(err, ERR_IO, "tar: a malformed PAX record");
		const char *kv = data + j + 1, *end = data + i + rec - 1;
		const char *eq = memchr(kv, '=', (size_t)(end - kv));
		if (eq == NULL)
			return err_set(err, ERR_IO, "tar: a PAX record without '='");
		size_t klen = (size_t)(eq - kv);
		char **dst = NULL;
		if (klen == 4 && memcmp(kv, "path", 4) == 0)
			dst = path;
		else if (klen == 8 && memcmp(kv, "linkpath", 8) == 0)
			dst = link;
		else
			return err_set(err, ERR_IO, "tar: unsupported PAX record \"%.*s\"",
			               (int)klen, kv);
		size_t vlen = (size_t)(end - eq - 1);
		if (memchr(eq + 1, '\0', vlen))
			return err_set(err, ERR_IO, "tar: a PAX %.*s with a NUL byte", (int)klen,
			               kv);
		free(*dst);
		*dst = xstrndup(eq + 1, vlen);
		i += rec;
	}
	return 0;
}

/* Reads one header block; returns 1 for a header, 0 for the end marker. */
static int read_header(struct tar_reader *r, unsigned char *h, struct err **err)
{
	if (read_exact(r, h, TAR_BLOCK, "a header", err) < 0)
		return -1;
	if (all_zero(h)) {
		if (read_exact(r, h, TAR_BLOCK, "the end marker", err) < 0)
			return -1;
		if (!all_zero(h))
			return err_set(err, ERR_IO,
			               "tar: a zero block followed by data at byte %llu",
			               (unsigned long long)r->offset);
		return 0;
	}
	unsigned long long sum = 0;
	if (!get_octal(h + OFF_CHKSUM, 8, &sum) || sum != checksum(h))
		return err_set(err, ERR_IO, "tar: bad header checksum at byte %llu",
		               (unsigned long long)(r->offset - TAR_BLOCK));
	if (memcmp(h + OFF_MAGIC, "ustar", 6) != 0 || memcmp(h + OFF_VERSION, "00", 2) != 0)
		return err_set(err, ERR_IO, "tar: not a ustar header at byte %llu",
		               (unsigned long long)(r->offset - TAR_BLOCK));
	return 1;
}

/* Reads the next entry's header into h, after a PAX extended header if there is one (its
 * path and linkpath into *pax_path, *pax_link). Returns 1, 0 at the end marker, or -1. */
static int read_headers(struct tar_reader *r, unsigned char *h, char **pax_path, char **pax_link,
                        struct err **err)
{
	for (bool had_pax = false;; had_pax = true) {
		int rc = read_header(r, h, err);
		if (rc <= 0)
			return rc;
		if (h[OFF_TYPE] != TAR_PAX)
			return 1;
		unsigned long long len = 0;
		if (had_pax || !get_octal(h + OFF_SIZE, 12, &len) || len > LIMIT_TAR_PAX)
			return err_set(err, ERR_IO,
			               "tar: a PAX header that is repeated or longer than %u bytes",
			               (unsigned)LIMIT_TAR_PAX);
		char *data = xmalloc(len + 1);
		rc = read_exact(r, data, len, "a PAX header", err);
		if (rc == 0)
			rc = parse_pax(data, len, pax_path, pax_link, err);
		free(data);
		if (rc == 0)
			rc = skip(r, tar_padding(len), "a PAX header", err);
		if (rc < 0)
			return -1;
	}
}

int tar_next(struct tar_reader *r, struct tar_entry *e, struct err **err)
{
	if (r->remaining + r->pad > 0) {
		if (skip(r, r->remaining + r->pad, "file data", err) < 0)
			return -1;
		r->remaining = r->pad = 0;
	}
	tar_reader_free(r);
	cleanup_free char *pax_path = NULL, *pax_link = NULL;
	unsigned char h[TAR_BLOCK];
	int rc = read_headers(r, h, &pax_path, &pax_link, err);
	if (rc <= 0)
		return rc;
	char type = (char)h[OFF_TYPE];
	if (type == '\0')
		type = TAR_FILE;
	if (type != TAR_FILE && type != TAR_DIR && type != TAR_SYMLINK) {
		return err_set(err, ERR_IO,
		               "tar: unsupported entry type '%c' (only files, directories and "
		               "symlinks)",
		               type >= 32 && type < 127 ? type : '?');
	}
	unsigned long long size = 0, mode = 0, mtime = 0;
	if (!get_octal(h + OFF_SIZE, 12, &size) || !get_octal(h + OFF_MODE, 8, &mode) ||
	    !get_octal(h + OFF_MTIME, 12, &mtime)) {
		return err_set(err, ERR_IO, "tar: a bad number in a header at byte %llu",
		               (unsigned long long)(r->offset - TAR_BLOCK));
	}
	if (type != TAR_FILE && size != 0)
		return err_set(err, ERR_IO, "tar: a directory or symlink with data");
	if (pax_path) {
		r->path = pax_path;
		pax_path = NULL;
	} else {
		char *name = field_str(h + OFF_NAME, LEN_NAME);
		char *prefix = field_str(h + OFF_PREFIX, LEN_PREFIX);
		r->path = prefix[0] ? xasprintf("%s/%s", prefix, name) : xstrdup(name);
		free(name);
		free(prefix);
	}
	if (type == TAR_SYMLINK) {
		r->link = pax_link ? pax_link : field_str(h + OFF_LINKNAME, LEN_LINKNAME);
		pax_link = NULL;
	}
	size_t n = strlen(r->path);
	if (type == TAR_DIR)
		while (n > 1 && r->path[n - 1] == '/')
			r->path[--n] = '\0';
	e->type = (enum tar_type)type;
	e->path = r->path;
	e->link = r->link;
	e->mode = (unsigned)(mode & 07777);
	e->size = size;
	e->mtime = (int64_t)mtime;
	r->remaining = size;
	r->pad = tar_padding(size);
	return 1;
}

ssize_t tar_read_data(struct tar_reader *r, void *buf, size_t n, struct err **err)
{
	if (n > r->remaining)
		n = (size_t)r->remaining;
	if (n == 0)
		return 0;
	if (read_exact(r, buf, n, "file data", err) < 0)
		return -1;
	r->remaining -= n;
	return (ssize_t)n;
}

/* tar.h — the archive format that carries a function's mounts into its pod (docs/levels.md,
 * "Level 2: mounts"): POSIX ustar with regular files, directories and symbolic links only;
 * permission bits and mtime are kept, owners are not (uid/gid 0, no names).
 *
 * A path (or link target) that does not fit ustar's name/prefix (linkname) fields is carried
 * by a PAX extended header (type 'x') with a `path=` (`linkpath=`) record just before the
 * entry. The archive ends with two zero blocks; the reader stops at them and reads nothing
 * more, so the sender needs no EOF to end the transfer.
 *
 * Pure: the writer appends to a buf; the reader pulls bytes through a callback, exactly as
 * many as it needs (never past the end marker).
 */
#ifndef KRMPOD_TAR_H
#define KRMPOD_TAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/buf.h"
#include "base/err.h"

#define TAR_BLOCK 512

enum tar_type { TAR_FILE = '0', TAR_DIR = '5', TAR_SYMLINK = '2' };

struct tar_entry {
	enum tar_type type;
	const char *path; /* relative, '/'-separated, no trailing '/' */
	const char *link; /* TAR_SYMLINK: the target; NULL otherwise */
	unsigned mode;    /* permission bits (only & 0777 is written) */
	uint64_t size;    /* TAR_FILE: bytes of data that follow; 0 otherwise */
	int64_t mtime;    /* seconds since the epoch (negative is written as 0, and one past
	                     the 11 octal digits of ustar, in 2242, as the largest they hold) */
};

/* Appends the header block(s) of e to out: a PAX header first when the path or the link
 * does not fit ustar, then the ustar header. Fails with ERR_IO when the path is empty or
 * longer than LIMIT_MOUNT_PATH, the link is longer than LIMIT_MOUNT_PATH, or the size does
 * not fit the 11 octal digits of ustar (8 GiB). */
int tar_header(const struct tar_entry *e, struct buf *out, struct err **err);

/* The number of zero bytes that follow `size` bytes of file data (to the next block). */
size_t tar_padding(uint64_t size);

/* Appends the end marker: two zero blocks. */
void tar_end(struct buf *out);

/* Whether a symlink at `path` (relative to some root, '/'-separated) pointing at `target`
 * stays inside that root however it resolves: target is relative and non-empty, its ".."
 * components all come first (after a name, ".." would climb from wherever that name leads if
 * it is a symlink too) and do not climb above the root. Used by both sides: the sidecar
 * refuses to send a link that leaves its mount, and `krmpod unpack` refuses to create one
 * that leaves its volume. */
bool tar_link_inside(const char *path, const char *target);

/* --- Reading -------------------------------------------------------------------------- */

/* Reads up to n bytes into buf: returns the count, 0 at end of input, -1 with errno set. */
typedef ssize_t (*tar_read_fn)(void *ud, void *buf, size_t n);

struct tar_reader {
	tar_read_fn read;
	void *ud;
	uint64_t remaining; /* data bytes of the current file not read yet */
	size_t pad;         /* padding after them */
	char *path, *link;  /* of the current entry (owned) */
	uint64_t offset;    /* bytes consumed from the input */
};

void tar_reader_init(struct tar_reader *r, tar_read_fn read_fn, void *ud);
void tar_reader_free(struct tar_reader *r);

/* Reads the next entry header (skipping whatever is left of the previous file's data).
 * Returns 1 with *e filled (e->path and e->link stay valid until the next call; a
 * directory's trailing '/' is removed), 0 at the end marker, or -1 with *err (ERR_IO): input
 * ended before the end marker, a bad checksum or magic, an entry type other than file,
 * directory, symlink (and PAX 'x' headers carrying only path and linkpath), a PAX header
 * longer than LIMIT_TAR_PAX, a non-file with data, a read error. */
int tar_next(struct tar_reader *r, struct tar_entry *e, struct err **err);

/* Reads up to n bytes of the current file's data. Returns the count (0 once all of it was
 * read), or -1 with *err (ERR_IO) when the input ends early or cannot be read. */
ssize_t tar_read_data(struct tar_reader *r, void *buf, size_t n, struct err **err);

#endif

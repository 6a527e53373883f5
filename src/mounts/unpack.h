/* unpack.h — the receiving side of mounts (docs/levels.md, "Level 2: mounts"), run inside
 * the function pod by `krmpod unpack DIR` in the `mounts` init container: a tar (tar.h) read
 * from an fd is extracted into DIR/<index>/..., where DIR/<index> is the emptyDir volume of
 * mount <index>.
 *
 * Strict, whatever the sender did:
 *   - every entry path is "<index>" or "<index>/<rest>": index a decimal number below
 *     LIMIT_MOUNTS whose directory DIR/<index> already exists (the pod mounted it there;
 *     unpack never creates it); rest has no empty, "." or ".." component and is at most
 *     LIMIT_MOUNT_PATH bytes;
 *   - every directory on the way is opened with O_NOFOLLOW and must be a directory an
 *     earlier entry created (so no symlink, even one the archive made, is ever followed);
 *   - files and directories are created exclusively (an existing name is an error);
 *   - a symlink's target must be relative and stay inside DIR/<index> (tar_link_inside);
 *   - file bytes are capped at max_bytes in total, entries at LIMIT_MOUNT_ENTRIES.
 * Modes (& 0777) and mtimes are applied; directories get theirs once everything is in, so
 * a read-only directory can still be filled. Reading stops at the archive's end marker:
 * nothing after it is read.
 */
#ifndef KRMPOD_UNPACK_H
#define KRMPOD_UNPACK_H

#include <stdint.h>

#include "base/err.h"

struct unpack_stats {
	uint64_t entries; /* files, directories and symlinks created */
	uint64_t bytes;   /* file bytes written */
};

/* Extracts the archive read from in_fd into dir. Returns 0 at the end marker with *st
 * filled, or -1 with *err (ERR_IO for a bad or cut archive and refused entries, naming the
 * entry; ERR_USAGE when dir cannot be opened). What was extracted before a failure stays. */
int unpack_tar(int in_fd, const char *dir, int64_t max_bytes, struct unpack_stats *st,
               struct err **err);

/* Checks an entry path as described above: on success *index is its mount number and *rest
 * points into path after "<index>/" (empty for "<index>" itself). Exported for tests. */
int unpack_check_path(const char *path, unsigned *index, const char **rest, struct err **err);

#endif

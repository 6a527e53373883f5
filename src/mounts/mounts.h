/* mounts.h — the sending side of mounts (docs/levels.md, "Level 2: mounts"): which files may
 * leave the sidecar for a function's `--mount type=bind` flags, and the tar that carries
 * them into the pod.
 *
 * Confinement: every source must lie inside `root`, the kustomization directory (kustomize
 * runs the shim there and makes each `src` absolute below it).
 *   - a source with a ".." component, or one whose real path (symlinks resolved) is outside
 *     root, is refused;
 *   - the source is then opened from root's directory fd one component at a time with
 *     O_NOFOLLOW, and everything below it is walked the same way (openat, fstatat with
 *     AT_SYMLINK_NOFOLLOW): no symlink is ever followed, so nothing outside root is read,
 *     even if the tree changes under us;
 *   - symlinks inside a mount travel as symlinks, and only when their target is relative and
 *     stays inside the mount (tar_link_inside); any other symlink is refused;
 *   - a regular file with more than one hard link is refused unless all its links are in the
 *     mounts being sent (a hard link to a file outside root cannot be told from the file
 *     itself; git checkouts never create hard links);
 *   - FIFOs, sockets and devices are refused.
 * Every refusal is ERR_USAGE naming the --mount flag and the path.
 *
 * Limits: the walk happens before any pod exists; the total of file bytes must not pass
 * max_bytes (KRMPOD_MOUNT_MAX_BYTES; the error names each mount with its size and the
 * limit), entries LIMIT_MOUNT_ENTRIES, paths LIMIT_MOUNT_PATH.
 *
 * The archive (tar.h) holds, for bind mount number i (its index among all --mount flags):
 * "i/content" — the source directory (then "i/content/<path>" for everything in it) or the
 * source file. The pod mounts volume i at the target with subPath "content".
 */
#ifndef KRMPOD_MOUNTS_H
#define KRMPOD_MOUNTS_H

#include <stddef.h>
#include <stdint.h>

#include "base/cleanup.h"
#include "base/err.h"
#include "config/request.h"

/* The subdirectory of each mount's volume that holds the source (and the subPath the
 * function container mounts). */
#define MOUNTS_CONTENT "content"

struct mount_plan;

/* Checks and walks every bind mount of req as described above. On success *out owns the
 * plan (NULL when req has no bind mount). It keeps root and each source open until freed. */
int mount_plan_build(const struct fn_request *req, const char *root, int64_t max_bytes,
                     struct mount_plan **out, struct err **err);
void mount_plan_free(struct mount_plan *p);
DEFINE_CLEANUP_FUNC(mount_plan, struct mount_plan, mount_plan_free)
#define cleanup_mount_plan __attribute__((cleanup(cleanup_mount_planp)))

/* File bytes and entries (files, directories, symlinks, the mount roots included) the plan
 * sends. */
uint64_t mount_plan_bytes(const struct mount_plan *p);
size_t mount_plan_entries(const struct mount_plan *p);

/* Writes the archive to fd (blocking writes), ending with the end marker. Each file is
 * opened again from its mount's directory fd without following symlinks and must still be
 * the regular file that was planned (same device, inode and size), else ERR_IO "changed
 * while being sent"; a closed fd (EPIPE: the receiving side went away) is ERR_NET. *written
 * (may be NULL) counts the archive bytes written. Safe to call from another thread than the
 * one that built the plan. */
int mount_plan_write(const struct mount_plan *p, int fd, uint64_t *written, struct err **err);

#endif

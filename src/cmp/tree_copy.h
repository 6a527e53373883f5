/* tree_copy.h — a private copy of the directories kustomize reads, for `krmpod generate`:
 * catalogs are applied by rewriting files (cmp_catalogs.h), and the tree generate was
 * started in is never written.
 *
 * Regular files, directories and symlinks (as links) are copied with their modes; `.git`
 * directories are left out; anything else (devices, sockets) is an error naming it. The
 * copy is capped at LIMIT_TREE_COPY bytes of files (size_limits.h). */
#ifndef KRMPOD_TREE_COPY_H
#define KRMPOD_TREE_COPY_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Copies the directories dirs[0..n) (absolute paths) under a new private temporary
 * directory, each at its path relative to their common ancestor: *root is the copy's top
 * (to remove with tree_copy_remove) and *ancestor (new string) the common ancestor, so that
 * a path P of the tree lives at root + (P - ancestor). Directories inside another one are
 * copied once. */
int tree_copy(const char *const *dirs, size_t n, char **root, char **ancestor, struct err **err);

/* Where path lives in the copy at root (new string): NULL when path is not under ancestor,
 * or climbs out of it with "..", so that nothing is ever written outside the copy. */
char *tree_copy_path(const char *root, const char *ancestor, const char *path);

/* Removes a copy recursively (best effort). NULL is fine. */
void tree_copy_remove(const char *root);

#endif

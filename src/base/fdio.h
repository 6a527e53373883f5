/* fdio.h — whole writes and copies on file descriptors, and private temporary files. */
#ifndef KRMPOD_FDIO_H
#define KRMPOD_FDIO_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

/* Writes all n bytes of p to fd, going on after EINTR and short writes. Fails with ERR_IO
 * "write WHAT: <errno text>" (EPIPE:
 * "the reader closed it"). */
int fd_write_all(int fd, const void *p, size_t n, const char *what, struct err **err);

/* Writes n bytes of p to path atomically: into the file tmp first (created with mode,
 * never through a symlink; a tmp ending in "XXXXXX" is a mkostemp template, the name made
 * unique), closed, then renamed over path, so a reader sees the old file or the whole new
 * one. tmp must be in path's directory, under a name the directory's readers skip. On
 * failure tmp is removed and the error (ERR_IO) names `what` and the path. */
int fd_write_atomic(const char *path, const char *tmp, const void *p, size_t n, unsigned mode,
                    const char *what, struct err **err);

/* fd_write_atomic() of everything in the file `from` (from its offset 0), synced to disk
 * before the rename: a copy of a program that others will exec. */
int fd_copy_atomic(const char *path, const char *tmp, int from, unsigned mode, const char *what,
                   struct err **err);

/* Copies everything from `from`, starting at its offset 0, to `to`. Fails with ERR_IO
 * naming `what`. */
int fd_copy_from_start(int from, int to, const char *what, struct err **err);

/* The directory for temporary files: TMPDIR when set and not empty, else /tmp. */
const char *tmp_dir(void);

/* Creates a new private file TMPDIR/PREFIX-XXXXXX (mode 0600, close-on-exec) and returns its
 * descriptor; *path_out (when not NULL) receives its path, to free. Fails with ERR_IO naming
 * the path, `what` it is for, and TMPDIR. */
int tmp_file_make(const char *prefix, const char *what, char **path_out, struct err **err);

/* Creates a new private directory TMPDIR/PREFIX-XXXXXX (mode 0700); *out is its path, to
 * free. Fails with ERR_IO naming the path, `what` it is for, and TMPDIR. */
int tmp_dir_make(const char *prefix, const char *what, char **out, struct err **err);

/* Removes everything inside the directory dir (not the directory itself) except the entry
 * named `keep` (NULL: none), like `rm -rf` but never following a symlink (entries are
 * opened with O_NOFOLLOW relative to their parent; directories are made writable before
 * they are emptied). At most FD_TREE_DEPTH levels. Fails with ERR_IO naming `what` and the
 * first entry that could not be removed (it goes on with the rest). */
#define FD_TREE_DEPTH 256
int fd_empty_dir(int dir, const char *keep, const char *what, struct err **err);

/* Removes the tree at path (a file, a symlink or a directory), as above. A missing path is
 * fine. */
int fd_remove_tree(const char *path, const char *what, struct err **err);

/* A unix stream socket bound and listening at path (listen=true), or connected to it:
 * close-on-exec, blocking. A listening socket is bound under a temporary name, listens, is
 * made mode 0600 and only then renamed to path: whoever finds the file can connect (a
 * connect between bind and listen is refused, and a waiter that polls for the file would
 * take that for "nobody serves"). A path longer than a socket address holds (TMPDIR can be
 * deep) is reached through its directory: /proc/self/fd/N/NAME. Returns the fd, or -1 with
 * errno (ENAMETOOLONG when even that is too long). */
int fd_unix_socket(const char *path, bool listen_, int backlog);

/* Waits between accept attempts that failed for want of a resource, and how many. */
#define FD_ACCEPT_RETRY_MS 100
#define FD_ACCEPT_RETRIES  50

/* Accepts one connection on listen_fd (close-on-exec, non-blocking). A failure that leaves
 * the socket readable (EMFILE, ENFILE, ENOBUFS, ENOMEM: the connection stays queued) is
 * retried after FD_ACCEPT_RETRY_MS, FD_ACCEPT_RETRIES times at most, sleeping in poll() on
 * wake_fd (-1: none), never in a busy loop. Returns the new descriptor, or -1 with errno:
 * EAGAIN, EINTR or ECONNABORTED (nothing to take now), ECANCELED (wake_fd became readable),
 * or the resource error that outlasted the retries. */
int fd_accept(int listen_fd, int wake_fd);

#endif

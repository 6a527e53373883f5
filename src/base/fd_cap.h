/* fd_cap.h — a bound on what a process passes to an output it does not control (stderr,
 * read whole into memory by Argo CD's cmp-server): the first half of the limit passes as it
 * comes, the last half is kept and written at the end, and what lies between is dropped,
 * with one line that says how many bytes and which setting keeps how much.
 *
 * A thread reads a pipe and writes to the destination; nothing it reads is held beyond the
 * tail (limit - limit / 2 bytes). The writers are whoever holds the pipe's write end: the
 * caller's own fd (fd_cap_redirect: this process's stderr, for a shim) or a child's
 * (fd_cap_pipe: kustomize's stderr, which every shim of a render inherits).
 */
#ifndef KRMPOD_FD_CAP_H
#define KRMPOD_FD_CAP_H

#include <stdint.h>

#include "base/err.h"

/* The smallest limit a setting may give (a notice and a few lines either side). */
#define FD_CAP_MIN 4096
/* How long fd_cap_end waits for writers that still hold the pipe (a process that outlived
 * its parent) before it stops reading. */
#define FD_CAP_DRAIN_MS 2000

struct fd_cap;

/* Starts a cap of `limit` bytes (>= FD_CAP_MIN) in front of dest (borrowed: it must stay
 * open until fd_cap_end). `what` ("the function's stderr") and `setting`
 * ("KRMPOD_MAX_STDERR") are for the notice. fd_cap_fd() is the pipe's write end (close on
 * exec: hand it to a child with dup2). Fails with ERR_INTERNAL (no pipe, no thread). */
int fd_cap_pipe(int dest, uint64_t limit, const char *what, const char *setting,
                struct fd_cap **out, struct err **err);

/* fd_cap_pipe in front of fd itself: fd is moved aside and replaced by the pipe, until
 * fd_cap_end puts it back. */
int fd_cap_redirect(int fd, uint64_t limit, const char *what, const char *setting,
                    struct fd_cap **out, struct err **err);

int fd_cap_fd(const struct fd_cap *c);

/* Closes the write end (and puts a redirected fd back), reads what the writers still send
 * (until they all closed it, or FD_CAP_DRAIN_MS), then writes the notice and the tail.
 * Returns the bytes dropped. NULL is a no-op. */
uint64_t fd_cap_end(struct fd_cap *c);

#endif

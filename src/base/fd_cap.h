/* fd_cap.h — a bound on what a process passes to an output it does not control (stderr,
 * read whole into memory by Argo CD's cmp-server): the first half of the limit passes as it
 * comes, the last half is kept and written at the end, and what lies between is dropped,
 * with one line that says how many bytes and which setting keeps how much.
 *
 * A relay process (forked, in a process group of its own, deaf to SIGTERM, SIGINT and
 * SIGHUP) reads a pipe and writes to the destination; nothing it reads is held beyond the
 * tail (limit - limit / 2 bytes). It outlives its starter: when that is killed (Argo CD
 * SIGKILLs generate at its deadline), it goes on reading what the writers still say while
 * they stop, until they all closed the pipe or FD_CAP_ORPHAN_MS passed. The writers are whoever holds the pipe's write end: the
 * caller's own fd (fd_cap_redirect: this process's stderr, for a shim) or a child's
 * (fd_cap_pipe: kustomize's stderr, which every shim of a render inherits).
 */
#ifndef KRMPOD_FD_CAP_H
#define KRMPOD_FD_CAP_H

#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"

/* The smallest limit a setting may give (a notice and a few lines either side). */
#define FD_CAP_MIN 4096
/* How long fd_cap_end waits for writers that still hold the pipe (a process that outlived
 * its parent) before it stops reading. */
#define FD_CAP_DRAIN_MS 2000
/* How long a relay whose starter died goes on reading writers that still hold the pipe. */
#define FD_CAP_ORPHAN_MS 30000

struct fd_cap;

/* Starts a cap of `limit` bytes (>= FD_CAP_MIN) in front of dest (borrowed: it must stay
 * open until fd_cap_end). `what` ("the function's stderr") and `setting`
 * ("KRMPOD_MAX_STDERR") are for the notice. fd_cap_fd() is the pipe's write end (close on
 * exec: hand it to a child with dup2). Fails with ERR_INTERNAL (no pipe, no process). */
int fd_cap_pipe(int dest, uint64_t limit, const char *what, const char *setting,
                struct fd_cap **out, struct err **err);

/* fd_cap_pipe in front of fd itself: fd is moved aside and replaced by the pipe, until
 * fd_cap_end puts it back. */
int fd_cap_redirect(int fd, uint64_t limit, const char *what, const char *setting,
                    struct fd_cap **out, struct err **err);

int fd_cap_fd(const struct fd_cap *c);

/* The relay's pid (a child of the caller's until fd_cap_end reaps it; 0 for NULL): a
 * caller that reaps its children must leave it alone. */
pid_t fd_cap_pid(const struct fd_cap *c);

/* Closes the write end (and puts a redirected fd back), reads what the writers still send
 * (until they all closed it, or FD_CAP_DRAIN_MS), then writes the notice and the tail.
 * Returns the bytes dropped. NULL is a no-op. */
uint64_t fd_cap_end(struct fd_cap *c);

#endif

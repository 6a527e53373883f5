/* agent.h — krmpod inside an exec-mode function pod (docs/internals/exec-mode.md).
 *
 * An exec-mode pod runs the function image with this binary as its command instead of the
 * image's entrypoint. Four roles, each a `krmpod` command:
 *
 *   install-self DIR   the installer container's postStart hook (KRMPOD_HELPER_IMAGE,
 *                      krmpod's own image) copies
 *                      the running binary to DIR/krmpod (mode 0555) in an emptyDir the
 *                      function container mounts;
 *   hold               the function container's PID 1: it starts nothing, reaps what is
 *                      orphaned to it, and exits 0 on SIGTERM, SIGINT or SIGHUP;
 *   serve WORKDIR      run through one pods/exec for a whole render: calls as below, one
 *                      after another, over framed stdin and stdout (agent_frame.h);
 *   call WORKDIR       run through pods/exec, once per function call: reads one header line
 *                      from stdin (agent_call_header_parse), runs the function's argv with
 *                      the rest of stdin, relays its stdout and stderr (counting the
 *                      bytes), ends stderr with the trailer below, and exits with the
 *                      function's status (128+N for a signal N; 137 with a message when the
 *                      kernel's OOM killer struck, from the container's cgroup counters).
 *
 * Each call runs alone (a lock file in WORKDIR; a second call fails at once), gets a fresh
 * private directory WORKDIR/call-XXXXXX as HOME and TMPDIR, and leaves WORKDIR empty but
 * for the lock: whatever a function wrote there is gone before the next call. When hold is
 * PID 1 of the container (its own PID namespace), every process the call leaves behind is
 * killed too (but `krmpod serve`, the call's parent in a session).
 */
#ifndef KRMPOD_AGENT_H
#define KRMPOD_AGENT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

/* The end of a call's stderr: one line, after everything the function wrote,
 *     "\x1ekrmpod-call-end out=N err=M exit=C\n"
 * with the byte counts of the function's stdout and stderr as the call relayed them. The
 * caller strips it and checks the counts against what its stream delivered: an exec stream
 * cut short fails the run even when the server closes it with a Success status. */
#define AGENT_TRAILER_PREFIX "\x1ekrmpod-call-end "
#define AGENT_TRAILER_MAX    96

/* Parses the trailer at the end of tail (len bytes: the last bytes of a call's stderr).
 * Returns 0 with *trailer_len (its length, from its first byte to the end), the counts and
 * the exit code; -1 when tail does not end with one. */
int agent_trailer_parse(const char *tail, size_t len, size_t *trailer_len,
                        unsigned long long *out_bytes, unsigned long long *err_bytes,
                        int *exit_code);

/* The file name the binary gets in DIR, and the call's lock file in WORKDIR. */
#define AGENT_BINARY_NAME "krmpod"
#define AGENT_LOCK_NAME   ".krmpod-call.lock"

/* After its trailer, a call waits at most this long for the container runtime to read what
 * is still in its stdout and stderr pipes before it exits (agent_call.c, wait_drained). */
#define AGENT_DRAIN_MS 2000

/* What a call runs: the header line, one JSON object {"argv": [...], "env": ["K=V", ...]}
 * ended by '\n', at most LIMIT_CALL_HEADER bytes. argv has at least one non-empty string;
 * every env entry has a non-empty name without '='. Instead of argv, {"argv_pid1": true}:
 * the command line of the container's PID 1, which the runtime started from the image's
 * entrypoint and holds on its stdin (exec mode on the image's own entrypoint, for an image
 * whose config krmpod cannot read; agent_pid1_argv). */
struct agent_call_header {
	char **argv;    /* NULL-terminated */
	char **env;     /* "K=V", NULL-terminated (may be empty) */
	bool pooled;    /* a warm-pool pod: later calls may be another Application's */
	bool argv_pid1; /* run what PID 1 runs, read by agent_call (agent_pid1_read) */
	/* with argv_pid1, once read: PID 1's environment and working directory (else NULL) */
	char **pid1_env;
	char *pid1_cwd;
};

/* Parses a header (without its '\n'). Fails with ERR_USAGE naming what is wrong. */
int agent_call_header_parse(const char *text, size_t len, struct agent_call_header *out,
                            struct err **err);
void agent_call_header_clear(struct agent_call_header *h);

/* Writes the header for argv and env (both NULL-terminated) into out, '\n' included. */
struct buf;
void agent_call_header_write(char *const *argv, char *const *env, bool pooled, struct buf *out);
/* The same with "argv_pid1" instead of argv. */
void agent_call_header_write_pid1(char *const *env, struct buf *out);

/* What PID 1 of the container runs, read from proc_dir (/proc/1): its command line
 * (cmdline, split at its NULs), its environment (environ) and its working directory (cwd),
 * each at most LIMIT_PID1_CMDLINE bytes. While PID 1 is still the runtime's own init, before
 * that execs the image's entrypoint (runc's "runc init"), it is read again every 10 ms, for
 * `wait_ms` at most. Fails (ERR_POD) naming PID 1 and the file when one cannot be read (a
 * process that made itself undumpable hides its environment), when the command line is
 * empty (PID 1 ended), too long, or still the runtime's. */
struct agent_pid1 {
	char **argv; /* NULL-terminated, at least one */
	char **env;  /* NULL-terminated "K=V" */
	char *cwd;
};
int agent_pid1_read(const char *proc_dir, int wait_ms, struct agent_pid1 *out, struct err **err);
void agent_pid1_clear(struct agent_pid1 *p);
#define AGENT_PID1_WAIT_MS 2000

/* A call session (agent_frame.h): calls one after another, each `SELF call WORKDIR` (self:
 * the krmpod binary, /proc/self/exe) as a
 * child whose stdin comes from in_fd's 'i' frames and whose stdout and stderr go to out_fd
 * as 'o' and 'r' frames, its exit code as an 'x' frame. Returns 0 when in_fd ends between
 * calls; -1 with *err when it ends inside one (the call is killed) or a frame is wrong. */
int agent_serve(const char *self, const char *workdir, int in_fd, int out_fd, struct err **err);

/* Copies the running binary (/proc/self/exe) to dir/krmpod, atomically (a temporary name,
 * then rename), mode 0555. */
int agent_install_self(const char *dir, struct err **err);

/* Waits, reaping children, until SIGTERM, SIGINT or SIGHUP. */
int agent_hold(struct err **err);

/* One call (above): the header from in_fd, then the function with in_fd, out_fd, err_fd
 * as its stdio. *exit_code is the function's status. Fails with ERR_USAGE for a bad header,
 * ERR_IO when WORKDIR cannot be used, ERR_INTERNAL when another call holds the lock. */
int agent_call(const char *workdir, int in_fd, int out_fd, int err_fd, int *exit_code,
               struct err **err);

#endif

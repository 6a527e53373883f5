/* fn_output.c — see fn_output.h and docs/internals/pod-lifecycle.md. */
#include "fn/fn_output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/fdio.h"
#include "base/log.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "pod/pod_manifest.h"
#include "pod/pod_names.h"

/* Bytes of attach output kept to line it up with the pod log after the end. */
#define OVERLAP_WINDOW (64u << 10)
/* How much of that start of the attached output is looked for in the log: short enough
 * that stdout and stderr rarely interleave in it, long enough to be unambiguous. */
#define LOG_MATCH_BYTES 256

/* Output that only the pod log holds (docs/internals/pod-lifecycle.md, "Output from the pod
 * log"): the log is stdout and stderr merged, so krmpod must pick one stream for all of it.
 * It goes to stdout when the function succeeded (or, written before the attach, when it did
 * not wait for input: docker run without -i) — its output is then its result — and to stderr
 * otherwise. Putting it on stdout is said once, as a warning, since stderr lines may be in
 * it; stderr is the safe side and needs no warning. What goes to stdout counts against
 * KRMPOD_MAX_OUTPUT with the `stdout_before` bytes the attach delivered. */
/* Attach-mode output krmpod cannot prove complete (reason says why): used only with
 * KRMPOD_ATTACH_UNVERIFIED=allow (a warning), else the call fails naming the function and
 * the settings that give exec mode, which counts every byte. Returns 0 or -1. */
static int unproven(struct fn_pod *p, const char *reason, struct err **err)
{
	const struct fn_request *req = fn_pod_request(p);
	if (fn_pod_settings(p)->attach_unverified) {
		log_warn("function %s: pod %s/%s: %s; used unproven "
		         "(KRMPOD_ATTACH_UNVERIFIED=allow)",
		         req->image, fn_pod_namespace(p), fn_pod_name(p), reason);
		return 0;
	}
	return err_set(err, ERR_POD,
	               "function %s: pod %s/%s: %s, so its output cannot be proven complete in "
	               "attach mode and is not used. Exec mode counts every byte: it needs "
	               "KRMPOD_HELPER_IMAGE and the image's entrypoint, read from its registry "
	               "(KRMPOD_REGISTRY_MIRRORS, KRMPOD_REGISTRY_AUTH, KRMPOD_REGISTRY_CA) or "
	               "recorded in an admin catalog; or accept unproven output with "
	               "KRMPOD_ATTACH_UNVERIFIED=allow (docs/internals/attach-output.md)",
	               req->image, fn_pod_namespace(p), fn_pod_name(p), reason);
}

static int write_log_output(struct fn_pod *p, const struct fn_io *io, const char *data, size_t n,
                            bool to_stdout, uint64_t stdout_before, bool succeeded,
                            const char *when, struct err **err)
{
	if (n == 0)
		return 0;
	if (to_stdout && fn_pod_check_output(p, stdout_before + n, true, err) < 0)
		return -1;
	char reason[256];
	snprintf(reason, sizeof(reason),
	         "%s: its %zu bytes written then are only in the pod log, where stdout and "
	         "stderr cannot be told apart",
	         when, n);
	if (succeeded && unproven(p, reason, err) < 0)
		return -1;
	if (to_stdout)
		log_info("%s: its %zu bytes of output come from the pod log: all of it goes to "
		         "stdout",
		         when, n);
	else
		log_info("%s: its %zu bytes of output come from the pod log and go to stderr", when,
		         n);
	return fd_write_all(to_stdout ? io->out_fd : io->err_fd, data, n,
	                    to_stdout ? "stdout" : "stderr", err);
}

int fn_output_from_log(struct fn_pod *p, const struct pod_state *st, const struct fn_io *io,
                       struct err **err)
{
	cleanup_buf struct buf log;
	buf_init(&log, 0);
	size_t total = 0;
	if (fn_pod_read_log(p, LIMIT_POD_LOG + 1, LIMIT_POD_LOG, &log, &total, err) < 0)
		return err_wrap(err, "read the log of pod %s/%s", fn_pod_namespace(p),
		                fn_pod_name(p));
	bool succeeded = st->exit_code == 0;
	if (total > LIMIT_POD_LOG) {
		char reason[160];
		snprintf(reason, sizeof(reason),
		         "the pod log is longer than %u bytes (LIMIT_POD_LOG): the rest is cut",
		         (unsigned)LIMIT_POD_LOG);
		if (succeeded && unproven(p, reason, err) < 0)
			return -1;
		if (!succeeded)
			log_warn("%s", reason);
	}
	char when[96];
	snprintf(when, sizeof(when), "the function exited (code %d) before krmpod attached",
	         st->exit_code);
	return write_log_output(p, io, log.data, log.len, succeeded, 0, succeeded, when, err);
}

int fn_output_log_split(const char *head, size_t head_len, size_t log_len, bool cut,
                        uint64_t attached, const char *prefix, size_t prefix_len, size_t *pre,
                        size_t *missing)
{
	*pre = *missing = 0;
	if (attached == 0) { /* all of it came before the attach (or the attach got nothing) */
		*pre = log_len;
		return 0;
	}
	size_t plen = prefix_len < LOG_MATCH_BYTES ? prefix_len : LOG_MATCH_BYTES;
	if (plen > attached)
		plen = (size_t)attached;
	if (plen == 0)
		return -1;
	/* Exactly what the attach delivered (stdout and stderr may be merged in another order in
	 * the log than on the stream: the same bytes all the same). A log the runtime has not
	 * written to its end yet, shorter by exactly what was written before the attach, looks
	 * the same: that coincidence is not told apart (docs/internals/pod-lifecycle.md). */
	if (!cut && log_len == attached)
		return 0;
	/* The usual case: the log is the part written before, then exactly what was attached. */
	if (!cut && log_len > attached) {
		size_t cand = log_len - (size_t)attached;
		if (cand + plen <= head_len && memcmp(head + cand, prefix, plen) == 0) {
			*pre = cand;
			return 0;
		}
	}
	/* Shorter than what was attached, the log is not written to its end yet, or it was
	 * rotated: where the attached output starts tells which. */
	const char *hit = memmem(head, head_len, prefix, plen);
	if (hit == NULL)
		return -1;
	*pre = (size_t)(hit - head);
	/* An incomplete log whose first bytes the attach delivered too (later: stdout and
	 * stderr merged in another order) cannot say what came before the attach: it must be
	 * read again once it is complete, or those bytes would be written twice. */
	if (!cut && *pre > 0 && (log_len < attached) && memmem(prefix, prefix_len, head, *pre))
		return -1;
	size_t rest = log_len - *pre;
	*missing = rest > attached ? rest - (size_t)attached : 0;
	return 0;
}

/* How long a pod log that does not line up with the attach is read again (its runtime may
 * still be writing it), and how often. */
#define LOG_SETTLE_MS      2000
#define LOG_SETTLE_STEP_MS 100

/* Reads the log again into *log (emptied first). */
static int reread_log(struct fn_pod *p, size_t limit, size_t head, struct buf *log, size_t *total)
{
	buf_reset(log);
	cleanup_err struct err *e = NULL;
	if (fn_pod_read_log(p, limit, head, log, total, &e) == 0)
		return 0;
	log_warn("could not read the pod log again (%s)", e->msg);
	return -1;
}

/* A reason the output cannot be proven complete: after a run that succeeded, unproven()
 * (fails unless the admin allowed it); after one that failed, only a warning. */
static int unproven_if(struct fn_pod *p, bool succeeded, const char *reason, struct err **err)
{
	if (succeeded)
		return unproven(p, reason, err);
	log_warn("%s", reason);
	return 0;
}

/* Reads the pod log into *log (up to `limit`, its first `head` bytes kept; *total counted)
 * and splits it against the `attached` bytes (fn_output_log_split()). The container has
 * ended, but its runtime may not have written its log to the end yet: a log that does not
 * line up is read again, for LOG_SETTLE_MS at most. Returns 0, or 1 with why not in reason. */
static int read_settled_log(struct fn_pod *p, const struct kube_stream_result *res,
                            uint64_t attached, size_t limit, size_t head, struct buf *log,
                            size_t *total, size_t *pre, size_t *missing, char *reason,
                            size_t reason_size)
{
	cleanup_err struct err *e = NULL;
	if (fn_pod_read_log(p, limit, head, log, total, &e) < 0) {
		snprintf(reason, reason_size,
		         "its pod log could not be read to recover output written before the "
		         "attach and to check that none was lost (%.560s)",
		         e->msg);
		return 1;
	}
	for (int64_t until = now_ms() + LOG_SETTLE_MS;;) {
		if (fn_output_log_split(log->data ? log->data : "", log->len, *total,
		                        *total >= limit, attached, res->prefix, res->prefix_len,
		                        pre, missing) == 0)
			return 0;
		if (now_ms() >= until || sleep_ms(LOG_SETTLE_STEP_MS, fn_pod_cancel_flag(p)) ||
		    reread_log(p, limit, head, log, total) < 0) {
			snprintf(reason, reason_size,
			         "the pod log (%zu bytes) does not line up with the %llu bytes the "
			         "attach delivered (rotated, or stdout and stderr ordered "
			         "differently): output written before the attach cannot be "
			         "recovered",
			         *total, (unsigned long long)attached);
			return 1;
		}
	}
}

/* After the function ended, its pod log is all it wrote (fn_output_log_split()): the part
 * written before the attach goes out (to stdout when `pre_to_stdout`, else stderr), and a log
 * that holds more than the attach delivered after that part fails the run: the stream ended
 * early (seen on a real 1.34 cluster: a Success close after ~190 KiB of ~215 KiB), and a
 * render must never use truncated output. The log is read up to what the attach delivered
 * plus LIMIT_PREATTACH_LOG (within LIMIT_POD_LOG). */
static int check_log_after_end(struct fn_pod *p, const struct fn_io *io,
                               const struct kube_stream_result *res, bool pre_to_stdout,
                               bool need_stdout, struct err **err)
{
	uint64_t attached = res->bytes_out + res->bytes_err;
	bool succeeded = pre_to_stdout || need_stdout; /* the function exited 0 */
	char reason[768]; /* with an API error, whose end names the missing permission */
	/* Enough to see a byte past what should be there. Only the head, where what came
	 * before the attach is, is kept: the rest is counted as it is read, so any length is
	 * checked in bounded memory. */
	const size_t head = LIMIT_PREATTACH_LOG + LOG_MATCH_BYTES;
	uint64_t want = attached + LIMIT_PREATTACH_LOG + 1;
	bool checkable = want <= (uint64_t)SIZE_MAX;
	size_t limit = checkable ? (size_t)want : head;
	cleanup_buf struct buf log;
	buf_init(&log, 0);
	size_t total = 0, pre = 0, missing = 0;
	if (read_settled_log(p, res, attached, limit, head, &log, &total, &pre, &missing, reason,
	                     sizeof(reason)) != 0)
		return unproven_if(p, succeeded, reason, err);
	if (!checkable && succeeded) {
		snprintf(reason, sizeof(reason),
		         "%llu bytes of output are more than the pod log check reads "
		         "(LIMIT_POD_LOG, "
		         "%u bytes): none lost cannot be shown",
		         (unsigned long long)attached, (unsigned)LIMIT_POD_LOG);
		if (unproven(p, reason, err) < 0)
			return -1;
	}
	if (missing > 0 && checkable)
		return err_set(err, ERR_NET,
		               "function %s: pod %s/%s: the attach stream ended after %llu bytes, "
		               "but the pod log holds %s%zu more after them: the function's output "
		               "is incomplete (the API server closed the stream early), so it is "
		               "not used",
		               fn_pod_request(p)->image, fn_pod_namespace(p), fn_pod_name(p),
		               (unsigned long long)attached, total >= limit ? "at least " : "",
		               missing);
	/* Streamed (-i): what the log holds before the attach goes to stderr, as the log
	 * cannot tell stdout from stderr. When the attach delivered no stdout at all, that part
	 * may well be the function's whole stdout (a generator that writes before it reads):
	 * never a clean run with the output gone. */
	if (need_stdout && res->bytes_out == 0 && pre > 0)
		return err_set(
		        err, ERR_NET,
		        "function %s: pod %s/%s: the attach delivered none of its stdout, and "
		        "the pod log holds %zu bytes written before krmpod attached, where "
		        "stdout and stderr cannot be told apart: the output may be "
		        "incomplete, so it is not used",
		        fn_pod_request(p)->image, fn_pod_namespace(p), fn_pod_name(p), pre);
	if (pre > log.len) {
		snprintf(reason, sizeof(reason),
		         "%zu bytes were written before the attach; only the first %zu can be "
		         "recovered",
		         pre, log.len);
		if (unproven_if(p, succeeded, reason, err) < 0)
			return -1;
		pre = log.len;
	}
	return write_log_output(p, io, log.data, pre, pre_to_stdout, res->bytes_out, succeeded,
	                        "the function wrote output before krmpod attached", err);
}

/* Where the attached output goes: straight to the caller's fds (with -i), or into two
 * private files until the function has ended (without -i: docs/internals/pod-lifecycle.md,
 * "Output from the pod log"). */
struct sink {
	bool held;
	int out, err; /* hold files, -1 when streaming */
};

/* A private file that holds a stream's output until the function has ended (unlinked at
 * once: it goes away with the descriptor). */
static int open_hold_file(const char *what, int *out, struct err **err)
{
	cleanup_free char *path = NULL;
	cleanup_free char *prefix = xasprintf("krmpod-%s", what);
	cleanup_free char *purpose = xasprintf("holding the function's %s", what);
	int fd = tmp_file_make(prefix, purpose, &path, err);
	if (fd < 0)
		return -1;
	unlink(path);
	*out = fd;
	return 0;
}

/* The channel-3 Status of an attach that reached no container: the kubelet found none
 * running (it ended before the attach, or has not started). */
static bool attach_found_no_container(const struct kube_stream_result *res)
{
	return res->got_status && !res->status_success && res->bytes_out + res->bytes_err == 0 &&
	       res->status_no_container;
}

/* Attaches to the function container. Returns 1 with *stream, or 0 when the container had
 * ended already (an attach to it is refused with 400): *st is then its terminated state and
 * its output came from the log. */
static int attach(struct fn_pod *p, struct pod_state *st, const struct fn_io *io,
                  const struct sink *k, struct kube_stream **stream, struct err **err)
{
	const struct fn_request *req = fn_pod_request(p);
	struct kube_stream_opts o = {
	        .in_fd = req->want_stdin ? io->in_fd : -1,
	        .out_fd = k->held ? k->out : io->out_fd,
	        .err_fd = k->held ? k->err : io->err_fd,
	        .capture_prefix = OVERLAP_WINDOW,
	        .out_limit = (uint64_t)fn_pod_settings(p)->max_output,
	        .out_limit_name = "KRMPOD_MAX_OUTPUT",
	};
	if (fn_pod_attach(p, POD_CONTAINER_NAME, req->want_stdin, &o, stream, err) == 0)
		return 1;
	if (fn_pod_is_cancelled(p))
		return fn_pod_cancelled(p, NULL, err);
	/* A container that ends right after it started cannot be attached to any more: then
	 * its whole output is in the log. */
	if ((*err)->code == ERR_API && (*err)->http_status == 400) {
		struct pod_state now;
		fn_pod_state(p, &now);
		if (now.cstate == CS_TERMINATED) {
			err_free(*err);
			*err = NULL;
			*st = now;
			return fn_output_from_log(p, st, io, err) < 0 ? -1 : 0;
		}
	}
	return err_wrap(err, "attach to pod %s/%s", fn_pod_namespace(p), fn_pod_name(p));
}

int fn_output_stream_failed(struct fn_pod *p, struct err **err)
{
	const char *ns = fn_pod_namespace(p), *pod = fn_pod_name(p);
	if (fn_pod_is_cancelled(p))
		return fn_pod_cancelled(p, NULL, err);
	if ((*err)->code == ERR_TIMEOUT)
		return err_wrap(
		        err,
		        "function %s: pod %s/%s: KRMPOD_TIMEOUT (%lld ms) ran out while the "
		        "function ran (its output is incomplete): raise KRMPOD_TIMEOUT",
		        fn_pod_request(p)->image, ns, pod,
		        (long long)fn_pod_settings(p)->timeout_ms);
	return err_wrap(err, "stream pod %s/%s (the function's output is incomplete)", ns, pod);
}

/* A stdout that ends as the container runtime's cut leaves it: in a pod with init
 * containers (the network gate's, the mounts': where it was seen, and every attach-mode pod
 * under the shipped settings) the runtime now and then closes the container's output pipes
 * at its exit with the last chunk still in them, and the attach and the log then end at the
 * same byte, so the log check cannot see it (docs/reliability.md, section 4). What it keeps is what it read from the pipe, in whole pages when the function
 * writes in large blocks, and the cut falls inside a line. A function's stdout is YAML or
 * JSON, which ends with a newline: a stdout that does not, or whose length is a whole number
 * of pipe pages (RUNTIME_CUT_ALIGN), cannot be told from a cut one, so it is not proven
 * complete. A cut that ends on a newline between pages is not caught (exec mode counts
 * every byte). */
#define RUNTIME_CUT_ALIGN 4096
static int check_tail(struct fn_pod *p, const struct kube_stream_result *res, struct err **err)
{
	if (res->bytes_out == 0 || !pod_has_init_containers(fn_pod_request(p), fn_pod_settings(p)))
		return 0;
	char reason[256];
	if (res->out_last != '\n')
		snprintf(reason, sizeof(reason),
		         "its stdout (%llu bytes) does not end with a newline, as the container "
		         "runtime leaves an output it cut at the exit",
		         (unsigned long long)res->bytes_out);
	else if (res->bytes_out % RUNTIME_CUT_ALIGN == 0)
		snprintf(reason, sizeof(reason),
		         "its stdout is %llu bytes, a whole number of %d-byte pipe pages, as the "
		         "container runtime leaves an output it cut at the exit",
		         (unsigned long long)res->bytes_out, RUNTIME_CUT_ALIGN);
	else
		return 0;
	return unproven(p, reason, err);
}

/* After the stream: the output only the log has, and the check that none was lost. */
static int finish(struct fn_pod *p, const struct pod_state *st, const struct fn_io *io,
                  const struct sink *k, const struct kube_stream_result *res, bool no_container,
                  struct err **err)
{
	if (no_container)
		return fn_output_from_log(p, st, io, err);
	bool ok = st->exit_code == 0;
	if (ok && check_tail(p, res, err) < 0) /* before any byte of the log goes out */
		return -1;
	if (!k->held) /* streamed: what came before the attach goes to stderr */
		return check_log_after_end(p, io, res, false, ok, err);
	/* held: what only the log has first, then the held streams */
	if (check_log_after_end(p, io, res, ok, false, err) < 0 ||
	    fd_copy_from_start(k->out, io->out_fd, "stdout", err) < 0)
		return -1;
	return fd_copy_from_start(k->err, io->err_fd, "stderr", err);
}

int fn_output_stream(struct fn_pod *p, struct pod_state *st, const struct fn_io *io,
                     struct err **err)
{
	/* Without -i the output is held until the end; with -i it streams. */
	struct sink k = {.held = !fn_pod_request(p)->want_stdin, .out = -1, .err = -1};
	cleanup_close int hold_out = -1, hold_err = -1;
	if (k.held && (open_hold_file("stdout", &hold_out, err) < 0 ||
	               open_hold_file("stderr", &hold_err, err) < 0))
		return -1;
	k.out = hold_out;
	k.err = hold_err;
	/* Early: attached on the kubelet's Started event while the status still says the
	 * container waits. */
	bool early = st->cstate != CS_RUNNING;
	struct kube_stream *stream = NULL;
	int rc = attach(p, st, io, &k, &stream, err);
	if (rc <= 0)
		return rc;
	fn_pod_mark_attached(p, now_ms());
	if (early)
		log_debug("attached on the kubelet's Started event; the pod status still says %s",
		          st->c_reason[0] ? st->c_reason : "nothing of the container");
	struct kube_stream_result res = {0};
	rc = kube_stream_run(stream, &res, err);
	kube_stream_free(stream);
	log_debug("attach: %llu bytes in, %llu out, %llu err", (unsigned long long)res.bytes_in,
	          (unsigned long long)res.bytes_out, (unsigned long long)res.bytes_err);
	/* An early attach can find the container gone already: it ran and ended between its
	 * start and the attach. Then all of its output is in the log. */
	bool no_container = rc == 0 && attach_found_no_container(&res);
	if (no_container) {
		log_debug("attach: %s", res.status_message);
		fn_pod_mark_attached(p, 0); /* it reached nothing */
	}
	if (rc == 0) {
		/* After "no container" the runtime has no running one: its end reaches the status
		 * at the next relist (a status that still says running is a relist behind). */
		rc = fn_pod_wait_exit(p, st, err);
		if (rc < 0 && no_container)
			err_wrap(err, "the attach found no running container (%s)",
			         res.status_message);
	} else {
		fn_output_stream_failed(p, err);
	}
	if (rc == 0)
		rc = finish(p, st, io, &k, &res, no_container, err);
	else if (k.held) /* failed: what the function said on stderr may explain it */
		fd_copy_from_start(k.err, io->err_fd, "stderr", NULL);
	kube_stream_result_clear(&res);
	return rc;
}

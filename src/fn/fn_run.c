/* fn_run.c — see fn_run.h and docs/internals/pod-lifecycle.md. */
#include "fn/fn_run.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/fdio.h"
#include "base/json.h"
#include "base/log.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "fn/fn_config.h"
#include "fn/fn_mounts.h"
#include "fn/prestart.h"
#include "kube/kube_http.h"
#include "kube/kube_stream.h"
#include "kube/kube_watch.h"
#include "pod/pod_spec.h"

/* Bytes of attach output kept to line it up with the pod log after the end. */
#define OVERLAP_WINDOW (64u << 10)
/* How much of that start of the attached output is looked for in the log: short enough
 * that stdout and stderr rarely interleave in it, long enough to be unambiguous. */
#define LOG_MATCH_BYTES 256
/* Time allowed for deleting the pod after everything else, including after a signal. */
#define DELETE_DEADLINE_MS 1500
/* How often a create refused by a full ResourceQuota is tried again. */
#define QUOTA_RETRY_MS 500
/* Time to wait for the terminated status after the attach stream ended. */
#define EXIT_STATUS_WAIT_MS 30000

struct run {
	struct kube_config *cfg;
	const struct settings *s;
	const char *ns;
	const struct fn_request *req;
	const struct fn_io *io;
	struct kube_client *client;
	struct pod_watch *watch;
	char *pod;
	int64_t t0, deadline, start_deadline;
	int64_t t_attached, t_done;
	bool early_attach; /* attached on the Started event, before the status said Running */
	unsigned stream_requests; /* WebSocket connections (not made through r->client) */
};

static int cancelled(struct run *r, struct err **err);

/* The 403 a full ResourceQuota gives: "... is forbidden: exceeded quota: NAME, ...". */
static bool quota_full(const struct err *e)
{
	return e->code == ERR_API && e->http_status == 403 && strstr(e->msg, "exceeded quota");
}

static int create_pod(struct run *r, struct err **err)
{
	cleanup_buf struct buf body;
	buf_init(&body, 0);
	pod_spec_build(r->req, r->s, &body);
	log_debug("pod spec: %s", body.data);
	cleanup_json struct json *pod = NULL;
	bool waited = false;
	while (kube_pod_create(r->client, r->ns, body.data, body.len, &pod, err) < 0) {
		/* A full ResourceQuota frees up as other functions end: wait for room within the
		 * start timeout instead of failing the render. */
		if (!quota_full(*err) || now_ms() + QUOTA_RETRY_MS >= r->start_deadline)
			return err_wrap(err, "create the function pod in namespace %s", r->ns);
		if (!waited)
			log_info("the namespace's ResourceQuota is full (%s); waiting for room, at "
			         "most KRMPOD_START_TIMEOUT",
			         (*err)->msg);
		waited = true;
		err_free(*err);
		*err = NULL;
		int64_t until = now_ms() + QUOTA_RETRY_MS;
		while (now_ms() < until && !*r->io->cancel)
			usleep(20 * 1000);
		if (*r->io->cancel)
			return cancelled(r, err);
	}
	r->pod = xstrdup(json_str(json_path(pod, "metadata.name")));
	log_set_pod(r->pod);
	log_debug("created pod %s/%s for image %s", r->ns, r->pod, r->req->image);
	if (pod_watch_start(r->cfg, r->ns, r->pod, POD_CONTAINER_NAME, pod, &r->watch, err) < 0)
		return err_wrap(err, "watch pod %s", r->pod);
	return 0;
}

/* Takes a pod `krmpod generate` started ahead for exactly this request (prestart.h), if
 * there is one: returns 1 with r->pod and r->watch set, 0 when there is none, -1 when the
 * claimed pod cannot be watched (r->pod is set: it is deleted like any other). */
static int claim_pod(struct run *r, struct err **err)
{
	if (r->s->prestart_dir == NULL)
		return 0;
	char *pod = prestart_claim(r->s->prestart_dir, fn_config_key(r->req, r->s), r->io->cancel);
	if (pod == NULL)
		return 0;
	r->pod = pod;
	log_set_pod(r->pod);
	log_debug("claimed pod %s/%s, started ahead by generate", r->ns, r->pod);
	if (pod_watch_start(r->cfg, r->ns, r->pod, POD_CONTAINER_NAME, NULL, &r->watch, err) < 0)
		return err_wrap(err, "watch pod %s", r->pod);
	return 1;
}

/* Names the failure of a pod that cannot start, with the cluster's reason and message. */
static int start_failure(struct run *r, const struct pod_state *st, struct err **err)
{
	err_set(err, ERR_POD, "function %s: pod %s/%s cannot start: %s: %s", r->req->image, r->ns,
	        r->pod, st->c_reason, st->c_message[0] ? st->c_message : "(no message)");
	snprintf((*err)->reason, sizeof((*err)->reason), "%s", st->c_reason);
	return -1;
}

static int not_started(struct run *r, const struct pod_state *st, bool overall, struct err **err)
{
	const char *what = overall ? "KRMPOD_TIMEOUT" : "KRMPOD_START_TIMEOUT";
	int64_t limit = overall ? r->s->timeout_ms : r->s->start_timeout_ms;
	char detail[2700];
	if (!st->scheduled && st->sched_reason[0])
		snprintf(detail, sizeof(detail), "not scheduled: %s: %s", st->sched_reason,
		         st->sched_message);
	else if (st->cstate == CS_WAITING && st->c_reason[0])
		snprintf(detail, sizeof(detail), "container waiting: %s%s%s", st->c_reason,
		         st->c_message[0] ? ": " : "", st->c_message);
	else
		snprintf(detail, sizeof(detail), "phase %s", st->phase[0] ? st->phase : "unknown");
	err_set(err, ERR_TIMEOUT,
	        "function %s: pod %s/%s did not start within %lld ms (%s): %s; raise %s if the "
	        "cluster is slow to start pods",
	        r->req->image, r->ns, r->pod, (long long)limit, what, detail, what);
	snprintf((*err)->reason, sizeof((*err)->reason), "%s",
	         st->sched_reason[0] ? st->sched_reason : st->c_reason);
	return -1;
}

static int cancelled(struct run *r, struct err **err)
{
	int signo = *r->io->cancel;
	err_set(err, ERR_SIGNAL, "function %s: interrupted by signal %d", r->req->image, signo);
	(*err)->signo = signo;
	return -1;
}

/* Failure of a pod that stopped on the cluster's account (deadline, eviction). */
static int pod_failed(struct run *r, const struct pod_state *st, struct err **err)
{
	err_set(err, ERR_POD, "function %s: pod %s/%s failed: %s: %s", r->req->image, r->ns, r->pod,
	        st->pod_reason[0] ? st->pod_reason : st->c_reason,
	        st->pod_message[0] ? st->pod_message : st->c_message);
	snprintf((*err)->reason, sizeof((*err)->reason), "%s",
	         st->pod_reason[0] ? st->pod_reason : st->c_reason);
	return -1;
}

/* Waits until the container runs or has terminated. */
static int wait_started(struct run *r, struct pod_state *st, struct err **err)
{
	uint64_t seen = 0;
	int64_t pull_since = 0;
	for (;;) {
		int64_t now = now_ms();
		int64_t until = min64(r->start_deadline, r->deadline);
		int64_t recheck = 0;
		if (st->generation > 0 && st->cstate == CS_WAITING &&
		    pod_waiting_is_fatal(st->c_reason, &pull_since, now, &recheck))
			return start_failure(r, st, err);
		if (recheck)
			until = min64(until, recheck);
		int rc = pod_watch_wait(r->watch, seen, until, r->io->cancel, st, err);
		if (rc < 0)
			return err_wrap(err, "watch pod %s/%s", r->ns, r->pod);
		if (*r->io->cancel)
			return cancelled(r, err);
		seen = st->generation;
		/* The kubelet's Started event comes up to a relist (~1 s) before the status:
		 * attaching then is the early attach (pod-lifecycle.md). */
		if (st->cstate == CS_RUNNING || st->cstate == CS_TERMINATED || st->started_event)
			return 0;
		if (st->deleted)
			return err_set(err, ERR_POD,
			               "function %s: pod %s/%s was deleted before it started",
			               r->req->image, r->ns, r->pod);
		if (strcmp(st->phase, "Failed") == 0)
			return pod_failed(r, st, err);
		now = now_ms();
		if (now >= r->deadline)
			return not_started(r, st, true, err);
		if (now >= r->start_deadline)
			return not_started(r, st, false, err);
		if (st->cstate == CS_WAITING &&
		    pod_waiting_is_fatal(st->c_reason, &pull_since, now, &recheck))
			return start_failure(r, st, err);
	}
}

/* Waits for the terminated state after the output streams ended. */
static int wait_terminated(struct run *r, struct pod_state *st, struct err **err)
{
	int64_t until = min64(r->deadline, now_ms() + EXIT_STATUS_WAIT_MS);
	uint64_t seen = st->generation;
	while (st->cstate != CS_TERMINATED) {
		if (st->deleted)
			return err_set(
			        err, ERR_POD,
			        "function %s: pod %s/%s was deleted before its exit status was "
			        "known",
			        r->req->image, r->ns, r->pod);
		int rc = pod_watch_wait(r->watch, seen, until, r->io->cancel, st, err);
		if (rc < 0)
			return err_wrap(err, "watch pod %s/%s", r->ns, r->pod);
		if (*r->io->cancel)
			return cancelled(r, err);
		seen = st->generation;
		if (rc == 1 && st->cstate != CS_TERMINATED)
			return err_set(
			        err, ERR_TIMEOUT,
			        "function %s: pod %s/%s: output ended but the container did not "
			        "terminate within %lld ms",
			        r->req->image, r->ns, r->pod, (long long)(until - r->t0));
	}
	return 0;
}

struct log_sink {
	struct buf *b;
	size_t limit; /* bytes kept in b */
	size_t total; /* bytes received (kept or not) */
	bool truncated;
	bool count_on; /* past `limit`, go on counting instead of stopping */
};

static int log_sink_data(const char *data, size_t len, void *ud)
{
	struct log_sink *sink = ud;
	sink->total += len;
	size_t room = sink->limit - sink->b->len;
	if (len > room) {
		len = room;
		sink->truncated = true;
	}
	buf_append(sink->b, data, len, "pod log", NULL);
	return sink->truncated && !sink->count_on ? 1 : 0;
}

/* GETs the container log (at most `limit` bytes, itself at most LIMIT_POD_LOG; more is cut
 * with a warning). */
static int fetch_log(struct run *r, size_t limit, struct buf *out, struct err **err)
{
	cleanup_free char *path =
	        xasprintf("/api/v1/namespaces/%s/pods/%s/log?container=%s&limitBytes=%zu", r->ns,
	                  r->pod, POD_CONTAINER_NAME, limit);
	buf_reset(out);
	out->limit = limit;
	struct log_sink sink = {.b = out, .limit = limit};
	if (kube_stream_get(r->client, path, log_sink_data, &sink, err) < 0)
		return -1;
	if (sink.truncated && limit == LIMIT_POD_LOG)
		log_warn("the pod log is longer than %u bytes; the rest is cut",
		         (unsigned)LIMIT_POD_LOG);
	return 0;
}

/* GETs the log up to `limit` bytes (limitBytes), keeping only its first `head` bytes in out
 * (memory stays bounded whatever the output) and its length in *total. */
static int fetch_log_head(struct run *r, size_t limit, size_t head, struct buf *out, size_t *total,
                          struct err **err)
{
	cleanup_free char *path =
	        xasprintf("/api/v1/namespaces/%s/pods/%s/log?container=%s&limitBytes=%zu", r->ns,
	                  r->pod, POD_CONTAINER_NAME, limit);
	buf_reset(out);
	out->limit = head;
	struct log_sink sink = {.b = out, .limit = head, .count_on = true};
	if (kube_stream_get(r->client, path, log_sink_data, &sink, err) < 0)
		return -1;
	*total = sink.total;
	return 0;
}

/* Output that only the pod log holds (docs/internals/pod-lifecycle.md, "Output from the pod
 * log"): the log is stdout and stderr merged, so krmpod must pick one stream for all of it.
 * It goes to stdout when the function succeeded (or, written before the attach, when it did
 * not wait for input: docker run without -i) — its output is then its result — and to stderr
 * otherwise. Putting it on stdout is said once, as a warning, since stderr lines may be in
 * it; stderr is the safe side and needs no warning. */
static int write_log_output(struct run *r, const char *data, size_t n, bool to_stdout,
                            const char *when, struct err **err)
{
	if (n == 0)
		return 0;
	if (to_stdout)
		log_warn("%s: its %zu bytes of output come from the pod log, where stdout "
		         "and stderr cannot be told apart: all of it goes to stdout",
		         when, n);
	else
		log_info("%s: its %zu bytes of output come from the pod log and go to stderr", when,
		         n);
	return fd_write_all(to_stdout ? r->io->out_fd : r->io->err_fd, data, n,
	                    to_stdout ? "stdout" : "stderr", err);
}

/* The container ended before we could attach: all of its output is in the log. */
static int replay_log(struct run *r, const struct pod_state *st, struct err **err)
{
	cleanup_buf struct buf log;
	buf_init(&log, 0);
	if (fetch_log(r, LIMIT_POD_LOG, &log, err) < 0)
		return err_wrap(err, "read the log of pod %s/%s", r->ns, r->pod);
	char when[96];
	snprintf(when, sizeof(when), "the function exited (code %d) before krmpod attached",
	         st->exit_code);
	return write_log_output(r, log.data, log.len, st->exit_code == 0, when, err);
}

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

int fn_run_log_split(const char *head, size_t head_len, size_t log_len, bool cut, uint64_t attached,
                     const char *prefix, size_t prefix_len, size_t *pre, size_t *missing)
{
	*pre = *missing = 0;
	if (attached == 0) { /* all of it came before the attach (or the attach got nothing) */
		*pre = log_len;
		return 0;
	}
	if (!cut && log_len == attached)
		return 0; /* exactly what the attach delivered */
	if (!cut && log_len < attached)
		return -1; /* the kubelet rotated the log: it cannot be checked */
	size_t plen = prefix_len < LOG_MATCH_BYTES ? prefix_len : LOG_MATCH_BYTES;
	if (plen > attached)
		plen = (size_t)attached;
	if (plen == 0)
		return -1;
	/* The usual case: the log is the part written before, then exactly what was attached. */
	if (!cut && log_len > attached) {
		size_t cand = log_len - (size_t)attached;
		if (cand + plen <= head_len && memcmp(head + cand, prefix, plen) == 0) {
			*pre = cand;
			return 0;
		}
	}
	const char *hit = memmem(head, head_len, prefix, plen);
	if (hit == NULL)
		return -1;
	*pre = (size_t)(hit - head);
	size_t rest = log_len - *pre;
	*missing = rest > attached ? rest - (size_t)attached : 0;
	return 0;
}

/* After the function ended, its pod log is all it wrote (fn_run_log_split()): the part
 * written before the attach goes out (to stdout when `pre_to_stdout`, else stderr), and a log
 * that holds more than the attach delivered after that part fails the run: the stream ended
 * early (seen on a real 1.34 cluster: a Success close after ~190 KiB of ~215 KiB), and a
 * render must never use truncated output. The log is read up to what the attach delivered
 * plus LIMIT_PREATTACH_LOG (within LIMIT_POD_LOG). */
static int check_log_after_end(struct run *r, const struct kube_stream_result *res,
                               bool pre_to_stdout, struct err **err)
{
	uint64_t attached = res->bytes_out + res->bytes_err;
	/* Enough to see a byte past what should be there; for a larger output only the head,
	 * where what came before the attach is, and no check of the rest. */
	const size_t head = LIMIT_PREATTACH_LOG + LOG_MATCH_BYTES;
	uint64_t want = attached + LIMIT_PREATTACH_LOG + 1;
	bool checkable = want <= LIMIT_POD_LOG;
	size_t limit = checkable ? (size_t)want : head;
	cleanup_buf struct buf log;
	buf_init(&log, 0);
	cleanup_err struct err *e = NULL;
	size_t total = 0;
	if (fetch_log_head(r, limit, head, &log, &total, &e) < 0) {
		log_warn("could not read the pod log to recover output written before the attach "
		         "and to check that none was lost (%s)",
		         e->msg);
		return 0;
	}
	size_t pre = 0, missing = 0;
	if (fn_run_log_split(log.data ? log.data : "", log.len, total, total >= limit, attached,
	                     res->prefix, res->prefix_len, &pre, &missing) < 0) {
		log_debug("the pod log (%zu bytes) does not line up with the %llu bytes the attach "
		          "delivered (rotated, or stdout and stderr ordered differently): not "
		          "checked",
		          total, (unsigned long long)attached);
		return 0;
	}
	if (!checkable)
		log_debug(
		        "%llu bytes of output: only the start of the pod log was read, not checked",
		        (unsigned long long)attached);
	if (missing > 0 && checkable)
		return err_set(err, ERR_NET,
		               "function %s: pod %s/%s: the attach stream ended after %llu bytes, "
		               "but the pod log holds %s%zu more after them: the function's output "
		               "is incomplete (the API server closed the stream early), so it is "
		               "not used",
		               r->req->image, r->ns, r->pod, (unsigned long long)attached,
		               total >= limit ? "at least " : "", missing);
	if (pre > log.len) {
		log_warn("%zu bytes were written before the attach; only the first %zu are "
		         "recovered",
		         pre, log.len);
		pre = log.len;
	}
	return write_log_output(r, log.data, pre, pre_to_stdout,
	                        "the function wrote output before krmpod attached", err);
}

/* docker run without -i (docs/internals/pod-lifecycle.md, "Output from the pod log"): the
 * function ran from its start, not waiting for an attach, so the beginning of its output
 * may exist only in the pod log. Its attached output was held; now that it has ended and
 * its log is complete, the part only the log has is written first, then the held streams. */
static int release_held(struct run *r, const struct pod_state *st,
                        const struct kube_stream_result *res, int hold_out, int hold_err,
                        struct err **err)
{
	if (check_log_after_end(r, res, st->exit_code == 0, err) < 0)
		return -1;
	if (fd_copy_from_start(hold_out, r->io->out_fd, "stdout", err) < 0)
		return -1;
	return fd_copy_from_start(hold_err, r->io->err_fd, "stderr", err);
}

/* The channel-3 Status of an attach that reached no container: the kubelet found none
 * running (it ended before the attach, or has not started). */
static bool attach_found_no_container(const struct kube_stream_result *res)
{
	return res->got_status && !res->status_success && res->bytes_out + res->bytes_err == 0 &&
	       strstr(res->status_message, "not found") != NULL;
}

static int attach_and_stream(struct run *r, struct pod_state *st, int *exit_code, struct err **err)
{
	/* Without -i the output is held until the end (release_held); with -i it streams. */
	bool held = !r->req->want_stdin;
	/* Early: attached on the kubelet's Started event while the status still says the
	 * container waits; the log cannot be read before the status catches up. */
	bool early = st->cstate != CS_RUNNING;
	cleanup_close int hold_out = -1, hold_err = -1;
	if (held && (open_hold_file("stdout", &hold_out, err) < 0 ||
	             open_hold_file("stderr", &hold_err, err) < 0))
		return -1;
	cleanup_free char *path =
	        kube_attach_path(r->ns, r->pod, POD_CONTAINER_NAME, r->req->want_stdin);
	struct kube_stream_opts opts = {
	        .path = path,
	        .in_fd = r->req->want_stdin ? r->io->in_fd : -1,
	        .out_fd = held ? hold_out : r->io->out_fd,
	        .err_fd = held ? hold_err : r->io->err_fd,
	        .capture_prefix = OVERLAP_WINDOW,
	        .cancel = r->io->cancel,
	        .deadline_ms = r->deadline,
	};
	struct kube_stream *stream = NULL;
	r->stream_requests++;
	if (kube_stream_open(r->cfg, &opts, &stream, err) < 0) {
		if (*r->io->cancel)
			return cancelled(r, err);
		/* A container that ends right after it started cannot be attached to any more:
		 * then its whole output is in the log. */
		if ((*err)->code == ERR_API && (*err)->http_status == 400) {
			struct pod_state now;
			cleanup_err struct err *e2 = NULL;
			if (pod_watch_wait(r->watch, 0, now_ms(), NULL, &now, &e2) >= 0 &&
			    now.cstate == CS_TERMINATED) {
				err_free(*err);
				*err = NULL;
				*st = now;
				if (replay_log(r, st, err) < 0)
					return -1;
				*exit_code = st->exit_code;
				return 0;
			}
		}
		return err_wrap(err, "attach to pod %s/%s", r->ns, r->pod);
	}
	r->t_attached = now_ms();
	r->early_attach = early;
	if (early)
		log_debug("attached on the kubelet's Started event; the pod status still says %s",
		          st->c_reason[0] ? st->c_reason : "nothing of the container");
	struct kube_stream_result res = {0};
	int rc = kube_stream_run(stream, &res, err);
	kube_stream_free(stream);
	log_debug("attach: %llu bytes in, %llu out, %llu err", (unsigned long long)res.bytes_in,
	          (unsigned long long)res.bytes_out, (unsigned long long)res.bytes_err);
	/* An early attach can find the container gone already: it ran and ended between its
	 * start and the attach. Then all of its output is in the log. */
	bool no_container = rc == 0 && attach_found_no_container(&res);
	if (no_container) {
		log_debug("attach: %s", res.status_message);
		r->t_attached = 0; /* it reached nothing */
	}
	if (rc == 0) {
		/* After "no container" the runtime has no running one: its end reaches the status
		 * at the next relist (a status that still says running is a relist behind). */
		rc = wait_terminated(r, st, err);
		if (rc < 0 && no_container)
			err_wrap(err, "the attach found no running container (%s)",
			         res.status_message);
	} else if (*r->io->cancel) {
		rc = cancelled(r, err);
	} else if ((*err)->code == ERR_TIMEOUT) {
		err_wrap(err,
		         "function %s: pod %s/%s: KRMPOD_TIMEOUT (%lld ms) ran out while the "
		         "function ran (its output is incomplete): raise KRMPOD_TIMEOUT",
		         r->req->image, r->ns, r->pod, (long long)r->s->timeout_ms);
	} else {
		err_wrap(err, "stream pod %s/%s (the function's output is incomplete)", r->ns,
		         r->pod);
	}
	if (rc == 0 && no_container)
		rc = replay_log(r, st, err);
	else if (held && rc == 0)
		rc = release_held(r, st, &res, hold_out, hold_err, err);
	else if (held) /* failed: what the function said on stderr may explain it */
		fd_copy_from_start(hold_err, r->io->err_fd, "stderr", NULL);
	else if (rc == 0) /* streamed: what came before the attach goes to stderr */
		rc = check_log_after_end(r, &res, false, err);
	kube_stream_result_clear(&res);
	if (rc < 0)
		return -1;
	*exit_code = st->exit_code;
	return 0;
}

/* Sends the bind mounts into the pod's `mounts` init container (fn_mounts.h). */
static int deliver_mounts(struct run *r, const struct mount_plan *plan, struct err **err)
{
	struct fn_mounts_pod mp = {
	        .cfg = r->cfg,
	        .ns = r->ns,
	        .pod = r->pod,
	        .image = r->req->image,
	        .helper_image = r->s->helper_image,
	        .watch = r->watch,
	        .cancel = r->io->cancel,
	        .err_fd = r->io->err_fd,
	        .deadline = r->deadline,
	        .start_deadline = r->start_deadline,
	};
	struct fn_mounts_result res;
	int rc = fn_mounts_deliver(&mp, plan, &res, err);
	r->stream_requests += res.stream_requests;
	r->start_deadline += res.transfer_ms; /* sending files is not starting the pod */
	return rc;
}

static int run_pod(struct run *r, int *exit_code, struct err **err)
{
	/* Mounts are checked and measured before any pod exists. */
	cleanup_mount_plan struct mount_plan *plan = NULL;
	if (fn_mounts_prepare(r->req, r->s, &plan, err) < 0)
		return -1;
	if (*r->io->cancel) /* signalled before anything exists: make nothing */
		return cancelled(r, err);
	int claimed = plan == NULL ? claim_pod(r, err) : 0;
	if (claimed < 0 || (claimed == 0 && create_pod(r, err) < 0))
		return -1;
	if (*r->io->cancel)
		return cancelled(r, err);
	if (plan && deliver_mounts(r, plan, err) < 0)
		return -1;
	struct pod_state st = {0};
	if (wait_started(r, &st, err) < 0)
		return -1;
	if (st.cstate == CS_TERMINATED) {
		if (replay_log(r, &st, err) < 0)
			return -1;
		*exit_code = st.exit_code;
	} else if (attach_and_stream(r, &st, exit_code, err) < 0) {
		return -1;
	}
	r->t_done = now_ms();
	if (strcmp(st.c_reason, "OOMKilled") == 0) {
		err_set(err, ERR_POD,
		        "function %s: pod %s/%s was OOMKilled (exit code %d): raise "
		        "KRMPOD_MEMORY_LIMIT (now %s)",
		        r->req->image, r->ns, r->pod, st.exit_code, r->s->memory_limit);
		snprintf((*err)->reason, sizeof((*err)->reason), "OOMKilled");
		*exit_code = st.exit_code ? st.exit_code : 137;
		return -1;
	}
	if (strcmp(st.pod_reason, "DeadlineExceeded") == 0)
		return pod_failed(r, &st, err);
	return 0;
}

static int delete_pod(struct run *r, struct err **err)
{
	kube_client_set_cancel(r->client, NULL);
	kube_client_set_deadline(r->client, now_ms() + DELETE_DEADLINE_MS);
	if (kube_pod_delete(r->client, r->ns, r->pod, err) < 0)
		return err_wrap(err,
		                "delete pod %s/%s (it ends by itself after activeDeadlineSeconds; "
		                "`krmpod gc` removes leftovers)",
		                r->ns, r->pod);
	return 0;
}

/* When the container was first known to run: the Started event or the status. */
static int64_t started_at(const struct pod_state *st)
{
	if (st->t_started_event && (st->t_running == 0 || st->t_started_event < st->t_running))
		return st->t_started_event;
	return st->t_running;
}

static int64_t since(const struct run *r, int64_t t)
{
	return t ? t - r->t0 : -1;
}

int fn_run(struct kube_config *cfg, const struct settings *s, const char *ns,
           const struct fn_request *req, const struct fn_io *io, int *exit_code, struct err **err)
{
	struct run r = {.cfg = cfg, .s = s, .ns = ns, .req = req, .io = io};
	*exit_code = -1;
	r.t0 = now_ms();
	r.deadline = r.t0 + s->timeout_ms;
	r.start_deadline = r.t0 + s->start_timeout_ms;
	if (kube_client_new(cfg, &r.client, err) < 0)
		return -1;
	kube_client_set_deadline(r.client, r.deadline);
	kube_client_set_cancel(r.client, io->cancel);

	int rc = run_pod(&r, exit_code, err);

	struct pod_state st = {0};
	unsigned watch_requests = 0;
	if (r.watch) {
		pod_watch_wait(r.watch, 0, now_ms(), NULL, &st, NULL);
		watch_requests = pod_watch_requests(r.watch);
	}
	if (r.pod) {
		cleanup_err struct err *derr = NULL;
		if (delete_pod(&r, &derr) < 0) {
			if (rc == 0) {
				*err = derr;
				derr = NULL;
				rc = -1;
			} else {
				log_error("%s", derr->msg);
			}
		}
		unsigned requests =
		        kube_client_requests(r.client) + r.stream_requests + watch_requests;
		/* The line's prefix names the pod (log_set_pod). */
		log_info("image=%s scheduled=%lldms started=%lldms attached=%lldms "
		         "finished=%lldms exit=%d requests=%u",
		         req->image, (long long)since(&r, st.t_scheduled),
		         (long long)since(&r, started_at(&st)), (long long)since(&r, r.t_attached),
		         (long long)since(&r, r.t_done ? r.t_done : now_ms()), *exit_code,
		         requests);
		log_set_pod(NULL);
	}
	/* Stopped after the delete: joining the watch thread takes up to one 50 ms slice, which
	 * the pod's deletion need not wait for. */
	pod_watch_stop(r.watch);
	free(r.pod);
	kube_client_free(r.client);
	return rc;
}

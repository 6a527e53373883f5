/* fn_mounts.c — see fn_mounts.h.
 *
 * Threads: the tar is written by a writer thread into a pipe whose read end is the attach's
 * stdin (kube_attach reads it in chunks and sends each as one stdin message), so memory stays
 * bounded whatever the size of the mounts. The writer ends by closing its end of the pipe
 * after the tar's end marker; the helper stops reading at the marker and exits. If the
 * stream ends first (the helper failed), closing the read end stops the writer (EPIPE).
 */
#include "fn/fn_mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/xalloc.h"
#include "kube/kube_http.h"
#include "kube/kube_stream.h"
#include "pod/pod_mounts.h"

/* Time for the helper's exit to show in the pod status once its stream ended. */
#define DONE_WAIT_MS 30000

int fn_mounts_prepare(const struct fn_request *req, const struct settings *s,
                      struct mount_plan **out, struct err **err)
{
	*out = NULL;
	if (!pod_mounts_need_helper(req))
		return 0;
	if (s->helper_image == NULL) {
		const char *spec = "";
		for (size_t i = 0; i < req->n_mounts && !spec[0]; i++)
			if (req->mounts[i].type == FN_MOUNT_BIND)
				spec = req->mounts[i].spec;
		return err_set(err, ERR_CONFIG,
		               "function %s mounts files (--mount %s), but KRMPOD_HELPER_IMAGE is "
		               "not set: set it to krmpod's own image (the sidecar image), whose "
		               "`krmpod unpack` receives the files in the function pod",
		               req->image, spec);
	}
	char cwd[PATH_MAX];
	if (getcwd(cwd, sizeof(cwd)) == NULL)
		return err_set(err, ERR_IO, "mounts: the working directory: %s", strerror(errno));
	return mount_plan_build(req, cwd, s->mount_max_bytes, out, err);
}

static bool is_helper(const struct pod_state *st)
{
	return strcmp(st->init_name, POD_MOUNTS_CONTAINER_NAME) == 0;
}

static int cancelled(const struct fn_mounts_pod *p, struct err **err)
{
	int signo = *p->cancel;
	err_set(err, ERR_SIGNAL,
	        "function %s: interrupted by signal %d while delivering its mounts", p->image,
	        signo);
	(*err)->signo = signo;
	return -1;
}

/* The last non-empty line of a termination message (the helper's error). */
static void last_line(const char *msg, char *out, size_t size)
{
	size_t n = strlen(msg);
	while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
		n--;
	size_t start = n;
	while (start > 0 && msg[start - 1] != '\n')
		start--;
	snprintf(out, size, "%.*s", (int)(n - start), msg + start);
}

static int helper_failed(const struct fn_mounts_pod *p, const struct pod_state *st,
                         struct err **err)
{
	char line[1024];
	last_line(st->init_message, line, sizeof(line));
	err_set(err, ERR_POD,
	        "function %s: the mounts helper (`krmpod unpack` in %s, KRMPOD_HELPER_IMAGE) of "
	        "pod %s/%s failed with exit code %d%s%s",
	        p->image, p->helper_image, p->ns, p->pod, st->init_exit_code, line[0] ? ": " : "",
	        line);
	snprintf((*err)->reason, sizeof((*err)->reason), "%s",
	         st->init_reason[0] ? st->init_reason : "Error");
	return -1;
}

static int pod_gone_or_failed(const struct fn_mounts_pod *p, const struct pod_state *st,
                              struct err **err)
{
	if (st->deleted)
		return err_set(err, ERR_POD,
		               "function %s: pod %s/%s was deleted while its mounts "
		               "were delivered",
		               p->image, p->ns, p->pod);
	err_set(err, ERR_POD,
	        "function %s: pod %s/%s failed while its mounts were delivered: %s: %s", p->image,
	        p->ns, p->pod, st->pod_reason[0] ? st->pod_reason : st->phase,
	        st->pod_message[0] ? st->pod_message : "(no message)");
	snprintf((*err)->reason, sizeof((*err)->reason), "%s", st->pod_reason);
	return -1;
}

/* Looks at the state while waiting for the helper to run: 1 = it runs, 0 = wait on, -1 =
 * failed. */
static int check_starting(const struct fn_mounts_pod *p, const struct pod_state *st,
                          int64_t *pull_since, int64_t now, int64_t *recheck, struct err **err)
{
	if (is_helper(st) && st->init_cstate == CS_RUNNING)
		return 1;
	if (is_helper(st) && st->init_cstate == CS_TERMINATED)
		return helper_failed(p, st, err);
	if (is_helper(st) && st->init_cstate == CS_WAITING &&
	    pod_waiting_is_fatal(st->init_reason, pull_since, now, recheck)) {
		err_set(err, ERR_POD,
		        "function %s: the mounts helper of pod %s/%s cannot start: %s: %s (the "
		        "image is KRMPOD_HELPER_IMAGE=%s: it must be krmpod's own image, pullable "
		        "by "
		        "the nodes)",
		        p->image, p->ns, p->pod, st->init_reason,
		        st->init_message[0] ? st->init_message : "(no message)", p->helper_image);
		snprintf((*err)->reason, sizeof((*err)->reason), "%s", st->init_reason);
		return -1;
	}
	if (st->deleted || strcmp(st->phase, "Failed") == 0)
		return pod_gone_or_failed(p, st, err);
	if (st->init_done || st->cstate == CS_RUNNING || st->cstate == CS_TERMINATED)
		return err_set(err, ERR_POD,
		               "function %s: pod %s/%s: the mounts helper ended before it received "
		               "the files",
		               p->image, p->ns, p->pod);
	return 0;
}

static int wait_running(const struct fn_mounts_pod *p, struct pod_state *st, struct err **err)
{
	uint64_t seen = 0;
	int64_t pull_since = 0;
	for (;;) {
		int64_t now = now_ms(), recheck = 0;
		if (st->generation > 0) {
			int rc = check_starting(p, st, &pull_since, now, &recheck, err);
			if (rc != 0)
				return rc < 0 ? -1 : 0;
		}
		if (now >= p->deadline || now >= p->start_deadline) {
			const char *what =
			        now >= p->deadline ? "KRMPOD_TIMEOUT" : "KRMPOD_START_TIMEOUT";
			char detail[600];
			if (st->init_reason[0])
				snprintf(detail, sizeof(detail), "%s%s%.500s", st->init_reason,
				         st->init_message[0] ? ": " : "", st->init_message);
			else
				snprintf(detail, sizeof(detail), "phase %s",
				         st->phase[0] ? st->phase : "unknown");
			return err_set(
			        err, ERR_TIMEOUT,
			        "function %s: the mounts helper (KRMPOD_HELPER_IMAGE=%s) of pod "
			        "%s/%s did not start within %s: %s; raise %s if the cluster is "
			        "slow to start pods",
			        p->image, p->helper_image, p->ns, p->pod, what, detail, what);
		}
		int64_t until = min64(p->start_deadline, p->deadline);
		if (recheck)
			until = min64(until, recheck);
		if (pod_watch_wait(p->watch, seen, until, p->cancel, st, err) < 0)
			return err_wrap(err, "watch pod %s/%s", p->ns, p->pod);
		if (*p->cancel)
			return cancelled(p, err);
		seen = st->generation;
	}
}

/* After the stream: waits until the helper exited 0 (the init containers are done). */
static int wait_done(const struct fn_mounts_pod *p, struct pod_state *st, struct err **err)
{
	int64_t until = min64(p->deadline, now_ms() + DONE_WAIT_MS);
	uint64_t seen = 0;
	for (;;) {
		if (st->generation > 0) {
			if (st->init_done || (st->init_name[0] && !is_helper(st)))
				return 0;
			if (is_helper(st) && st->init_cstate == CS_TERMINATED)
				return helper_failed(p, st, err);
			if (st->deleted || strcmp(st->phase, "Failed") == 0)
				return pod_gone_or_failed(p, st, err);
		}
		int rc = pod_watch_wait(p->watch, seen, until, p->cancel, st, err);
		if (rc < 0)
			return err_wrap(err, "watch pod %s/%s", p->ns, p->pod);
		if (*p->cancel)
			return cancelled(p, err);
		if (rc == 1)
			return err_set(
			        err, ERR_TIMEOUT,
			        "function %s: pod %s/%s: the mounts were sent but the helper did "
			        "not finish within %lld ms",
			        p->image, p->ns, p->pod, (long long)DONE_WAIT_MS);
		seen = st->generation;
	}
}

struct writer {
	const struct mount_plan *plan;
	int fd;
	uint64_t written;
	struct err *err;
	pthread_t thread;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	mount_plan_write(w->plan, w->fd, &w->written, &w->err);
	close(w->fd); /* EOF after the end marker: the attach then sends FF 00 */
	return NULL;
}

/* Attaches to the helper and streams the tar; returns after the stream ended. */
static int transfer(const struct fn_mounts_pod *p, const struct mount_plan *plan,
                    struct fn_mounts_result *res, struct err **err)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return err_set(err, ERR_IO, "mounts: pipe: %s", strerror(errno));
	cleanup_free char *path = kube_attach_path(p->ns, p->pod, POD_MOUNTS_CONTAINER_NAME, true);
	struct kube_stream_opts o = {
	        .path = path,
	        .in_fd = fds[0],
	        .out_fd = -1,
	        .err_fd = p->err_fd,
	        .cancel = p->cancel,
	        .deadline_ms = p->deadline,
	};
	struct kube_stream *stream = NULL;
	res->stream_requests++;
	if (kube_stream_open(p->cfg, &o, &stream, err) < 0) {
		close(fds[0]);
		close(fds[1]);
		if (*p->cancel)
			return cancelled(p, err);
		return err_wrap(err, "attach to the mounts helper of pod %s/%s", p->ns, p->pod);
	}
	struct writer w = {.plan = plan, .fd = fds[1]};
	if (pthread_create(&w.thread, NULL, writer_main, &w) != 0) {
		kube_stream_free(stream);
		close(fds[0]);
		close(fds[1]);
		return err_set(err, ERR_INTERNAL, "mounts: cannot start the writer thread");
	}
	struct kube_stream_result sr = {0};
	int rc = kube_stream_run(stream, &sr, err);
	kube_stream_free(stream);
	kube_stream_result_clear(&sr);
	close(fds[0]); /* a writer still writing gets EPIPE */
	pthread_join(w.thread, NULL);
	res->tar_bytes = w.written;
	/* A file that changed or could not be read is the cause of whatever followed; a
	 * closed pipe (ERR_NET) is only the consequence of the stream ending. */
	if (w.err && w.err->code != ERR_NET) {
		err_free(*err);
		*err = w.err;
		return err_wrap(err, "function %s", p->image);
	}
	err_free(w.err);
	if (rc < 0) {
		if (*p->cancel)
			return cancelled(p, err);
		if ((*err)->code == ERR_TIMEOUT)
			return err_wrap(err,
			                "function %s: KRMPOD_TIMEOUT ran out while sending its "
			                "mounts to pod %s/%s",
			                p->image, p->ns, p->pod);
		return err_wrap(err, "send the mounts to pod %s/%s", p->ns, p->pod);
	}
	return 0;
}

int fn_mounts_deliver(const struct fn_mounts_pod *p, const struct mount_plan *plan,
                      struct fn_mounts_result *res, struct err **err)
{
	*res = (struct fn_mounts_result){0};
	struct pod_state st = {0};
	if (wait_running(p, &st, err) < 0)
		return -1;
	int64_t t0 = now_ms();
	int rc = transfer(p, plan, res, err);
	if (rc == 0)
		rc = wait_done(p, &st, err);
	res->transfer_ms = now_ms() - t0;
	if (rc < 0)
		return -1;
	log_info("mounts: %zu entries, %llu bytes of files (%llu bytes of tar) delivered in %lld "
	         "ms",
	         mount_plan_entries(plan), (unsigned long long)mount_plan_bytes(plan),
	         (unsigned long long)res->tar_bytes, (long long)res->transfer_ms);
	return 0;
}

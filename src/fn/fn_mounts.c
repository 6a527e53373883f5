/* fn_mounts.c — see fn_mounts.h.
 *
 * Threads: the tar is written by a writer thread into a pipe whose read end is the attach's
 * stdin (kube_stream reads it in chunks and sends each as one stdin message), so memory stays
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
#include "base/signals.h"
#include "base/xalloc.h"
#include "pod/pod_mounts.h"
#include "pod/pod_names.h"

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
		return err_set_sys(err, ERR_IO, errno, "mounts: the working directory");
	return mount_plan_build(req, cwd, s->mount_max_bytes, out, err);
}

static bool is_helper(const struct pod_state *st)
{
	return strcmp(st->init_name, POD_MOUNTS_CONTAINER_NAME) == 0;
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

static int helper_failed(const struct fn_pod *p, const struct pod_state *st, struct err **err)
{
	char line[1024];
	last_line(st->init_message, line, sizeof(line));
	err_set(err, ERR_POD,
	        "function %s: the mounts helper (`krmpod unpack` in %s, KRMPOD_HELPER_IMAGE) of "
	        "pod %s/%s failed with exit code %d%s%s",
	        fn_pod_request(p)->image, fn_pod_settings(p)->helper_image, fn_pod_namespace(p),
	        fn_pod_name(p), st->init_exit_code, line[0] ? ": " : "", line);
	snprintf((*err)->reason, sizeof((*err)->reason), "%s",
	         st->init_reason[0] ? st->init_reason : "Error");
	return -1;
}

static int pod_gone_or_failed(const struct fn_pod *p, const struct pod_state *st, struct err **err)
{
	const char *image = fn_pod_request(p)->image, *ns = fn_pod_namespace(p);
	if (st->deleted)
		return err_set(err, ERR_POD,
		               "function %s: pod %s/%s was deleted while its mounts were delivered",
		               image, ns, fn_pod_name(p));
	err_set(err, ERR_POD,
	        "function %s: pod %s/%s failed while its mounts were delivered: %s: %s", image, ns,
	        fn_pod_name(p), st->pod_reason[0] ? st->pod_reason : st->phase,
	        st->pod_message[0] ? st->pod_message : "(no message)");
	snprintf((*err)->reason, sizeof((*err)->reason), "%s", st->pod_reason);
	return -1;
}

/* fn_pod_wait's condition while the helper starts: 1 = it runs; ud is the ErrImagePull
 * clock (pod_waiting_is_fatal). */
static int helper_runs(struct fn_pod *p, const struct pod_state *st, int64_t now, int64_t *recheck,
                       void *ud, struct err **err)
{
	if (is_helper(st) && st->init_cstate == CS_RUNNING)
		return 1;
	if (is_helper(st) && st->init_cstate == CS_TERMINATED)
		return helper_failed(p, st, err);
	if (fn_pod_init_cannot_start(p, st, ud, now, recheck, err))
		return -1;
	if (st->deleted || strcmp(st->phase, "Failed") == 0)
		return pod_gone_or_failed(p, st, err);
	if (st->init_done || st->cstate == CS_RUNNING || st->cstate == CS_TERMINATED)
		return err_set(err, ERR_POD,
		               "function %s: pod %s/%s: the mounts helper ended before it received "
		               "the files",
		               fn_pod_request(p)->image, fn_pod_namespace(p), fn_pod_name(p));
	return 0;
}

static int wait_running(struct fn_pod *p, struct pod_state *st, struct err **err)
{
	int64_t pull_since = 0, deadline = fn_pod_deadline(p);
	int64_t until = min64(fn_pod_start_deadline(p), deadline);
	int rc = fn_pod_wait(p, until, helper_runs, &pull_since, st, err);
	if (rc != 1)
		return rc;
	const char *what = now_ms() >= deadline ? "KRMPOD_TIMEOUT" : "KRMPOD_START_TIMEOUT";
	char detail[600];
	if (st->init_reason[0])
		snprintf(detail, sizeof(detail), "%s%s%.500s", st->init_reason,
		         st->init_message[0] ? ": " : "", st->init_message);
	else
		snprintf(detail, sizeof(detail), "phase %s", st->phase[0] ? st->phase : "unknown");
	return err_set(err, ERR_TIMEOUT,
	               "function %s: the mounts helper (KRMPOD_HELPER_IMAGE=%s) of pod %s/%s did "
	               "not start within %s: %s; raise %s if the cluster is slow to start pods",
	               fn_pod_request(p)->image, fn_pod_settings(p)->helper_image,
	               fn_pod_namespace(p), fn_pod_name(p), what, detail, what);
}

/* fn_pod_wait's condition after the stream: 1 = the helper exited 0 (the init containers
 * are done). */
static int helper_done(struct fn_pod *p, const struct pod_state *st, int64_t now, int64_t *recheck,
                       void *ud, struct err **err)
{
	(void)now;
	(void)recheck;
	(void)ud;
	if (st->init_done || (st->init_name[0] && !is_helper(st)))
		return 1;
	if (is_helper(st) && st->init_cstate == CS_TERMINATED)
		return helper_failed(p, st, err);
	if (st->deleted || strcmp(st->phase, "Failed") == 0)
		return pod_gone_or_failed(p, st, err);
	return 0;
}

static int wait_done(struct fn_pod *p, struct pod_state *st, struct err **err)
{
	int64_t until = min64(fn_pod_deadline(p), now_ms() + DONE_WAIT_MS);
	int rc = fn_pod_wait(p, until, helper_done, NULL, st, err);
	if (rc == 1)
		return err_set(err, ERR_TIMEOUT,
		               "function %s: pod %s/%s: the mounts were sent but the helper did "
		               "not finish within %lld ms",
		               fn_pod_request(p)->image, fn_pod_namespace(p), fn_pod_name(p),
		               (long long)DONE_WAIT_MS);
	return rc;
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
	mount_plan_write(w->plan, w->fd, &w->written, &w->err);
	close(w->fd); /* EOF after the end marker: the attach then sends FF 00 */
	return NULL;
}

#define DURING "while delivering its mounts"

/* Attaches to the helper and streams the tar; returns after the stream ended. */
static int transfer(struct fn_pod *p, const struct mount_plan *plan, int err_fd,
                    uint64_t *tar_bytes, struct err **err)
{
	const char *image = fn_pod_request(p)->image, *ns = fn_pod_namespace(p);
	const char *pod = fn_pod_name(p);
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return err_set_sys(err, ERR_IO, errno, "mounts: pipe");
	struct kube_stream_opts o = {.in_fd = fds[0], .out_fd = -1, .err_fd = err_fd};
	struct kube_stream *stream = NULL;
	if (fn_pod_attach(p, POD_MOUNTS_CONTAINER_NAME, true, &o, &stream, err) < 0) {
		close(fds[0]);
		close(fds[1]);
		if (fn_pod_is_cancelled(p))
			return fn_pod_cancelled(p, DURING, err);
		return err_wrap(err, "attach to the mounts helper of pod %s/%s", ns, pod);
	}
	struct writer w = {.plan = plan, .fd = fds[1]};
	if (signals_thread_start(&w.thread, writer_main, &w) != 0) {
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
	*tar_bytes = w.written;
	/* A file that changed or could not be read is the cause of whatever followed; a
	 * closed pipe (ERR_NET) is only the consequence of the stream ending. */
	if (w.err && w.err->code != ERR_NET) {
		err_free(*err);
		*err = w.err;
		return err_wrap(err, "function %s", image);
	}
	err_free(w.err);
	if (rc == 0)
		return 0;
	if (fn_pod_is_cancelled(p))
		return fn_pod_cancelled(p, DURING, err);
	if ((*err)->code == ERR_TIMEOUT)
		return err_wrap(err,
		                "function %s: KRMPOD_TIMEOUT ran out while sending its mounts to "
		                "pod %s/%s",
		                image, ns, pod);
	return err_wrap(err, "send the mounts to pod %s/%s", ns, pod);
}

int fn_mounts_deliver(struct fn_pod *p, const struct mount_plan *plan, int err_fd, struct err **err)
{
	struct pod_state st = {0};
	uint64_t tar_bytes = 0;
	int rc = wait_running(p, &st, err);
	int64_t t0 = now_ms();
	if (rc == 0)
		rc = transfer(p, plan, err_fd, &tar_bytes, err);
	if (rc == 0)
		rc = wait_done(p, &st, err);
	int64_t transfer_ms = now_ms() - t0;
	fn_pod_extend_start(p, transfer_ms); /* sending files is not starting the pod */
	if (rc < 0 && err_code_of(err) == ERR_SIGNAL)
		return fn_pod_cancelled(p, DURING, err);
	if (rc < 0)
		return -1;
	log_info("mounts: %zu entries, %llu bytes of files (%llu bytes of tar) delivered in %lld "
	         "ms",
	         mount_plan_entries(plan), (unsigned long long)mount_plan_bytes(plan),
	         (unsigned long long)tar_bytes, (long long)transfer_ms);
	return 0;
}

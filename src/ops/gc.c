/* gc.c — see gc.h. `krmpod gc` deletes function pods that no
 * shim will delete any more. A shim deletes its pod on every path it lives through; a shim
 * killed with SIGKILL (the sidecar OOM-killed or evicted) cannot, and a pod stopped by its
 * activeDeadlineSeconds stays, Failed, until someone deletes it.
 *
 * Candidates carry krmpod.dev/function=true in the functions namespace. A finished pod
 * (Succeeded or Failed) is deleted once the API server last wrote it (its final status) at
 * least --older-than ago (default 60 s: its shim, if alive, deletes it within milliseconds
 * of reading the exit code, and gc must not race that). A pod that is not finished is
 * deleted only when it is older than its activeDeadlineSeconds plus --older-than: the
 * cluster should have stopped it by then. Running functions of live generate runs are never
 * touched. Ages are on the API server's clock only (verdict()). */
#include "ops/gc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/signals.h"
#include "base/xalloc.h"
#include "config/kubeconfig.h"
#include "config/settings.h"
#include "fn/fn_config.h"
#include "kube/kube_api.h"
#include "kube/kube_http.h"
#include "pod/pod_manifest.h"
#include "pod/pod_names.h"
#include "pool/pool.h"
#include "pool/pool_lease.h"

/* When the API server last wrote the pod (the latest time in its managedFields: the API
 * server stamps each write with its own clock); with own_only, only the writes to the pod
 * itself (krmpod's: its creation, its shim's renewals, the pool's marks), not those to its
 * status subresource (the kubelet's). 0 when it keeps no managedFields. */
static time_t last_write(const struct json *pod, bool own_only)
{
	time_t t = 0;
	const struct json *mf = json_path(pod, "metadata.managedFields");
	for (size_t i = 0; i < json_len(mf); i++) {
		const struct json *entry = json_at(mf, i);
		const char *sub = json_str(json_get(entry, "subresource"));
		time_t w;
		if ((!own_only || sub == NULL || *sub == '\0') &&
		    kube_parse_time(json_str(json_get(entry, "time")), &w) == 0 && w > t)
			t = w;
	}
	return t;
}

/* Why the pod should go (written into why), or NULL to keep it. Every age is measured on the
 * API server's clock (now: the Date of the list's answer) against times the API server wrote
 * (creationTimestamp, managedFields), never on this machine's clock or a node's (finishedAt):
 * a sidecar whose clock runs ahead must not take another sidecar's live pods for leftovers. */
static const char *verdict(const struct json *pod, time_t now, int64_t older_than_s, char *why,
                           size_t why_len)
{
	const char *phase = json_str(json_path(pod, "status.phase"));
	time_t written = last_write(pod, false);
	if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0) && written) {
		if (now - written < older_than_s)
			return NULL;
		snprintf(why, why_len, "%s, last written %llds ago by the API server's clock",
		         phase, (long long)(now - written));
		return why;
	}
	/* a pod its shim renewed (pool_lease.h): gone with the shim once the lease expired */
	time_t renewed = last_write(pod, true);
	int64_t period = fn_lease_period(
	        json_str(json_get(json_path(pod, "metadata.annotations"), POD_ANNOTATION_RENEWED)));
	if (period && renewed &&
	    json_get(json_path(pod, "metadata.labels"), POD_LABEL_POOL) == NULL &&
	    (now - renewed) * 1000 >= FN_LEASE_PERIODS * period) {
		snprintf(why, why_len,
		         "%s, its shim's lease last renewed %llds ago by the API server's clock: "
		         "the shim is gone",
		         phase ? phase : "no phase", (long long)(now - renewed));
		return why;
	}
	/* not finished, or no record of when it finished: only past its deadline */
	time_t created;
	long long deadline = 0;
	if (kube_parse_time(json_str(json_path(pod, "metadata.creationTimestamp")), &created) < 0 ||
	    !json_int(json_path(pod, "spec.activeDeadlineSeconds"), &deadline))
		return NULL;
	if (now - created < deadline + older_than_s)
		return NULL;
	snprintf(why, why_len,
	         "%s, created %llds ago by the API server's clock, past its "
	         "activeDeadlineSeconds (%llds)",
	         phase ? phase : "no phase", (long long)(now - created), deadline);
	return why;
}

/* One line to o->out, or with none (generate's sweep) to the log at info level. */
static void say(const struct fn_gc_opts *o, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static void say(const struct fn_gc_opts *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (o->out) {
		vfprintf(o->out, fmt, ap);
		fputc('\n', o->out);
	} else {
		cleanup_free char *line = NULL;
		if (vasprintf(&line, fmt, ap) >= 0)
			log_info("gc: %s", line);
	}
	va_end(ap);
}

/* Deletes (or with dry_run lists) what verdict() picks among the function pods of ns. */
static void sweep(struct kube_client *c, const char *ns, const struct json *list, time_t now,
                  const struct fn_gc_opts *o, struct fn_gc_result *res)
{
	const struct json *items = json_get(list, "items");
	for (size_t i = 0; i < json_len(items); i++) {
		const struct json *pod = json_at(items, i);
		const char *name = json_str(json_path(pod, "metadata.name"));
		char why[160];
		if (name == NULL ||
		    verdict(pod, now, o->older_than_ms / 1000, why, sizeof(why)) == NULL) {
			res->kept++;
			continue;
		}
		if (o->dry_run) {
			say(o, "would delete %s/%s (%s)", ns, name, why);
			res->deleted++;
			continue;
		}
		cleanup_err struct err *e = NULL;
		if (kube_api_pod_delete(c, ns, name, &e) < 0) {
			say(o, "cannot delete %s/%s: %s", ns, name, e->msg);
			res->failed++;
		} else {
			say(o, "deleted %s/%s (%s)", ns, name, why);
			res->deleted++;
		}
	}
}

/* The sweep with loaded settings and credentials (fn_gc, fn_gc_periodic). */
static int run(const struct settings *s, struct kube_config *cfg, const struct fn_gc_opts *o,
               struct fn_gc_result *res, struct err **err)
{
	struct kube_client *c = NULL;
	cleanup_json struct json *list = NULL;
	int rc = kube_client_new(cfg, &c, err);
	if (rc == 0) {
		kube_client_set_cancel(c, o->cancel);
		rc = kube_api_pod_list(c, s->namespace, POD_LABEL_FUNCTION "=true", &list, err);
		if (rc < 0)
			err_wrap(err, "gc: list the function pods in %s", s->namespace);
	}
	time_t now = rc == 0 ? kube_client_server_time(c) : 0;
	if (rc == 0 && now == 0)
		rc = err_set(err, ERR_API,
		             "gc: the API server's answer carried no Date header: the sweep judges "
		             "a pod's age by the API server's clock only, so it deletes nothing");
	if (rc == 0) {
		sweep(c, s->namespace, list, now, o, res);
		/* the warm pool: idle past its TTL, leased past the lease, beyond its size */
		unsigned retired = 0;
		cleanup_err struct err *pe = NULL;
		if (fn_pool_janitor(c, s, s->namespace, epoch_ms(), o->dry_run, &retired, &pe) <
		    0) {
			say(o, "cannot sweep the warm pool: %s", pe->msg);
			res->failed++;
		}
		res->deleted += retired;
		if (o->out || res->deleted || res->failed)
			say(o,
			    "%s%u %s, %u kept (running, or finished less than %llds ago), %u "
			    "failed",
			    o->out ? "gc: " : "", res->deleted,
			    o->dry_run ? "to delete" : "deleted", res->kept,
			    (long long)(o->older_than_ms / 1000), res->failed);
	}
	kube_client_free(c);
	return rc;
}

int fn_gc(char *const *envp, const struct fn_gc_opts *o, struct fn_gc_result *res, struct err **err)
{
	*res = (struct fn_gc_result){0};
	struct settings s;
	struct kube_config *cfg = NULL;
	if (fn_config_load(envp, &s, &cfg, err) < 0)
		return -1;
	int rc = run(&s, cfg, o, res, err);
	kube_config_free(cfg);
	settings_clear(&s);
	return rc;
}

/* Whether a sweep is due: the stamp file in dir is older than interval_ms (or missing). The
 * caller holds *lock_fd (flock) while it sweeps, so two generates do not sweep at once; it is
 * -1 when another holds it or the directory cannot be used (no sweep then). */
static bool sweep_due(const char *dir, int64_t interval_ms, int *lock_fd)
{
	*lock_fd = -1;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return false;
	cleanup_free char *path = xasprintf("%s/gc-last-sweep", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return false;
	struct stat st;
	struct timespec now;
	file_clock_now(&now);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 || fstat(fd, &st) < 0 ||
	    (st.st_size > 0 && (int64_t)(now.tv_sec - st.st_mtime) * 1000 < interval_ms)) {
		close(fd);
		return false;
	}
	/* the mark: a byte (a new file is due at once), and now as its time */
	if (pwrite(fd, "1", 1, 0) != 1 || futimens(fd, NULL) < 0) {
		close(fd);
		return false;
	}
	*lock_fd = fd;
	return true;
}

int fn_gc_periodic(const struct settings *s, struct kube_config *cfg, int64_t interval_ms,
                   atomic_int *cancel, struct fn_gc_result *res, struct err **err)
{
	*res = (struct fn_gc_result){0};
	cleanup_close int lock_fd = -1;
	if (interval_ms <= 0 || !sweep_due(s->cache_dir, interval_ms, &lock_fd))
		return 0;
	struct fn_gc_opts o = {.older_than_ms = FN_GC_DEFAULT_OLDER_THAN_MS, .cancel = cancel};
	return run(s, cfg, &o, res, err) < 0 ? -1 : 1;
}

/* fn_pod.c — see fn_pod.h and docs/internals/pod-lifecycle.md. */
#include "fn/fn_pod.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/proc.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "fn/fn_config.h"
#include "handoff/markers.h"
#include "handoff/offers.h"
#include "kube/kube_api.h"
#include "kube/kube_http.h"
#include "pod/pod_manifest.h"
#include "pool/pool.h"
#include "pool/pool_lease.h"
#include "pool/pool_session.h"

/* Time allowed for deleting the pod after everything else, including after a signal. */
#define DELETE_DEADLINE_MS 1500
/* A pool lease lasts the run's KRMPOD_TIMEOUT and this much more (clock skew between the
 * replicas, which compare it with their own clocks). */
#define POOL_LEASE_SLACK_MS 5000
/* How often a create refused by a full ResourceQuota is tried again. */
#define QUOTA_RETRY_MS 500

struct fn_pod {
	struct kube_config *cfg;
	const struct settings *s;
	const struct fn_request *req;
	const char *ns;
	atomic_int *cancel;
	struct kube_client *client;
	struct pod_watch *watch;
	char *name;
	const struct pod_source *src; /* where the pod came from, which ends it */
	/* The warm pool (pool.h): the lease this run holds on its pod (NULL: none), the idle
	 * pods its pool had, and whether the pod ran already when it was taken (no watch). */
	char *holder;
	size_t pool_idle;
	bool warm;
	bool pool_offer; /* a pool pod leased by generate's janitor: given back to the offers */
	bool pool_over;  /* a pool pod made past KRMPOD_WARM_POOL_MAX in a race: retired after */
	bool render_pod; /* an exec-mode pod the janitor started for the render: the same */
	pid_t janitor;   /* that janitor */
	char *session; /* its call session's socket (pool_session.h), when the janitor holds one */
	int64_t t0, deadline, start_deadline;
	int64_t t_attached, t_done;
	unsigned stream_requests; /* WebSocket connections (not made through client) */
	struct fn_lease
	        *lease; /* this shim's lease on the pod (pool_lease.h); none for the pool's */
};

int fn_pod_open(struct kube_config *cfg, const struct settings *s, const struct fn_request *req,
                atomic_int *cancel, struct fn_pod **out, struct err **err)
{
	struct fn_pod *p = xcalloc(1, sizeof(*p));
	p->cfg = cfg;
	p->s = s;
	p->req = req;
	p->ns = s->namespace;
	p->cancel = cancel;
	p->t0 = now_ms();
	p->deadline = p->t0 + s->timeout_ms;
	p->start_deadline = p->t0 + s->start_timeout_ms;
	if (kube_client_new(cfg, &p->client, err) < 0) {
		free(p);
		return -1;
	}
	kube_client_set_deadline(p->client, p->deadline);
	kube_client_set_cancel(p->client, cancel);
	*out = p;
	return 0;
}

int fn_pod_check_output(const struct fn_pod *p, uint64_t bytes, bool from_log, struct err **err)
{
	uint64_t max = (uint64_t)p->s->max_output;
	if (max == 0 || bytes <= max)
		return 0;
	char counted[96] = "";
	if (from_log)
		snprintf(counted, sizeof(counted), " (%llu bytes with what only its pod log holds)",
		         (unsigned long long)bytes);
	return err_set(err, ERR_IO,
	               "function %s: pod %s/%s: the function's stdout%s passed KRMPOD_MAX_OUTPUT "
	               "(%llu bytes): raise it, or make the function's output smaller",
	               p->req->image, p->ns, p->name, counted, (unsigned long long)max);
}

int fn_pod_cancelled(const struct fn_pod *p, const char *during, struct err **err)
{
	int signo = *p->cancel;
	err_set(err, ERR_SIGNAL, "function %s: interrupted by signal %d%s%s", p->req->image, signo,
	        during ? " " : "", during ? during : "");
	(*err)->signo = signo;
	return -1;
}

/* --- where the pod comes from --------------------------------------------------------- */

/* Where a pod comes from owns how it ends. `take` returns 1 with p->name set (and the
 * created object in *created when it has one: it saves the watch a GET), 0 when it has no
 * pod for this request, -1 on failure. `end` runs once after the call (clean: it ended 0
 * and nothing was cancelled) and leaves the pod to whoever owns it next, or deletes it. */
struct pod_source {
	const char *how; /* for the log */
	int (*take)(struct fn_pod *p, struct json **created, struct err **err);
	int (*end)(struct fn_pod *p, bool clean, struct err **err);
};

static int end_offered(struct fn_pod *p, bool clean, struct err **err);
static int end_leased(struct fn_pod *p, bool clean, struct err **err);
static int end_created(struct fn_pod *p, bool clean, struct err **err);

static void pool_key(const struct fn_pod *p, char key[17])
{
	fn_pool_key_text(fn_config_key(p->req, p->s), key);
}

static long long lease_until(const struct fn_pod *p)
{
	return (long long)epoch_ms() + p->s->timeout_ms + POOL_LEASE_SLACK_MS;
}

/* A pod of the warm pool, leased for this run. */
static int take_pooled(struct fn_pod *p, struct json **created, struct err **err)
{
	if (!p->req->pooled)
		return 0;
	char key[17];
	pool_key(p, key);
	p->holder = fn_pool_holder();
	char spec[SHA256_HEX_LEN + 1];
	fn_config_spec_sha256(p->req, p->s, spec);
	int rc = fn_pool_claim(p->client, p->ns, key, spec, p->req->image, p->holder,
	                       lease_until(p), created, &p->pool_idle, err);
	if (rc <= 0)
		return rc;
	p->name = xstrdup(json_str(json_path(*created, "metadata.name")));
	p->warm = fn_pool_pod_runs(*created);
	log_debug("warm pool: took %s/%s (%s)", p->ns, p->name,
	          p->warm ? "it runs" : "it has not started yet");
	return 1;
}

/* A pod `krmpod generate` started ahead for exactly this request. */
static int take_prestarted(struct fn_pod *p, struct json **created, struct err **err)
{
	(void)created;
	(void)err;
	if (p->s->prestart_dir == NULL)
		return 0;
	uint64_t key = fn_config_key(p->req, p->s);
	p->name = prestart_offer_claim(p->s->prestart_dir, key,
	                               min64(p->start_deadline, p->deadline), p->cancel);
	if (p->name == NULL)
		return 0;
	/* a pool pod the render leased (its janitor gives the lease back), an exec pod of the
	 * render's, or one for this shim alone (an offer that cannot be read counts as that) */
	struct prestart_offer_note note;
	if (prestart_offer_note(p->s->prestart_dir, key, p->name, &note) < 0)
		note = (struct prestart_offer_note){.kind = OFFER_PLAIN};
	p->pool_offer = note.kind == OFFER_POOL;
	p->warm = p->pool_offer && note.warm;
	/* a cold one whose session the janitor opens once it started */
	bool coming = !p->warm && note.kind != OFFER_PLAIN && note.opener > 0;
	p->render_pod = note.kind == OFFER_RENDER && coming;
	p->janitor = note.opener;
	long janitor = note.opener;
	if (p->warm || coming) {
		p->session = prestart_offer_session_path(p->s->prestart_dir, key, p->name);
		bool there =
		        coming ? fn_session_await(p->session, janitor,
		                                  min64(p->start_deadline, p->deadline), p->cancel)
		               : access(p->session, F_OK) == 0;
		if (!there) {
			free(p->session);
			p->session = NULL;
		} else if (coming) {
			p->warm = true; /* it runs: the session says all there is to know */
		}
	}
	return 1;
}

/* A new pod. A full ResourceQuota frees up as other functions end: its refusal is waited
 * out within the start timeout instead of failing the render. */
static int take_created(struct fn_pod *p, struct json **created, struct err **err)
{
	cleanup_buf struct buf body;
	buf_init(&body, 0);
	bool room = false;
	if (p->req->pooled && fn_pool_room(p->client, p->s, p->ns, &room, err) < 0)
		return -1;
	if (room) { /* a new pod of the pool, leased to this run from the start */
		char key[17];
		pool_key(p, key);
		char spec[SHA256_HEX_LEN + 1];
		fn_config_spec_sha256(p->req, p->s, spec);
		struct pod_pool_meta m = {.key = key,
		                          .spec_sha256 = spec,
		                          .holder = p->holder,
		                          .lease_until_ms = lease_until(p)};
		pod_spec_build_pool(p->req, p->s, &m, &body);
	} else {
		free(p->holder);
		p->holder = NULL;
		pod_spec_build(p->req, p->s, &body);
	}
	log_debug("pod spec: %s", body.data);
	bool waited = false;
	while (kube_api_pod_create(p->client, p->ns, body.data, body.len, created, err) < 0) {
		if (!kube_api_quota_full(*err) || now_ms() + QUOTA_RETRY_MS >= p->start_deadline)
			return err_wrap(err, "create the function pod in namespace %s", p->ns);
		if (!waited)
			log_info("the namespace's ResourceQuota is full (%s); waiting for room, at "
			         "most KRMPOD_START_TIMEOUT",
			         (*err)->msg);
		waited = true;
		err_free(*err);
		*err = NULL;
		if (sleep_ms(QUOTA_RETRY_MS, p->cancel))
			return fn_pod_cancelled(p, NULL, err);
	}
	p->name = xstrdup(json_str(json_path(*created, "metadata.name")));
	if (p->holder && fn_pool_over_cap(p->client, p->s, p->ns)) {
		log_info("warm pool: over KRMPOD_WARM_POOL_MAX=%ld after a concurrent create: pod "
		         "%s/%s serves this call and is retired",
		         (long)p->s->pool_max, p->ns, p->name);
		p->pool_over = true;
	}
	return 1;
}

static const struct pod_source sources[] = {
        {"started ahead by generate", take_prestarted, end_offered},
        {"taken from the warm pool", take_pooled, end_leased},
        {"created now", take_created, end_created},
};

int fn_pod_acquire(struct fn_pod *p, struct err **err)
{
	cleanup_json struct json *created = NULL;
	for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]) && p->name == NULL; i++) {
		int rc = sources[i].take(p, &created, err);
		if (rc < 0)
			return -1;
		if (rc > 0)
			p->src = &sources[i];
	}
	if (p->name == NULL)
		return err_set(err, ERR_INTERNAL, "function %s: no pod source gave a pod",
		               p->req->image);
	log_set_pod(p->name);
	log_debug("pod %s/%s for image %s, %s", p->ns, p->name, p->req->image, p->src->how);
	if (p->s->running_dir)
		shim_marker_write(p->s->running_dir, p->req->image, p->ns, p->name);
	/* A warm pod runs already: the exec's stream says all there is to know. */
	if (!p->warm && pod_watch_start(p->cfg, p->ns, p->name, POD_CONTAINER_NAME, created,
	                                &p->watch, err) < 0)
		return err_wrap(err, "watch pod %s", p->name);
	if (p->holder == NULL &&
	    fn_lease_start(p->cfg, p->ns, p->name, p->s->lease_renew_ms, &p->lease, err) < 0)
		return err_wrap(err, "pod %s", p->name);
	if (*p->cancel)
		return fn_pod_cancelled(p, NULL, err);
	return 0;
}

/* --- waiting ------------------------------------------------------------------------------ */

int fn_pod_wait(struct fn_pod *p, int64_t until, fn_pod_check check, void *ud, struct pod_state *st,
                struct err **err)
{
	uint64_t seen = st->generation;
	for (;;) {
		int64_t now = now_ms(), recheck = 0;
		if (st->generation > 0) {
			int rc = check(p, st, now, &recheck, ud, err);
			if (rc != 0)
				return rc < 0 ? -1 : 0;
		}
		if (now >= until)
			return 1;
		int64_t t = recheck ? min64(until, recheck) : until;
		if (pod_watch_wait(p->watch, seen, t, p->cancel, st, err) < 0)
			return err_wrap(err, "watch pod %s/%s", p->ns, p->name);
		if (*p->cancel)
			return fn_pod_cancelled(p, NULL, err);
		seen = st->generation;
	}
}

/* Names the failure of a pod that cannot start, with the cluster's reason and message. */
static int start_failure(const struct fn_pod *p, const struct pod_state *st, struct err **err)
{
	err_set(err, ERR_POD, "function %s: pod %s/%s cannot start: %s: %s", p->req->image, p->ns,
	        p->name, st->c_reason, st->c_message[0] ? st->c_message : "(no message)");
	snprintf((*err)->reason, sizeof((*err)->reason), "%s", st->c_reason);
	return -1;
}

/* Failure of a pod that stopped on the cluster's account (deadline, eviction), or because
 * one of krmpod's init containers failed (the network gate, the mounts): then its own words,
 * which its termination message holds (FallbackToLogsOnError). */
static int pod_failed(const struct fn_pod *p, const struct pod_state *st, struct err **err)
{
	if (st->init_name[0] && st->init_cstate == CS_TERMINATED && st->init_exit_code != 0) {
		err_set(err, ERR_POD,
		        "function %s: pod %s/%s failed: its init container %s exited with %d: %s",
		        p->req->image, p->ns, p->name, st->init_name, st->init_exit_code,
		        st->init_message[0] ? st->init_message : "(no message)");
		snprintf((*err)->reason, sizeof((*err)->reason), "%s",
		         st->init_reason[0] ? st->init_reason : "Error");
		return -1;
	}
	err_set(err, ERR_POD, "function %s: pod %s/%s failed: %s: %s", p->req->image, p->ns,
	        p->name, st->pod_reason[0] ? st->pod_reason : st->c_reason,
	        st->pod_message[0] ? st->pod_message : st->c_message);
	snprintf((*err)->reason, sizeof((*err)->reason), "%s",
	         st->pod_reason[0] ? st->pod_reason : st->c_reason);
	return -1;
}

static int not_started(const struct fn_pod *p, const struct pod_state *st, bool overall,
                       struct err **err)
{
	const char *what = overall ? "KRMPOD_TIMEOUT" : "KRMPOD_START_TIMEOUT";
	int64_t limit = overall ? p->s->timeout_ms : p->s->start_timeout_ms;
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
	        p->req->image, p->ns, p->name, (long long)limit, what, detail, what);
	snprintf((*err)->reason, sizeof((*err)->reason), "%s",
	         st->sched_reason[0] ? st->sched_reason : st->c_reason);
	return -1;
}

int fn_pod_init_cannot_start(const struct fn_pod *p, const struct pod_state *st, void *ud,
                             int64_t now, int64_t *recheck, struct err **err)
{
	if (st->init_name[0] == '\0' || st->init_cstate != CS_WAITING ||
	    !pod_waiting_is_fatal(st->init_reason, ud, now, recheck))
		return 0;
	bool agent = strcmp(st->init_name, POD_AGENT_CONTAINER_NAME) == 0;
	bool ours = agent || strcmp(st->init_name, POD_MOUNTS_CONTAINER_NAME) == 0;
	err_set(err, ERR_POD, "function %s: the %s %s of pod %s/%s cannot start: %s: %s%s%s%s",
	        p->req->image, agent ? "installer container" : "init container", st->init_name,
	        p->ns, p->name, st->init_reason,
	        st->init_message[0] ? st->init_message : "(no message)",
	        ours ? " (its image is KRMPOD_HELPER_IMAGE=" : "", ours ? p->s->helper_image : "",
	        ours ? ": it must be krmpod's own image, pullable by the nodes)" : "");
	snprintf((*err)->reason, sizeof((*err)->reason), "%s", st->init_reason);
	return 1;
}

/* An exec-mode pod whose function container ended before any call: `krmpod hold` could not
 * run (the installer container failed, its message says why) or was killed; on the image's
 * own entrypoint, the function did not wait for its stdin. */
static int exec_pod_ended(struct fn_pod *p, const struct pod_state *st, struct err **err)
{
	char why[512] = "";
	if (p->req->exec_pid1)
		snprintf(
		        why, sizeof(why),
		        "; it ran on its image's own entrypoint (its image config cannot be read), "
		        "which must wait for its stdin: record the entrypoint in an admin catalog "
		        "(docs/catalogs.md), give the sidecar read access to its registry "
		        "(KRMPOD_REGISTRY_AUTH, KRMPOD_REGISTRY_MIRRORS), or run it with "
		        "KRMPOD_MODE=attach");
	else if (strcmp(st->init_name, POD_AGENT_CONTAINER_NAME) == 0)
		snprintf(
		        why, sizeof(why),
		        "; the installer container %s failed (%s): its image is "
		        "KRMPOD_HELPER_IMAGE=%s, which must be krmpod's own image, pullable by the "
		        "nodes",
		        st->init_name, st->init_reason[0] ? st->init_reason : "no reason",
		        p->s->helper_image ? p->s->helper_image : "");
	err_set(err, ERR_POD,
	        "function %s: pod %s/%s: the function container ended (%s, exit code %d: %.500s) "
	        "before its call%s",
	        p->req->image, p->ns, p->name, st->c_reason[0] ? st->c_reason : "no reason",
	        st->exit_code, st->c_message[0] ? st->c_message : "no message", why);
	snprintf((*err)->reason, sizeof((*err)->reason), "%s",
	         st->c_reason[0] ? st->c_reason : "Terminated");
	return -1;
}

/* fn_pod_wait_started's condition; ud is the ErrImagePull clock (pod_waiting_is_fatal). */
static int is_started(struct fn_pod *p, const struct pod_state *st, int64_t now, int64_t *recheck,
                      void *ud, struct err **err)
{
	/* The kubelet's Started event comes up to a relist (~1 s) before the status:
	 * attaching then is the early attach (pod-lifecycle.md). */
	if (st->cstate == CS_TERMINATED && p->req->exec_argv)
		return exec_pod_ended(p, st, err);
	if (st->cstate == CS_RUNNING || st->cstate == CS_TERMINATED || st->started_event)
		return 1;
	if (st->deleted)
		return err_set(err, ERR_POD, "function %s: pod %s/%s was deleted before it started",
		               p->req->image, p->ns, p->name);
	if (strcmp(st->phase, "Failed") == 0)
		return pod_failed(p, st, err);
	if (st->cstate == CS_WAITING && pod_waiting_is_fatal(st->c_reason, ud, now, recheck))
		return start_failure(p, st, err);
	if (fn_pod_init_cannot_start(p, st, ud, now, recheck, err))
		return -1;
	return 0;
}

int fn_pod_wait_started(struct fn_pod *p, struct pod_state *st, struct err **err)
{
	int64_t pull_since = 0;
	memset(st, 0, sizeof(*st));
	int rc = fn_pod_wait(p, min64(p->start_deadline, p->deadline), is_started, &pull_since, st,
	                     err);
	if (rc == 1)
		return not_started(p, st, now_ms() >= p->deadline, err);
	return rc;
}

static int has_exited(struct fn_pod *p, const struct pod_state *st, int64_t now, int64_t *recheck,
                      void *ud, struct err **err)
{
	(void)now;
	(void)recheck;
	(void)ud;
	if (st->cstate == CS_TERMINATED)
		return 1;
	if (st->deleted)
		return err_set(
		        err, ERR_POD,
		        "function %s: pod %s/%s was deleted before its exit status was known",
		        p->req->image, p->ns, p->name);
	return 0;
}

int fn_pod_wait_exit(struct fn_pod *p, struct pod_state *st, struct err **err)
{
	int64_t until = min64(p->deadline, now_ms() + FN_POD_EXIT_WAIT_MS);
	int rc = fn_pod_wait(p, until, has_exited, NULL, st, err);
	if (rc == 1)
		return err_set(err, ERR_TIMEOUT,
		               "function %s: pod %s/%s: output ended but the container did not "
		               "terminate within %lld ms",
		               p->req->image, p->ns, p->name, (long long)(until - p->t0));
	return rc;
}

static int has_terminated(struct fn_pod *p, const struct pod_state *st, int64_t now,
                          int64_t *recheck, void *ud, struct err **err)
{
	(void)p;
	(void)now;
	(void)recheck;
	(void)ud;
	(void)err;
	return st->cstate == CS_TERMINATED || st->deleted;
}

int fn_pod_wait_exit_within(struct fn_pod *p, int64_t wait_ms, struct pod_state *st,
                            struct err **err)
{
	fn_pod_state(p, st);
	int rc = fn_pod_wait(p, min64(p->deadline, now_ms() + wait_ms), has_terminated, NULL, st,
	                     err);
	if (rc < 0)
		return -1;
	return rc == 0 && st->cstate == CS_TERMINATED ? 0 : 1;
}

int fn_pod_exit(struct fn_pod *p, const struct pod_state *st, int *exit_code, struct err **err)
{
	*exit_code = st->exit_code;
	if (strcmp(st->c_reason, "OOMKilled") == 0) {
		err_set(err, ERR_POD,
		        "function %s: pod %s/%s was OOMKilled (exit code %d): raise "
		        "KRMPOD_MEMORY_LIMIT (now %s)",
		        p->req->image, p->ns, p->name, st->exit_code, p->s->memory_limit);
		snprintf((*err)->reason, sizeof((*err)->reason), "OOMKilled");
		*exit_code = st->exit_code ? st->exit_code : 137;
		return -1;
	}
	if (strcmp(st->pod_reason, "DeadlineExceeded") == 0)
		return pod_failed(p, st, err);
	return 0;
}

void fn_pod_state(struct fn_pod *p, struct pod_state *st)
{
	if (p->watch)
		pod_watch_state(p->watch, st);
	else
		memset(st, 0, sizeof(*st));
}

/* --- streams ------------------------------------------------------------------------------ */

/* Opens the stream at path (attach or exec) under the run's deadline and cancellation. */
static int open_stream(struct fn_pod *p, const char *path, struct kube_stream_opts *o,
                       struct kube_stream **out, struct err **err)
{
	o->path = path;
	o->cancel = p->cancel;
	o->deadline_ms = p->deadline;
	p->stream_requests++;
	int rc = kube_stream_open(p->cfg, o, out, err);
	o->path = NULL;
	return rc;
}

int fn_pod_attach(struct fn_pod *p, const char *container, bool want_stdin,
                  struct kube_stream_opts *o, struct kube_stream **out, struct err **err)
{
	cleanup_free char *path = kube_api_pod_attach_path(p->ns, p->name, container, want_stdin);
	return open_stream(p, path, o, out, err);
}

int fn_pod_exec(struct fn_pod *p, const char *const *command, struct kube_stream_opts *o,
                struct kube_stream **out, struct err **err)
{
	cleanup_free char *path =
	        kube_api_pod_exec_path(p->ns, p->name, POD_CONTAINER_NAME, command);
	return open_stream(p, path, o, out, err);
}

struct log_sink {
	struct buf *b;
	size_t head;  /* bytes kept in b */
	size_t total; /* bytes received (kept or not) */
};

static int log_sink_data(const char *data, size_t len, void *ud)
{
	struct log_sink *sink = ud;
	sink->total += len;
	size_t room = sink->head - sink->b->len;
	buf_append(sink->b, data, len < room ? len : room, "pod log", NULL);
	return 0;
}

int fn_pod_read_log(struct fn_pod *p, size_t limit, size_t head, struct buf *out, size_t *total,
                    struct err **err)
{
	cleanup_free char *path = kube_api_pod_log_path(p->ns, p->name, POD_CONTAINER_NAME, limit);
	buf_reset(out);
	out->limit = head;
	struct log_sink sink = {.b = out, .head = head};
	if (kube_stream_get(p->client, path, log_sink_data, &sink, err) < 0)
		return -1;
	*total = sink.total;
	return 0;
}

/* --- views ---------------------------------------------------------------------------------- */

const char *fn_pod_name(const struct fn_pod *p)
{
	return p->name;
}

const char *fn_pod_namespace(const struct fn_pod *p)
{
	return p->ns;
}

const struct fn_request *fn_pod_request(const struct fn_pod *p)
{
	return p->req;
}

const struct settings *fn_pod_settings(const struct fn_pod *p)
{
	return p->s;
}

int64_t fn_pod_deadline(const struct fn_pod *p)
{
	return p->deadline;
}

int64_t fn_pod_start_deadline(const struct fn_pod *p)
{
	return p->start_deadline;
}

const char *fn_pod_session(const struct fn_pod *p)
{
	return p->session;
}

bool fn_pod_is_warm(const struct fn_pod *p)
{
	return p->warm;
}

atomic_int *fn_pod_cancel_flag(const struct fn_pod *p)
{
	return p->cancel;
}

bool fn_pod_is_cancelled(const struct fn_pod *p)
{
	return *p->cancel != 0;
}

void fn_pod_extend_start(struct fn_pod *p, int64_t ms)
{
	p->start_deadline += ms;
}

void fn_pod_mark_attached(struct fn_pod *p, int64_t t)
{
	p->t_attached = t;
}

void fn_pod_mark_done(struct fn_pod *p)
{
	p->t_done = now_ms();
}

/* --- the end ---------------------------------------------------------------------------------- */

/* Deletes the pod. After a normal end the delete may wait out a throttled or failing API
 * server (429 with Retry-After, 5xx: kube_http's retries) until the run's own deadline, as
 * every other request of the run may: a throttled DELETE must not leave the pod behind. A
 * signal cuts that wait short; after a signal the delete has DELETE_DEADLINE_MS and is not
 * cancellable, so that the pod goes within the 2 s a SIGTERM promises. */
static int delete_pod(struct fn_pod *p, struct err **err)
{
	if (!*p->cancel && p->deadline > now_ms() + DELETE_DEADLINE_MS) {
		kube_client_set_cancel(p->client, p->cancel);
		kube_client_set_deadline(p->client, p->deadline);
		if (kube_api_pod_delete(p->client, p->ns, p->name, err) == 0)
			return 0;
		if ((*err)->code != ERR_SIGNAL)
			return err_wrap(err,
			                "delete pod %s/%s (it ends by itself after "
			                "activeDeadlineSeconds; `krmpod gc` removes leftovers)",
			                p->ns, p->name);
		err_free(*err); /* signalled while waiting: one bounded try more, below */
		*err = NULL;
	}
	kube_client_set_cancel(p->client, NULL);
	kube_client_set_deadline(p->client, now_ms() + DELETE_DEADLINE_MS);
	if (kube_api_pod_delete(p->client, p->ns, p->name, err) < 0)
		return err_wrap(err,
		                "delete pod %s/%s (it ends by itself after activeDeadlineSeconds; "
		                "`krmpod gc` removes leftovers)",
		                p->ns, p->name);
	return 0;
}

/* An offer of generate's: a pod the render's janitor holds (a leased pool pod, an exec-mode
 * pod it started) goes back to the render's offers after a clean call; the render's
 * exec-mode pod is the janitor's to delete, also after a failed call (its offer then stays
 * taken: no other function of the render gets it); any other is deleted. */
static int end_offered(struct fn_pod *p, bool clean, struct err **err)
{
	if (p->render_pod && !proc_running(p->janitor)) {
		log_debug("pod %s/%s: the render's janitor is gone", p->ns, p->name);
		p->render_pod = false; /* nobody else will delete it */
	}
	if ((p->pool_offer || p->render_pod) && clean &&
	    prestart_offer_give_back(p->s->prestart_dir, fn_config_key(p->req, p->s), p->name) ==
	            0) {
		log_debug("pod %s/%s given back to the render", p->ns, p->name);
		return 0;
	}
	if (p->render_pod) {
		log_debug("pod %s/%s: left to the render's janitor after a failed call", p->ns,
		          p->name);
		return 0;
	}
	return delete_pod(p, err);
}

/* A new pod: deleted, or one made for the pool, which goes back to it as a leased one. */
static int end_created(struct fn_pod *p, bool clean, struct err **err)
{
	return p->holder ? end_leased(p, clean, err) : delete_pod(p, err);
}

/* A pool pod this run leased: back to its pool after a clean call while the pool has fewer
 * than KRMPOD_WARM_POOL_SIZE idle pods, else retired. */
static int end_leased(struct fn_pod *p, bool clean, struct err **err)
{
	kube_client_set_cancel(p->client, NULL);
	kube_client_set_deadline(p->client, now_ms() + DELETE_DEADLINE_MS);
	bool keep = clean && !p->pool_over && p->pool_idle < (size_t)p->s->pool_size;
	if (fn_pool_release(p->client, p->ns, p->name, p->holder, keep, err) < 0)
		return err_wrap(err, "give back pod %s/%s", p->ns, p->name);
	log_debug("warm pool: pod %s/%s %s", p->ns, p->name, keep ? "given back" : "retired");
	return 0;
}

/* When the container was first known to run: the Started event or the status. */
static int64_t started_at(const struct pod_state *st)
{
	if (st->t_started_event && (st->t_running == 0 || st->t_started_event < st->t_running))
		return st->t_started_event;
	return st->t_running;
}

static long long since(const struct fn_pod *p, int64_t t)
{
	return t ? (long long)(t - p->t0) : -1;
}

int fn_pod_close(struct fn_pod *p, int rc, int exit_code, struct err **err)
{
	if (p == NULL)
		return rc;
	struct pod_state st;
	fn_pod_state(p, &st);
	unsigned watch_requests = p->watch ? pod_watch_requests(p->watch) : 0;
	fn_lease_stop(p->lease); /* before the pod goes: a renewal would only meet a 404 */
	p->lease = NULL;
	if (p->name) {
		cleanup_err struct err *derr = NULL;
		/* (no source yet: a take that named its pod, then failed, made a new one) */
		int (*end)(struct fn_pod *, bool, struct err **) =
		        p->src ? p->src->end : end_created;
		if (end(p, rc == 0 && exit_code == 0 && !*p->cancel, &derr) < 0) {
			if (rc == 0) {
				*err = derr;
				derr = NULL;
				rc = -1;
			} else {
				log_error("%s", derr->msg);
			}
		}
		unsigned requests =
		        kube_client_requests(p->client) + p->stream_requests + watch_requests;
		/* The line's prefix names the pod (log_set_pod). */
		log_info("image=%s scheduled=%lldms started=%lldms attached=%lldms "
		         "finished=%lldms exit=%d requests=%u",
		         p->req->image, since(p, st.t_scheduled), since(p, started_at(&st)),
		         since(p, p->t_attached), since(p, p->t_done ? p->t_done : now_ms()),
		         exit_code, requests);
		log_set_pod(NULL);
	}
	/* Stopped after the delete: joining the watch thread takes up to one 50 ms slice, which
	 * the pod's deletion need not wait for. */
	pod_watch_stop(p->watch);
	free(p->name);
	free(p->holder);
	free(p->session);
	kube_client_free(p->client);
	free(p);
	return rc;
}

/* kube_watch.c — see kube_watch.h.
 *
 * Threads and state: the watch thread owns a kube_client and a working copy of the pod's
 * state (`cur`); after each change it publishes a copy under the lock (`state`) and wakes
 * the waiters (a condition variable on CLOCK_MONOTONIC). Only the thread touches the
 * client.
 *
 * Stopping: the client's cancel flag is the watch's `stop` flag. kube_http drives every
 * transfer in poll slices of at most 50 ms and checks that flag between them, and the
 * thread's own backoff sleeps use the same slices, so pod_watch_stop() returns within about
 * 50–100 ms even while the thread sits in an idle watch stream. (Caveat: a DNS lookup made
 * by a libcurl built without the threaded resolver would block; ours has it.)
 *
 * The stream: newline-delimited JSON events, assembled into lines in a buffer bounded by
 * LIMIT_WATCH_EVENT. Reconnects (a clean end, a dropped connection, a 410 that needs a
 * re-GET) start from the last resourceVersion seen, bookmarks included. A connection that
 * ends without progress (no event, shorter than WATCH_PROGRESS_MS) counts as a failure;
 * WATCH_MAX_FAILURES of them in a row end the watch with ERR_NET and the last error. Runs
 * of 410 Expired without any event in between are bounded the same way.
 */
#include "kube/kube_watch.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/cleanup.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/signals.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "kube/kube_api.h"

#define WATCH_TIMEOUT_S    300   /* timeoutSeconds of each watch request */
#define WATCH_GRACE_MS     30000 /* client deadline past timeoutSeconds: a stuck stream ends */
#define WATCH_MAX_FAILURES 5     /* connections in a row without progress */
#define WATCH_PROGRESS_MS  5000  /* a connection that lasted this long made progress */
#define WATCH_BACKOFF_MS   100   /* 100, 200, 400, 800 ms between failed connections */
#define SLICE_MS           50    /* how often sleeps and waits look at stop/cancel flags */

struct pod_watch {
	char *ns, *pod, *container;
	struct kube_client *client; /* the thread's */
	struct pod_state cur;       /* the thread's working copy */
	bool have_rv;               /* cur came from `initial` with a resourceVersion */
	atomic_int stop;            /* set by pod_watch_stop; the client's cancel flag */
	pthread_t thread;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* Under lock: */
	struct pod_state state;
	bool ended; /* the thread has finished */
	/* The events follower (its own client and thread; see kube_watch.h): */
	struct kube_client *ev_client;
	pthread_t ev_thread;
	bool ev_thread_started;
	bool ev_from_create; /* the pod's state came from its create response */
	bool ev_started;     /* under lock: the Started event was seen */
	int64_t t_ev_started;
	uint64_t ev_gen; /* under lock: added to state.generation for waiters */
	unsigned ev_requests;
	struct err *failure; /* why, if it failed for good */
	unsigned requests;
};

/* --- Decoding ------------------------------------------------------------------------------ */

static void copy_str(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ? src : "");
}

static const struct json *find_container(const struct json *statuses, const char *name)
{
	for (size_t i = 0; i < json_len(statuses); i++) {
		const struct json *cs = json_at(statuses, i);
		const char *n = json_str(json_get(cs, "name"));
		if (name == NULL || (n && strcmp(n, name) == 0))
			return cs;
	}
	return NULL;
}

bool pod_waiting_is_fatal(const char *why, int64_t *pull_since, int64_t now, int64_t *recheck_at)
{
	if (strcmp(why, "InvalidImageName") == 0 ||
	    strcmp(why, "CreateContainerConfigError") == 0 ||
	    strcmp(why, "ErrImageNeverPull") == 0 || strcmp(why, "ImagePullBackOff") == 0 ||
	    strcmp(why, "CreateContainerError") == 0 || strcmp(why, "RunContainerError") == 0)
		return true;
	if (strcmp(why, "ErrImagePull") == 0) {
		if (*pull_since == 0)
			*pull_since = now;
		if (now - *pull_since >= POD_IMAGE_PULL_GRACE_MS)
			return true;
		*recheck_at = *pull_since + POD_IMAGE_PULL_GRACE_MS;
		return false;
	}
	*pull_since = 0;
	return false;
}

/* The state of one container status: CS_* with its reason, message and exit code. */
static enum container_state decode_cstate(const struct json *cs, char *reason, size_t rsize,
                                          char *message, size_t msize, int *exit_code)
{
	/* `state` only: `lastState` describes an earlier run of the container. */
	const struct json *state = json_get(cs, "state");
	const struct json *t = json_get(state, "terminated");
	const struct json *w = json_get(state, "waiting");
	const struct json *detail = NULL;
	enum container_state cstate = CS_UNKNOWN;
	if (t) {
		cstate = CS_TERMINATED;
		long long code = 0;
		if (json_int(json_get(t, "exitCode"), &code))
			*exit_code = (int)code;
		detail = t;
	} else if (json_get(state, "running")) {
		cstate = CS_RUNNING;
	} else if (w) {
		cstate = CS_WAITING;
		detail = w;
	}
	if (detail) {
		copy_str(reason, rsize, json_str(json_get(detail, "reason")));
		copy_str(message, msize, json_str(json_get(detail, "message")));
	}
	return cstate;
}

static void decode_init(const struct json *statuses, struct pod_state *out)
{
	for (size_t i = 0; i < json_len(statuses); i++) {
		const struct json *cs = json_at(statuses, i);
		int code = 0;
		char reason[64] = "", message[2048] = "";
		enum container_state st =
		        decode_cstate(cs, reason, sizeof(reason), message, sizeof(message), &code);
		if (st == CS_TERMINATED && code == 0)
			continue;
		copy_str(out->init_name, sizeof(out->init_name), json_str(json_get(cs, "name")));
		out->init_cstate = st;
		out->init_exit_code = code;
		memcpy(out->init_reason, reason, sizeof(reason));
		memcpy(out->init_message, message, sizeof(message));
		return;
	}
	out->init_done = json_len(statuses) > 0;
}

/* Another container of the pod, started before `container` (exec mode's installer), that
 * waits or failed: reported as init_* (pod_state's comment). */
static void decode_beside(const struct json *statuses, const char *container, struct pod_state *out)
{
	for (size_t i = 0; i < json_len(statuses); i++) {
		const struct json *cs = json_at(statuses, i);
		const char *name = json_str(json_get(cs, "name"));
		if (name == NULL || strcmp(name, container) == 0)
			continue;
		int code = 0;
		char reason[64] = "", message[2048] = "";
		enum container_state st =
		        decode_cstate(cs, reason, sizeof(reason), message, sizeof(message), &code);
		if (!(st == CS_WAITING && reason[0] && strcmp(reason, "ContainerCreating") != 0) &&
		    !(st == CS_TERMINATED && code != 0))
			continue;
		copy_str(out->init_name, sizeof(out->init_name), name);
		out->init_cstate = st;
		out->init_exit_code = code;
		memcpy(out->init_reason, reason, sizeof(reason));
		memcpy(out->init_message, message, sizeof(message));
		return;
	}
}

void pod_state_decode(const struct json *pod, const char *container, struct pod_state *out)
{
	int64_t t_scheduled = out->t_scheduled, t_running = out->t_running;
	int64_t t_terminated = out->t_terminated;
	uint64_t generation = out->generation;
	memset(out, 0, sizeof(*out));
	out->t_scheduled = t_scheduled;
	out->t_running = t_running;
	out->t_terminated = t_terminated;
	out->generation = generation;

	copy_str(out->resource_version, sizeof(out->resource_version),
	         json_str(json_path(pod, "metadata.resourceVersion")));
	copy_str(out->uid, sizeof(out->uid), json_str(json_path(pod, "metadata.uid")));
	const struct json *status = json_get(pod, "status");
	copy_str(out->phase, sizeof(out->phase), json_str(json_get(status, "phase")));
	copy_str(out->pod_reason, sizeof(out->pod_reason), json_str(json_get(status, "reason")));
	copy_str(out->pod_message, sizeof(out->pod_message), json_str(json_get(status, "message")));

	bool have_condition = false;
	const struct json *conds = json_get(status, "conditions");
	for (size_t i = 0; i < json_len(conds); i++) {
		const struct json *c = json_at(conds, i);
		const char *type = json_str(json_get(c, "type"));
		if (type == NULL || strcmp(type, "PodScheduled") != 0)
			continue;
		const char *st = json_str(json_get(c, "status"));
		have_condition = true;
		out->scheduled = st && strcmp(st, "True") == 0;
		if (!out->scheduled) {
			copy_str(out->sched_reason, sizeof(out->sched_reason),
			         json_str(json_get(c, "reason")));
			copy_str(out->sched_message, sizeof(out->sched_message),
			         json_str(json_get(c, "message")));
		}
		break;
	}
	/* A pod created with spec.nodeName set bypasses the scheduler and may lack the
	 * condition. */
	if (!have_condition && json_str(json_path(pod, "spec.nodeName")))
		out->scheduled = true;

	decode_init(json_get(status, "initContainerStatuses"), out);
	if (out->init_name[0] == '\0' && container != NULL)
		decode_beside(json_get(status, "containerStatuses"), container, out);

	const struct json *cs = find_container(json_get(status, "containerStatuses"), container);
	if (cs == NULL)
		cs = find_container(json_get(status, "initContainerStatuses"), container);
	out->cstate = decode_cstate(cs, out->c_reason, sizeof(out->c_reason), out->c_message,
	                            sizeof(out->c_message), &out->exit_code);
}

/* Whether two states differ in anything but the resourceVersion, times and generation. */
static bool state_differs(const struct pod_state *a, const struct pod_state *b)
{
	return strcmp(a->phase, b->phase) != 0 || strcmp(a->pod_reason, b->pod_reason) != 0 ||
	       strcmp(a->pod_message, b->pod_message) != 0 || a->scheduled != b->scheduled ||
	       strcmp(a->sched_reason, b->sched_reason) != 0 ||
	       strcmp(a->sched_message, b->sched_message) != 0 || a->cstate != b->cstate ||
	       strcmp(a->c_reason, b->c_reason) != 0 || strcmp(a->c_message, b->c_message) != 0 ||
	       a->exit_code != b->exit_code || a->deleted != b->deleted ||
	       a->init_done != b->init_done || strcmp(a->init_name, b->init_name) != 0 ||
	       a->init_cstate != b->init_cstate || strcmp(a->init_reason, b->init_reason) != 0 ||
	       strcmp(a->init_message, b->init_message) != 0 ||
	       a->init_exit_code != b->init_exit_code;
}

/* Takes in a new Pod object: decodes it into *st, stamps first-seen times and bumps the
 * generation if anything changed. A container seen terminated also counts as having run
 * (it may start and end between two events). Returns whether the state changed. */
static bool observe(struct pod_state *st, const struct json *pod, const char *container,
                    bool deleted)
{
	struct pod_state next = *st;
	pod_state_decode(pod, container, &next);
	if (next.resource_version[0] == '\0')
		memcpy(next.resource_version, st->resource_version, sizeof(next.resource_version));
	next.deleted = deleted;
	bool changed = st->generation == 0 || state_differs(st, &next);
	int64_t now = now_ms();
	bool started = next.cstate == CS_RUNNING || next.cstate == CS_TERMINATED;
	if ((next.scheduled || started) && next.t_scheduled == 0)
		next.t_scheduled = now;
	if (started && next.t_running == 0)
		next.t_running = now;
	if (next.cstate == CS_TERMINATED && next.t_terminated == 0)
		next.t_terminated = now;
	if (changed)
		next.generation++;
	*st = next;
	return changed;
}

int pod_watch_split_lines(struct buf *pending, const char *data, size_t len,
                          int (*on_line)(const char *line, size_t len, void *ud), void *ud,
                          struct err **err)
{
	while (len > 0) {
		const char *nl = memchr(data, '\n', len);
		size_t n = nl ? (size_t)(nl - data) : len;
		if (pending->limit && (n > pending->limit || pending->len > pending->limit - n))
			return err_set(err, ERR_NET,
			               "a watch event is longer than the limit of %zu bytes",
			               pending->limit);
		if (nl == NULL) {
			buf_append(pending, data, n, "watch event", NULL);
			return 0;
		}
		const char *line = data;
		size_t line_len = n;
		if (pending->len > 0) {
			buf_append(pending, data, n, "watch event", NULL);
			line = pending->data;
			line_len = pending->len;
		}
		if (line_len > 0 && line[line_len - 1] == '\r')
			line_len--;
		int rc = line_len > 0 ? on_line(line, line_len, ud) : 0;
		buf_reset(pending);
		data = nl + 1;
		len -= n + 1;
		if (rc != 0)
			return rc;
	}
	return 0;
}

int pod_watch_apply_event(const char *line, size_t len, const char *container, struct pod_state *st,
                          struct err **err)
{
	cleanup_json struct json *ev = NULL;
	cleanup_err struct err *perr = NULL;
	if (json_parse(line, len, "watch event", &ev, &perr) < 0)
		return err_set(err, ERR_NET, "%s", perr->msg);
	const char *type = json_str(json_get(ev, "type"));
	const struct json *obj = json_get(ev, "object");
	if (type == NULL || json_type(obj) != JSON_OBJECT)
		return err_set(err, ERR_NET, "a watch event without type or object: %.*s",
		               (int)(len < 200 ? len : 200), line); /* line is not NUL-terminated */

	if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0)
		return observe(st, obj, container, false) ? POD_WATCH_CHANGED : POD_WATCH_UNCHANGED;
	if (strcmp(type, "DELETED") == 0) {
		observe(st, obj, container, true);
		return POD_WATCH_DELETED;
	}
	if (strcmp(type, "BOOKMARK") == 0) {
		const char *rv = json_str(json_path(obj, "metadata.resourceVersion"));
		if (rv && *rv)
			copy_str(st->resource_version, sizeof(st->resource_version), rv);
		return POD_WATCH_UNCHANGED;
	}
	if (strcmp(type, "ERROR") == 0) {
		long long code = 0;
		json_int(json_get(obj, "code"), &code);
		if (code == 410)
			return POD_WATCH_EXPIRED;
		const char *reason = json_str(json_get(obj, "reason"));
		const char *message = json_str(json_get(obj, "message"));
		err_set(err, ERR_API, "the watch stream reported an error: %lld %s: %s", code,
		        reason ? reason : "", message ? message : "(no message)");
		if (err) {
			(*err)->http_status = (int)code;
			copy_str((*err)->reason, sizeof((*err)->reason), reason);
		}
		return -1;
	}
	log_debug("watch: ignoring an event of type %s", type);
	return POD_WATCH_UNCHANGED;
}

/* --- The thread ----------------------------------------------------------------------------- */

/* Hands the working state to the waiters. */
static void publish(struct pod_watch *w)
{
	pthread_mutex_lock(&w->lock);
	w->state = w->cur;
	w->requests = kube_client_requests(w->client);
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* Sleeps ms in slices, returning early when the watch is stopped. */
static void pause_ms(struct pod_watch *w, int64_t ms)
{
	int64_t until = now_ms() + ms;
	while (!w->stop) {
		int64_t left = until - now_ms();
		if (left <= 0)
			return;
		struct timespec ts = {0, (left < SLICE_MS ? left : SLICE_MS) * 1000000L};
		nanosleep(&ts, NULL);
	}
}

/* GETs the pod into cur (a 404 marks it deleted) and publishes it. */
static int get_pod(struct pod_watch *w, struct err **err)
{
	cleanup_json struct json *pod = NULL;
	long status = 0;
	kube_client_set_deadline(w->client, 0);
	int rc = kube_api_pod_get(w->client, w->ns, w->pod, &status, &pod, err);
	if (rc < 0 && status == 404 && err_code_of(err) == ERR_API) {
		err_free(*err);
		*err = NULL;
		w->cur.deleted = true;
		w->cur.generation++;
		publish(w);
		return 0;
	}
	if (rc < 0)
		return -1;
	observe(&w->cur, pod, w->container, false);
	publish(w);
	return 0;
}

/* One watch connection. */
struct conn {
	struct pod_watch *w;
	struct buf pending;
	unsigned events;
	enum { CONN_OPEN, CONN_DELETED, CONN_EXPIRED, CONN_BROKEN, CONN_FATAL } end;
	struct err *err;
};

static int conn_line(const char *line, size_t len, void *ud)
{
	struct conn *k = ud;
	int ev = pod_watch_apply_event(line, len, k->w->container, &k->w->cur, &k->err);
	if (ev >= 0 && ev != POD_WATCH_EXPIRED)
		k->events++;
	if (ev < 0) {
		k->end = err_code_of(&k->err) == ERR_API ? CONN_FATAL : CONN_BROKEN;
		return 1;
	}
	if (ev == POD_WATCH_CHANGED || ev == POD_WATCH_DELETED)
		publish(k->w);
	if (ev == POD_WATCH_DELETED) {
		k->end = CONN_DELETED;
		return 1;
	}
	if (ev == POD_WATCH_EXPIRED) {
		k->end = CONN_EXPIRED;
		return 1;
	}
	return 0;
}

static int conn_data(const char *data, size_t len, void *ud)
{
	struct conn *k = ud;
	int rc = pod_watch_split_lines(&k->pending, data, len, conn_line, k, &k->err);
	if (rc < 0)
		k->end = CONN_FATAL; /* an event over the limit would come back on a re-watch */
	return rc != 0;
}

/* One watch connection from the current resourceVersion, to its end; *e is its error. */
static int watch_once(struct pod_watch *w, struct conn *k, struct err **e)
{
	cleanup_free char *path =
	        kube_api_pod_watch_path(w->ns, w->pod, w->cur.resource_version, WATCH_TIMEOUT_S);
	buf_init(&k->pending, LIMIT_WATCH_EVENT);
	kube_client_set_deadline(w->client, now_ms() + WATCH_TIMEOUT_S * 1000LL + WATCH_GRACE_MS);
	int rc = kube_stream_get(w->client, path, conn_data, k, e);
	/* A clean end may leave a last line without its newline. */
	if (rc == 0 && k->end == CONN_OPEN && k->pending.len > 0)
		conn_line(k->pending.data, k->pending.len, k);
	buf_free(&k->pending);
	if (k->err) {
		err_free(*e);
		*e = k->err;
		k->err = NULL;
		rc = -1;
	}
	publish(w); /* the request count */
	return rc;
}

/* After a 410: GETs the pod again (the watch goes on from its resourceVersion). Bounded: a
 * server that expires every fresh resourceVersion would otherwise keep us in a GET/watch
 * loop. */
static int after_expiry(struct pod_watch *w, int *expirations, struct err **err)
{
	if (++*expirations > WATCH_MAX_FAILURES)
		return err_set(err, ERR_NET, "the watch expired %d times in a row without an event",
		               *expirations);
	log_debug("watch: resourceVersion %s expired; getting the pod again",
	          w->cur.resource_version);
	if (*expirations > 1)
		pause_ms(w, (int64_t)WATCH_BACKOFF_MS << (*expirations - 2));
	return get_pod(w, err);
}

/* After a connection that failed or ended without progress: waits, longer each time, or
 * gives up after WATCH_MAX_FAILURES in a row. *last keeps the latest error. */
static int after_failure(struct pod_watch *w, int *failures, struct err **last, struct err **e,
                         struct err **err)
{
	err_free(*last);
	*last = *e;
	*e = NULL;
	if (*last == NULL)
		err_set(last, ERR_NET, "the watch ended at once without any event");
	if (++*failures >= WATCH_MAX_FAILURES)
		return err_set(err, ERR_NET, "the watch failed %d times in a row; last: %s",
		               *failures, (*last)->msg);
	int64_t wait = (int64_t)WATCH_BACKOFF_MS << (*failures - 1);
	log_info("watch of pod %s/%s: %s; watching again from resourceVersion %s in %lld ms", w->ns,
	         w->pod, (*last)->msg, w->cur.resource_version, (long long)wait);
	pause_ms(w, wait);
	return 0;
}

/* Watches until the pod is deleted (0), the watch is stopped (0) or fails for good (-1). */
static int watch_loop(struct pod_watch *w, struct err **err)
{
	if (!w->have_rv && get_pod(w, err) < 0)
		return -1;
	int failures = 0, expirations = 0;
	cleanup_err struct err *last = NULL;
	while (!w->stop && !w->cur.deleted) {
		struct conn k = {.w = w};
		int64_t t0 = now_ms();
		cleanup_err struct err *e = NULL;
		int rc = watch_once(w, &k, &e);
		if (w->stop || k.end == CONN_DELETED)
			return 0;
		if (k.events > 0)
			expirations = 0;
		if (k.end == CONN_EXPIRED ||
		    (rc < 0 && e->code == ERR_API && e->http_status == 410)) {
			if (after_expiry(w, &expirations, err) < 0)
				return -1;
			failures = 0;
			continue;
		}
		if (k.end == CONN_FATAL || (rc < 0 && e->code == ERR_API)) {
			*err = e; /* kube_http has already retried 429/5xx */
			e = NULL;
			return -1;
		}
		bool progress = k.events > 0 || now_ms() - t0 >= WATCH_PROGRESS_MS;
		if (progress)
			failures = 0;
		if (rc == 0 && progress)
			continue; /* a clean end (timeoutSeconds): watch again from the last RV */
		if (after_failure(w, &failures, &last, &e, err) < 0)
			return -1;
	}
	return 0;
}

static void *watch_main(void *arg)
{
	struct pod_watch *w = arg;
	struct err *e = NULL;
	int rc = watch_loop(w, &e);
	pthread_mutex_lock(&w->lock);
	w->state = w->cur;
	w->requests = kube_client_requests(w->client);
	w->ended = true;
	if (rc < 0 && !w->stop) {
		if (e == NULL)
			err_set(&e, ERR_INTERNAL, "the watch thread failed without an error");
		w->failure = e;
		e = NULL;
	}
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	err_free(e);
	return NULL;
}

/* --- The events follower -------------------------------------------------------------------- */

struct ev_conn {
	struct pod_watch *w;
	struct buf pending;
	char field_path[96]; /* "spec.containers{NAME}" */
};

/* One Event of the watch: the Started event of the function container ends the follower. */
static int ev_line(const char *line, size_t len, void *ud)
{
	struct ev_conn *k = ud;
	cleanup_json struct json *ev = NULL;
	if (json_parse(line, len, "event", &ev, NULL) < 0)
		return 1;
	const struct json *obj = json_get(ev, "object");
	const char *reason = json_str(json_get(obj, "reason"));
	const char *path = json_str(json_path(obj, "involvedObject.fieldPath"));
	if (reason == NULL || strcmp(reason, "Started") != 0 || path == NULL ||
	    strcmp(path, k->field_path) != 0)
		return 0;
	struct pod_watch *w = k->w;
	pthread_mutex_lock(&w->lock);
	w->ev_started = true;
	w->t_ev_started = now_ms();
	w->ev_gen++;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	return 1;
}

static int ev_data(const char *data, size_t len, void *ud)
{
	struct ev_conn *k = ud;
	return pod_watch_split_lines(&k->pending, data, len, ev_line, k, NULL) != 0;
}

/* Waits (in slices) until the pod's uid is known; false when the watch stops or ends first,
 * or when the container already runs by the status. */
static bool ev_wait_uid(struct pod_watch *w, char *uid, size_t size)
{
	pthread_mutex_lock(&w->lock);
	while (w->state.uid[0] == '\0' && !w->stop && !w->ended && !w->state.deleted) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += SLICE_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&w->cond, &w->lock, &ts);
	}
	copy_str(uid, size, w->state.uid);
	/* A pod watched without its create response (started ahead, claimed later) may run
	 * already: then the status says it all. */
	bool running = !w->ev_from_create &&
	               (w->state.cstate == CS_RUNNING || w->state.cstate == CS_TERMINATED);
	pthread_mutex_unlock(&w->lock);
	return uid[0] != '\0' && !w->stop && !running;
}

static void *events_main(void *arg)
{
	struct pod_watch *w = arg;
	char uid[64];
	if (!ev_wait_uid(w, uid, sizeof(uid)))
		return NULL;
	cleanup_free char *path = kube_api_started_events_watch_path(w->ns, uid, WATCH_TIMEOUT_S);
	struct ev_conn k = {.w = w};
	snprintf(k.field_path, sizeof(k.field_path), "spec.containers{%s}", w->container);
	buf_init(&k.pending, LIMIT_WATCH_EVENT);
	kube_client_set_deadline(w->ev_client,
	                         now_ms() + WATCH_TIMEOUT_S * 1000LL + WATCH_GRACE_MS);
	cleanup_err struct err *e = NULL;
	if (kube_stream_get(w->ev_client, path, ev_data, &k, &e) < 0 && !w->stop)
		log_debug("no Started events for pod %s/%s (%s): attaching when the pod status "
		          "says the container runs",
		          w->ns, w->pod, e->msg);
	buf_free(&k.pending);
	pthread_mutex_lock(&w->lock);
	w->ev_requests = kube_client_requests(w->ev_client);
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static void watch_free(struct pod_watch *w)
{
	kube_client_free(w->client);
	kube_client_free(w->ev_client);
	err_free(w->failure);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w->ns);
	free(w->pod);
	free(w->container);
	free(w);
}

int pod_watch_start(struct kube_config *cfg, const char *ns, const char *pod, const char *container,
                    const struct json *initial, struct pod_watch **out, struct err **err)
{
	struct kube_client *client = NULL;
	if (kube_client_new(cfg, &client, err) < 0)
		return -1;
	struct kube_client *ev_client = NULL;
	if (container && kube_client_new(cfg, &ev_client, err) < 0) {
		kube_client_free(client);
		return -1;
	}
	struct pod_watch *w = xcalloc(1, sizeof(*w));
	w->ev_client = ev_client;
	if (ev_client)
		kube_client_set_cancel(ev_client, &w->stop);
	w->ns = xstrdup(ns);
	w->pod = xstrdup(pod);
	w->container = container ? xstrdup(container) : NULL;
	w->client = client;
	kube_client_set_cancel(client, &w->stop);
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &attr);
	pthread_condattr_destroy(&attr);
	if (initial) {
		observe(&w->cur, initial, w->container, false);
		w->have_rv = w->cur.resource_version[0] != '\0';
		w->state = w->cur;
		w->ev_from_create = true;
	}

	/* SIGTERM and friends must land on the main thread, whose handler sets the
	 * cancellation flag */
	int rc = signals_thread_start(&w->thread, watch_main, w);
	if (rc == 0 && w->ev_client)
		w->ev_thread_started = signals_thread_start(&w->ev_thread, events_main, w) == 0;
	if (rc != 0) {
		watch_free(w);
		return err_set(err, ERR_INTERNAL, "cannot start the watch thread: %s",
		               strerror(rc));
	}
	*out = w;
	return 0;
}

static void deadline_timespec(int64_t ms, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ms / 1000);
	ts->tv_nsec = (long)(ms % 1000) * 1000000L;
}

/* The state waiters see: the pod's, with the events follower's part. Under w->lock. */
static void copy_state(struct pod_watch *w, struct pod_state *out)
{
	*out = w->state;
	out->generation = w->state.generation + w->ev_gen;
	out->started_event = w->ev_started;
	out->t_started_event = w->t_ev_started;
}

void pod_watch_state(struct pod_watch *w, struct pod_state *out)
{
	pthread_mutex_lock(&w->lock);
	copy_state(w, out);
	pthread_mutex_unlock(&w->lock);
}

int pod_watch_wait(struct pod_watch *w, uint64_t seen_generation, int64_t deadline_ms,
                   atomic_int *cancel, struct pod_state *out, struct err **err)
{
	int rc;
	pthread_mutex_lock(&w->lock);
	for (;;) {
		if (w->state.generation + w->ev_gen > seen_generation) {
			rc = 0;
			break;
		}
		if (w->failure) {
			err_set(err, w->failure->code, "%s", w->failure->msg);
			if (err) {
				(*err)->http_status = w->failure->http_status;
				(*err)->signo = w->failure->signo;
				memcpy((*err)->reason, w->failure->reason, sizeof((*err)->reason));
			}
			rc = -1;
			break;
		}
		if (w->ended || (cancel && *cancel)) {
			rc = 0; /* nothing more will change / the caller is being cancelled */
			break;
		}
		int64_t now = now_ms();
		if (now >= deadline_ms) {
			rc = 1;
			break;
		}
		int64_t until = deadline_ms;
		if (cancel && until > now + SLICE_MS)
			until = now + SLICE_MS;
		struct timespec ts;
		deadline_timespec(until, &ts);
		pthread_cond_timedwait(&w->cond, &w->lock, &ts);
	}
	copy_state(w, out);
	pthread_mutex_unlock(&w->lock);
	return rc;
}

void pod_watch_stop(struct pod_watch *w)
{
	if (w == NULL)
		return;
	w->stop = 1;
	kube_client_wakeup(w->client);
	if (w->ev_client)
		kube_client_wakeup(w->ev_client);
	pthread_join(w->thread, NULL);
	if (w->ev_thread_started)
		pthread_join(w->ev_thread, NULL);
	watch_free(w);
}

unsigned pod_watch_requests(struct pod_watch *w)
{
	pthread_mutex_lock(&w->lock);
	unsigned n = w->requests + w->ev_requests;
	pthread_mutex_unlock(&w->lock);
	return n;
}

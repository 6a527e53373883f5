/* kube_watch.c — see kube_watch.h.
 *
 * The thread owns a kube_client whose cancel flag is the watch's own `stop` flag, so
 * pod_watch_stop() ends an idle stream within one 50 ms poll slice of kube_http. Events are
 * newline-delimited JSON; a line is assembled in a buffer bounded by LIMIT_WATCH_EVENT.
 */
#include "kube_watch.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "cleanup.h"
#include "log.h"
#include "size_limits.h"
#include "xalloc.h"

#define WATCH_TIMEOUT_S 290
#define MAX_FAILURES 5

struct pod_watch {
	struct kube_config *cfg;
	char *ns, *pod, *container;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct pod_state state; /* under lock */
	struct err *error;      /* under lock: the thread failed for good */
	bool done;              /* under lock: the thread ended */
	volatile sig_atomic_t stop;
	unsigned requests;
	struct json *initial;
	/* thread-local parsing state */
	struct buf line;
	bool restart; /* 410: re-GET and re-watch */
	bool progressed;
};

static void copy_str(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ? src : "");
}

void pod_state_decode(const struct json *pod, const char *container, struct pod_state *out)
{
	copy_str(out->phase, sizeof(out->phase), json_str(json_path(pod, "status.phase")));
	copy_str(out->pod_reason, sizeof(out->pod_reason), json_str(json_path(pod, "status.reason")));
	copy_str(out->pod_message, sizeof(out->pod_message),
	         json_str(json_path(pod, "status.message")));
	copy_str(out->resource_version, sizeof(out->resource_version),
	         json_str(json_path(pod, "metadata.resourceVersion")));
	const struct json *conds = json_path(pod, "status.conditions");
	out->scheduled = false;
	out->sched_reason[0] = out->sched_message[0] = '\0';
	for (size_t i = 0; i < json_len(conds); i++) {
		const struct json *c = json_at(conds, i);
		const char *type = json_str(json_get(c, "type"));
		if (type == NULL || strcmp(type, "PodScheduled") != 0)
			continue;
		const char *st = json_str(json_get(c, "status"));
		out->scheduled = st && strcmp(st, "True") == 0;
		if (!out->scheduled) {
			copy_str(out->sched_reason, sizeof(out->sched_reason),
			         json_str(json_get(c, "reason")));
			copy_str(out->sched_message, sizeof(out->sched_message),
			         json_str(json_get(c, "message")));
		}
	}
	if (json_str(json_path(pod, "spec.nodeName")))
		out->scheduled = true;
	const struct json *css = json_path(pod, "status.containerStatuses");
	for (size_t i = 0; i < json_len(css); i++) {
		const struct json *cs = json_at(css, i);
		const char *name = json_str(json_get(cs, "name"));
		if (name == NULL || strcmp(name, container) != 0)
			continue;
		const struct json *state = json_get(cs, "state");
		const struct json *w = json_get(state, "waiting");
		const struct json *r = json_get(state, "running");
		const struct json *t = json_get(state, "terminated");
		out->c_reason[0] = out->c_message[0] = '\0';
		if (t) {
			out->cstate = CS_TERMINATED;
			copy_str(out->c_reason, sizeof(out->c_reason), json_str(json_get(t, "reason")));
			copy_str(out->c_message, sizeof(out->c_message),
			         json_str(json_get(t, "message")));
			long long code = -1;
			json_int(json_get(t, "exitCode"), &code);
			out->exit_code = (int)code;
		} else if (r) {
			out->cstate = CS_RUNNING;
		} else if (w) {
			out->cstate = CS_WAITING;
			copy_str(out->c_reason, sizeof(out->c_reason), json_str(json_get(w, "reason")));
			copy_str(out->c_message, sizeof(out->c_message),
			         json_str(json_get(w, "message")));
		}
	}
}

/* Applies a new Pod object to the shared state and wakes waiters. */
static void apply(struct pod_watch *w, const struct json *pod, bool deleted)
{
	pthread_mutex_lock(&w->lock);
	struct pod_state *st = &w->state;
	pod_state_decode(pod, w->container, st);
	int64_t now = kube_now_ms();
	if (st->scheduled && !st->t_scheduled)
		st->t_scheduled = now;
	if (st->cstate == CS_RUNNING && !st->t_running)
		st->t_running = now;
	if (st->cstate == CS_TERMINATED && !st->t_terminated) {
		st->t_terminated = now;
		if (!st->t_running)
			st->t_running = now;
	}
	if (deleted)
		st->deleted = true;
	st->generation++;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static void set_rv(struct pod_watch *w, const char *rv)
{
	pthread_mutex_lock(&w->lock);
	copy_str(w->state.resource_version, sizeof(w->state.resource_version), rv);
	pthread_mutex_unlock(&w->lock);
}

/* Handles one event line. Returns 1 to end the stream (deleted, 410), -1 on a fatal error. */
static int handle_event(struct pod_watch *w, const char *line, size_t len, struct err **err)
{
	cleanup_json struct json *ev = NULL;
	if (json_parse(line, len, "watch event", &ev, err) < 0)
		return -1;
	const char *type = json_str(json_get(ev, "type"));
	const struct json *obj = json_get(ev, "object");
	if (type == NULL)
		return err_set(err, ERR_NET, "watch event without a type");
	w->progressed = true;
	if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0) {
		apply(w, obj, false);
		return 0;
	}
	if (strcmp(type, "BOOKMARK") == 0) {
		set_rv(w, json_str(json_path(obj, "metadata.resourceVersion")));
		return 0;
	}
	if (strcmp(type, "DELETED") == 0) {
		apply(w, obj, true);
		return 1;
	}
	if (strcmp(type, "ERROR") == 0) {
		long long code = 0;
		json_int(json_get(obj, "code"), &code);
		if (code == 410) {
			log_debug("watch: resourceVersion expired (410 in the stream); re-listing");
			w->restart = true;
			return 1;
		}
		const char *msg = json_str(json_get(obj, "message"));
		return err_set(err, ERR_API, "watch pod %s: error event %lld: %s", w->pod, code,
		               msg ? msg : "(no message)");
	}
	return 0;
}

struct stream_ctx {
	struct pod_watch *w;
	struct err *err;
	int result; /* 0 go on, 1 stop cleanly, -1 failed */
};

static int on_stream_data(const char *data, size_t len, void *ud)
{
	struct stream_ctx *sc = ud;
	struct pod_watch *w = sc->w;
	while (len > 0) {
		const char *nl = memchr(data, '\n', len);
		size_t n = nl ? (size_t)(nl - data) : len;
		if (buf_append(&w->line, data, n, "watch event", &sc->err) < 0) {
			sc->result = -1;
			return 1;
		}
		if (!nl)
			break;
		if (w->line.len) {
			int rc = handle_event(w, w->line.data, w->line.len, &sc->err);
			buf_reset(&w->line);
			if (rc != 0) {
				sc->result = rc;
				return 1;
			}
		}
		data = nl + 1;
		len -= n + 1;
	}
	return 0;
}

static int get_pod(struct pod_watch *w, struct kube_client *c, struct err **err)
{
	cleanup_free char *path = xasprintf("/api/v1/namespaces/%s/pods/%s", w->ns, w->pod);
	cleanup_json struct json *pod = NULL;
	long status = 0;
	w->requests++;
	if (kube_request(c, "GET", path, NULL, NULL, 0, &status, &pod, err) < 0) {
		if (status == 404) {
			pthread_mutex_lock(&w->lock);
			w->state.deleted = true;
			w->state.generation++;
			pthread_cond_broadcast(&w->cond);
			pthread_mutex_unlock(&w->lock);
			return 1;
		}
		return -1;
	}
	apply(w, pod, false);
	return 0;
}

static void finish(struct pod_watch *w, struct err *e)
{
	pthread_mutex_lock(&w->lock);
	w->error = e;
	w->done = true;
	w->state.generation++;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static void *watch_main(void *arg)
{
	struct pod_watch *w = arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	struct err *e = NULL;
	struct kube_client *c = NULL;
	if (kube_client_new(w->cfg, &c, &e) < 0) {
		finish(w, e);
		return NULL;
	}
	kube_client_set_cancel(c, &w->stop);
	bool need_get = w->initial == NULL;
	if (w->initial) {
		apply(w, w->initial, false);
		json_free(w->initial);
		w->initial = NULL;
	}
	int failures = 0;
	while (!w->stop) {
		if (need_get) {
			int rc = get_pod(w, c, &e);
			if (rc < 0)
				goto failed;
			if (rc == 1)
				break; /* gone */
			need_get = false;
		}
		char rv[32];
		pthread_mutex_lock(&w->lock);
		copy_str(rv, sizeof(rv), w->state.resource_version);
		bool deleted = w->state.deleted;
		pthread_mutex_unlock(&w->lock);
		if (deleted)
			break;
		cleanup_free char *path = xasprintf(
		        "/api/v1/namespaces/%s/pods?watch=1&fieldSelector=metadata.name%%3D%s"
		        "&resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=%d",
		        w->ns, w->pod, rv, WATCH_TIMEOUT_S);
		struct stream_ctx sc = {.w = w};
		buf_reset(&w->line);
		w->restart = false;
		w->progressed = false;
		w->requests++;
		int rc = kube_stream_get(c, path, on_stream_data, &sc, &e);
		if (w->stop)
			break;
		if (sc.result < 0) {
			e = sc.err;
			goto failed;
		}
		err_free(sc.err);
		if (sc.result == 1 && w->restart) {
			need_get = true;
			continue;
		}
		if (sc.result == 1)
			break; /* deleted */
		if (rc < 0) {
			if (e->http_status == 410) {
				log_debug("watch: resourceVersion expired (410); re-listing");
				err_free(e);
				e = NULL;
				need_get = true;
				continue;
			}
			if (e->code == ERR_API && e->http_status != 0)
				goto failed; /* retried in kube_http already; not recoverable here */
			if (w->progressed)
				failures = 0;
			if (++failures > MAX_FAILURES)
				goto failed;
			log_debug("watch: %s; re-watching from resourceVersion %s", e->msg, rv);
			err_free(e);
			e = NULL;
			struct timespec ts = {0, 100000000L * failures};
			nanosleep(&ts, NULL);
			continue;
		}
		failures = 0; /* clean end: re-watch from the last resourceVersion */
	}
	kube_client_free(c);
	finish(w, NULL);
	return NULL;
failed:
	kube_client_free(c);
	err_wrap(&e, "watch pod %s/%s", w->ns, w->pod);
	finish(w, e);
	return NULL;
}

int pod_watch_start(struct kube_config *cfg, const char *ns, const char *pod, const char *container,
                    const struct json *initial, struct pod_watch **out, struct err **err)
{
	struct pod_watch *w = xcalloc(1, sizeof(*w));
	w->cfg = cfg;
	w->ns = xstrdup(ns);
	w->pod = xstrdup(pod);
	w->container = xstrdup(container);
	buf_init(&w->line, LIMIT_WATCH_EVENT);
	if (initial) {
		/* a private copy: the caller's tree may be freed before the thread reads it */
		struct buf b;
		buf_init(&b, 0);
		struct jw jw;
		jw_init(&jw, &b);
		json_write(&jw, initial);
		json_parse(b.data, b.len, "pod", &w->initial, NULL);
		buf_free(&b);
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &ca);
	pthread_condattr_destroy(&ca);
	int rc = pthread_create(&w->thread, NULL, watch_main, w);
	if (rc != 0) {
		json_free(w->initial);
		buf_free(&w->line);
		free(w->ns), free(w->pod), free(w->container);
		free(w);
		return err_set(err, ERR_INTERNAL, "cannot start the watch thread: %s", strerror(rc));
	}
	*out = w;
	return 0;
}

int pod_watch_wait(struct pod_watch *w, uint64_t seen_generation, int64_t deadline_ms,
                   volatile sig_atomic_t *cancel, struct pod_state *out, struct err **err)
{
	int rc = 0;
	pthread_mutex_lock(&w->lock);
	for (;;) {
		if (w->error) {
			err_set(err, w->error->code, "%s", w->error->msg);
			if (err && *err)
				(*err)->http_status = w->error->http_status;
			rc = -1;
			break;
		}
		if (w->state.generation > seen_generation)
			break;
		if (cancel && *cancel)
			break;
		int64_t now = kube_now_ms();
		if (now >= deadline_ms) {
			rc = 1;
			break;
		}
		int64_t until = deadline_ms - now > 50 ? now + 50 : deadline_ms;
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		int64_t ns = (int64_t)ts.tv_nsec + (until - now) * 1000000LL;
		ts.tv_sec += ns / 1000000000LL;
		ts.tv_nsec = ns % 1000000000LL;
		pthread_cond_timedwait(&w->cond, &w->lock, &ts);
	}
	*out = w->state;
	pthread_mutex_unlock(&w->lock);
	return rc;
}

void pod_watch_stop(struct pod_watch *w)
{
	if (w == NULL)
		return;
	w->stop = 1;
	pthread_join(w->thread, NULL);
	err_free(w->error);
	json_free(w->initial);
	buf_free(&w->line);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w->ns);
	free(w->pod);
	free(w->container);
	free(w);
}

unsigned pod_watch_requests(struct pod_watch *w)
{
	return w->requests;
}

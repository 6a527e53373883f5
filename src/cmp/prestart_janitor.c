/* prestart_janitor.c — the janitor process of cmp/prestart.h: see prestart_janitor.h. */
#include "cmp/prestart_janitor.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/fdio.h"
#include "base/json.h"
#include "base/log.h"
#include "base/signals.h"
#include "base/xalloc.h"
#include "handoff/offers.h"
#include "kube/kube_api.h"
#include "kube/kube_http.h"
#include "pool/pool.h"
#include "pool/pool_session.h"

/* The marker saying offer i is still being made. */
static char *pending_marker(const struct prestart *p, size_t i)
{
	return prestart_offer_pending_path(p->dir, p->offers[i].key, i);
}

/* True once generate closed its end of the pipe (done, or dead). */
static bool parent_done(int fd, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return poll(&p, 1, timeout_ms) > 0;
}

/* Creates a private empty file (a marker or an offer); best effort. */
static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
}

/* A pool function: an idle pod of its pool is leased for the render, else one is made
 * (leased, while the namespace has room), and offered with the note "pool HOLDER warm|cold"
 * (offers.h). Returns 1 when there is an offer. */
static void start_opener(struct prestart *p, struct offer *o, struct json *created);

static unsigned lease_for_pool(struct prestart *p, struct kube_client *c, struct offer *o)
{
	char key[17];
	fn_pool_key_text(o->key, key);
	cleanup_json struct json *pod = NULL;
	cleanup_err struct err *e = NULL;
	size_t idle = 0;
	bool room = false, warm = false;
	int rc = fn_pool_claim(c, p->ns, key, o->spec_sha256, o->pod_image, p->holder,
	                       p->lease_until, &pod, &idle, &e);
	if (rc > 0)
		warm = fn_pool_pod_runs(pod);
	else if (rc < 0 || fn_pool_room(c, &p->pool, p->ns, &room, &e) < 0 || !room ||
	         kube_api_pod_create(c, p->ns, o->body, o->len, &pod, &e) < 0) {
		if (e)
			log_debug("%s: no pool pod leased for the render: %s", o->image, e->msg);
		return 0;
	}
	o->pod = xstrdup(json_str(json_path(pod, "metadata.name")));
	if (rc == 0 && fn_pool_over_cap(c, &p->pool, p->ns)) {
		log_info("warm pool: over KRMPOD_WARM_POOL_MAX=%ld after a concurrent create: pod "
		         "%s/%s serves this render and is retired",
		         (long)p->pool.pool_max, p->ns, o->pod);
		o->over_cap = true;
	}
	/* A cold one (made now, or leased while it starts) gets its session once it started,
	 * as a pod started ahead does: the note says so ("session PID"). */
	struct prestart_offer_note note = {
	        .kind = OFFER_POOL, .warm = warm, .opener = warm ? 0 : getpid()};
	snprintf(note.holder, sizeof(note.holder), "%s", p->holder);
	cleanup_free char *file = prestart_offer_path(p->dir, o->key, o->pod);
	if (warm) { /* before the offer: its shims find the session's socket with it */
		cleanup_free char *sock = prestart_offer_session_path(p->dir, o->key, o->pod);
		cleanup_err struct err *se = NULL;
		if (fn_session_open(p->cfg, p->ns, o->pod, sock, p->deadline, &signals_cancel,
		                    &o->session, &se) < 0)
			log_info("%s: no call session with pool pod %s/%s, its calls exec one by "
			         "one: %s",
			         o->image, p->ns, o->pod, se->msg);
	}
	prestart_offer_write(file, &note);
	if (!warm) {
		start_opener(p, o, pod);
		pod = NULL; /* the opener's now */
	}
	log_debug("pool pod %s for %s offered (%s)", o->pod, o->image, rc > 0 ? "leased" : "made");
	return 1;
}

/* A cold exec-mode pod's session, opened by its own thread once the pod started (the offer
 * says "session PID"; the shim that claims it waits for the socket, or its ".none" marker:
 * pool_session.h). The pod is the render's (struct offer, exec), or a pool pod the render
 * leased before it ran. */
static void *open_when_started(void *arg)
{
	struct offer *o = arg;
	struct prestart *p = o->owner;
	cleanup_free char *sock = prestart_offer_session_path(p->dir, o->key, o->pod);
	cleanup_err struct err *e = NULL;
	int rc = fn_session_open_when_started(p->cfg, p->ns, o->pod, o->created, sock, p->deadline,
	                                      &p->stop_openers, &signals_cancel, &o->session, &e);
	if (rc != 0) {
		log_debug("%s: no call session with pod %s/%s: %s", o->image, p->ns, o->pod,
		          e ? e->msg : "it did not start while generate ran");
		cleanup_free char *none = fn_session_none_path(sock);
		touch(none);
	}
	return NULL;
}

static void start_opener(struct prestart *p, struct offer *o, struct json *created)
{
	o->owner = p;
	o->created = created;
	o->opener_started = signals_thread_start(&o->opener, open_when_started, o) == 0;
	if (!o->opener_started) {
		cleanup_free char *sock = prestart_offer_session_path(p->dir, o->key, o->pod);
		cleanup_free char *none = fn_session_none_path(sock);
		touch(none);
	}
}

/* Creates the pods and offers each as it exists; stops early when generate is done, the
 * group is signalled, or a full ResourceQuota refuses one. Returns how many exist. */
static unsigned create_and_offer(struct prestart *p, struct kube_client *c, int pipe_r)
{
	unsigned created = 0;
	for (size_t i = 0; i < p->n; i++) {
		cleanup_free char *m = pending_marker(p, i);
		prestart_offer_mark_pending(m);
	}
	for (size_t i = 0; i < p->n && !signals_cancel && !parent_done(pipe_r, 0); i++) {
		struct offer *o = &p->offers[i];
		cleanup_free char *marker = pending_marker(p, i);
		if (o->to_pool) {
			created += lease_for_pool(p, c, o);
			unlink(marker);
			continue;
		}
		cleanup_json struct json *pod = NULL;
		cleanup_err struct err *ce = NULL;
		log_debug("pod spec: %s", o->body);
		if (kube_api_pod_create(c, p->ns, o->body, o->len, &pod, &ce) < 0) {
			/* Not fatal: the shim will create its own and report what is wrong. */
			log_debug("%s: %s", o->image, ce->msg);
			unlink(marker);
			if (!kube_api_quota_full(ce))
				continue;
			/* Prestart must not take the room other renders need. */
			log_info("the namespace's ResourceQuota is full: no more pods started "
			         "ahead");
			break;
		}
		created++;
		o->pod = xstrdup(json_str(json_path(pod, "metadata.name")));
		cleanup_free char *file = prestart_offer_path(p->dir, o->key, o->pod);
		if (o->exec) { /* its session comes once it started; the pod is the render's */
			prestart_offer_write(file,
			                     &(struct prestart_offer_note){.kind = OFFER_RENDER,
			                                                   .opener = getpid()});
			start_opener(p, o, pod);
			pod = NULL; /* the opener's now */
		} else {
			prestart_offer_write(file,
			                     &(struct prestart_offer_note){.kind = OFFER_PLAIN});
		}
		unlink(marker);
		log_debug("pod %s for %s offered", o->pod, o->image);
	}
	for (size_t i = 0; i < p->n; i++) { /* offers never made */
		cleanup_free char *m = pending_marker(p, i);
		unlink(m);
	}
	return created;
}

/* Makes the remaining deletes bounded (UNCLAIMED_DELETE_MS from now) and not cancellable:
 * after a signal (Argo CD's kill sequence) the pods must go at once. */
static void bounded_deletes(struct kube_client *c)
{
	kube_client_set_cancel(c, NULL);
	kube_client_set_deadline(c, now_ms() + UNCLAIMED_DELETE_MS);
}

/* Deletes one unclaimed pod; a delete that waited out a throttled API server and was then
 * interrupted by a signal gets one bounded try more. */
static int delete_one(struct kube_client *c, const char *ns, const char *pod, struct err **err)
{
	if (kube_api_pod_delete(c, ns, pod, err) == 0)
		return 0;
	if ((*err)->code != ERR_SIGNAL)
		return -1;
	err_free(*err);
	*err = NULL;
	bounded_deletes(c);
	return kube_api_pod_delete(c, ns, pod, err);
}

/* The end of the render's lease on a pool pod: given back to the pool when its offer is
 * there (never taken, or given back by the shims after clean calls); retired otherwise (a
 * shim took it and did not give it back: its call failed, or it died, and something of
 * that call may still run in the pod). */
static void end_lease(struct prestart *p, struct kube_client *c, struct offer *o, bool offered,
                      unsigned *claimed, unsigned *deleted)
{
	cleanup_err struct err *e = NULL;
	/* A session that did not end cleanly (a call cut short, the exec lost) retires the pod:
	 * something of a call may still run in it. */
	if (o->session && !fn_session_close(o->session, NULL)) {
		log_info("the call session with pool pod %s/%s did not end cleanly: the pod is "
		         "retired",
		         p->ns, o->pod);
		offered = false;
	}
	o->session = NULL;
	if (o->over_cap && offered) { /* made past the cap in a race: never kept */
		(*claimed)++;
		if (delete_one(c, p->ns, o->pod, &e) < 0)
			log_warn("retire pool pod %s/%s: %s", p->ns, o->pod, e->msg);
		return;
	}
	if (offered) {
		(*claimed)++;
		if (fn_pool_release(c, p->ns, o->pod, p->holder, true, &e) < 0)
			log_warn("give back pool pod %s/%s: %s", p->ns, o->pod, e->msg);
		return;
	}
	if (delete_one(c, p->ns, o->pod, &e) < 0)
		log_warn("retire pool pod %s/%s: %s", p->ns, o->pod, e->msg);
	else
		(*deleted)++;
}

/* Deletes every offered pod nobody claimed. When generate ended (or died) without a signal,
 * a throttled or failing API server (429 with Retry-After, 5xx) is waited out until
 * generate's deadline, as every other request of the render may; after a signal the deletes
 * are bounded and not cancellable. */
static void delete_unclaimed(struct prestart *p, struct kube_client *c, unsigned *claimed,
                             unsigned *deleted, unsigned *undeleted)
{
	bounded_deletes(c);
	if (!signals_cancel && p->deadline > now_ms() + UNCLAIMED_DELETE_MS) {
		kube_client_set_cancel(c, &signals_cancel);
		kube_client_set_deadline(c, p->deadline);
	}
	for (size_t i = 0; i < p->n; i++) {
		struct offer *o = &p->offers[i];
		if (o->pod == NULL)
			continue;
		cleanup_free char *file = prestart_offer_path(p->dir, o->key, o->pod);
		bool given_back = o->exec && prestart_offer_was_used(file);
		bool offered = unlink(file) == 0;
		if (o->to_pool) { /* given back after its calls, or never taken: idle again */
			end_lease(p, c, o, offered, claimed, deleted);
			continue;
		}
		/* An exec-mode pod is the render's: given back by its shims after clean calls,
		 * or kept by one whose call failed, it is the janitor's to delete either way. */
		bool used = !offered || given_back || (o->exec && o->calls > 0);
		if (used && !o->exec) {
			(*claimed)++; /* a shim renamed it away: the pod is the shim's to delete */
			continue;
		}
		cleanup_err struct err *de = NULL;
		if (delete_one(c, p->ns, o->pod, &de) < 0) {
			log_error("delete %s pod %s/%s: %s", used ? "the render's" : "unclaimed",
			          p->ns, o->pod, de->msg);
			(*undeleted)++;
		} else if (!used)
			(*deleted)++;
		if (used)
			(*claimed)++;
	}
}

void prestart_janitor_main(struct prestart *p, int pipe_r)
{
	log_set_role("prestart");
	struct kube_client *c = NULL;
	cleanup_err struct err *e = NULL;
	if (kube_client_new(p->cfg, &c, &e) < 0) {
		log_warn("%s", e->msg);
		_exit(1);
	}
	unsigned created = create_and_offer(p, c, pipe_r), claimed = 0, deleted = 0, undeleted = 0;
	while (!signals_cancel && !parent_done(pipe_r, 1000))
		;
	p->stop_openers = 1;
	for (size_t i = 0; i < p->n; i++) {
		struct offer *o = &p->offers[i];
		if (o->opener_started)
			pthread_join(o->opener, NULL);
		o->opener_started = false;
		if (!o->to_pool && o->session) { /* the pod goes below */
			fn_session_close(o->session, &o->calls);
			o->session = NULL;
		}
	}
	delete_unclaimed(p, c, &claimed, &deleted, &undeleted);
	unsigned retired = 0;
	cleanup_err struct err *pe = NULL;
	if (p->pooling && fn_pool_janitor(c, &p->pool, p->ns, epoch_ms(), false, &retired, &pe) < 0)
		log_warn("%s", pe->msg);
	if (created)
		log_info("%u pods started ahead in %lld ms, %u claimed, %u unclaimed deleted",
		         created, (long long)(now_ms() - p->t0), claimed, deleted);
	kube_client_free(c);
	_exit(undeleted ? PRESTART_EXIT_UNDELETED : 0);
}

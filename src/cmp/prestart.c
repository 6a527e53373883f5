/* prestart.c — see prestart.h. */
#include "cmp/prestart.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
#include "fn/fn_config.h"
#include "fn/fn_pool.h"
#include "fn/fn_session.h"
#include "fn/prestart_offer.h"
#include "kube/kube_api.h"
#include "kube/kube_http.h"
#include "pod/pod_names.h"
#include "pod/pod_spec.h"
#include "shim/docker_args.h"

/* How long the deletes of unclaimed pods may take after a signal (or near the deadline). */
#define UNCLAIMED_DELETE_MS 3000

struct offer {
	char *body; /* the pod as JSON */
	size_t len;
	uint64_t key;
	char *image;
	char *pod;    /* its name, once created (or leased from the pool) */
	bool to_pool; /* a warm-pool pod (fn_pool.h): leased for the render, offered, given back */
	struct fn_session *session; /* the render's call session with it, when it runs */
	/* An exec-mode pod: a session is opened once it started, and the pod is the render's:
	 * every function of its key calls through it in turn (each shim gives the offer back
	 * after a clean call), and the janitor deletes it when generate is done. */
	bool exec;
	struct json *created; /* the create's answer, for the opener's watch */
	pthread_t opener;     /* the thread that opens the session (opener_started) */
	bool opener_started;
	unsigned calls; /* the calls its session relayed (known once closed) */
	unsigned uses;  /* the render's functions of its key (exec mode, pool) */
	bool over_cap;  /* a pool pod made past KRMPOD_WARM_POOL_MAX in a race: retired */
	/* A pool pod's whole spec hash and image, which a leased one must have (fn_pool.h). */
	char spec_sha256[SHA256_HEX_LEN + 1];
	char *pod_image;
	/* Until build_offer(): the request and settings its shim will have. */
	struct fn_request req;
	struct settings s;
	struct prestart *owner;
};

struct prestart {
	char *dir;
	char *ns;
	struct kube_config *cfg; /* borrowed from generate */
	struct offer *offers;
	size_t n;
	pid_t janitor; /* the child that creates the pods and deletes the unclaimed ones */
	int pipe_w;    /* closing it (or dying) tells the janitor to clean up */
	int64_t t0;
	int64_t deadline; /* generate's (now_ms() clock) */
	/* The warm pool's settings, when a function goes to it: its janitor runs at the end;
	 * the render's lease holder and when its leases end (epoch ms). */
	struct settings pool;
	bool pooling;
	char *holder;
	long long lease_until;
	atomic_int stop_openers; /* set when generate is done: openers give up */
};

/* The render's leases on pool pods last to generate's deadline and this much more. */
#define PRESTART_LEASE_SLACK_MS 5000

/* The argv kustomize builds for a function config (docs/architecture.md: kustomize's docker run line), after `run`. */
static int request_for(const struct kfn *f, bool network, char *const *environ_,
                       struct fn_request *req, struct err **err)
{
	size_t max = 20 + 2 * f->n_envs;
	const char **argv = xcalloc(max, sizeof(char *));
	size_t n = 0;
	static const char *head[] = {"--rm",   "-i", "-a",     "STDIN",    "-a",
	                             "STDOUT", "-a", "STDERR", "--network"};
	for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++)
		argv[n++] = head[i];
	argv[n++] = network ? "host" : "none";
	argv[n++] = "--user";
	argv[n++] = "nobody";
	argv[n++] = "--security-opt=no-new-privileges";
	argv[n++] = "-e";
	argv[n++] = "LOG_TO_STDERR=true";
	argv[n++] = "-e";
	argv[n++] = "STRUCTURED_RESULTS=true";
	for (size_t i = 0; i < f->n_envs; i++) {
		argv[n++] = "-e";
		argv[n++] = f->envs[i];
	}
	argv[n++] = f->image;
	int rc = docker_args_parse((int)n, (char *const *)argv, environ_, req, err);
	free(argv);
	return rc;
}

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
 * (prestart_offer.h). Returns 1 when there is an offer. */
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
	cleanup_free char *note =
	        warm ? xasprintf("pool %s warm\n", p->holder)
	             : xasprintf("pool %s cold session %ld\n", p->holder, (long)getpid());
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
	prestart_offer_write(file, note);
	if (!warm) {
		start_opener(p, o, pod);
		pod = NULL; /* the opener's now */
	}
	log_debug("pool pod %s for %s offered (%s)", o->pod, o->image, rc > 0 ? "leased" : "made");
	return 1;
}

/* A cold exec-mode pod's session, opened by its own thread once the pod started (the offer
 * says "session PID"; the shim that claims it waits for the socket, or its ".none" marker:
 * fn_session.h). The pod is the render's (struct offer, exec), or a pool pod the render
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
			cleanup_free char *note = xasprintf("session %ld render\n", (long)getpid());
			prestart_offer_write(file, note);
			start_opener(p, o, pod);
			pod = NULL; /* the opener's now */
		} else {
			touch(file);
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
                             unsigned *deleted)
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
		if (delete_one(c, p->ns, o->pod, &de) < 0)
			log_warn("delete %s pod %s/%s: %s", used ? "the render's" : "unclaimed",
			         p->ns, o->pod, de->msg);
		else if (!used)
			(*deleted)++;
		if (used)
			(*claimed)++;
	}
}

/* The janitor, a child of generate in generate's process group: creates the pods, offers
 * them, and when generate is done (its pipe closes), or dies, or the group gets SIGTERM at
 * Argo CD's deadline, deletes every pod nobody claimed. Never returns. */
static void janitor_main(struct prestart *p, int pipe_r)
{
	log_set_role("prestart");
	struct kube_client *c = NULL;
	cleanup_err struct err *e = NULL;
	if (kube_client_new(p->cfg, &c, &e) < 0) {
		log_warn("%s", e->msg);
		_exit(1);
	}
	unsigned created = create_and_offer(p, c, pipe_r), claimed = 0, deleted = 0;
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
	delete_unclaimed(p, c, &claimed, &deleted);
	unsigned retired = 0;
	cleanup_err struct err *pe = NULL;
	if (p->pooling && fn_pool_janitor(c, &p->pool, p->ns, epoch_ms(), false, &retired, &pe) < 0)
		log_warn("%s", pe->msg);
	if (created)
		log_info("%u pods started ahead in %lld ms, %u claimed, %u unclaimed deleted",
		         created, (long long)(now_ms() - p->t0), claimed, deleted);
	kube_client_free(c);
	_exit(0);
}

int prestart_new(struct prestart **out, int64_t deadline_ms, struct err **err)
{
	struct prestart *p = xcalloc(1, sizeof(*p));
	p->t0 = now_ms();
	p->deadline = deadline_ms;
	if (tmp_dir_make("krmpod-prestart", "the pods started ahead", &p->dir, err) < 0) {
		prestart_end(p);
		return -1;
	}
	cleanup_free char *claimed = prestart_offer_claimed_dir(p->dir);
	cleanup_free char *sessions = xasprintf("%s/sessions", p->dir);
	if (mkdir(claimed, 0700) < 0 || mkdir(sessions, 0700) < 0) {
		err_set(err, ERR_IO, "prestart: cannot make %s: %s (set TMPDIR)", claimed,
		        strerror(errno));
		prestart_end(p);
		return -1;
	}
	*out = p;
	return 0;
}

const char *prestart_dir(const struct prestart *p)
{
	return p ? p->dir : NULL;
}

/* Resolves the offer for function f exactly as its shim will resolve it: the same parser
 * on the argv kustomize builds, the same fn_config_resolve() on the environment the shim
 * will get; its request and settings stay in o until build_offer(). Returns 0 when f is
 * not prestarted (said at debug level). */
static int resolve_offer(struct prestart *p, const struct kfn *f, bool allow_network,
                         char *const *shim_env, struct offer *o)
{
	cleanup_err struct err *e = NULL;
	if (request_for(f, f->network && allow_network, shim_env, &o->req, &e) < 0 ||
	    fn_config_resolve(shim_env, p->cfg, &o->req, &o->s, &e) < 0) {
		log_debug("prestart: %s: not prestarted: %s", f->where, e->msg);
		fn_request_clear(&o->req);
		settings_clear(&o->s);
		return 0;
	}
	if (p->ns == NULL)
		p->ns = xstrdup(o->s.namespace);
	o->key = fn_config_key(&o->req, &o->s);
	fn_config_spec_sha256(&o->req, &o->s, o->spec_sha256);
	o->image = xstrdup(f->image);
	o->pod_image = xstrdup(o->req.image);
	o->to_pool = o->req.pooled;
	o->exec = !o->to_pool && o->req.exec_argv != NULL;
	o->uses = 1;
	return 1;
}

/* The pod of a resolved offer, as JSON in o->body; its request and settings go. */
static void build_offer(struct prestart *p, struct offer *o)
{
	struct buf b;
	buf_init(&b, 0);
	if (o->to_pool) { /* a pool pod leased for the render, made when none is idle */
		if (p->holder == NULL) {
			p->holder = fn_pool_holder();
			p->lease_until = (long long)(epoch_ms() + (p->deadline - now_ms()) +
			                             PRESTART_LEASE_SLACK_MS);
		}
		char key[17];
		fn_pool_key_text(o->key, key);
		struct pod_pool_meta m = {.key = key,
		                          .spec_sha256 = o->spec_sha256,
		                          .holder = p->holder,
		                          .lease_until_ms = p->lease_until};
		pod_spec_build_pool(&o->req, &o->s, &m, &b);
		if (!p->pooling) {
			p->pool = o->s;
			p->pooling = true;
			memset(&o->s, 0, sizeof(o->s));
		}
	} else {
		/* The render's exec-mode pod serves its key's calls one after another, each
		 * within KRMPOD_TIMEOUT, and all within generate's deadline (the shims' timeouts
		 * end with it): it lives for the shorter of the two, plus kustomize's own time
		 * between the calls. */
		if (o->exec && o->uses > 1) {
			int64_t calls = o->s.timeout_ms * (int64_t)o->uses;
			int64_t render = p->deadline - now_ms();
			o->s.timeout_ms = min64(calls, render) + PRESTART_LEASE_SLACK_MS;
		}
		pod_spec_build(&o->req, &o->s, &b);
	}
	o->body = buf_steal(&b, &o->len);
	settings_clear(&o->s);
	fn_request_clear(&o->req);
}

static void offer_clear(struct offer *o)
{
	json_free(o->created);
	free(o->body);
	free(o->pod_image);
	free(o->image);
	free(o->pod);
	settings_clear(&o->s);
	fn_request_clear(&o->req);
	memset(o, 0, sizeof(*o));
}

/* The offer made already for o's key when o is a pool or exec-mode offer (kustomize runs the
 * functions one after another, and each gives the pod back to the render for the next), or
 * NULL. */
static struct offer *shared_offer(struct prestart *p, const struct offer *o)
{
	for (size_t i = 0; (o->to_pool || o->exec) && i < p->n; i++)
		if (p->offers[i].to_pool == o->to_pool && p->offers[i].exec == o->exec &&
		    p->offers[i].key == o->key)
			return &p->offers[i];
	return NULL;
}

int prestart_begin(struct prestart *p, const struct kfn *fns, size_t n, size_t max,
                   bool allow_network, char *const *shim_env, struct kube_config *cfg,
                   struct err **err)
{
	p->cfg = cfg;
	p->offers = xcalloc(n ? n : 1, sizeof(*p->offers));
	for (size_t i = 0; i < n && p->n < max; i++) {
		const struct kfn *f = &fns[i];
		if (f->has_mounts || (f->network && !allow_network))
			continue;
		if (resolve_offer(p, f, allow_network, shim_env, &p->offers[p->n]) == 0)
			continue;
		struct offer *made = shared_offer(p, &p->offers[p->n]);
		if (made) { /* the render's pod serves them all */
			made->uses++;
			offer_clear(&p->offers[p->n]);
			continue;
		}
		p->n++;
	}
	for (size_t i = 0; i < p->n; i++)
		build_offer(p, &p->offers[i]);
	if (p->n == 0)
		return 0;
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return err_set_sys(err, ERR_IO, errno, "prestart: pipe");
	fflush(NULL);
	p->janitor = fork();
	if (p->janitor == 0) {
		close(pfd[1]);
		janitor_main(p, pfd[0]);
	}
	close(pfd[0]);
	p->pipe_w = pfd[1];
	if (p->janitor < 0) {
		close(p->pipe_w);
		p->janitor = 0;
		return err_set_sys(err, ERR_IO, errno, "prestart: fork");
	}
	return 0;
}

pid_t prestart_janitor(const struct prestart *p)
{
	return p ? p->janitor : 0;
}

void prestart_end(struct prestart *p)
{
	if (p == NULL)
		return;
	if (p->janitor > 0) {
		close(p->pipe_w); /* the janitor deletes what nobody claimed, then exits */
		while (waitpid(p->janitor, NULL, 0) < 0 && errno == EINTR)
			;
	}
	for (size_t i = 0; i < p->n; i++)
		offer_clear(&p->offers[i]);
	if (p->dir) {
		/* Claimed markers are all that can be left, and the sockets of sessions when
		 * the janitor was killed. */
		cleanup_free char *claimed_dir = prestart_offer_claimed_dir(p->dir);
		cleanup_free char *sessions_dir = xasprintf("%s/sessions", p->dir);
		const char *subdirs[] = {claimed_dir, sessions_dir};
		for (size_t k = 0; k < 2; k++) {
			DIR *d = opendir(subdirs[k]);
			struct dirent *e;
			while (d && (e = readdir(d)) != NULL) {
				if (e->d_name[0] == '.')
					continue;
				cleanup_free char *f = xasprintf("%s/%s", subdirs[k], e->d_name);
				unlink(f);
			}
			if (d)
				closedir(d);
			rmdir(subdirs[k]);
		}
		rmdir(p->dir);
	}
	free(p->dir);
	free(p->ns);
	free(p->offers);
	settings_clear(&p->pool);
	free(p->holder);
	free(p);
}

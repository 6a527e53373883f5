/* prestart.c — see prestart.h: the offers generate resolves, as its shims will (the janitor
 * that makes their pods is prestart_janitor.c). */
#include "cmp/prestart.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/fdio.h"
#include "base/json.h"
#include "base/log.h"
#include "base/xalloc.h"
#include "fn/fn_config.h"
#include "handoff/offers.h"
#include "pod/pod_manifest.h"
#include "pool/pool.h"
#include "shim/docker_args.h"

#include "cmp/prestart_janitor.h"

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
		/* A pod started ahead waits for its shim, which comes when kustomize reaches its
		 * function: any time before generate's deadline. Its KRMPOD_TIMEOUT counts from
		 * the claim (the shim's own deadline, which ends with generate's), so the pod's
		 * activeDeadlineSeconds, counted from its start, is generate's time left: with
		 * KRMPOD_TIMEOUT alone, a function that kustomize reached later than that after
		 * the pod started found its pod killed (DeadlineExceeded). The render's exec-mode
		 * pod, serving its key's calls one after another, lives as long. */
		o->s.timeout_ms = p->deadline - now_ms() + PRESTART_LEASE_SLACK_MS;
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
		prestart_janitor_main(p, pfd[0]);
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

int prestart_finish(struct prestart *p, struct err **err)
{
	if (p == NULL || p->janitor <= 0)
		return 0;
	close(p->pipe_w); /* the janitor deletes what nobody claimed, then exits */
	int status = 0;
	while (waitpid(p->janitor, &status, 0) < 0 && errno == EINTR)
		;
	p->janitor = 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == PRESTART_EXIT_UNDELETED)
		return err_set(err, ERR_API,
		               "prestart: pods the render started could not be deleted (each is "
		               "named above); they end by themselves after activeDeadlineSeconds, "
		               "and `krmpod gc` removes leftovers. Check that the API server is "
		               "reachable and that the Role grants delete on pods in %s",
		               p->ns);
	return 0;
}

void prestart_end(struct prestart *p)
{
	if (p == NULL)
		return;
	cleanup_err struct err *fe = NULL;
	if (prestart_finish(p, &fe) < 0)
		log_warn("%s", fe->msg);
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

/* prestart_janitor.h — inside cmp/prestart: the offers generate resolved (prestart.c) and
 * the janitor process that makes their pods, offers them, and deletes what nobody claimed
 * (prestart_janitor.c). Not for other modules: prestart.h is the contract. */
#ifndef KRMPOD_PRESTART_JANITOR_H
#define KRMPOD_PRESTART_JANITOR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/json.h"
#include "base/sha256.h"
#include "config/kubeconfig.h"
#include "config/request.h"
#include "config/settings.h"
#include "pool/pool_session.h"

/* How long the deletes of unclaimed pods may take after a signal (or near the deadline). */
#define UNCLAIMED_DELETE_MS 3000

/* The janitor's exit status when it could not delete one or more of the render's pods
 * (each named in its log); prestart_finish() turns it into generate's error. */
#define PRESTART_EXIT_UNDELETED 3

struct offer {
	char *body; /* the pod as JSON */
	size_t len;
	uint64_t key;
	char *image;
	char *pod;    /* its name, once created (or leased from the pool) */
	bool to_pool; /* a warm-pool pod (pool.h): leased for the render, offered, given back */
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
	/* A pool pod's whole spec hash and image, which a leased one must have (pool.h). */
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

/* The janitor, a child of generate in generate's process group: creates the pods, offers
 * them, and when generate is done (pipe_r, its pipe, closes), or dies, or the group gets
 * SIGTERM at Argo CD's deadline, deletes every pod nobody claimed. Exits 0, or
 * PRESTART_EXIT_UNDELETED when a delete of a render's pod failed. Never returns. */
void prestart_janitor_main(struct prestart *p, int pipe_r) __attribute__((noreturn));

#endif

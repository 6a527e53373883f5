/* pool_lease.c — see pool_lease.h. */
#include "pool/pool_lease.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/signals.h"
#include "base/xalloc.h"
#include "kube/kube_api.h"
#include "kube/kube_http.h"
#include "pod/pod_names.h"

struct fn_lease {
	struct kube_client *client;
	char *ns, *name;
	int64_t period_ms;
	atomic_int stop; /* the client's cancel flag and the sleep's */
	pthread_t thread;
};

/* One renewal: the annotation's value holds the count, so that each write changes the pod
 * and the API server records it. 0, or -1 when the pod is gone (nothing left to renew). */
static int renew(struct fn_lease *l, unsigned long n)
{
	char patch[256];
	snprintf(patch, sizeof(patch),
	         "[{\"op\":\"add\",\"path\":\"/metadata/annotations/%s\","
	         "\"value\":\"%lu/%lld\"}]",
	         POD_ANNOTATION_RENEWED_PATH, n, (long long)l->period_ms);
	long status = 0;
	cleanup_err struct err *e = NULL;
	if (kube_api_pod_json_patch(l->client, l->ns, l->name, patch, &status, NULL, &e) == 0)
		return 0;
	if (status == 404)
		return -1;
	if (!l->stop)
		log_warn("cannot renew the lease on pod %s/%s (a sweep may take it for a leftover "
		         "in %d s): %s",
		         l->ns, l->name, (int)(FN_LEASE_PERIODS * l->period_ms / 1000), e->msg);
	return 0;
}

static void *lease_main(void *arg)
{
	struct fn_lease *l = arg;
	for (unsigned long n = 1; sleep_ms(l->period_ms, &l->stop) == 0 && !l->stop; n++)
		if (renew(l, n) < 0)
			break;
	return NULL;
}

int64_t fn_lease_period(const char *value)
{
	const char *slash = value ? strchr(value, '/') : NULL;
	if (slash == NULL)
		return 0;
	char *end = NULL;
	errno = 0;
	long long ms = strtoll(slash + 1, &end, 10);
	if (errno || end == slash + 1 || *end)
		return 0;
	return ms < FN_LEASE_MIN_PERIOD_MS ? FN_LEASE_MIN_PERIOD_MS : ms;
}

int fn_lease_start(struct kube_config *cfg, const char *ns, const char *name, int64_t period_ms,
                   struct fn_lease **out, struct err **err)
{
	*out = NULL;
	struct fn_lease *l = xcalloc(1, sizeof(*l));
	l->period_ms = period_ms;
	if (kube_client_new(cfg, &l->client, err) < 0) {
		free(l);
		return -1;
	}
	kube_client_set_cancel(l->client, &l->stop);
	l->ns = xstrdup(ns);
	l->name = xstrdup(name);
	if (signals_thread_start(&l->thread, lease_main, l) != 0) {
		kube_client_free(l->client);
		free(l->ns);
		free(l->name);
		free(l);
		return err_set(err, ERR_INTERNAL, "cannot start the lease thread of pod %s/%s", ns,
		               name);
	}
	*out = l;
	return 0;
}

void fn_lease_stop(struct fn_lease *l)
{
	if (l == NULL)
		return;
	l->stop = 1;
	kube_client_wakeup(l->client);
	pthread_join(l->thread, NULL);
	kube_client_free(l->client);
	free(l->ns);
	free(l->name);
	free(l);
}

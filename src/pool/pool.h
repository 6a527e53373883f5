/* pool.h — the warm pool (docs/internals/warm-pool.md), KRMPOD_WARM_POOL=true: exec-mode
 * function pods kept after a call for the next call of the same pod (the same image
 * digest, network mode and settings: the pod key, fn_config_key), shared through the API
 * server by every repo-server replica and every render.
 *
 * A pool pod carries the labels krmpod.dev/pool=KEY and krmpod.dev/pool-state=idle|busy.
 * A lease is taken with one JSON patch that tests pool-state=idle and sets it to busy with
 * the holder and the lease's end (annotations krmpod.dev/lease-holder, -until): the API
 * server applies it atomically, so two callers never share a pod (the loser gets 422 and
 * tries the next pod). The kubelet's status writes change the pod's resourceVersion all the
 * time; testing the lease itself instead keeps a claim from failing on them. A lease is
 * given back with a patch that tests the holder; a pod is retired (deleted) after a call
 * that failed in any way, and when its pool already has KRMPOD_WARM_POOL_SIZE idle pods.
 * A new pool pod is made only while the namespace holds fewer than KRMPOD_WARM_POOL_MAX,
 * and kept only if the pool did not pass the cap meanwhile (fn_pool_over_cap).
 *
 * The janitor (`krmpod gc`, and generate's) deletes idle pods past KRMPOD_WARM_POOL_TTL and
 * leased ones past their lease (their holder died); KRMPOD_WARM_POOL_MAX_LIFE is every pool
 * pod's activeDeadlineSeconds, the backstop when no janitor runs.
 */
#ifndef KRMPOD_POOL_H
#define KRMPOD_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/json.h"
#include "config/request.h"
#include "config/settings.h"
#include "kube/kube_http.h"

/* Whether the pool takes req under s: the pool is on, req runs in exec mode without mounts
 * (their files are per call), and its image matches KRMPOD_WARM_POOL_IMAGES. */
bool fn_pool_takes(const struct settings *s, const struct fn_request *req);

/* This process's lease holder name: "HOSTNAME/PID/RANDOM". A new string. */
char *fn_pool_holder(void);

/* The key label's value for a pod key: 16 hex digits. */
void fn_pool_key_text(uint64_t key, char out[17]);

/* Takes an idle pod of pool `key` in ns for holder until lease_until_ms (epoch): 1 with
 * *pod (the pod as the patch left it), 0 when none could be taken, -1 on an API error.
 * *idle is the number of idle pods the list showed. A pod whose spec-sha256 annotation is
 * not spec_sha256, or whose function container does not run `image`, is never used: it is
 * retired once leased (a key collision, or a pod someone else made). */
int fn_pool_claim(struct kube_client *c, const char *ns, const char *key, const char *spec_sha256,
                  const char *image, const char *holder, long long lease_until_ms,
                  struct json **pod, size_t *idle, struct err **err);

/* Whether a pool pod taken runs: its status says so, or it served a call already (the
 * status trails the runtime by up to a relist: a pod given back a moment ago may not say
 * so yet). */
bool fn_pool_pod_runs(const struct json *pod);

/* Whether ns has room for one more pool pod (fewer than KRMPOD_WARM_POOL_MAX). */
int fn_pool_room(struct kube_client *c, const struct settings *s, const char *ns, bool *room,
                 struct err **err);

/* After making a pool pod: whether the pool now holds more than KRMPOD_WARM_POOL_MAX pods
 * (not being deleted), which a concurrent maker can cause between fn_pool_room() and the
 * create. The pod just made then serves its call(s) and is retired, never kept: of makers
 * that raced, the last to count sees all their pods, so the pool never keeps more than
 * the cap (it may keep fewer). A list that fails counts as over. */
bool fn_pool_over_cap(struct kube_client *c, const struct settings *s, const char *ns);

/* Gives the lease on ns/name back (idle since now), or deletes the pod when `keep` is false
 * or the lease is no longer holder's. */
int fn_pool_release(struct kube_client *c, const char *ns, const char *name, const char *holder,
                    bool keep, struct err **err);

/* The pool's part of the janitor: the pool pods of ns past their TTL or lease, or beyond
 * KRMPOD_WARM_POOL_SIZE idle ones per pool; deleted unless dry_run. *deleted counts them. */
int fn_pool_janitor(struct kube_client *c, const struct settings *s, const char *ns,
                    long long now_epoch_ms, bool dry_run, unsigned *deleted, struct err **err);

#endif

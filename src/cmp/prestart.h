/* prestart.h — hiding pod-start latency (docs/architecture.md, "Prestart").
 *
 * kustomize runs functions one after another, so N functions cost N pod starts. Before
 * kustomize runs, `krmpod generate` reads the function configs of the tree, builds for each
 * the request kustomize's `docker run` will make (the same parser, docker_args.c, on the
 * argv kustomize would build), and a child process creates those pods, all at once.
 * Each created pod is offered in a private directory (KRMPOD_PRESTART_DIR; its files are
 * described in handoff/offers.h) under KEY, fn_config_key() of its request. A shim
 * computes the key of the request it was given and claims a matching pod (fn_pod.c); with
 * no match it creates its own pod as always. The key covers the whole pod spec except
 * activeDeadlineSeconds, so a claimed pod is exactly the pod the shim would have created.
 * When kustomize is done, generate deletes every pod nobody claimed. In exec mode the
 * render starts one pod per key, which every function of that key calls through in turn
 * (docs/internals/exec-mode.md, "One pod per key and render"), and deletes it at the end.
 *
 * Not prestarted: functions with mounts (their files travel after the pod exists, per
 * shim), functions past the first `max` (KRMPOD_PRESTART_MAX), and any once the namespace's
 * ResourceQuota refuses a pod (prestart must not take the room other renders need). */
#ifndef KRMPOD_PRESTART_H
#define KRMPOD_PRESTART_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "cmp/kustomization.h"
#include "config/kubeconfig.h"
#include "config/request.h"
#include "config/settings.h"

struct prestart;

/* generate side, first step: makes the offer directory under TMPDIR (fdio.h), which
 * generate hands the shims as KRMPOD_PRESTART_DIR. deadline_ms (now_ms() clock) is
 * generate's own: the janitor's deletes of unclaimed pods may wait out a throttled API
 * server until then, unless a signal came. */
int prestart_new(struct prestart **out, int64_t deadline_ms, struct err **err);

/* The offer directory. */
const char *prestart_dir(const struct prestart *p);

/* Forks the janitor (a child in generate's process group, so Argo CD's group SIGTERM
 * reaches it even after generate was SIGKILLed; it also notices generate's death by its
 * pipe), which creates the pods for fns and offers them. Each pod is resolved with
 * fn_config_resolve() on shim_env, the environment kustomize will run the shims with, so
 * its key is the one the shim computes. `allow_network` is what generate tells kustomize
 * (--network); cfg is borrowed until prestart_end(). A function that cannot be resolved is
 * simply not prestarted: its shim reports the problem. */
int prestart_begin(struct prestart *p, const struct kfn *fns, size_t n, size_t max,
                   bool allow_network, char *const *shim_env, struct kube_config *cfg,
                   struct err **err);

/* Tells the janitor to delete every pod nobody claimed and the render's exec-mode pods, and
 * waits for it (while it waits out a throttled API server, at most until the deadline).
 * Fails when it could not delete one of them, as a shim fails when it cannot delete its
 * pod: the pod would run on to its activeDeadlineSeconds. generate calls it before it
 * prints the manifests. NULL, or a second call, is fine (0). */
int prestart_finish(struct prestart *p, struct err **err);

/* prestart_finish() when it was not called yet (its failure only logged), then removes
 * the directory and frees p. NULL is fine. */
void prestart_end(struct prestart *p);

/* The janitor's pid (0 without one): kustomize_run must not wait for it. */
pid_t prestart_janitor(const struct prestart *p);

#endif

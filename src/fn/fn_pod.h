/* fn_pod.h — one function pod's life (docs/internals/pod-lifecycle.md): where it comes from,
 * its start, the streams attached to it, its exit, and its deletion.
 *
 * A handle is opened for one request with its resolved settings (fn_config.h). It owns a
 * REST client, the pod's watch, the pod's name once there is one, the run's deadlines and
 * its counters. fn_pod_acquire() takes the pod from the first source that has one:
 *
 *   prestart   a pod `krmpod generate` started ahead for exactly this request
 *              (offers.h), claimed by its key;
 *   create     a new pod, created now (a full ResourceQuota is waited out within
 *              KRMPOD_START_TIMEOUT).
 *
 *   warm pool  an idle pod of the warm pool for this request's pod key, leased to the run
 *              (pool.h); with the pool on, a new pod is made a pool pod (leased to the
 *              run) while the namespace has room for one.
 *
 * At the end a leased pod goes back to its pool after a clean call (exit code 0), and is
 * deleted otherwise. Every wait on the pod goes through
 * fn_pod_wait(), the one place the watch is waited on: it stops at the caller's condition,
 * at a deadline, or at cancellation. fn_pod_close() deletes the pod on every path that got
 * one (success, failure, timeout, signal), with a short deadline of its own, and logs the
 * run's one summary line.
 */
#ifndef KRMPOD_FN_POD_H
#define KRMPOD_FN_POD_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "config/kubeconfig.h"
#include "config/request.h"
#include "config/settings.h"
#include "kube/kube_stream.h"
#include "kube/kube_watch.h"

struct fn_pod;

/* Opens a handle for req, run under s on cfg (all borrowed; they outlive the handle). The
 * deadlines start now: s->timeout_ms for the whole run, s->start_timeout_ms for the pod to
 * start. *cancel (a signal number when set) stops every wait and request. No pod yet. */
int fn_pod_open(struct kube_config *cfg, const struct settings *s, const struct fn_request *req,
                atomic_int *cancel, struct fn_pod **out, struct err **err);

/* Takes the pod from the first source that has one (above) and starts its watch. */
int fn_pod_acquire(struct fn_pod *p, struct err **err);

/* What a wait looks for, asked with each new state: 1 = done, 0 = wait on, -1 = failed
 * (*err set). `now` is now_ms(); a condition that becomes true by itself later (a pull error
 * past its grace) sets *recheck to that time. */
typedef int (*fn_pod_check)(struct fn_pod *p, const struct pod_state *st, int64_t now,
                            int64_t *recheck, void *ud, struct err **err);

/* Waits until check says done (0) or failed (-1), or `until` passes (1). *st holds the
 * latest state in every case; a wait starts from it (it may be zeroed). Cancellation fails
 * with ERR_SIGNAL; a failed watch with its error. */
int fn_pod_wait(struct fn_pod *p, int64_t until, fn_pod_check check, void *ud, struct pod_state *st,
                struct err **err);

/* Whether an init container of the pod (krmpod's installer in exec mode, the mounts
 * helper, a PodTemplate's) waits for a reason that never recovers (pod_waiting_is_fatal;
 * ud is its ErrImagePull clock): then 1, with *err naming the container, the reason, and
 * for krmpod's own KRMPOD_HELPER_IMAGE. 0 otherwise. */
int fn_pod_init_cannot_start(const struct fn_pod *p, const struct pod_state *st, void *ud,
                             int64_t now, int64_t *recheck, struct err **err);

/* Waits until the function container runs (the kubelet's Started event or the status) or
 * has terminated. Fails fast, naming the image, the pod and the cluster's reason, on a
 * waiting reason that never recovers (pod_waiting_is_fatal), a failed or deleted pod, and a
 * pod that does not start within KRMPOD_START_TIMEOUT (or KRMPOD_TIMEOUT). */
int fn_pod_wait_started(struct fn_pod *p, struct pod_state *st, struct err **err);

/* Waits for the function container's terminated state after its output ended (at most
 * FN_POD_EXIT_WAIT_MS within KRMPOD_TIMEOUT). */
#define FN_POD_EXIT_WAIT_MS 30000
int fn_pod_wait_exit(struct fn_pod *p, struct pod_state *st, struct err **err);

/* Whether the function container terminates within wait_ms (and KRMPOD_TIMEOUT): 0 with *st
 * its terminated state, 1 when it has not by then (or the pod is gone), -1 with *err when
 * the watch fails or the run is cancelled. For a stream that ended without saying how the
 * function ended: whether its container is what ended. */
int fn_pod_wait_exit_within(struct fn_pod *p, int64_t wait_ms, struct pod_state *st,
                            struct err **err);

/* The function's exit as krmpod reports it, from its terminated state: 0 with *exit_code
 * its status, or -1 for what the cluster did to it: OOMKilled (*exit_code 137 or its code,
 * naming KRMPOD_MEMORY_LIMIT), DeadlineExceeded. */
int fn_pod_exit(struct fn_pod *p, const struct pod_state *st, int *exit_code, struct err **err);

/* The latest state, without waiting. */
void fn_pod_state(struct fn_pod *p, struct pod_state *st);

/* Opens an attach to `container` of the pod (want_stdin: with stdin; the output goes where
 * o says, o->path, o->cancel and o->deadline_ms are set here). Counted in the summary. */
int fn_pod_attach(struct fn_pod *p, const char *container, bool want_stdin,
                  struct kube_stream_opts *o, struct kube_stream **out, struct err **err);

/* Opens a pods/exec of command in the function container, with stdin, stdout and stderr
 * (o as for fn_pod_attach). Counted in the summary. */
int fn_pod_exec(struct fn_pod *p, const char *const *command, struct kube_stream_opts *o,
                struct kube_stream **out, struct err **err);

/* GETs the function container's log, at most `limit` bytes (limitBytes), keeping its first
 * `head` bytes in out (memory stays bounded) and its length in *total. */
int fn_pod_read_log(struct fn_pod *p, size_t limit, size_t head, struct buf *out, size_t *total,
                    struct err **err);

/* Fails with ERR_SIGNAL naming the image and the signal; `during` (may be NULL) says
 * what was going on. */
int fn_pod_cancelled(const struct fn_pod *p, const char *during, struct err **err);

/* Whether `bytes` of the function's stdout stay within KRMPOD_MAX_OUTPUT: 0, or -1 with an
 * ERR_IO error naming the function, its pod and the setting. `from_log`: they count output
 * only the pod log holds (said with the count). */
int fn_pod_check_output(const struct fn_pod *p, uint64_t bytes, bool from_log, struct err **err);

/* Read-only views for messages and callers. */
const char *fn_pod_name(const struct fn_pod *p); /* NULL before fn_pod_acquire */
const char *fn_pod_namespace(const struct fn_pod *p);
const struct fn_request *fn_pod_request(const struct fn_pod *p);
const struct settings *fn_pod_settings(const struct fn_pod *p);
int64_t fn_pod_deadline(const struct fn_pod *p);       /* the whole run's (now_ms clock) */
int64_t fn_pod_start_deadline(const struct fn_pod *p); /* the start's */
bool fn_pod_is_cancelled(const struct fn_pod *p);

/* The run's cancel flag (for a wait of the caller's own, sleep_ms). */
atomic_int *fn_pod_cancel_flag(const struct fn_pod *p);
/* Taken from the warm pool running already: no watch, nothing to wait for. */
bool fn_pod_is_warm(const struct fn_pod *p);
/* The socket of the render's call session with the pod (pool_session.h), or NULL. */
const char *fn_pod_session(const struct fn_pod *p);

/* Moves the start deadline later by ms (time spent sending mounts is not starting). */
void fn_pod_extend_start(struct fn_pod *p, int64_t ms);

/* Marks when the function's output stream was attached (0: it reached nothing) and when
 * the function was done, for the summary line. */
void fn_pod_mark_attached(struct fn_pod *p, int64_t t);
void fn_pod_mark_done(struct fn_pod *p);

/* Deletes the pod when there is one and frees the handle. Logs the summary line (image,
 * times, exit code, API requests). A failed delete is returned as the error when rc is 0
 * (the run succeeded), else only logged. Returns rc, or -1 after a failed delete. NULL is
 * fine. */
int fn_pod_close(struct fn_pod *p, int rc, int exit_code, struct err **err);

#endif

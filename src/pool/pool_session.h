/* pool_session.h — a render's call session with one leased warm-pool pod (docs/internals/
 * exec-mode.md, "Sessions"; the frames are agent_frame.h's).
 *
 * generate's janitor opens one pods/exec of `krmpod serve` per pool pod it leased for the
 * render and listens on a unix socket in the offer directory (offers.h). A shim
 * that claimed the offer connects and runs its call through it: no API request, no TLS
 * handshake, no process made by the container runtime, per call. The relay forwards bytes
 * both ways, one connection at a time, and reads the pod's frames only to see each call's
 * end ('x'). A connection that ends before its call's end (the shim died or gave up)
 * breaks the session: the pod's stdin is closed, `krmpod serve` kills the call, and the
 * pod must not go back to the pool. */
#ifndef KRMPOD_POOL_SESSION_H
#define KRMPOD_POOL_SESSION_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "base/json.h"
#include "config/kubeconfig.h"

struct fn_session;

/* The command the session's exec runs in the pod (NULL-terminated, static). */
extern const char *const fn_session_command[];

/* Opens the exec of `krmpod serve` in ns/pod (blocking until the WebSocket is up, at most
 * until deadline_ms), then listens at sock_path (mode 0600). cfg is borrowed. The stream
 * stops (the session is then not clean) when *cancel becomes non-zero (may be NULL). */
int fn_session_open(struct kube_config *cfg, const char *ns, const char *pod, const char *sock_path,
                    int64_t deadline_ms, atomic_int *cancel, struct fn_session **out,
                    struct err **err);

/* For a pod just created (`created`, the create's answer; may be NULL): waits, with a watch
 * of its own, until its function container started (the kubelet's Started event or the
 * status), then opens the session as above. Gives up (returns 1, no session) when the pod
 * will not start by itself (a waiting reason other than ContainerCreating, a failed
 * installer, an ended container, its deletion), at deadline_ms, or once *stop is non-zero.
 * `cancel` is the session's, as above.
 * Returns 0 with *out, 1, or -1 with *err. */
int fn_session_open_when_started(struct kube_config *cfg, const char *ns, const char *pod,
                                 const struct json *created, const char *sock_path,
                                 int64_t deadline_ms, atomic_int *stop, atomic_int *cancel,
                                 struct fn_session **out, struct err **err);

/* Shim side: for a pod offered with a session on its way (generate's janitor opens it once
 * the pod started), waits until the socket sock_path is there (true), or its marker
 * "SOCK.none" says there will be none, the janitor (janitor_pid) is gone, `until` (now_ms()
 * clock) passed or *cancel was set (false). */
bool fn_session_await(const char *sock_path, long janitor_pid, int64_t until, atomic_int *cancel);

/* The marker's path for sock_path (a new string). */
char *fn_session_none_path(const char *sock_path);

/* Ends the session: no more connections, the pod's stdin closed, its stream waited for
 * (until the deadline given to fn_session_open), the socket removed; *calls (may be NULL)
 * gets how many calls it relayed. Returns true when every call it relayed ended cleanly and
 * `krmpod serve` exited 0: only then may the pod serve again. NULL is fine (false, 0
 * calls). */
bool fn_session_close(struct fn_session *s, unsigned *calls);

#endif

/* kube_watch.h — following one pod's state from a background thread.
 *
 * pod_watch_start() starts a thread that GETs the pod once (to learn its state and
 * resourceVersion) and then watches it (fieldSelector=metadata.name=NAME, allowWatchBookmarks,
 * resourceVersion=RV, timeoutSeconds) for as long as the watch object lives:
 *   - a clean end of the stream re-watches from the last resourceVersion;
 *   - a 410 Expired (HTTP status or an in-stream ERROR event) re-GETs the pod and re-watches;
 *   - a dropped connection re-watches after a short backoff (bounded attempts, then the
 *     watch reports the error);
 *   - DELETED ends the watch with state.deleted = true.
 * Every change of the pod's state wakes waiters. The thread blocks all signals.
 */
#ifndef KRMPOD_KUBE_WATCH_H
#define KRMPOD_KUBE_WATCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "kube/kube_http.h"

enum container_state { CS_UNKNOWN = 0, CS_WAITING, CS_RUNNING, CS_TERMINATED };

/* What krmpod needs to know about a function pod, decoded from a Pod object. */
struct pod_state {
	char phase[16];        /* Pending, Running, Succeeded, Failed, Unknown */
	char pod_reason[64];   /* status.reason (e.g. DeadlineExceeded) */
	char pod_message[512]; /* status.message */
	bool scheduled;        /* condition PodScheduled == True */
	char sched_reason[64]; /* PodScheduled reason when False (Unschedulable) */
	char sched_message[512];
	enum container_state cstate; /* of the watched container */
	char c_reason[64];           /* waiting.reason or terminated.reason */
	char c_message[2048];        /* waiting.message or terminated.message */
	int exit_code;               /* terminated.exitCode */
	bool deleted;                /* a DELETED event was seen or the pod is gone (404) */
	/* Init containers (the mounts helper): init_done when the pod has init container
	 * statuses and all of them terminated with exit code 0. Otherwise init_name names the
	 * first one that has not (empty when the pod reports no init containers), with its
	 * state, reason, message and exit code. Without such an init container, init_name may
	 * name another of the pod's containers (exec mode's installer) that waits for a
	 * reason (other than ContainerCreating) or terminated with a non-zero code. */
	bool init_done;
	char init_name[64];
	enum container_state init_cstate;
	char init_reason[64];
	char init_message[2048];
	int init_exit_code;
	char resource_version[32];
	char uid[64]; /* metadata.uid */
	/* The kubelet's Started event for the watched container was seen (the events
	 * follower, below): the container runs, or has run, in the runtime, although the pod
	 * status says so only at the kubelet's next relist (up to ~1 s later). */
	bool started_event;
	/* Monotonic ms when the watch first saw each condition (0 = not yet). */
	int64_t t_scheduled, t_running, t_terminated, t_started_event;
	uint64_t generation; /* increments with every change the watch observes */
};

/* Whether a container waiting with `reason` will never start by itself: InvalidImageName,
 * CreateContainerConfigError, ErrImageNeverPull, ImagePullBackOff, CreateContainerError,
 * RunContainerError, and ErrImagePull once it has lasted POD_IMAGE_PULL_GRACE_MS (kubelet turns
 * it into ImagePullBackOff after its first retry; transient registry errors recover).
 * *pull_since tracks when ErrImagePull was first seen (0 = not now); when it is not fatal
 * yet, *recheck_at is set to when it will be. */
#define POD_IMAGE_PULL_GRACE_MS 5000
bool pod_waiting_is_fatal(const char *reason, int64_t *pull_since, int64_t now,
                          int64_t *recheck_at);

/* Decodes a Pod object into *out (container selects the containerStatuses entry; fields
 * not present are left empty). Does not touch out->t_* or out->generation. */
void pod_state_decode(const struct json *pod, const char *container, struct pod_state *out);

struct pod_watch;

/* Starts the watch thread. `cfg` is used to create the thread's own kube_client; `pod` and
 * `ns` are copied. `initial` may be the Pod returned by the create call (saves the GET); if
 * NULL the thread GETs the pod first. */
int pod_watch_start(struct kube_config *cfg, const char *ns, const char *pod, const char *container,
                    const struct json *initial, struct pod_watch **out, struct err **err);

/* Waits until the observed generation is greater than `seen_generation`, the watch fails,
 * or the monotonic deadline (ms) passes — whichever is first — and copies the current state
 * to *out. Returns 0 on a change, 1 on timeout (state still copied), -1 with *err if the watch
 * thread failed for good (its error, with context). Also returns early (0) when
 * `*cancel` becomes non-zero if cancel is not NULL (it polls it every 50 ms), and at once
 * (0) once the watch has ended because the pod is gone (out->deleted: nothing will change). */
int pod_watch_wait(struct pod_watch *w, uint64_t seen_generation, int64_t deadline_ms,
                   atomic_int *cancel, struct pod_state *out, struct err **err);

/* Copies the current state to *out, without waiting. */
void pod_watch_state(struct pod_watch *w, struct pod_state *out);

/* Stops the thread (closing its connection) and frees the watch. NULL is fine. Returns within
 * ~100 ms. */
void pod_watch_stop(struct pod_watch *w);

/* Number of API requests the watch has made so far (GET + watch connections), for stats. */
unsigned pod_watch_requests(struct pod_watch *w);

/* The pure parts of the stream handling, exported for unit tests. */

/* Splits watch stream data into lines. Bytes of an unfinished line wait in `pending` (its
 * limit, LIMIT_WATCH_EVENT, bounds one event); each complete non-empty line (without "\n"
 * or "\r\n") goes to on_line. Returns 0 when all data was consumed, the first non-zero
 * value of on_line (the rest of data is then dropped), or -1 with *err (ERR_NET) when a
 * line passes the limit. */
int pod_watch_split_lines(struct buf *pending, const char *data, size_t len,
                          int (*on_line)(const char *line, size_t len, void *ud), void *ud,
                          struct err **err);

enum pod_watch_event {
	POD_WATCH_UNCHANGED, /* no change of the decoded state (BOOKMARK, same state, unknown) */
	POD_WATCH_CHANGED,   /* ADDED/MODIFIED changed the state: st->generation was bumped */
	POD_WATCH_DELETED,   /* DELETED: st->deleted set, generation bumped */
	POD_WATCH_EXPIRED,   /* ERROR 410 Expired: re-GET and re-watch */
};

/* Applies one watch event (a JSON line) to *st: the state is decoded from the object, the
 * resourceVersion always follows the event (BOOKMARK too), t_* are stamped with
 * now_ms() the first time each is seen. Returns an enum pod_watch_event, or -1 with
 * *err: ERR_API for an ERROR event other than 410 (code, reason and message kept), ERR_NET
 * for a line that is not a watch event. */
int pod_watch_apply_event(const char *line, size_t len, const char *container, struct pod_state *st,
                          struct err **err);

#endif

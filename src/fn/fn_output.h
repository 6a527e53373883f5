/* fn_output.h — where a function's stdin comes from and its output goes
 * (docs/internals/pod-lifecycle.md, steps 3 and 4, and "Output from the pod log").
 *
 * With -i the function's stdout and stderr stream over the attach as they come; without
 * it the attached output is held in private files until the function ended, because the
 * start of its output may exist only in the pod log. Once the function ended its pod log is
 * read once and lined up with what the attach delivered: a log that holds more than the
 * attach delivered fails the run (the API server closed the stream early), and output that
 * cannot be proven complete (written before the attach, a log that does not line up or
 * cannot be read) fails it too unless KRMPOD_ATTACH_UNVERIFIED=allow, which recovers what
 * it can (docs/internals/attach-output.md): a render never uses cut output.
 */
#ifndef KRMPOD_FN_OUTPUT_H
#define KRMPOD_FN_OUTPUT_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "fn/fn_pod.h"
#include "kube/kube_watch.h"

struct fn_io {
	int in_fd, out_fd, err_fd;
	/* Set to a signal number by the front-end's handler: the run stops, deletes its pod
	 * and fails with ERR_SIGNAL. */
	atomic_int *cancel;
};

/* The container of p ended before anything attached (st: its terminated state): all of its
 * output is in the log. It goes to stdout when the function succeeded (with a warning: the
 * log merges stdout and stderr), else to stderr. */
int fn_output_from_log(struct fn_pod *p, const struct pod_state *st, const struct fn_io *io,
                       struct err **err);

/* The container of p runs (st says so, or the kubelet's Started event): attaches to it,
 * streams stdin and its output, waits for its exit (*st ends terminated), and checks the
 * output against the pod log as described above. */
int fn_output_stream(struct fn_pod *p, struct pod_state *st, const struct fn_io *io,
                     struct err **err);

/* Names the failure of a stream (attach or exec) that did not end cleanly: cancelled, past
 * KRMPOD_TIMEOUT, or lost; the output is incomplete. Returns -1. */
int fn_output_stream_failed(struct fn_pod *p, struct err **err);

/* Lines up the pod log of a container that has ended with what the attach delivered
 * (`attached` bytes of stdout and stderr, the first `prefix_len` of them in `prefix`). The
 * log holds what the container wrote before the attach began, then everything it wrote
 * after. Only its first head_len bytes are at hand (`head`), and its length, log_len. Sets
 * *pre to the length of that first part and *missing to the bytes after it that the attach
 * did not deliver (its stream ended early). `cut` says the log was read only up to log_len
 * (more may follow). A log the runtime has not written to its end yet (the container's last
 * bytes not in it) lines up too, when the start of the attached output is in it. Returns 0,
 * or -1 when they cannot be lined up: the start of the attached output is not in the log
 * (not written yet, the kubelet rotated it, or stdout and stderr interleaved in another
 * order); the caller reads it again for a while. */
int fn_output_log_split(const char *head, size_t head_len, size_t log_len, bool cut,
                        uint64_t attached, const char *prefix, size_t prefix_len, size_t *pre,
                        size_t *missing);

#endif

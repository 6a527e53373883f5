/* fn_exec.h — a function's streams in exec mode (docs/internals/exec-mode.md): one
 * pods/exec of `krmpod call` in the pod, whose stdin is the call header (agent.h: the
 * function's argv and env) followed by the function's stdin, whose stdout and stderr are
 * the function's, streamed as they come, and whose channel-3 Status carries the exit code
 * the moment the function ends. Nothing goes through the container log, so there is nothing
 * to recover from it; a stream that ends without its Status fails the run, naming the
 * container's end when the container itself ended (OOMKilled: exit code 137), which the pod's
 * status shows within FN_EXEC_END_WAIT_MS (the kubelet's relist), else the stream.
 */
#ifndef KRMPOD_FN_EXEC_H
#define KRMPOD_FN_EXEC_H

#include "base/err.h"
#include "fn/fn_output.h"
#include "fn/fn_pod.h"

#define FN_EXEC_END_WAIT_MS 3000

/* On the image's own entrypoint (req->exec_pid1) the call runs PID 1's command line, and once
 * it ended the function container's log (what PID 1 wrote while it waited) must be the first
 * bytes of the call's stderr, else the run fails (docs/internals/exec-mode.md). The log is
 * asked for again while the API server says the container has not started (its status lags
 * the exec), for FN_PID1_LOG_WAIT_MS at most. */
#define FN_PID1_LOG_WAIT_MS 5000

/* Runs the request's exec_argv in the started pod p. *exit_code is the function's. */
int fn_exec_call(struct fn_pod *p, const struct fn_io *io, int *exit_code, struct err **err);

#endif

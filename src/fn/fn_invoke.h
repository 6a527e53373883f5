/* fn_invoke.h — the whole of "run one function" behind the shim and `krmpod run`: load the
 * cluster configuration, resolve the run settings from the process environment
 * (fn_config.h), and run the pod. */
#ifndef KRMPOD_FN_INVOKE_H
#define KRMPOD_FN_INVOKE_H

#include "base/err.h"
#include "config/fn_request.h"
#include "fn/fn_run.h"

/* Returns like fn_run(). */
int fn_invoke(const struct fn_request *req, const struct fn_io *io, int *exit_code,
              struct err **err);

#endif

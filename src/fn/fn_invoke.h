/* fn_invoke.h — the whole of "run one function" behind the shim and `krmpod run`: the
 * settings and the cluster configuration resolved once from the environment (fn_config.h),
 * the request's own rules on top, then the pod (fn_run.h). */
#ifndef KRMPOD_FN_INVOKE_H
#define KRMPOD_FN_INVOKE_H

#include "base/err.h"
#include "config/request.h"
#include "fn/fn_run.h"

/* Runs req with the settings in envp (NAME=VALUE strings); the settings complete req (exec
 * mode's argv). Returns like fn_run(). */
int fn_invoke(char *const *envp, struct fn_request *req, const struct fn_io *io, int *exit_code,
              struct err **err);

#endif

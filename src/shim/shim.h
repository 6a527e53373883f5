/* shim.h — a `docker run` line (from kustomize or kpt), or `krmpod run`'s arguments, to a
 * function run: the arguments parsed into a request (docker_args.h), then run as a pod
 * with the settings of the environment (fn_invoke.h). */
#ifndef KRMPOD_SHIM_H
#define KRMPOD_SHIM_H

#include <stdbool.h>

#include "base/err.h"
#include "fn/fn_output.h"

/* Runs the function that argv[0..argc) (the arguments after `run`) names. envp is the
 * environment bare `-e NAME` flags and the settings are read from. With attach_stdin the
 * function gets io->in_fd as its stdin even without -i (`krmpod run` with a pipe). Returns
 * like fn_run(). */
int shim_run(int argc, char *const *argv, char *const *envp, bool attach_stdin,
             const struct fn_io *io, int *exit_code, struct err **err);

#endif

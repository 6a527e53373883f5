/* cmd_run.c — `krmpod run [flags] IMAGE [ARGS...] < input`: one function as a pod, for
 * humans debugging a function against any cluster. Same flags as the shim; stdin is
 * attached unless it is a terminal and -i was not given. */
#include <unistd.h>

#include "base/signals.h"
#include "cli/cmd.h"
#include "shim/shim.h"

extern char **environ;

int cmd_run(int argc, char **argv, int *exit_code, struct err **err)
{
	struct fn_io io = {0, 1, 2, &signals_cancel};
	return shim_run(argc - 1, argv + 1, environ, !isatty(0), &io, exit_code, err);
}

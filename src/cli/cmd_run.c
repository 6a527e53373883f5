/* cmd_run.c — `krmpod run [flags] IMAGE [ARGS...] < input`: one function as a pod, for
 * humans debugging a function against any cluster. Same flags as the shim; stdin is
 * attached unless it is a terminal and -i was not given. */
#include <string.h>
#include <unistd.h>

#include "base/signals.h"
#include "cli/cmd.h"
#include "fn/fn_invoke.h"
#include "shim/docker_args.h"

extern char **environ;

int cmd_run(int argc, char **argv, int *exit_code, struct err **err)
{
	struct fn_request req = {0};
	int rc = docker_args_parse(argc - 1, argv + 1, environ, &req, err);
	if (rc == 0) {
		if (!isatty(0))
			req.want_stdin = true;
		struct fn_io io = {0, 1, 2, &signals_cancel};
		rc = fn_invoke(&req, &io, exit_code, err);
	}
	fn_request_clear(&req);
	return rc;
}

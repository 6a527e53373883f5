/* shim.c — see shim.h. */
#include "shim/shim.h"

#include "config/request.h"
#include "fn/fn_invoke.h"
#include "shim/docker_args.h"

int shim_run(int argc, char *const *argv, char *const *envp, bool attach_stdin,
             const struct fn_io *io, int *exit_code, struct err **err)
{
	struct fn_request req = {0};
	int rc = docker_args_parse(argc, argv, envp, &req, err);
	if (rc == 0) {
		if (attach_stdin)
			req.want_stdin = true;
		rc = fn_invoke(envp, &req, io, exit_code, err);
	}
	fn_request_clear(&req);
	return rc;
}

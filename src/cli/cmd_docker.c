/* cmd_docker.c — the shim: krmpod invoked as `docker` by kustomize or kpt. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/signals.h"
#include "cli/cmd.h"
#include "shim/docker_args.h"
#include "shim/shim.h"

extern char **environ;

int cmd_docker(int argc, char **argv, int *exit_code, struct err **err)
{
	if (argc < 2)
		return err_set(err, ERR_USAGE,
		               "krmpod's docker shim needs a command: run or version");
	if (strcmp(argv[1], "run") == 0) {
		struct fn_io io = {0, 1, 2, &signals_cancel};
		return shim_run(argc - 2, argv + 2, environ, false, &io, exit_code, err);
	}
	if (strcmp(argv[1], "version") == 0) {
		cleanup_free char *text = NULL;
		if (docker_args_version(argc - 2, argv + 2, KRMPOD_VERSION, &text, err) < 0)
			return -1;
		fputs(text, stdout);
		*exit_code = 0;
		return 0;
	}
	return err_set(err, ERR_USAGE,
	               "docker %s: krmpod's docker shim supports only `docker run` and `docker "
	               "version`",
	               argv[1]);
}

/* cmd_doctor.c — `krmpod doctor [--probe]` (doctor.h): the report on stdout; exits 1 when
 * a check failed. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/signals.h"
#include "cli/cmd.h"
#include "ops/doctor.h"

extern char **environ;

int cmd_doctor(int argc, char **argv, int *exit_code, struct err **err)
{
	bool probe = argc == 2 && strcmp(argv[1], "--probe") == 0;
	if (argc > 2 || (argc == 2 && !probe))
		return err_set(err, ERR_USAGE,
		               "usage: krmpod doctor [--probe] (got %s): --probe runs a pod that "
		               "checks NetworkPolicy enforcement from inside",
		               argv[1]);
	unsigned failed = 0;
	if (fn_doctor(environ, stdout, probe, &signals_cancel, &failed, err) < 0)
		return -1;
	*exit_code = failed ? 1 : 0;
	return 0;
}

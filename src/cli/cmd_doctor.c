/* cmd_doctor.c — `krmpod doctor` (fn_doctor.h): the report on stdout; exits 1 when a check
 * failed. */
#include <stdio.h>

#include "base/signals.h"
#include "cli/cmd.h"
#include "fn/fn_doctor.h"

extern char **environ;

int cmd_doctor(int argc, char **argv, int *exit_code, struct err **err)
{
	if (argc > 1)
		return err_set(err, ERR_USAGE, "krmpod doctor takes no arguments (got %s)",
		               argv[1]);
	unsigned failed = 0;
	if (fn_doctor(environ, stdout, &signals_cancel, &failed, err) < 0)
		return -1;
	*exit_code = failed ? 1 : 0;
	return 0;
}

/* cmd_cmp.c — the front-ends of the Argo CD plugin hooks (cmp.h): `krmpod generate`,
 * `krmpod init`, `krmpod discover`. They take no arguments. */
#include "cli/cmd.h"
#include "cmp/cmp.h"

extern char **environ;

static int no_args(int argc, char **argv, struct err **err)
{
	if (argc > 1)
		return err_set(err, ERR_USAGE,
		               "krmpod %s takes no arguments (got %s): it works on the current "
		               "directory, the application's source path",
		               argv[0], argv[1]);
	return 0;
}

int cmd_generate(int argc, char **argv, int *exit_code, struct err **err)
{
	if (no_args(argc, argv, err) < 0 || cmp_generate(environ, 1, err) < 0)
		return -1;
	*exit_code = 0;
	return 0;
}

int cmd_init(int argc, char **argv, int *exit_code, struct err **err)
{
	if (no_args(argc, argv, err) < 0 || cmp_init(environ, err) < 0)
		return -1;
	*exit_code = 0;
	return 0;
}

int cmd_discover(int argc, char **argv, int *exit_code, struct err **err)
{
	bool found = false;
	if (no_args(argc, argv, err) < 0 || cmp_discover(environ, stdout, &found, err) < 0)
		return -1;
	/* "not ours" is exit 0 with nothing on stdout: Argo CD's cmp-server takes any other exit
	 * status of discover.find.command for an error (cmpserver/plugin/plugin.go,
	 * matchRepository), and a match is a non-empty stdout */
	(void)found;
	*exit_code = 0;
	return 0;
}

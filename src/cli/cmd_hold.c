/* cmd_hold.c — an exec-mode function pod's own containers (agent.h): `krmpod install-self
 * DIR`, its installer, and `krmpod hold`, the command that keeps the function container
 * alive between calls. */
#include "agent/agent.h"
#include "cli/cmd.h"

int cmd_install_self(int argc, char **argv, int *exit_code, struct err **err)
{
	if (argc != 2 || argv[1][0] != '/')
		return err_set(err, ERR_USAGE,
		               "usage: krmpod install-self /DIR (run by exec-mode function pods' "
		               "installer container)");
	if (agent_install_self(argv[1], err) < 0)
		return -1;
	*exit_code = 0;
	return 0;
}

int cmd_hold(int argc, char **argv, int *exit_code, struct err **err)
{
	(void)argv;
	if (argc != 1)
		return err_set(
		        err, ERR_USAGE,
		        "usage: krmpod hold (the command of an exec-mode function container)");
	if (agent_hold(err) < 0)
		return -1;
	*exit_code = 0;
	return 0;
}

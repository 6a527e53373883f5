/* cmd_agent.c — the roles krmpod plays inside an exec-mode function pod (agent.h):
 * `krmpod install-self DIR`, `krmpod hold`, `krmpod serve WORKDIR` and
 * `krmpod call WORKDIR`. */
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

int cmd_call(int argc, char **argv, int *exit_code, struct err **err)
{
	if (argc != 2 || argv[1][0] != '/')
		return err_set(err, ERR_USAGE,
		               "usage: krmpod call /WORKDIR < header+input (run through pods/exec "
		               "in an exec-mode function pod)");
	return agent_call(argv[1], 0, 1, 2, exit_code, err);
}

int cmd_serve(int argc, char **argv, int *exit_code, struct err **err)
{
	if (argc != 2 || argv[1][0] != '/')
		return err_set(err, ERR_USAGE,
		               "usage: krmpod serve /WORKDIR (run through pods/exec in an "
		               "exec-mode function pod, for a render's calls)");
	if (agent_serve("/proc/self/exe", argv[1], 0, 1, err) < 0)
		return -1;
	*exit_code = 0;
	return 0;
}

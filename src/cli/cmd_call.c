/* cmd_call.c — the calls into an exec-mode function pod, through pods/exec (agent.h):
 * `krmpod call WORKDIR`, one call, and `krmpod serve WORKDIR`, a render's session. Each
 * passes the network gate first (cmd_gate.c). */
#include "agent/agent.h"
#include "cli/cmd.h"

int cmd_call(int argc, char **argv, int *exit_code, struct err **err)
{
	if (argc != 2 || argv[1][0] != '/')
		return err_set(err, ERR_USAGE,
		               "usage: krmpod call /WORKDIR < header+input (run through pods/exec "
		               "in an exec-mode function pod)");
	if (cmd_gate_from_env(argv[1], err) < 0)
		return -1;
	return agent_call(argv[1], 0, 1, 2, exit_code, err);
}

int cmd_serve(int argc, char **argv, int *exit_code, struct err **err)
{
	if (argc != 2 || argv[1][0] != '/')
		return err_set(err, ERR_USAGE,
		               "usage: krmpod serve /WORKDIR (run through pods/exec in an "
		               "exec-mode function pod, for a render's calls)");
	if (cmd_gate_from_env(argv[1], err) < 0 ||
	    agent_serve("/proc/self/exe", argv[1], 0, 1, err) < 0)
		return -1;
	*exit_code = 0;
	return 0;
}

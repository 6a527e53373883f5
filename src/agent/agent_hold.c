/* agent_hold.c — `krmpod hold` and `krmpod install-self DIR` (agent.h). */
#include "agent/agent.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/xalloc.h"

int agent_hold(struct err **err)
{
	prctl(PR_SET_DUMPABLE, 0); /* see agent_call: not for the function to read or trace */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return err_set_sys(err, ERR_INTERNAL, errno, "sigprocmask");
	for (;;) {
		int sig = sigwaitinfo(&set, NULL);
		if (sig < 0 && errno == EINTR)
			continue;
		if (sig < 0)
			return err_set_sys(err, ERR_INTERNAL, errno, "sigwaitinfo");
		if (sig != SIGCHLD)
			return 0;
		/* Orphans of calls are re-parented to PID 1: reap them all. */
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
}

int agent_install_self(const char *dir, struct err **err)
{
	cleanup_close int in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return err_set_sys(err, ERR_IO, errno, "cannot read /proc/self/exe");
	cleanup_free char *tmp = xasprintf("%s/.%s.part", dir, AGENT_BINARY_NAME);
	cleanup_free char *dst = xasprintf("%s/%s", dir, AGENT_BINARY_NAME);
	if (fd_copy_atomic(dst, tmp, in, 0555, "krmpod's binary", err) < 0)
		return err_wrap(err, "install %s", dst);
	return 0;
}

/* cmp-hook-run.c — runs one plugin hook in the krmpod sidecar as Argo CD's CMP server runs
 * generate, for the real-cluster tests that drive the sidecar directly (tests/realkube).
 *
 * The sidecar itself runs the real argocd-cmp-server (upstream Argo CD, copied in by its own
 * copyutil init container), and the tests in test_argocd.py render through the real
 * repo-server and application controller. The real server speaks gRPC on a Unix socket
 * inside the pod, with the deadline its caller sets; this runner is kept for what that path
 * cannot give a test on demand: a deadline of N ms exactly, an environment chosen per call,
 * and hundreds of renders without a git commit each (docs/testing.md). It is copied into the
 * running sidecar (tests/realkube/sidecar.py), not into any image.
 *
 *   cmp-hook-run [--timeout-ms N] [--chdir DIR] [--env K=V]... -- COMMAND [ARG]...
 *       Runs COMMAND (an absolute path) in a process group of its own, in DIR, with this
 *       environment plus the --env variables. After N ms (the request deadline) it does
 *       what Argo CD does (its exec.CommandContext kill, then the process-group cancel):
 *       SIGKILL to COMMAND at once, SIGTERM to the process group, and SIGKILL to the group
 *       5 s later if anything is left. It is a child subreaper, so what COMMAND leaves
 *       behind is reaped here and the group check sees only live processes. It returns when
 *       the group is gone (or after that SIGKILL), with COMMAND's exit status (128+N after
 *       signal N). It says on stderr when the deadline struck.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GROUP_KILL_DELAY_MS 5000

static const char *prog = "cmp-hook-run";

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s (krmpod test runner): ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int exit_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

static int usage(void)
{
	fprintf(stderr, "usage: %s [--timeout-ms N] [--chdir DIR] [--env K=V]... -- COMMAND [ARG]...\n",
	        prog);
	return 2;
}

static int run(int argc, char **argv)
{
	long long timeout_ms = 0;
	const char *dir = NULL;
	int i = 0;
	for (; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		}
		if (i + 1 >= argc)
			return usage();
		if (strcmp(argv[i], "--timeout-ms") == 0) {
			char *end;
			timeout_ms = strtoll(argv[++i], &end, 10);
			if (*end || timeout_ms < 0)
				return usage();
		} else if (strcmp(argv[i], "--chdir") == 0) {
			dir = argv[++i];
		} else if (strcmp(argv[i], "--env") == 0) {
			if (!strchr(argv[++i], '=') || putenv(argv[i]) != 0)
				return usage();
		} else {
			return usage();
		}
	}
	if (i >= argc || argv[i][0] != '/')
		return usage();
	char **cmd = argv + i;

	prctl(PR_SET_CHILD_SUBREAPER, 1);
	pid_t pid = fork();
	if (pid < 0) {
		say("fork: %s", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		setpgid(0, 0);
		if (dir && chdir(dir) < 0) {
			say("chdir %s: %s", dir, strerror(errno));
			_exit(1);
		}
		execv(cmd[0], cmd);
		say("exec %s: %s", cmd[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid); /* no race with the child's own call: both make the same group */

	long long deadline = timeout_ms ? now_ms() + timeout_ms : 0;
	int status = 0;
	for (;;) {
		int st;
		pid_t r;
		while ((r = waitpid(-1, &st, WNOHANG)) > 0)
			if (r == pid)
				return exit_status(st); /* in time: Argo CD does not wait for the group */
		if (deadline && now_ms() >= deadline)
			break;
		sleep_ms(10);
	}
	say("deadline of %lld ms exceeded: SIGKILL to pid %d, SIGTERM to process group %d",
	    timeout_ms, (int)pid, (int)pid);
	kill(pid, SIGKILL);
	kill(-pid, SIGTERM);
	waitpid(pid, &status, 0);
	long long kill_at = now_ms() + GROUP_KILL_DELAY_MS;
	while (kill(-pid, 0) == 0 && now_ms() < kill_at) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		sleep_ms(20);
	}
	if (kill(-pid, 0) == 0) {
		say("process group %d still there after %d ms: SIGKILL", (int)pid, GROUP_KILL_DELAY_MS);
		kill(-pid, SIGKILL);
	} else {
		say("process group %d gone %lld ms after the deadline", (int)pid,
		    now_ms() - (kill_at - GROUP_KILL_DELAY_MS));
	}
	return exit_status(status);
}

int main(int argc, char **argv)
{
	return run(argc - 1, argv + 1);
}

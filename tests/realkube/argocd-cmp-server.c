/* argocd-cmp-server.c — a stand-in for Argo CD's CMP server, for the real-cluster tier
 * (tests/realkube). Built static (musl) into the stand-in Argo CD image; the repo-server
 * Deployment's `copyutil` init container copies it to /var/run/argocd/argocd-cmp-server, as
 * upstream copies its `argocd` binary, and the krmpod sidecar runs it with the command
 * manifests/ gives it, unchanged.
 *
 *   argocd-cmp-server
 *       Serve: what the real server does at start, minus gRPC. Reads the plugin config
 *       /home/argocd/cmp-server/config/plugin.yaml (baked into the krmpod image), takes its
 *       metadata.name and spec.version, and listens on the Unix socket
 *       /home/argocd/cmp-server/plugins/NAME-VERSION.sock as the real one does (so a missing
 *       plugin.yaml or an unwritable `plugins` volume fails the container). Then waits for
 *       SIGTERM or SIGINT, reaping every child that ends meanwhile: it is PID 1 of the
 *       container, and the processes `kubectl exec` starts are reparented to it.
 *
 *   argocd-cmp-server run [--timeout-ms N] [--chdir DIR] [--env K=V]... -- COMMAND [ARG]...
 *       Runs a plugin command as the real server runs generate: COMMAND (an absolute path)
 *       in a process group of its own, in DIR, with this environment plus the --env
 *       variables. After N ms (the request deadline) it does what Argo CD does (its
 *       exec.CommandContext kill, then the process-group cancel): SIGKILL to COMMAND at once,
 *       SIGTERM to the process group, and SIGKILL to the group 5 s later if anything is left.
 *       It returns when the group is gone (or after that SIGKILL), with COMMAND's exit status
 *       (128+N after signal N). It says on stderr when the deadline struck.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PLUGIN_CONFIG "/home/argocd/cmp-server/config/plugin.yaml"
#define PLUGIN_SOCKETS "/home/argocd/cmp-server/plugins"
#define GROUP_KILL_DELAY_MS 5000

static const char *prog = "argocd-cmp-server";

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s (krmpod test stand-in): ", prog);
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

/* Copies the scalar after "key:" on a line indented by exactly two spaces within the
 * top-level block `block:` of a small YAML file. Enough for plugin.yaml's metadata.name and
 * spec.version; returns 0 when found. */
static int yaml_field(const char *text, const char *block, const char *key, char *out,
                      size_t size)
{
	char cur[64] = "";
	const char *line = text;
	while (*line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		if (len > 0 && line[0] != ' ' && line[0] != '#' && line[len - 1] == ':' &&
		    len - 1 < sizeof(cur)) {
			memcpy(cur, line, len - 1);
			cur[len - 1] = '\0';
		} else if (strcmp(cur, block) == 0 && len > 2 && line[0] == ' ' && line[1] == ' ' &&
		           line[2] != ' ' && strncmp(line + 2, key, strlen(key)) == 0 &&
		           line[2 + strlen(key)] == ':') {
			const char *v = line + 3 + strlen(key);
			while (v < line + len && *v == ' ')
				v++;
			size_t n = (size_t)(line + len - v);
			if (n == 0 || n >= size)
				return -1;
			memcpy(out, v, n);
			out[n] = '\0';
			return 0;
		}
		line = end ? end + 1 : line + len;
	}
	return -1;
}

static int serve(void)
{
	char text[16384];
	int fd = open(PLUGIN_CONFIG, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		say("cannot read %s: %s", PLUGIN_CONFIG, strerror(errno));
		return 1;
	}
	ssize_t n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0) {
		say("%s is empty or unreadable", PLUGIN_CONFIG);
		return 1;
	}
	text[n] = '\0';
	char name[32], version[32], sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	if (yaml_field(text, "metadata", "name", name, sizeof(name)) < 0) {
		say("%s: no metadata.name", PLUGIN_CONFIG);
		return 1;
	}
	/* Argo CD names the socket NAME-VERSION.sock, or NAME.sock without a version. */
	if (yaml_field(text, "spec", "version", version, sizeof(version)) == 0)
		snprintf(sock_path, sizeof(sock_path), "%s/%s-%s.sock", PLUGIN_SOCKETS, name, version);
	else
		snprintf(sock_path, sizeof(sock_path), "%s/%s.sock", PLUGIN_SOCKETS, name);

	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);

	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
	unlink(sock_path);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(s, 8) < 0) {
		say("cannot listen on %s: %s", sock_path, strerror(errno));
		return 1;
	}
	say("serving plugin %s from %s on %s", name, PLUGIN_CONFIG, sock_path);
	for (;;) {
		siginfo_t si;
		if (sigwaitinfo(&set, &si) < 0)
			continue;
		if (si.si_signo == SIGCHLD) {
			while (waitpid(-1, NULL, WNOHANG) > 0)
				;
			continue;
		}
		say("signal %d: exiting", si.si_signo);
		unlink(sock_path);
		return 0;
	}
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
	fprintf(stderr, "usage: %s\n       %s run [--timeout-ms N] [--chdir DIR] [--env K=V]... "
	                "-- COMMAND [ARG]...\n",
	        prog, prog);
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
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			return exit_status(status); /* finished in time: Argo CD does not wait for the group */
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
	while (kill(-pid, 0) == 0 && now_ms() < kill_at)
		sleep_ms(20);
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
	if (argc == 1)
		return serve();
	if (strcmp(argv[1], "run") == 0)
		return run(argc - 2, argv + 2);
	return usage();
}

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
 *
 *   --stdout-copy PATH  relays COMMAND's stdout through a pipe, to this stdout and to PATH,
 *       and ends with the line "stdout: N bytes, fnv1a64 HEX" on stderr, so that the test
 *       can check what reached it through `kubectl exec` (whose stream this cluster's
 *       kubelet now and then ends early with a clean status) and read PATH again when it
 *       lost bytes. Copies in PATH's directory older than COPY_MAX_AGE_S are removed first.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GROUP_KILL_DELAY_MS 5000
#define COPY_MAX_AGE_S 600
#define DRAIN_MS 5000

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

/* The stdout relay of --stdout-copy. */
struct relay {
	int in;   /* the pipe's read end, -1 once at its end */
	int copy; /* PATH */
	unsigned long long n, fnv;
	int failed;
};

static void write_all(int fd, const char *p, size_t n, struct relay *r)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			r->failed = errno;
			return;
		}
		p += w;
		n -= (size_t)w;
	}
}

/* Relays what the pipe holds now, waiting up to wait_ms for some; at its end, closes it. */
static void relay_some(struct relay *r, int wait_ms)
{
	if (r->in < 0) {
		if (wait_ms)
			sleep_ms(wait_ms);
		return;
	}
	struct pollfd p = {.fd = r->in, .events = POLLIN};
	if (poll(&p, 1, wait_ms) <= 0)
		return;
	char buf[65536];
	ssize_t got = read(r->in, buf, sizeof(buf));
	if (got < 0 && errno == EINTR)
		return;
	if (got <= 0) {
		close(r->in);
		r->in = -1;
		return;
	}
	for (ssize_t i = 0; i < got; i++)
		r->fnv = (r->fnv ^ (unsigned char)buf[i]) * 0x100000001b3ULL;
	r->n += (unsigned long long)got;
	write_all(1, buf, (size_t)got, r);
	write_all(r->copy, buf, (size_t)got, r);
}

/* Removes the copies of earlier runs, in path's directory, older than COPY_MAX_AGE_S. */
static void remove_old_copies(const char *path)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash == NULL)
		return;
	*slash = '\0';
	DIR *d = opendir(dir);
	struct dirent *e;
	time_t now = time(NULL);
	while (d && (e = readdir(d)) != NULL) {
		struct stat st;
		if (strncmp(e->d_name, "stdout.", 7) != 0 ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISREG(st.st_mode) && now - st.st_mtime > COPY_MAX_AGE_S)
			unlinkat(dirfd(d), e->d_name, 0);
	}
	if (d)
		closedir(d);
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
	fprintf(stderr,
	        "usage: %s [--timeout-ms N] [--chdir DIR] [--env K=V]... [--stdout-copy PATH] -- "
	        "COMMAND [ARG]...\n",
	        prog);
	return 2;
}

static int wait_command(pid_t pid, long long timeout_ms, struct relay *rl);

static int run(int argc, char **argv)
{
	long long timeout_ms = 0;
	const char *dir = NULL, *copy = NULL;
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
		} else if (strcmp(argv[i], "--stdout-copy") == 0) {
			copy = argv[++i];
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

	struct relay r = {.in = -1, .copy = -1, .fnv = 0xcbf29ce484222325ULL};
	int out[2] = {-1, -1};
	if (copy) {
		remove_old_copies(copy);
		r.copy = open(copy, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (r.copy < 0 || pipe2(out, O_CLOEXEC) < 0) {
			say("--stdout-copy %s: %s", copy, strerror(errno));
			return 1;
		}
		r.in = out[0];
	}
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	pid_t pid = fork();
	if (pid < 0) {
		say("fork: %s", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		setpgid(0, 0);
		if (copy && dup2(out[1], 1) < 0)
			_exit(126);
		if (dir && chdir(dir) < 0) {
			say("chdir %s: %s", dir, strerror(errno));
			_exit(1);
		}
		execv(cmd[0], cmd);
		say("exec %s: %s", cmd[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid); /* no race with the child's own call: both make the same group */
	if (copy)
		close(out[1]);
	int rc = wait_command(pid, timeout_ms, &r);
	if (copy) {
		/* what the command's group still writes, until the pipe's end (bounded) */
		for (long long until = now_ms() + DRAIN_MS; r.in >= 0 && now_ms() < until;)
			relay_some(&r, 10);
		if (r.in >= 0 || r.failed || close(r.copy) < 0)
			say("stdout: the relay did not end cleanly (%s)",
			    r.in >= 0 ? "the pipe is still open" : strerror(r.failed ? r.failed : errno));
		else
			say("stdout: %llu bytes, fnv1a64 %016llx", r.n, r.fnv);
	}
	return rc;
}

/* Waits for the command (relaying its stdout meanwhile), or kills it at the deadline as Argo
 * CD does; its exit status. */
static int wait_command(pid_t pid, long long timeout_ms, struct relay *rl)
{
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
		relay_some(rl, 10);
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

/* agent_call.c — `krmpod call WORKDIR`: one function call in an exec-mode pod (agent.h). */
#include "agent/agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/fdio.h"
#include "base/json.h"
#include "base/proc.h"
#include "base/size_limits.h"
#include "base/strv.h"
#include "base/xalloc.h"

/* --- The header -------------------------------------------------------------------------- */

static char **string_array(const struct json *a, const char *key, bool need_one, bool env,
                           struct err **err)
{
	if (a == NULL && !need_one)
		return xcalloc(1, sizeof(char *));
	if (json_type(a) != JSON_ARRAY || (need_one && json_len(a) == 0)) {
		err_set(err, ERR_USAGE, "call header: \"%s\" must be %s array of strings", key,
		        need_one ? "a non-empty" : "an");
		return NULL;
	}
	size_t n = json_len(a);
	char **v = xcalloc(n + 1, sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		const char *s = json_str(json_at(a, i));
		const char *eq = s ? strchr(s, '=') : NULL;
		if (s == NULL || (!env && i == 0 && *s == '\0') ||
		    (env && (eq == NULL || eq == s))) {
			err_set(err, ERR_USAGE, "call header: %s[%zu] must be %s", key, i,
			        env ? "a string NAME=VALUE" : "a string (the first not empty)");
			for (size_t k = 0; k < i; k++)
				free(v[k]);
			free(v);
			return NULL;
		}
		v[i] = xstrdup(s);
	}
	return v;
}

int agent_call_header_parse(const char *text, size_t len, struct agent_call_header *out,
                            struct err **err)
{
	memset(out, 0, sizeof(*out));
	cleanup_json struct json *j = NULL;
	if (json_parse(text, len, "call header", &j, err) < 0)
		return -1;
	if (json_type(j) != JSON_OBJECT)
		return err_set(err, ERR_USAGE, "call header: not a JSON object");
	for (size_t i = 0; i < json_len(j); i++) {
		const char *k = json_key_at(j, i);
		if (strcmp(k, "argv") != 0 && strcmp(k, "env") != 0 && strcmp(k, "pooled") != 0 &&
		    strcmp(k, "argv_pid1") != 0)
			return err_set(err, ERR_USAGE, "call header: unknown field \"%s\"", k);
	}
	const struct json *pooled = json_get(j, "pooled");
	if (pooled && !json_bool(pooled, &out->pooled))
		return err_set(err, ERR_USAGE, "call header: \"pooled\" must be true or false");
	const struct json *pid1 = json_get(j, "argv_pid1");
	if (pid1 && (!json_bool(pid1, &out->argv_pid1) || !out->argv_pid1))
		return err_set(err, ERR_USAGE,
		               "call header: \"argv_pid1\" must be true when given");
	if (out->argv_pid1 && json_get(j, "argv"))
		return err_set(err, ERR_USAGE,
		               "call header: \"argv\" and \"argv_pid1\" exclude each other");
	if (out->argv_pid1 && out->pooled)
		return err_set(err, ERR_USAGE,
		               "call header: \"argv_pid1\" is never pooled (PID 1 is one "
		               "function's)");
	out->argv = out->argv_pid1 ? xcalloc(1, sizeof(char *))
	                           : string_array(json_get(j, "argv"), "argv", true, false, err);
	if (out->argv == NULL)
		return -1;
	out->env = string_array(json_get(j, "env"), "env", false, true, err);
	if (out->env == NULL) {
		agent_call_header_clear(out);
		return -1;
	}
	return 0;
}

void agent_call_header_clear(struct agent_call_header *h)
{
	strv_free(h->argv);
	strv_free(h->env);
	strv_free(h->pid1_env);
	free(h->pid1_cwd);
	memset(h, 0, sizeof(*h));
}

static void header_write(char *const *argv, char *const *env, bool pooled, struct buf *out)
{
	struct jw w;
	jw_init(&w, out);
	jw_obj_begin(&w);
	if (argv) {
		jw_key(&w, "argv");
		jw_arr_begin(&w);
		for (size_t i = 0; argv[i]; i++)
			jw_str(&w, argv[i]);
		jw_arr_end(&w);
	} else {
		jw_kv_bool(&w, "argv_pid1", true);
	}
	jw_key(&w, "env");
	jw_arr_begin(&w);
	for (size_t i = 0; env && env[i]; i++)
		jw_str(&w, env[i]);
	jw_arr_end(&w);
	if (pooled)
		jw_kv_bool(&w, "pooled", true);
	jw_obj_end(&w);
	buf_putc(out, '\n');
}

void agent_call_header_write(char *const *argv, char *const *env, bool pooled, struct buf *out)
{
	header_write(argv, env, pooled, out);
}

void agent_call_header_write_pid1(char *const *env, struct buf *out)
{
	header_write(NULL, env, false, out);
}

/* --- PID 1's command line ---------------------------------------------------------------- */

/* runc's init, before it execs the container's process: argv "runc" "init" (a path to runc
 * as argv[0] on some builds). */
static bool runtime_init(const char *cmd, size_t n)
{
	const char *base = strrchr(cmd, '/');
	base = base ? base + 1 : cmd;
	size_t l0 = strlen(cmd) + 1;
	return strcmp(base, "runc") == 0 && l0 < n && strcmp(cmd + l0, "init") == 0;
}

/* The NUL-ended strings of data[0..n) (the last one's NUL included in n), NULL-terminated. */
static char **split_nuls(const char *data, size_t n)
{
	size_t count = 0;
	for (size_t i = 0; i < n; i += strlen(data + i) + 1)
		count++;
	char **v = xcalloc(count + 1, sizeof(char *));
	size_t k = 0;
	for (size_t i = 0; i < n; i += strlen(data + i) + 1)
		v[k++] = xstrdup(data + i);
	return v;
}

static int read_pid1_file(const char *proc_dir, const char *name, char **out, size_t *n,
                          struct err **err)
{
	cleanup_free char *path = xasprintf("%s/%s", proc_dir, name);
	if (buf_read_file(path, LIMIT_PID1_CMDLINE, "a file of the function's process", ERR_POD,
	                  out, n, err) < 0)
		return err_wrap(err, "the function's process (PID 1 of its container)");
	return 0;
}

void agent_pid1_clear(struct agent_pid1 *p)
{
	strv_free(p->argv);
	strv_free(p->env);
	free(p->cwd);
	memset(p, 0, sizeof(*p));
}

int agent_pid1_read(const char *proc_dir, int wait_ms, struct agent_pid1 *out, struct err **err)
{
	memset(out, 0, sizeof(*out));
	int64_t until = now_ms() + wait_ms;
	cleanup_free char *cmd = NULL;
	size_t n = 0;
	for (;;) {
		free(cmd);
		cmd = NULL;
		if (read_pid1_file(proc_dir, "cmdline", &cmd, &n, err) < 0)
			return -1;
		if (n == 0 || cmd[0] == '\0')
			return err_set(
			        err, ERR_POD,
			        "the function's process (PID 1 of its container) has no "
			        "command line (%s/cmdline is empty): it has ended; a function "
			        "run on its image's own entrypoint must wait for its stdin",
			        proc_dir);
		if (!runtime_init(cmd, n))
			break;
		if (now_ms() >= until)
			return err_set(
			        err, ERR_POD,
			        "the function's process (PID 1 of its container) is still the "
			        "runtime's init after %d ms (%s/cmdline)",
			        wait_ms, proc_dir);
		sleep_ms(10, NULL);
	}
	/* the kernel ends each argument with a NUL; a process that rewrote its own may not */
	if (cmd[n - 1] != '\0')
		n++;
	cleanup_free char *env = NULL;
	size_t en = 0;
	if (read_pid1_file(proc_dir, "environ", &env, &en, err) < 0)
		return -1;
	cleanup_free char *link = xasprintf("%s/cwd", proc_dir);
	char cwd[PATH_MAX];
	ssize_t cl = readlink(link, cwd, sizeof(cwd) - 1);
	if (cl < 0)
		return err_set_sys(err, ERR_POD, errno,
		                   "the function's process (PID 1 of its container): cannot read "
		                   "its working directory %s",
		                   link);
	cwd[cl] = '\0';
	out->argv = split_nuls(cmd, n);
	out->env = en > 0 ? split_nuls(env, env[en - 1] == '\0' ? en : en + 1)
	                  : xcalloc(1, sizeof(char *));
	out->cwd = xstrdup(cwd);
	return 0;
}

int agent_trailer_parse(const char *tail, size_t len, size_t *trailer_len,
                        unsigned long long *out_bytes, unsigned long long *err_bytes,
                        int *exit_code)
{
	static const char prefix[] = AGENT_TRAILER_PREFIX;
	const size_t plen = sizeof(prefix) - 1;
	if (len == 0 || tail[len - 1] != '\n')
		return -1;
	const char *start = NULL;
	for (size_t i = len; i-- > 0 && start == NULL;)
		if (len - i >= plen && memcmp(tail + i, prefix, plen) == 0)
			start = tail + i;
	if (start == NULL)
		return -1;
	size_t n = (size_t)(tail + len - start) - plen;
	if (n > AGENT_TRAILER_MAX)
		return -1;
	char line[AGENT_TRAILER_MAX + 1];
	memcpy(line, start + plen, n);
	line[n] = '\0';
	int used = 0;
	if (sscanf(line, "out=%llu err=%llu exit=%d\n%n", out_bytes, err_bytes, exit_code, &used) !=
	            3 ||
	    (size_t)used != n)
		return -1;
	*trailer_len = (size_t)(tail + len - start);
	return 0;
}

/* Reads the header line byte by byte: nothing of the function's stdin is consumed. */
static int read_header(int fd, struct buf *line, struct err **err)
{
	for (;;) {
		char c;
		ssize_t n = read(fd, &c, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_set_sys(err, ERR_IO, errno, "read the call header from stdin");
		if (n == 0)
			return err_set(err, ERR_USAGE,
			               "stdin ended before the call header's end (%zu bytes)",
			               line->len);
		if (c == '\n')
			return 0;
		if (buf_append(line, &c, 1, "call header", err) < 0)
			return -1;
	}
}

/* --- The container's cgroup: did the OOM killer strike? --------------------------------- */

/* The oom_kill counter of the container's memory cgroup (v2, else v1); -1 when unknown. */
static long long oom_kills(void)
{
	static const char *const files[] = {"/sys/fs/cgroup/memory.events",
	                                    "/sys/fs/cgroup/memory/memory.oom_control"};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		cleanup_file FILE *f = fopen(files[i], "re");
		char key[64];
		long long v;
		while (f && fscanf(f, "%63s %lld", key, &v) == 2)
			if (strcmp(key, "oom_kill") == 0)
				return v;
	}
	return -1;
}

/* --- Leftover processes ------------------------------------------------------------------ */

/* Whether PID 1 of our PID namespace is `krmpod hold` (so the container is ours alone). */
static bool in_hold_container(void)
{
	char cmd[256];
	cleanup_close int fd = open("/proc/1/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, cmd, sizeof(cmd) - 1);
	if (n <= 0 || getpid() == 1)
		return false;
	cmd[n] = '\0';
	const char *arg1 = cmd + strlen(cmd) + 1;
	return arg1 < cmd + n && strcmp(arg1, "hold") == 0;
}

/* Kills every process of the container but PID 1, this one and its parent (`krmpod serve`
 * in a session; outside the container's PID namespace, 0, for a pods/exec): what the
 * function left running must not see the next call. Only inside a hold container (never on
 * a host). One scan can miss a child forked while it ran, so it scans again until a scan
 * finds no running process (zombies wait for hold to reap them), LEFTOVER_SCANS at most:
 * returns false when processes were still found then. */
#define LEFTOVER_SCANS 100
static bool kill_leftovers(void)
{
	if (!in_hold_container())
		return true;
	pid_t parent = getppid();
	for (int scan = 0; scan < LEFTOVER_SCANS; scan++) {
		bool found = false;
		cleanup_dir DIR *d = opendir("/proc");
		struct dirent *e;
		while (d && (e = readdir(d)) != NULL) {
			char *end;
			long pid = strtol(e->d_name, &end, 10);
			if (*end == '\0' && pid > 1 && pid != getpid() && pid != parent &&
			    proc_running((pid_t)pid)) {
				kill((pid_t)pid, SIGKILL);
				found = true;
			}
		}
		if (!found)
			return true;
		sleep_ms(1, NULL);
	}
	return false;
}

/* Removes the System V IPC objects of one kind listed in `table` (/proc/sysvipc/shm, msg or
 * sem: the id is the second column). The pod has an IPC namespace of its own, so each one
 * is a call's. Returns false when one could not be removed. */
static bool remove_sysv(const char *table, int (*rm)(int id))
{
	FILE *f = fopen(table, "re");
	if (f == NULL)
		return errno == ENOENT; /* no System V IPC in this kernel */
	char line[512];
	bool ok = true, header = true;
	while (fgets(line, sizeof(line), f)) {
		if (header) {
			header = false;
			continue;
		}
		long key, id;
		if (sscanf(line, "%ld %ld", &key, &id) == 2 && rm((int)id) < 0 && errno != EINVAL &&
		    errno != EIDRM)
			ok = false;
	}
	fclose(f);
	return ok;
}

static int rm_shm(int id)
{
	return shmctl(id, IPC_RMID, NULL);
}

static int rm_msg(int id)
{
	return msgctl(id, IPC_RMID, NULL);
}

static int rm_sem(int id)
{
	return semctl(id, 0, IPC_RMID);
}

/* What a call can leave outside its directory and the processes: files in /dev/shm and
 * System V IPC objects (shared memory, queues, semaphores). Only inside a hold container. */
static int wipe_ipc(struct err **err)
{
	if (!in_hold_container())
		return 0;
	cleanup_close int shm = open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (shm >= 0 && fd_empty_dir(shm, NULL, "/dev/shm", err) < 0)
		return -1;
	if (!remove_sysv("/proc/sysvipc/shm", rm_shm) ||
	    !remove_sysv("/proc/sysvipc/msg", rm_msg) || !remove_sysv("/proc/sysvipc/sem", rm_sem))
		return err_set(err, ERR_IO,
		               "cannot remove the System V IPC objects the call made: "
		               "%s",
		               strerror(errno));
	return 0;
}

/* --- The call ---------------------------------------------------------------------------- */

/* In the child: the environment, then exec. Never returns. */
static void exec_function(const struct agent_call_header *h, const char *home, int in_fd,
                          int out_fd, int err_fd)
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
		_exit(126);
	/* On the image's own entrypoint: PID 1's environment and working directory, as its
	 * entrypoint left them (a wrapper that exported and changed directory before its exec). */
	if (h->pid1_env) {
		clearenv();
		for (size_t i = 0; h->pid1_env[i]; i++)
			putenv(h->pid1_env[i]);
		if (chdir(h->pid1_cwd) < 0) {
			dprintf(2,
			        "krmpod call: cannot enter %s, the working directory of PID 1: "
			        "%s\n",
			        h->pid1_cwd, strerror(errno));
			_exit(126);
		}
	}
	/* the container's own PATH, before the function config's env may change it */
	const char *own = getenv("PATH");
	char *path = own ? strdup(own) : NULL;
	for (size_t i = 0; h->env[i]; i++) {
		char *eq = strchr(h->env[i], '=');
		*eq = '\0';
		setenv(h->env[i], eq + 1, 1);
		*eq = '=';
	}
	/* After the config's env, so that no call can point the next one's temporary files
	 * elsewhere (TMPDIR=/dev/shm outlives the call's directory); in a pooled pod the PATH
	 * is the container's too: the next call may be another Application's. */
	setenv("HOME", home, 1);
	setenv("TMPDIR", home, 1);
	if (h->pooled) {
		if (path)
			setenv("PATH", path, 1);
		else
			unsetenv("PATH");
	}
	free(path);
	execvp(h->argv[0], h->argv);
	int e = errno;
	dprintf(2, "krmpod call: cannot run %s: %s\n", h->argv[0], strerror(e));
	_exit(e == ENOENT ? 127 : 126);
}

static int wait_function(pid_t pid, int *status, struct err **err)
{
	for (;;) {
		if (waitpid(pid, status, 0) == pid)
			return 0;
		if (errno != EINTR)
			return err_set_sys(err, ERR_INTERNAL, errno, "wait for the function");
	}
}

/* The exit code a status becomes; the OOM killer's kill (the counter moved) is said on
 * stderr, counted in *n_err. */
static int exit_code_of(int status, long long oom_before, int err_fd, unsigned long long *n_err)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	int sig = WTERMSIG(status);
	long long oom_after = oom_kills();
	if (sig == SIGKILL && oom_before >= 0 && oom_after > oom_before) {
		int n = dprintf(err_fd, "krmpod call: the function was killed by the kernel's "
		                        "out-of-memory killer (the pod's memory limit)\n");
		*n_err += n > 0 ? (unsigned long long)n : 0;
	}
	return 128 + sig;
}

/* How long output is still relayed after the function exited, when something it started
 * keeps its stdout or stderr open. */
#define DRAIN_AFTER_EXIT_MS 500

/* One output of the function, relayed to the call's own and counted. */
struct relay {
	int from, to;
	unsigned long long bytes;
	bool write_failed; /* the reader went away: drained, not written */
};

/* Moves what is there from r->from to r->to; false at EOF. */
static bool relay_some(struct relay *r, char *chunk, size_t size)
{
	ssize_t n = read(r->from, chunk, size);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	r->bytes += (unsigned long long)n;
	if (!r->write_failed && fd_write_all(r->to, chunk, (size_t)n, "output", NULL) < 0)
		r->write_failed = true;
	return true;
}

/* Relays both outputs until both end, or DRAIN_AFTER_EXIT_MS after the function exited;
 * *status is its wait status. */
static int relay_until_exit(pid_t pid, struct relay *out, struct relay *errr, int *status,
                            struct err **err)
{
	char chunk[65536];
	int64_t exited_at = -1;
	while (out->from >= 0 || errr->from >= 0) {
		struct pollfd p[2] = {{.fd = out->from, .events = POLLIN},
		                      {.fd = errr->from, .events = POLLIN}};
		int pr = poll(p, 2, 50);
		if (pr < 0 && errno != EINTR)
			return err_set_sys(err, ERR_INTERNAL, errno, "poll");
		for (int i = 0; i < 2 && pr > 0; i++) {
			struct relay *r = i == 0 ? out : errr;
			if (p[i].fd >= 0 && (p[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
			    !relay_some(r, chunk, sizeof(chunk))) {
				close(r->from);
				r->from = -1;
			}
		}
		if (exited_at < 0 && waitpid(pid, status, WNOHANG) == pid)
			exited_at = now_ms();
		if (exited_at >= 0 && now_ms() - exited_at > DRAIN_AFTER_EXIT_MS)
			break;
	}
	return exited_at >= 0 ? 0 : wait_function(pid, status, err);
}

/* Runs the function with pipes for its outputs, relays them, waits for it. */
static int spawn_and_relay(const struct agent_call_header *h, const char *home, int in_fd,
                           int out_fd, int err_fd, int *status, unsigned long long *n_out,
                           unsigned long long *n_err, struct err **err)
{
	int po[2], pe[2];
	if (pipe2(po, O_CLOEXEC) < 0)
		return err_set_sys(err, ERR_INTERNAL, errno, "pipe");
	if (pipe2(pe, O_CLOEXEC) < 0) {
		close(po[0]);
		close(po[1]);
		return err_set_sys(err, ERR_INTERNAL, errno, "pipe");
	}
	pid_t pid = fork();
	if (pid == 0)
		exec_function(h, home, in_fd, po[1], pe[1]);
	close(po[1]);
	close(pe[1]);
	struct relay out = {po[0], out_fd, 0, false}, errr = {pe[0], err_fd, 0, false};
	int rc = pid < 0 ? err_set_sys(err, ERR_INTERNAL, errno, "fork")
	                 : relay_until_exit(pid, &out, &errr, status, err);
	if (out.from >= 0)
		close(out.from);
	if (errr.from >= 0)
		close(errr.from);
	*n_out = out.bytes;
	*n_err = errr.bytes;
	return rc;
}

/* Waits (until `until`) while what was written to fd is still in its pipe. The container
 * runtime reads an exec's stdout and stderr from pipes, and containerd can tear them down
 * when the process exits with the last chunk still in them (its exit-time race: the tail
 * of a large output lost, in the attach and the pod log alike, seen on the real-cluster
 * tier). Exiting only once the reader took everything keeps the tail; the trailer still
 * catches what is lost after that. Not a pipe (a file, a socket in tests): nothing to do. */
static void wait_drained(int fd, int64_t until)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode))
		return;
	int queued = 0;
	while (ioctl(fd, FIONREAD, &queued) == 0 && queued > 0 && now_ms() < until)
		sleep_ms(1, NULL);
}

static int run_call(const char *workdir, int wfd, const struct agent_call_header *h, int in_fd,
                    int out_fd, int err_fd, int *exit_code, struct err **err)
{
	cleanup_free char *home = xasprintf("%s/call-XXXXXX", workdir);
	if (mkdtemp(home) == NULL)
		return err_set_sys(err, ERR_IO, errno, "cannot make the call's directory in %s",
		                   workdir);
	long long oom_before = oom_kills();
	int status = 0;
	unsigned long long n_out = 0, n_err = 0;
	int rc = spawn_and_relay(h, home, in_fd, out_fd, err_fd, &status, &n_out, &n_err, err);
	bool all_gone = kill_leftovers();
	if (rc == 0)
		*exit_code = exit_code_of(status, oom_before, err_fd, &n_err);
	cleanup_err struct err *e = NULL;
	if (!all_gone && rc == 0)
		err_set(&e, ERR_INTERNAL, "processes the call started still run after %d scans",
		        LEFTOVER_SCANS);
	if ((e || wipe_ipc(&e) < 0 || fd_empty_dir(wfd, AGENT_LOCK_NAME, workdir, &e) < 0) &&
	    rc == 0) {
		*exit_code = -1;
		err_wrap(&e, "after the call (the pod must not be reused)");
		*err = e;
		e = NULL;
		return -1;
	}
	if (rc == 0)
		dprintf(err_fd, AGENT_TRAILER_PREFIX "out=%llu err=%llu exit=%d\n", n_out, n_err,
		        *exit_code);
	int64_t until = now_ms() + AGENT_DRAIN_MS;
	wait_drained(out_fd, until);
	wait_drained(err_fd, until);
	return rc;
}

int agent_call(const char *workdir, int in_fd, int out_fd, int err_fd, int *exit_code,
               struct err **err)
{
	*exit_code = -1;
	/* not to be read or traced by the function, which runs as the same user (its env holds
	 * the call's -e values) */
	prctl(PR_SET_DUMPABLE, 0);
	cleanup_buf struct buf line;
	buf_init(&line, LIMIT_CALL_HEADER);
	if (read_header(in_fd, &line, err) < 0)
		return -1;
	struct agent_call_header h;
	if (agent_call_header_parse(line.data ? line.data : "", line.len, &h, err) < 0)
		return -1;
	if (h.argv_pid1) {
		struct agent_pid1 pid1;
		if (agent_pid1_read("/proc/1", AGENT_PID1_WAIT_MS, &pid1, err) < 0) {
			agent_call_header_clear(&h);
			return -1;
		}
		strv_free(h.argv);
		h.argv = pid1.argv; /* the header owns what was read from here on */
		h.pid1_env = pid1.env;
		h.pid1_cwd = pid1.cwd;
	}
	cleanup_close int wfd = open(workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cleanup_close int lock = -1;
	int rc = 0;
	if (wfd < 0)
		rc = err_set_sys(err, ERR_IO, errno, "cannot open the work directory %s", workdir);
	if (rc == 0) {
		lock = openat(wfd, AGENT_LOCK_NAME, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
		              0600);
		if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) < 0)
			rc = err_set(err, errno == EWOULDBLOCK ? ERR_INTERNAL : ERR_IO,
			             "cannot take %s/%s: %s", workdir, AGENT_LOCK_NAME,
			             errno == EWOULDBLOCK ? "another call runs in this pod"
			                                  : strerror(errno));
	}
	/* What an earlier call that was killed left behind goes first. */
	if (rc == 0)
		rc = fd_empty_dir(wfd, AGENT_LOCK_NAME, workdir, err);
	if (rc == 0)
		rc = run_call(workdir, wfd, &h, in_fd, out_fd, err_fd, exit_code, err);
	agent_call_header_clear(&h);
	return rc;
}

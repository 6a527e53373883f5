/* kustomize_run.c — see kustomize_run.h. */
#include "cmp/kustomize_run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/size_limits.h"

#define POLL_MS 50

/* Signals the processes kustomize_run started: the caller's own group when they share it
 * (the caller ignores the signal for the moment it sends it), else kustomize's group. */
static void signal_all(pid_t pid, bool shared_group, int sig)
{
	if (!shared_group) {
		killpg(pid, sig);
		return;
	}
	if (sig == SIGKILL) {
		/* Cannot SIGKILL our own group without dying: kustomize alone, the shims run
		 * their own deadline (KRMPOD_DEADLINE_MS). */
		kill(pid, SIGKILL);
		return;
	}
	struct sigaction ign = {.sa_handler = SIG_IGN}, old;
	sigemptyset(&ign.sa_mask);
	sigaction(sig, &ign, &old);
	kill(0, sig);
	sigaction(sig, &old, NULL);
}

/* Reaps every exited child but those of `keep` (the prestart janitor, the stderr relay),
 * kustomize's orphans included
 * (we are their subreaper), one pid at a time from /proc: never waitpid(-1), which could
 * reap the janitor, free its pid for reuse, and make a dead janitor look alive to the shims
 * that check it (proc_running(): a zombie is dead, a pid in use by another is not).
 * Records kustomize's status in *status. Returns true when no child but keep's is left. */
static bool reap(pid_t pid, const pid_t *keep, int *status, bool *pid_done)
{
	int st;
	if (!*pid_done && waitpid(pid, &st, WNOHANG) == pid) {
		*status = st;
		*pid_done = true;
	}
	/* the main thread's list, where a subreaper's adopted orphans appear too */
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
	FILE *f = fopen(path, "re");
	if (f == NULL)
		return *pid_done; /* orphans unseen: done once kustomize is */
	long child;
	bool left = false;
	while (fscanf(f, "%ld", &child) == 1) {
		pid_t c = (pid_t)child;
		if (c == keep[0] || c == keep[1] || c <= 0)
			continue;
		if (waitpid(c, &st, WNOHANG) == c) {
			if (c == pid) {
				*status = st;
				*pid_done = true;
			}
			continue;
		}
		left = true;
	}
	fclose(f);
	return !left && *pid_done;
}

static void drain(int fd)
{
	char chunk[8192];
	while (read(fd, chunk, sizeof(chunk)) > 0)
		;
}

/* The stop sequence; returns when every descendant is gone or was SIGKILLed. */
static void stop_all(pid_t pid, const pid_t *keep, bool shared_group, int fd, int *status,
                     bool *pid_done)
{
	signal_all(pid, shared_group, SIGTERM);
	int64_t until = now_ms() + KUSTOMIZE_STOP_GRACE_MS;
	while (now_ms() < until) {
		drain(fd);
		if (reap(pid, keep, status, pid_done))
			return;
		usleep(20 * 1000);
	}
	log_warn("kustomize and its functions did not stop within %d ms of SIGTERM: SIGKILL",
	         KUSTOMIZE_STOP_GRACE_MS);
	signal_all(pid, shared_group, SIGKILL);
	until = now_ms() + 1000;
	while (now_ms() < until && !reap(pid, keep, status, pid_done))
		usleep(20 * 1000);
}

/* kustomize, running: its pid, the read end of its stdout, and what is known of its end. */
struct child {
	pid_t pid;
	int fd;
	bool shared_group; /* it runs in our process group (see kustomize_run.h) */
	int status;        /* its wait status, once pid_done */
	bool pid_done, eof;
	int poll_errno; /* why poll failed (STOP_POLL) */
};

/* Why kustomize was stopped before it ended by itself. */
enum stop { STOP_NONE = 0, STOP_DEADLINE, STOP_SIGNAL, STOP_OUTPUT_LIMIT, STOP_POLL };

/* Starts o->argv with its stdout on a pipe: in our process group when we lead it, else in
 * a group of its own. */
static int spawn(const struct kustomize_opts *o, struct child *c, struct err **err)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return err_set_sys(err, ERR_IO, errno, "pipe for kustomize's output");
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	if (o->err_fd > 0)
		posix_spawn_file_actions_adddup2(&fa, o->err_fd, 2);
	if (o->dir)
		posix_spawn_file_actions_addchdir_np(&fa, o->dir);
	posix_spawnattr_t attr;
	posix_spawnattr_init(&attr);
	sigset_t def;
	sigemptyset(&def);
	sigaddset(&def, SIGPIPE); /* we ignore it; kustomize must not inherit that */
	short flags = POSIX_SPAWN_SETSIGDEF;
	posix_spawnattr_setsigdefault(&attr, &def);
	if (!c->shared_group) {
		flags |= POSIX_SPAWN_SETPGROUP;
		posix_spawnattr_setpgroup(&attr, 0);
	}
	posix_spawnattr_setflags(&attr, flags);
	int rc = posix_spawnp(&c->pid, o->argv[0], &fa, &attr, o->argv, o->envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(pfd[1]);
	if (rc != 0) {
		close(pfd[0]);
		return err_set(err, ERR_CONFIG,
		               "cannot run %s: %s: set KRMPOD_KUSTOMIZE to the kustomize binary (a "
		               "path, or a name on PATH) or to \"kubectl kustomize\"",
		               o->argv[0], strerror(rc));
	}
	log_debug("kustomize: pid %d%s", (int)c->pid,
	          c->shared_group ? "" : " (own process group)");
	c->fd = pfd[0];
	fcntl(c->fd, F_SETFL, O_NONBLOCK);
	return 0;
}

/* How close to the deadline a failure counts as the deadline's (the shims compute theirs
 * from the same epoch time, a few ms apart). */
#define DEADLINE_SLACK_MS 250

/* Collects kustomize's output until it ended and its stdout closed, or until it must be
 * stopped (the reason is returned; an output over the limit leaves its error in *limit_err). */
static enum stop pump(const struct kustomize_opts *o, struct child *c, struct buf *out,
                      struct err **limit_err)
{
	while (!(c->eof && c->pid_done)) {
		if (*o->cancel)
			return STOP_SIGNAL;
		if (now_ms() >= o->deadline_ms)
			return STOP_DEADLINE;
		if (c->eof) {
			usleep(10 * 1000);
		} else {
			struct pollfd p = {.fd = c->fd, .events = POLLIN};
			if (poll(&p, 1, POLL_MS) < 0 && errno != EINTR) {
				c->poll_errno = errno;
				return STOP_POLL;
			}
			char chunk[65536];
			ssize_t n;
			while ((n = read(c->fd, chunk, sizeof(chunk))) > 0)
				if (buf_append(out, chunk, (size_t)n, "kustomize's output", NULL) <
				    0) {
					err_set(limit_err, ERR_IO,
					        "the manifests passed %s (%zu bytes)%s",
					        o->max_output_name ? o->max_output_name
					                           : "krmpod's limit",
					        out->limit,
					        o->max_output_name
					                ? ": Argo CD's repo-server takes at most "
					                  "ARGOCD_GRPC_MAX_SIZE_MB (100 MiB by "
					                  "default) "
					                  "from a plugin; split the Application, "
					                  "or raise "
					                  "both"
					                : "");
					return STOP_OUTPUT_LIMIT;
				}
			if (n == 0)
				c->eof = true;
		}
		reap(c->pid, o->keep, &c->status, &c->pid_done);
	}
	return STOP_NONE;
}

/* The error for a kustomize that was stopped. */
static int stopped(const struct kustomize_opts *o, const struct child *c, enum stop why,
                   struct err *limit_err, struct err **err)
{
	switch (why) {
	case STOP_OUTPUT_LIMIT:
		*err = limit_err;
		return err_wrap(err, "kustomize was stopped");
	case STOP_SIGNAL:
		err_set(err, ERR_SIGNAL,
		        "stopped by signal %d: kustomize and its functions were stopped and their "
		        "pods deleted",
		        (int)*o->cancel);
		(*err)->signo = (int)*o->cancel;
		return -1;
	case STOP_POLL:
		return err_set(err, ERR_IO, "poll on kustomize's output: %s",
		               strerror(c->poll_errno));
	case STOP_DEADLINE:
	case STOP_NONE:
		break;
	}
	return err_set(err, ERR_TIMEOUT,
	               "%s ran out: kustomize and its functions were stopped and their pods "
	               "deleted; raise %s if the functions need longer (keep it below Argo "
	               "CD's own timeout)",
	               o->deadline_name, o->deadline_name);
}

/* The error for a kustomize that ended by itself, if it failed. */
static int exited(const struct kustomize_opts *o, int status, struct err **err)
{
	if (WIFSIGNALED(status))
		return err_set(err, ERR_IO, "%s was killed by signal %d", o->argv[0],
		               WTERMSIG(status));
	if (WEXITSTATUS(status) != 0)
		return err_set(err, ERR_IO,
		               "%s failed with exit status %d (its messages are above); no "
		               "manifests were printed",
		               o->argv[0], WEXITSTATUS(status));
	return 0;
}

int kustomize_run(const struct kustomize_opts *o, struct buf *out, struct err **err)
{
	buf_reset(out);
	out->limit = o->max_output && o->max_output < LIMIT_GENERATE_OUTPUT ? o->max_output
	                                                                    : LIMIT_GENERATE_OUTPUT;
	struct child c = {.shared_group = getpgrp() == getpid(), .fd = -1};
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		log_debug("cannot become a child subreaper: %s", strerror(errno));
	if (spawn(o, &c, err) < 0)
		return -1;
	struct err *limit_err = NULL;
	enum stop why = pump(o, &c, out, &limit_err);
	if (why != STOP_NONE)
		stop_all(c.pid, o->keep, c.shared_group, c.fd, &c.status, &c.pid_done);
	else
		reap(c.pid, o->keep, &c.status, &c.pid_done);
	close(c.fd);
	/* The shims' KRMPOD_TIMEOUT ends with generate's deadline (KRMPOD_DEADLINE_MS): a
	 * kustomize that failed at that moment failed because of it, whoever noticed first. */
	if (why == STOP_NONE && c.status != 0 && now_ms() + DEADLINE_SLACK_MS >= o->deadline_ms)
		why = STOP_DEADLINE;
	int rc = why != STOP_NONE ? stopped(o, &c, why, limit_err, err) : exited(o, c.status, err);
	if (rc < 0)
		buf_reset(out);
	return rc;
}

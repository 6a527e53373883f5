/* Unit tests: a process's liveness from /proc (proc.h), and kustomize_run never reaping the
 * child it must keep (the prestart janitor), so the janitor's pid is never reused while
 * shims test it. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/proc.h"
#include "check.h"
#include "cmp/kustomize_run.h"

/* Whether pid is a zombie, by its /proc stat line. */
static int is_zombie(pid_t pid)
{
	char path[64], st[512] = "";
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return 0;
	if (fgets(st, sizeof(st), f) == NULL)
		st[0] = '\0';
	fclose(f);
	const char *p = strrchr(st, ')');
	return p && p[1] == ' ' && p[2] == 'Z';
}

static pid_t exited_child(void)
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	for (int i = 0; i < 500 && !is_zombie(pid); i++)
		usleep(2000);
	return pid;
}

TEST(a_zombie_is_not_running)
{
	CHECK(proc_running(getpid()));
	pid_t pid = exited_child();
	CHECK(is_zombie(pid));
	CHECK_INT(kill(pid, 0), 0); /* what the old check took for alive */
	CHECK(!proc_running(pid));
	CHECK_INT(waitpid(pid, NULL, 0), pid);
	CHECK(!proc_running(pid)); /* reaped: gone */
	CHECK(!proc_running(0));
	CHECK(!proc_running(-1));
}

/* The janitor dies early, while kustomize still runs: kustomize_run reaps kustomize and its
 * orphans, never the janitor, which is left for its owner (prestart_end) to wait for. */
TEST(kustomize_run_never_reaps_the_kept_child)
{
	pid_t keep = exited_child();
	char *argv[] = {"/bin/sh", "-c", "sleep 0.2; echo done", NULL};
	char *envp[] = {"PATH=/usr/bin:/bin", NULL};
	atomic_int cancel = 0;
	struct kustomize_opts o = {.argv = argv,
	                           .envp = envp,
	                           .deadline_ms = now_ms() + 10000,
	                           .deadline_name = "TEST_TIMEOUT",
	                           .cancel = &cancel,
	                           .keep = {keep}};
	struct buf out;
	buf_init(&out, 0);
	struct err *e = NULL;
	CHECK_INT(kustomize_run(&o, &out, &e), 0);
	CHECK(out.len == 5 && memcmp(out.data, "done\n", 5) == 0);
	/* still ours to reap: its pid was not freed for reuse */
	CHECK(is_zombie(keep));
	CHECK_INT(waitpid(keep, NULL, WNOHANG), keep);
	buf_free(&out);
	err_free(e);
}

int main(void)
{
	RUN(a_zombie_is_not_running);
	RUN(kustomize_run_never_reaps_the_kept_child);
	return check_summary();
}

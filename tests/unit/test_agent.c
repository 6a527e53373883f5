/* Unit tests: krmpod's side of an exec-mode pod (agent.h): the call header, the trailer,
 * and whole calls of /bin/sh in a scratch work directory. */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/fdio.h"
#include "base/size_limits.h"
#include "check.h"

static int parse(const char *text, struct agent_call_header *h, char *why, size_t size)
{
	struct err *e = NULL;
	int rc = agent_call_header_parse(text, strlen(text), h, &e);
	snprintf(why, size, "%.400s", e ? e->msg : "");
	err_free(e);
	return rc;
}

TEST(header_round_trip)
{
	char *argv[] = {"/fn", "a b", "line\nbreak", "\"quoted\"", NULL};
	char *env[] = {"K=V", "EMPTY=", "MULTI=x=y\nz", NULL};
	struct buf b;
	buf_init(&b, 0);
	agent_call_header_write(argv, env, false, &b);
	CHECK(b.len > 0 && b.data[b.len - 1] == '\n');
	CHECK(memchr(b.data, '\n', b.len) == b.data + b.len - 1); /* one line */
	struct agent_call_header h;
	struct err *e = NULL;
	CHECK_INT(agent_call_header_parse(b.data, b.len - 1, &h, &e), 0);
	for (size_t i = 0; argv[i]; i++)
		CHECK_STR(h.argv[i], argv[i]);
	CHECK(h.argv[4] == NULL);
	for (size_t i = 0; env[i]; i++)
		CHECK_STR(h.env[i], env[i]);
	CHECK(h.env[3] == NULL);
	agent_call_header_clear(&h);
	buf_free(&b);
}

TEST(header_errors)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
	        {"", "call header"},
	        {"[1]", "not a JSON object"},
	        {"{\"argv\":[]}", "\"argv\" must be a non-empty array"},
	        {"{\"env\":[\"A=1\"]}", "\"argv\" must be a non-empty array"},
	        {"{\"argv\":[\"\"]}", "argv[0] must be a string (the first not empty)"},
	        {"{\"argv\":[\"x\", 3]}", "argv[1] must be"},
	        {"{\"argv\":[\"x\"],\"env\":[\"NOEQUALS\"]}", "env[0] must be a string NAME=VALUE"},
	        {"{\"argv\":[\"x\"],\"env\":[\"=v\"]}", "env[0] must be a string NAME=VALUE"},
	        {"{\"argv\":[\"x\"],\"env\":\"A=1\"}", "\"env\" must be an array"},
	        {"{\"argv\":[\"x\"],\"cwd\":\"/\"}", "unknown field \"cwd\""},
	        {"{\"argv_pid1\":false}", "\"argv_pid1\" must be true when given"},
	        {"{\"argv_pid1\":1}", "\"argv_pid1\" must be true when given"},
	        {"{\"argv_pid1\":true,\"argv\":[\"x\"]}", "exclude each other"},
	        {"{\"argv_pid1\":true,\"pooled\":true}", "is never pooled"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct agent_call_header h;
		char why[512];
		CHECK_INT(parse(bad[i].text, &h, why, sizeof(why)), -1);
		CHECK_CONTAINS(why, bad[i].why);
	}
}

TEST(header_argv_pid1)
{
	char *env[] = {"K=V", NULL};
	struct buf b;
	buf_init(&b, 0);
	agent_call_header_write_pid1(env, &b);
	struct agent_call_header h;
	struct err *e = NULL;
	CHECK_INT(agent_call_header_parse(b.data, b.len - 1, &h, &e), 0);
	CHECK(h.argv_pid1 && h.argv != NULL && h.argv[0] == NULL);
	CHECK_STR(h.env[0], "K=V");
	agent_call_header_clear(&h);
	buf_free(&b);
}

/* Writes n bytes to DIR/NAME, whole (a reader never sees half of it). */
static int put(const char *dir, const char *name, const char *data, size_t n)
{
	char path[512], tmp[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.tmp-XXXXXX", dir);
	return fd_write_atomic(path, tmp, data, n, 0644, name, NULL);
}

/* A directory standing in for /proc/1: cmdline, environ (n bytes each; NULL: none) and a
 * cwd link. */
static void fake_proc(const char *dir, const char *cmd, size_t n_cmd, const char *env, size_t n_env,
                      const char *cwd)
{
	char path[512];
	CHECK_INT(put(dir, "cmdline", cmd, n_cmd), 0);
	snprintf(path, sizeof(path), "%s/environ", dir);
	if (env)
		CHECK_INT(put(dir, "environ", env, n_env), 0);
	else
		unlink(path);
	snprintf(path, sizeof(path), "%s/cwd", dir);
	unlink(path);
	CHECK_INT(symlink(cwd, path), 0);
}

static int read_pid1(const char *dir, int wait_ms, struct agent_pid1 *p, char *why, size_t size)
{
	struct err *e = NULL;
	int rc = agent_pid1_read(dir, wait_ms, p, &e);
	snprintf(why, size, "%.600s", e ? e->msg : "");
	err_free(e);
	return rc;
}

TEST(pid1_command_line_environment_and_directory)
{
	char dir[] = "/tmp/krmpod-pid1-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char why[640];
	struct agent_pid1 p;
	/* argv as the kernel writes it, an empty argument kept; the environment as is */
	static const char cmd[] = "/usr/bin/python3\0/fn\0\0--flag=a b\0";
	static const char env[] = "PATH=/usr/bin\0SAY=hi there\0";
	fake_proc(dir, cmd, sizeof(cmd) - 1, env, sizeof(env) - 1, "/work dir");
	CHECK_INT(read_pid1(dir, 0, &p, why, sizeof(why)), 0);
	CHECK_STR(p.argv[0], "/usr/bin/python3");
	CHECK_STR(p.argv[1], "/fn");
	CHECK_STR(p.argv[2], "");
	CHECK_STR(p.argv[3], "--flag=a b");
	CHECK(p.argv[4] == NULL);
	CHECK_STR(p.env[0], "PATH=/usr/bin");
	CHECK_STR(p.env[1], "SAY=hi there");
	CHECK(p.env[2] == NULL);
	CHECK_STR(p.cwd, "/work dir");
	agent_pid1_clear(&p);
	/* a process that rewrote its argv without the last NUL; an empty environment */
	fake_proc(dir, "fn\0x", 4, "", 0, "/");
	CHECK_INT(read_pid1(dir, 0, &p, why, sizeof(why)), 0);
	CHECK_STR(p.argv[0], "fn");
	CHECK_STR(p.argv[1], "x");
	CHECK(p.argv[2] == NULL && p.env[0] == NULL);
	agent_pid1_clear(&p);
	/* ended (a zombie's command line is empty) */
	fake_proc(dir, "", 0, "", 0, "/");
	CHECK_INT(read_pid1(dir, 0, &p, why, sizeof(why)), -1);
	CHECK_CONTAINS(why, "has no command line");
	CHECK_CONTAINS(why, "must wait for its stdin");
	/* still runc's init: read again until the wait is over, then refused */
	fake_proc(dir, "runc\0init\0", 10, "", 0, "/");
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK_INT(read_pid1(dir, 100, &p, why, sizeof(why)), -1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >= 100);
	CHECK_CONTAINS(why, "still the runtime's init after 100 ms");
	/* ... which it stops being: an exec during the wait */
	pid_t pid = fork();
	if (pid == 0) {
		usleep(50000);
		_exit(put(dir, "cmdline", "/fn\0", 4) == 0 ? 0 : 1);
	}
	CHECK_INT(read_pid1(dir, 2000, &p, why, sizeof(why)), 0);
	CHECK_STR(p.argv[0], "/fn");
	agent_pid1_clear(&p);
	int st = 0;
	waitpid(pid, &st, 0);
	/* an environment it cannot read (an undumpable process): named */
	fake_proc(dir, "/fn\0", 4, NULL, 0, "/");
	CHECK_INT(read_pid1(dir, 0, &p, why, sizeof(why)), -1);
	CHECK_CONTAINS(why, "the function's process (PID 1 of its container)");
	CHECK_CONTAINS(why, "environ");
	/* past the limit */
	size_t big = LIMIT_PID1_CMDLINE + 2;
	char *huge = calloc(1, big);
	memset(huge, 'a', big - 1);
	fake_proc(dir, huge, big, "", 0, "/");
	free(huge);
	CHECK_INT(read_pid1(dir, 0, &p, why, sizeof(why)), -1);
	CHECK_CONTAINS(why, "cmdline");
	char path[512];
	const char *names[] = {"cmdline", "environ", "cwd"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

TEST(trailer)
{
	size_t tlen;
	unsigned long long o, e;
	int code;
	const char ok[] = "func said this\n" AGENT_TRAILER_PREFIX "out=12 err=15 exit=3\n";
	CHECK_INT(agent_trailer_parse(ok, strlen(ok), &tlen, &o, &e, &code), 0);
	CHECK_INT(tlen, strlen(ok) - strlen("func said this\n"));
	CHECK_INT(o, 12);
	CHECK_INT(e, 15);
	CHECK_INT(code, 3);
	/* glued to output that did not end in a newline */
	const char glued[] = "no newline" AGENT_TRAILER_PREFIX "out=0 err=10 exit=0\n";
	CHECK_INT(agent_trailer_parse(glued, strlen(glued), &tlen, &o, &e, &code), 0);
	CHECK_INT(tlen, strlen(glued) - strlen("no newline"));
	static const char *const bad[] = {
	        "",
	        "just stderr\n",
	        AGENT_TRAILER_PREFIX "out=1 err=2 exit=0",         /* cut: no newline */
	        AGENT_TRAILER_PREFIX "out=1 err=2\n",              /* a field missing */
	        AGENT_TRAILER_PREFIX "out=1 err=2 exit=0 extra\n", /* more after it */
	        AGENT_TRAILER_PREFIX "out=1 err=2 exit=0\nmore\n", /* output after it */
	        "krmpod-call-end out=1 err=2 exit=0\n",            /* no separator byte */
	        AGENT_TRAILER_PREFIX "out=x err=2 exit=0\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_INT(agent_trailer_parse(bad[i], strlen(bad[i]), &tlen, &o, &e, &code), -1);
}

/* --- whole calls ------------------------------------------------------------------------- */

struct call_result {
	int rc, exit_code;
	char out[4096], err[4096];
	char msg[512];
};

/* An unlinked temporary file holding `a` then `b`, at offset 0. */
static int temp_file(const char *a, const char *b)
{
	char path[] = "/tmp/krmpod-agent-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	CHECK(write(fd, a, strlen(a)) == (ssize_t)strlen(a));
	CHECK(write(fd, b, strlen(b)) == (ssize_t)strlen(b));
	lseek(fd, 0, SEEK_SET);
	return fd;
}

/* Runs a call in workdir with stdin `header` + `input`. */
static void call(const char *workdir, const char *header, const char *input, struct call_result *r)
{
	int in = temp_file(header, input), out = temp_file("", ""), errfd = temp_file("", "");
	struct err *e = NULL;
	r->rc = agent_call(workdir, in, out, errfd, &r->exit_code, &e);
	snprintf(r->msg, sizeof(r->msg), "%.400s", e ? e->msg : "");
	err_free(e);
	memset(r->out, 0, sizeof(r->out));
	memset(r->err, 0, sizeof(r->err));
	CHECK(pread(out, r->out, sizeof(r->out) - 1, 0) >= 0);
	CHECK(pread(errfd, r->err, sizeof(r->err) - 1, 0) >= 0);
	close(in);
	close(out);
	close(errfd);
}

/* The entries of dir, but the lock, joined by ' '. */
static void entries(const char *dir, char *out, size_t size)
{
	out[0] = '\0';
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL)
		if (e->d_name[0] != '.' ||
		    (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
		     strcmp(e->d_name, AGENT_LOCK_NAME) != 0))
			snprintf(out + strlen(out), size - strlen(out), "%s ", e->d_name);
	if (d)
		closedir(d);
}

TEST(call_runs_the_function_and_cleans_up)
{
	char work[] = "/tmp/krmpod-agent-work-XXXXXX";
	CHECK(mkdtemp(work) != NULL);
	/* what an earlier, killed call left goes before this one runs */
	char stale[512];
	snprintf(stale, sizeof(stale), "%s/call-stale", work);
	CHECK(mkdir(stale, 0500) == 0);
	const char *script =
	        "{\"argv\":[\"/bin/sh\",\"-c\",\"test -d $HOME && test \\\"$HOME\\\" = "
	        "\\\"$TMPDIR\\\" && case $HOME in */call-*) ;; *) exit 9;; esac; ls \\\"$(dirname "
	        "$HOME)\\\" | grep -c stale; echo \\\"$GREETING\\\"; cat; echo oops >&2; "
	        "mkdir -p $HOME/d/e && touch $HOME/d/e/f $HOME/../leaked && chmod 500 $HOME/d; "
	        "exit 3\"],\"env\":[\"GREETING=hi there\"]}\n";
	struct call_result r;
	call(work, script, "the input\n", &r);
	CHECK_INT(r.rc, 0);
	CHECK_STR(r.msg, "");
	CHECK_INT(r.exit_code, 3);
	CHECK_STR(r.out, "0\nhi there\nthe input\n");
	char want_err[128];
	snprintf(want_err, sizeof(want_err), "oops\n" AGENT_TRAILER_PREFIX "out=%zu err=5 exit=3\n",
	         strlen("0\nhi there\nthe input\n"));
	CHECK_STR(r.err, want_err);
	char left[512];
	entries(work, left, sizeof(left));
	CHECK_STR(left, ""); /* HOME, the read-only dir in it and what was written beside it */
	fd_remove_tree(work, "test", NULL);
}

TEST(call_exit_codes)
{
	char work[] = "/tmp/krmpod-agent-work-XXXXXX";
	CHECK(mkdtemp(work) != NULL);
	struct call_result r;
	call(work, "{\"argv\":[\"/bin/sh\",\"-c\",\"kill -9 $$\"]}\n", "", &r);
	CHECK_INT(r.rc, 0);
	CHECK_INT(r.exit_code, 137);
	call(work, "{\"argv\":[\"/no/such/fn\"]}\n", "", &r);
	CHECK_INT(r.rc, 0);
	CHECK_INT(r.exit_code, 127);
	CHECK_CONTAINS(r.err, "krmpod call: cannot run /no/such/fn: No such file or directory");
	CHECK_CONTAINS(r.err, AGENT_TRAILER_PREFIX "out=0 err=");
	/* a bad header runs nothing and writes no trailer */
	call(work, "{\"argv\":[]}\n", "", &r);
	CHECK_INT(r.rc, -1);
	CHECK_CONTAINS(r.msg, "\"argv\" must be a non-empty array");
	CHECK(strstr(r.err, "krmpod-call-end") == NULL);
	/* no newline: the header never ended */
	call(work, "{\"argv\":[\"true\"]}", "", &r);
	CHECK_INT(r.rc, -1);
	CHECK_CONTAINS(r.msg, "stdin ended before the call header's end");
	fd_remove_tree(work, "test", NULL);
}

TEST(call_refuses_a_second_call_at_once)
{
	char work[] = "/tmp/krmpod-agent-work-XXXXXX";
	CHECK(mkdtemp(work) != NULL);
	char lock[512];
	snprintf(lock, sizeof(lock), "%s/%s", work, AGENT_LOCK_NAME);
	int fd = open(lock, O_RDWR | O_CREAT, 0600);
	CHECK(fd >= 0 && flock(fd, LOCK_EX) == 0); /* another call holds the pod */
	struct call_result r;
	call(work, "{\"argv\":[\"/bin/sh\",\"-c\",\"echo ran\"]}\n", "", &r);
	CHECK_INT(r.rc, -1);
	CHECK_CONTAINS(r.msg, "another call runs in this pod");
	CHECK_STR(r.out, "");
	close(fd);
	call(work, "{\"argv\":[\"/bin/sh\",\"-c\",\"echo ran\"]}\n", "", &r);
	CHECK_INT(r.rc, 0);
	CHECK_STR(r.out, "ran\n");
	fd_remove_tree(work, "test", NULL);
}

TEST(call_does_not_wait_for_a_background_process_holding_stdout)
{
	char work[] = "/tmp/krmpod-agent-work-XXXXXX";
	CHECK(mkdtemp(work) != NULL);
	struct call_result r;
	call(work, "{\"argv\":[\"/bin/sh\",\"-c\",\"(sleep 30 &) ; echo done\"]}\n", "", &r);
	CHECK_INT(r.rc, 0);
	CHECK_INT(r.exit_code, 0);
	CHECK_STR(r.out, "done\n");
	fd_remove_tree(work, "test", NULL);
}

/* The reader of a call's stdout (the container runtime) takes its time: the call returns
 * only once the pipe is empty, so that nothing is left in it when the process exits. */
TEST(call_waits_until_its_output_pipe_is_read)
{
	char work[] = "/tmp/krmpod-agent-work-XXXXXX";
	CHECK(mkdtemp(work) != NULL);
	int p[2];
	CHECK(pipe(p) == 0);
	pid_t reader = fork();
	CHECK(reader >= 0);
	if (reader == 0) { /* starts reading 300 ms late, then reads everything */
		close(p[1]);
		usleep(300 * 1000);
		char chunk[4096];
		while (read(p[0], chunk, sizeof(chunk)) > 0)
			usleep(1000);
		_exit(0);
	}
	close(p[0]);
	/* 40000 bytes fit in the pipe (64 KiB): the function ends at once, its output unread */
	int in = temp_file("{\"argv\":[\"/bin/sh\",\"-c\",\"head -c 40000 /dev/zero\"]}\n", "");
	int errfd = temp_file("", "");
	struct err *e = NULL;
	int exit_code = -1;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK_INT(agent_call(work, in, p[1], errfd, &exit_code, &e), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	err_free(e);
	CHECK_INT(exit_code, 0);
	int queued = -1;
	CHECK(ioctl(p[1], FIONREAD, &queued) == 0);
	CHECK_INT(queued, 0); /* nothing left in the pipe when the call returned */
	long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	CHECK(ms >= 250 && ms < AGENT_DRAIN_MS);
	close(p[1]);
	int status = 0;
	CHECK(waitpid(reader, &status, 0) == reader && WIFEXITED(status));
	close(in);
	close(errfd);
	fd_remove_tree(work, "test", NULL);
}

int main(void)
{
	RUN(header_round_trip);
	RUN(header_errors);
	RUN(header_argv_pid1);
	RUN(pid1_command_line_environment_and_directory);
	RUN(trailer);
	RUN(call_runs_the_function_and_cleans_up);
	RUN(call_exit_codes);
	RUN(call_refuses_a_second_call_at_once);
	RUN(call_does_not_wait_for_a_background_process_holding_stdout);
	RUN(call_waits_until_its_output_pipe_is_read);
	return check_summary();
}

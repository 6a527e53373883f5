/* measure.c — runs a command and prints "USER_US SYS_US MAXRSS_KIB" of it and every process
 * it waited for, from wait4(2). A small parent: ru_maxrss survives exec, so a command forked
 * from the (large) Python benchmark would report Python's RSS. Used by bench/bench.py. */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: measure OUTFILE COMMAND [ARGS...]\n");
		return 2;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("measure: fork");
		return 2;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		perror("measure: exec");
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0) {
		perror("measure: wait4");
		return 2;
	}
	FILE *f = fopen(argv[1], "w");
	if (f == NULL) {
		perror("measure: open");
		return 2;
	}
	fprintf(f, "%ld %ld %ld\n", (long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec,
	        (long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec, ru.ru_maxrss);
	fclose(f);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* proc.c — see proc.h. */
#include "base/proc.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

bool proc_running(pid_t pid)
{
	if (pid <= 0)
		return false;
	char path[64], stat[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, stat, sizeof(stat) - 1);
	close(fd);
	if (n <= 0)
		return false;
	stat[n] = '\0';
	/* "pid (comm) S ...": the state follows the last ')' (comm may hold any byte) */
	const char *paren = strrchr(stat, ')');
	if (paren == NULL || paren[1] != ' ')
		return false;
	char state = paren[2];
	return state != 'Z' && state != 'X' && state != 'x';
}

/* log.c — see log.h. Thread-safe: each line is formatted first and written with one
 * write(2), so lines from the watch thread and the main thread never interleave. */
#include "base/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static enum log_level current_level = LOG_INFO;
static const char *current_role = "krmpod";
/* Set by the main thread, read by every thread that logs: under pod_lock. */
static char current_pod[128];
static pthread_mutex_t pod_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_set_role(const char *role)
{
	current_role = role;
}

void log_set_pod(const char *pod)
{
	pthread_mutex_lock(&pod_lock);
	if (pod == NULL)
		current_pod[0] = '\0';
	else
		snprintf(current_pod, sizeof(current_pod), "%s", pod);
	pthread_mutex_unlock(&pod_lock);
}

int log_parse_level(const char *name, const char *source, enum log_level *out, struct err **err)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(name, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return err_set(err, ERR_CONFIG, "%s=%s is not a log level: use error, warn, info or debug",
	               source, name);
}

void log_set_level(enum log_level level)
{
	current_level = level;
}

enum log_level log_get_level(void)
{
	return current_level;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	if (level > current_level)
		return;
	char line[8192], pod[sizeof(current_pod)];
	pthread_mutex_lock(&pod_lock);
	memcpy(pod, current_pod, sizeof(pod));
	pthread_mutex_unlock(&pod_lock);
	int n;
	if (pod[0])
		n = snprintf(line, sizeof(line), "krmpod[%s] pod=%s: %s", current_role, pod,
		             level <= LOG_WARN ? (level == LOG_ERROR ? "error: " : "warning: ")
		                               : "");
	else
		n = snprintf(line, sizeof(line), "krmpod[%s]: %s", current_role,
		             level <= LOG_WARN ? (level == LOG_ERROR ? "error: " : "warning: ")
		                               : "");
	if (n < 0)
		return;
	size_t off = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + off, sizeof(line) - off, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	off += (size_t)m;
	if (off > sizeof(line) - 2)
		off = sizeof(line) - 2;
	line[off++] = '\n';
	const char *p = line;
	while (off > 0) {
		ssize_t w = write(2, p, off);
		if (w <= 0)
			return;
		p += w;
		off -= (size_t)w;
	}
}

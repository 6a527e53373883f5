/* log.h — the one logging module. Everything krmpod says goes to stderr through here;
 * stdout carries only data (the function's output, rendered manifests).
 *
 * Lines look like `krmpod[docker] pod=fn-abcde: message`. main.c sets the level: from
 * KRMPOD_LOG_LEVEL (error, warn, info, debug; settings_log_level), else info (the docker
 * shim's default is warn).
 */
#ifndef KRMPOD_LOG_H
#define KRMPOD_LOG_H

#include "base/err.h"

enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

/* Sets the role shown in the prefix (e.g. "docker", "run", "generate"). `role` must outlive
 * the logger (a string literal). */
void log_set_role(const char *role);

/* Sets (or with NULL clears) the pod name shown in the prefix. The string is copied. */
void log_set_pod(const char *pod);

/* Parses a level name; returns -1 with ERR_CONFIG naming `source` on an unknown name. */
int log_parse_level(const char *name, const char *source, enum log_level *out, struct err **err);

void log_set_level(enum log_level level);
enum log_level log_get_level(void);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)                                   \
	do {                                             \
		if (log_get_level() >= LOG_DEBUG)        \
			log_msg(LOG_DEBUG, __VA_ARGS__); \
	} while (0)

#endif

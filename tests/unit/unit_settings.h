/* unit_settings.h — the function settings unit tests start from: krmpod's defaults, with
 * string fields pointing at literals (never settings_clear() them). */
#ifndef KRMPOD_UNIT_SETTINGS_H
#define KRMPOD_UNIT_SETTINGS_H

#include "config/settings.h"

static inline struct settings unit_settings(int64_t timeout_ms)
{
	struct settings s = {0};
	s.timeout_ms = timeout_ms;
	s.start_timeout_ms = 120000;
	s.cpu_request = "100m";
	s.cpu_limit = "1";
	s.memory_request = "64Mi";
	s.memory_limit = "512Mi";
	return s;
}

#endif

/* glob.c — see glob.h. */
#include "base/glob.h"

#include <stddef.h>

bool glob_match(const char *pattern, const char *s)
{
	/* Greedy, with one way back: to just after the last '*', which then takes one
	 * character more of s. An earlier '*' never needs to take more, since the last one can
	 * take whatever it would have. */
	const char *star = NULL, *resume = NULL;
	while (*s) {
		if (*pattern == '*') {
			star = ++pattern;
			resume = s;
		} else if (*pattern && *pattern == *s) {
			pattern++;
			s++;
		} else if (star) {
			pattern = star;
			s = ++resume;
		} else {
			return false;
		}
	}
	while (*pattern == '*')
		pattern++;
	return *pattern == '\0';
}

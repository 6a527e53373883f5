/* glob.h — the one pattern matcher of image patterns (KRMPOD_IMAGE_ALLOWLIST, the warm
 * pool's KRMPOD_WARM_POOL_IMAGES, the signature policy's requirements). Pure. */
#ifndef KRMPOD_GLOB_H
#define KRMPOD_GLOB_H

#include <stdbool.h>

/* Whether the whole of s matches pattern: '*' matches any run of characters (none
 * included), every other character only itself. Time O(len(pattern) * len(s)) at worst,
 * whatever the pattern: a pattern with many '*' cannot make it backtrack without end. */
bool glob_match(const char *pattern, const char *s);

#endif

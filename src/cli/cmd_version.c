/* cmd_version.c — `krmpod version`: the release, the commit it was built from and the
 * versions of the statically linked libraries. The release's SBOM is checked against this
 * output (release/check_release.py), so its lines keep their shape:
 *
 *   krmpod VERSION
 *   commit COMMIT[-dirty (built from a tree with uncommitted changes)]
 *   libcurl X, libwebsockets X, mbedTLS X, libyaml X
 */
#include <curl/curl.h>
#include <libwebsockets.h>
#include <mbedtls/version.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "cli/cmd.h"

/* The Makefile passes both (KRMPOD_COMMIT: git rev-parse HEAD, "-dirty" appended when git
 * status shows changes); a build that does not says so. */
#ifndef KRMPOD_VERSION
#define KRMPOD_VERSION "0.0.0-dev"
#endif
#ifndef KRMPOD_COMMIT
#define KRMPOD_COMMIT "unknown"
#endif

int cmd_version(int argc, char **argv, int *exit_code, struct err **err)
{
	(void)argv;
	if (argc > 1)
		return err_set(err, ERR_USAGE, "krmpod version takes no arguments");
	static const char dirty[] = "-dirty";
	const char *commit = KRMPOD_COMMIT;
	size_t n = strlen(commit);
	int is_dirty = n >= sizeof dirty - 1 && strcmp(&commit[n - (sizeof dirty - 1)], dirty) == 0;
	printf("krmpod %s\n", KRMPOD_VERSION);
	printf("commit %s%s\n", KRMPOD_COMMIT,
	       is_dirty ? " (built from a tree with uncommitted changes)" : "");
	printf("libcurl %s, libwebsockets %s, mbedTLS %s, libyaml %s\n",
	       curl_version_info(CURLVERSION_NOW)->version, lws_get_library_version(),
	       MBEDTLS_VERSION_STRING, yaml_get_version_string());
	*exit_code = 0;
	return 0;
}

/* cmd_version.c — `krmpod version`. */
#include <curl/curl.h>
#include <libwebsockets.h>
#include <mbedtls/version.h>
#include <stdio.h>
#include <yaml.h>

#include "cli/cmd.h"

int cmd_version(int argc, char **argv, int *exit_code, struct err **err)
{
	(void)argv;
	if (argc > 1)
		return err_set(err, ERR_USAGE, "krmpod version takes no arguments");
	printf("krmpod %s\n", KRMPOD_VERSION);
	printf("libcurl %s, libwebsockets %s, mbedTLS %s, libyaml %s\n",
	       curl_version_info(CURLVERSION_NOW)->version, lws_get_library_version(),
	       MBEDTLS_VERSION_STRING, yaml_get_version_string());
	*exit_code = 0;
	return 0;
}

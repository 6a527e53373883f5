/* docker_args.h — parsing the `docker run` line that kustomize 5.x and kpt build, and the
 * same flags for `krmpod run`.
 *
 * Accepted (both `--flag value` and `--flag=value`; short flags also as `-eK=V`):
 *   --rm, -i/--interactive, -a/--attach STDIN|STDOUT|STDERR, --network none|host,
 *   -u/--user nobody|UID[:GID] (UID > 0), --security-opt no-new-privileges,
 *   -e/--env K=V or NAME (NAME takes its value from `environ`; an unset NAME is left out,
 *   as docker does), --pull always|missing|never.
 *   --mount type=bind|tmpfs,source=ABS,target=DST[,readonly] (kustomize's storage mounts;
 *   type=volume and anything else is ERR_USAGE naming the flag; targets must be absolute and
 *   distinct; at most LIMIT_MOUNTS). Only parsed here: the sources are checked when the
 *   function runs (mounts.h).
 *   Anything else: ERR_USAGE naming the flag.
 * The first non-flag argument is the image; the rest are the container's arguments.
 */
#ifndef KRMPOD_DOCKER_ARGS_H
#define KRMPOD_DOCKER_ARGS_H

#include "base/err.h"
#include "config/request.h"

/* Parses argv[0..argc) — the arguments after `run` — into *req (which must be zeroed).
 * `environ_` is the environment bare `-e NAME` reads from (NULL-terminated "K=V" strings).
 * On failure *req may be partly filled: the caller clears it either way. */
int docker_args_parse(int argc, char *const *argv, char *const *environ_, struct fn_request *req,
                      struct err **err);

/* The docker engine version krmpod claims, for clients that check it (kpt requires
 * >= 20.10.0, compared with golang.org/x/mod/semver). */
#define DOCKER_COMPAT_VERSION "24.0.0"
/* The most characters of krmpod's own version that go into the answer. */
#define DOCKER_VERSION_MAX 64

/* Returns (newly allocated) the semver-legal version `docker version` answers:
 * DOCKER_COMPAT_VERSION "-krmpod." followed by krmpod_version as semver pre-release
 * identifiers (split on '.'; characters other than [0-9A-Za-z-] become '-'; an empty
 * identifier becomes "0"; a numeric one with a leading zero gets a 'g' in front; at most
 * DOCKER_VERSION_MAX characters of krmpod_version are used). E.g. "39ed41f-dirty" gives
 * "24.0.0-krmpod.39ed41f-dirty". Cannot fail. */
char *docker_args_engine_version(const char *krmpod_version);

/* Parses a `docker version` line's arguments and writes the answer for krmpod_version to
 * *out (newly allocated, ending in a newline). Without --format: a docker-like summary.
 * `--format TEMPLATE` (also -f, --format=): text is copied and each {{ACTION}} (blanks
 * inside the braces allowed) is one of .Client.Version, .Server.Version (both the engine
 * version above) or `json .`. Unknown flags and actions: ERR_USAGE naming them. */
int docker_args_version(int argc, char *const *argv, const char *krmpod_version, char **out,
                        struct err **err);

#endif

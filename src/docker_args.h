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

#include "err.h"
#include "fn_request.h"

/* Parses argv[0..argc) — the arguments after `run` — into *req (which must be zeroed).
 * `environ_` is the environment bare `-e NAME` reads from (NULL-terminated "K=V" strings).
 * On failure *req may be partly filled: the caller clears it either way. */
int docker_args_parse(int argc, char *const *argv, char *const *environ_, struct fn_request *req,
                      struct err **err);

/* Parses a `docker version` line's arguments (e.g. `--format {{.Client.Version}}`) and writes
 * the answer for `version` to *out (newly allocated). Unknown flags: ERR_USAGE. */
int docker_args_version(int argc, char *const *argv, const char *version, char **out,
                        struct err **err);

#endif

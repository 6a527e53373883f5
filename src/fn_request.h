/* fn_request.h — one function invocation, as parsed from a `docker run` line (the shim) or
 * `krmpod run` (a human). It is the input of the pod spec builder and the lifecycle.
 * Everything in it is owned by the request; free with fn_request_clear(). */
#ifndef KRMPOD_FN_REQUEST_H
#define KRMPOD_FN_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

enum fn_network { FN_NETWORK_NONE = 0, FN_NETWORK_HOST };

/* imagePullPolicy; FN_PULL_DEFAULT leaves the cluster default (Always for :latest/no tag,
 * else IfNotPresent). */
enum fn_pull { FN_PULL_DEFAULT = 0, FN_PULL_ALWAYS, FN_PULL_MISSING, FN_PULL_NEVER };

struct fn_env {
	char *name;
	char *value;
};

struct fn_request {
	char *image;
	char **args; /* arguments after the image (the container's args), n_args of them */
	size_t n_args;
	struct fn_env *env; /* in the order given; only variables that have a value */
	size_t n_env;
	enum fn_network network;
	enum fn_pull pull;
	long run_as_user; /* from --user: 65534 for "nobody" or when absent */
	long run_as_group;
	bool want_stdin; /* -i / -a STDIN */
};

void fn_request_clear(struct fn_request *req);

#endif

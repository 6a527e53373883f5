/* request.h — one function invocation, as parsed from a `docker run` line (the shim) or
 * `krmpod run` (a human). It is the input of the pod spec builder and the lifecycle.
 * Everything in it is owned by the request; free with fn_request_clear(). */
#ifndef KRMPOD_REQUEST_H
#define KRMPOD_REQUEST_H

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

/* One --mount (docs/levels.md, "Level 2: mounts"). Named docker volumes are refused when
 * the flag is parsed: they cannot exist in a cluster. */
enum fn_mount_type {
	FN_MOUNT_BIND = 0, /* a file or directory of the kustomization, copied into the pod */
	FN_MOUNT_TMPFS,    /* an empty in-memory directory (emptyDir medium Memory) */
};

struct fn_mount {
	enum fn_mount_type type;
	char *source; /* bind: the absolute source path as given; NULL for tmpfs */
	char *target; /* absolute path in the function container */
	bool readonly;
	char *spec; /* the flag's value as given, to name the mount in messages */
};

struct fn_request {
	char *image;
	/* What the pod runs when a signature policy covers the image (trust.h): the image
	 * pinned to the digest whose signature was verified, "NAME[:TAG]@sha256:…"; NULL:
	 * image as written. */
	char *pinned_image;
	char **args; /* arguments after the image (the container's args), n_args of them */
	size_t n_args;
	struct fn_env *env; /* in the order given; only variables that have a value */
	size_t n_env;
	enum fn_network network;
	enum fn_pull pull;
	long run_as_user; /* from --user: 65534 for "nobody" or when absent */
	long run_as_group;
	bool want_stdin;         /* -i / -a STDIN */
	struct fn_mount *mounts; /* --mount flags, in the order given (index = volume number) */
	size_t n_mounts;
	/* Exec mode (KRMPOD_MODE=exec, entrypoint.h): what `krmpod call` runs in the pod, the
	 * image's entrypoint and its cmd (or args), NULL-terminated; NULL in attach mode. */
	char **exec_argv;
	/* Exec mode on the image's own entrypoint (entrypoint.h), for an image whose config
	 * cannot be read: exec_argv is empty (not NULL), the pod's function container runs the
	 * image's entrypoint with the request's args and env, held on its stdin, and the call
	 * runs PID 1's command line (agent.h, "argv_pid1"). Never pooled. */
	bool exec_pid1;
	/* The warm pool takes this function (pool.h): set with exec_argv when the pool is on
	 * and the image is one it may keep. */
	bool pooled;
	/* With pooled: an admin's catalog marks the image shareAcrossApplications, so the pod
	 * key leaves the Application out (settings.h, pool_tenant; docs/security.md). */
	bool pool_shared;
	/* The function is the network gate itself (`krmpod doctor --probe` runs `krmpod
	 * net-gate`): its container gets the gate's targets (pod_manifest.c) as a gate's would. */
	bool gate_probe;
};

void fn_request_clear(struct fn_request *req);

#endif

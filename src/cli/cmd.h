/* cmd.h — the front-ends. Each parses its own arguments and calls the core; it never prints
 * an error itself: it returns -1 with *err and main.c prints it and picks the exit code.
 * On success it sets *exit_code (the function's own exit status for the shim and run). */
#ifndef KRMPOD_CMD_H
#define KRMPOD_CMD_H

#include "base/err.h"

/* Exit codes (docs/exit-codes.md). */
#define EXIT_DOCKER_FAILED 125 /* docker's "the docker command itself failed" */
#define EXIT_USAGE         2
#define EXIT_FAILURE_      1

/* `docker run ...` / `docker version` when argv[0] is docker. argv[0] is "docker". */
int cmd_docker(int argc, char **argv, int *exit_code, struct err **err);
/* `krmpod run [flags] IMAGE [ARGS...]`. argv[0] is "run". */
int cmd_run(int argc, char **argv, int *exit_code, struct err **err);
/* Argo CD plugin hooks (cmd_cmp.c), run in the application's source directory:
 * `krmpod generate` prints the rendered manifests, only when everything succeeded;
 * `krmpod init` is a fast preflight; `krmpod discover` prints the containerized functions
 * and exits 0 only when there are some (exit 1: not ours). */
int cmd_generate(int argc, char **argv, int *exit_code, struct err **err);
int cmd_init(int argc, char **argv, int *exit_code, struct err **err);
int cmd_discover(int argc, char **argv, int *exit_code, struct err **err);
/* `krmpod doctor`: cluster-side preflight report on stdout; exit 1 when a check failed. */
int cmd_doctor(int argc, char **argv, int *exit_code, struct err **err);
/* `krmpod unpack DIR`: inside a function pod, receives its mounts (a tar on stdin) into
 * DIR. argv[0] is "unpack". */
int cmd_unpack(int argc, char **argv, int *exit_code, struct err **err);

/* Inside an exec-mode function pod (agent.h): `krmpod install-self DIR` (its init
 * container), `krmpod hold` (the function container's command) and `krmpod call WORKDIR`
 * (one call, through pods/exec: the function's exit status is the exit code). */
int cmd_install_self(int argc, char **argv, int *exit_code, struct err **err);
int cmd_net_gate(int argc, char **argv, int *exit_code, struct err **err);
int cmd_hold(int argc, char **argv, int *exit_code, struct err **err);
int cmd_call(int argc, char **argv, int *exit_code, struct err **err);
int cmd_serve(int argc, char **argv, int *exit_code, struct err **err);
/* Shared by call and serve (cmd_gate.c): the network gate the pod's environment asks for,
 * once per pod (its mark in workdir), the gate's variables then unset. */
int cmd_gate_from_env(const char *workdir, struct err **err);
/* `krmpod gc [--dry-run] [--older-than D]`: deletes function pods no shim will delete. */
int cmd_gc(int argc, char **argv, int *exit_code, struct err **err);
/* `krmpod catalog view|validate ...`: what catalogs say and whether they are trusted. */
int cmd_catalog(int argc, char **argv, int *exit_code, struct err **err);
/* `krmpod version`. */
int cmd_version(int argc, char **argv, int *exit_code, struct err **err);

#endif

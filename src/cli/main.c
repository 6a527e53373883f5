/* main.c — picks the role and maps errors to exit codes; nothing else.
 *
 * Invoked as `docker` (a symlink in a private bin directory first on kustomize's PATH) it
 * is the shim; otherwise argv[1] names the command. Only this file prints errors. */
#include <curl/curl.h>
#include <errno.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/signals.h"
#include "cli/cmd.h"
#include "config/settings.h"

extern char **environ;

struct role {
	const char *name;
	int (*fn)(int argc, char **argv, int *exit_code, struct err **err);
	bool runs_function; /* failures exit 125 like docker, function exit codes pass through */
	const char *help;
};

static const struct role commands[] = {
        {"run", cmd_run, true, "run IMAGE [flags] [ARGS...] < input   run one function as a pod"},
        {"generate", cmd_generate, false,
         "generate                          Argo CD plugin: render the kustomization in the "
         "current directory"},
        {"init", cmd_init, false,
         "init                              Argo CD plugin: preflight checks"},
        {"discover", cmd_discover, false,
         "discover                          Argo CD plugin: exit 0 if the kustomization uses "
         "containerized functions"},
        {"doctor", cmd_doctor, false,
         "doctor [--probe]                  check permissions and NetworkPolicies in the "
         "functions namespace (--probe: their enforcement, from a pod)"},
        {"unpack", cmd_unpack, false,
         "unpack DIR < archive              inside function pods: receive the mounts into DIR"},
        {"install-self", cmd_install_self, false,
         "install-self DIR                  inside exec-mode pods: copy krmpod into DIR"},
        {"net-gate", cmd_net_gate, false,
         "net-gate MS                       inside function pods: wait until the pod's "
         "NetworkPolicies are in effect"},
        {"hold", cmd_hold, false,
         "hold                              inside exec-mode pods: the function container's "
         "PID 1"},
        {"serve", cmd_serve, false,
         "serve WORKDIR                     inside exec-mode pods: a render's calls, framed"},
        {"call", cmd_call, true,
         "call WORKDIR < header+input       inside exec-mode pods: one function call"},
        {"gc", cmd_gc, false,
         "gc [--dry-run] [--older-than D]     delete leftover function pods (finished, or past "
         "their deadline)"},
        {"catalog", cmd_catalog, false,
         "catalog view [DIR] | validate REF   function catalogs: what they say, whether "
         "they are trusted (-o text|yaml|json)"},
        {"version", cmd_version, false, "version                           print the version"},
};

static void usage(FILE *out)
{
	fputs("usage: krmpod COMMAND [ARGS]\n\ncommands:\n", out);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %s\n", commands[i].help);
	fputs("\nInvoked as `docker` (a symlink), krmpod is kustomize's docker shim: `docker run` "
	      "runs the function as a Kubernetes pod.\nSettings come from KRMPOD_* environment "
	      "variables; see README.md.\n",
	      out);
}

/* Whatever went to stdout through stdio reached it: a full disk (ENOSPC) or a reader that
 * went away (EPIPE) is a failure, not a success with lost output. */
static bool stdout_flushed(void)
{
	errno = 0;
	if (fflush(stdout) == 0 && !ferror(stdout))
		return true;
	log_error("writing to stdout failed: %s: the output is incomplete",
	          errno ? strerror(errno) : "a write error");
	return false;
}

static int exit_code_for(const struct err *e, bool runs_function, int fn_exit)
{
	if (e->code == ERR_SIGNAL)
		return 128 + e->signo;
	if (runs_function)
		return fn_exit > 0 ? fn_exit : EXIT_DOCKER_FAILED;
	return e->code == ERR_USAGE ? EXIT_USAGE : EXIT_FAILURE_;
}

static int dispatch(const struct role *role, int argc, char **argv)
{
	struct err *e = NULL;
	int exit_code = 0;
	int rc = role->fn(argc, argv, &exit_code, &e);
	if (rc == 0) {
		if (stdout_flushed())
			return exit_code;
		return role->runs_function ? EXIT_DOCKER_FAILED : EXIT_FAILURE_;
	}
	log_error("%s", e->msg);
	int code = exit_code_for(e, role->runs_function, exit_code);
	err_free(e);
	return code;
}

int main(int argc, char **argv)
{
	static const struct role docker = {"docker", cmd_docker, true, NULL};
	const char *self = argc > 0 ? basename(argv[0]) : "krmpod";
	bool is_docker = strcmp(self, "docker") == 0;
	log_set_role(is_docker ? "docker" : argc > 1 ? argv[1] : "krmpod");
	/* kustomize and kpt copy the shim's stderr into their own output (kpt into its
	 * results): a successful function says nothing at the default level. `krmpod generate`
	 * hands its shims KRMPOD_LOG_LEVEL=info unless the user chose a level. */
	if (is_docker)
		log_set_level(LOG_WARN);

	struct err *e = NULL;
	enum log_level level;
	bool level_set = false;
	int64_t offset = 0;
	if (settings_log_level(environ, &level, &level_set, &e) == 0 && level_set)
		log_set_level(level);
	if (e == NULL && settings_clock_offset(environ, &offset, &e) == 0)
		clock_set_offset_ms(offset);
	if (e) {
		log_error("%s", e->msg);
		err_free(e);
		return is_docker ? EXIT_DOCKER_FAILED : EXIT_USAGE;
	}
	if (signals_install() < 0 || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		log_error("cannot initialise signal handling or libcurl");
		return is_docker ? EXIT_DOCKER_FAILED : EXIT_FAILURE_;
	}
	int code;
	if (is_docker) {
		code = dispatch(&docker, argc, argv);
	} else if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
	           strcmp(argv[1], "-h") == 0) {
		usage(argc < 2 ? stderr : stdout);
		code = argc < 2 ? EXIT_USAGE : stdout_flushed() ? 0 : EXIT_FAILURE_;
	} else {
		const struct role *role = NULL;
		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (strcmp(argv[1], commands[i].name) == 0)
				role = &commands[i];
		if (role == NULL) {
			log_error("unknown command %s: run `krmpod help` for the list", argv[1]);
			code = EXIT_USAGE;
		} else {
			code = dispatch(role, argc - 1, argv + 1);
		}
	}
	curl_global_cleanup();
	return code;
}

/* fuzz_docker_args.c — the `docker run` and `docker version` argv grammar
 * (src/shim/docker_args.h). The input is argv, its arguments separated by NUL bytes.
 *
 * Invariants: a failure sets its error; a parsed request has a non-empty image, ids > 0,
 * at most LIMIT_MOUNTS mounts with distinct absolute targets and an absolute source for
 * bind mounts, env names without '='; the engine version is semver-legal. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/size_limits.h"
#include "config/request.h"
#include "fuzz_util.h"
#include "shim/docker_args.h"

static char *const fuzz_environ[] = {
        "FOO=bar", "ARGOCD_ENV_BAR=baz", "EMPTY=", "K=V=W", "ARGOCD_ENV_=x", "PATH=/bin", NULL,
};

static void check_request(const struct fn_request *req)
{
	if (req->image == NULL || req->image[0] == '\0')
		fuzz_fail("a parsed request without an image");
	if (req->run_as_user <= 0 || req->run_as_group <= 0)
		fuzz_fail("ids %ld:%ld: function pods never run as root", req->run_as_user,
		          req->run_as_group);
	if (req->n_mounts > LIMIT_MOUNTS)
		fuzz_fail("%zu mounts", req->n_mounts);
	for (size_t i = 0; i < req->n_mounts; i++) {
		const struct fn_mount *m = &req->mounts[i];
		if (m->target == NULL || m->target[0] != '/' || strcmp(m->target, "/") == 0)
			fuzz_fail("mount %zu: target %s", i, m->target ? m->target : "(null)");
		if (m->type == FN_MOUNT_BIND && (m->source == NULL || m->source[0] != '/'))
			fuzz_fail("bind mount %zu without an absolute source", i);
		for (size_t k = 0; k < i; k++)
			if (strcmp(req->mounts[k].target, m->target) == 0)
				fuzz_fail("two mounts at %s", m->target);
	}
	for (size_t i = 0; i < req->n_env; i++)
		if (req->env[i].name[0] == '\0' || strchr(req->env[i].name, '=') ||
		    req->env[i].value == NULL)
			fuzz_fail("env %zu: name \"%s\"", i, req->env[i].name);
	for (size_t i = 0; i < req->n_args; i++)
		if (req->args[i] == NULL)
			fuzz_fail("arg %zu is NULL", i);
}

/* DOCKER_COMPAT_VERSION "-krmpod." then dot-separated identifiers: non-empty, [0-9A-Za-z-],
 * no leading zero in a numeric one (semver 2.0.0, item 9). */
static void check_engine_version(const char *v)
{
	const char *prefix = DOCKER_COMPAT_VERSION "-krmpod";
	if (strncmp(v, prefix, strlen(prefix)) != 0)
		fuzz_fail("engine version %s", v);
	for (const char *p = v + strlen(prefix); *p;) {
		if (*p != '.')
			fuzz_fail("engine version %s: no '.' before an identifier", v);
		p++;
		size_t n = strcspn(p, ".");
		bool numeric = n > 0;
		for (size_t i = 0; i < n; i++) {
			if (!isalnum((unsigned char)p[i]) && p[i] != '-')
				fuzz_fail("engine version %s: character %#x", v,
				          (unsigned char)p[i]);
			numeric = numeric && isdigit((unsigned char)p[i]);
		}
		if (n == 0 || (numeric && n > 1 && p[0] == '0'))
			fuzz_fail("engine version %s: identifier \"%.*s\"", v, (int)n, p);
		p += n;
	}
}

FUZZ_QUIET_LOG

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	int argc = 0;
	for (size_t i = 0; i < size; i++)
		argc += data[i] == '\0';
	argc += size > 0 && data[size - 1] != '\0'; /* the last argument needs no NUL */
	char **argv = calloc((size_t)argc + 1, sizeof(char *));
	if (argv == NULL)
		abort();
	for (int i = 0, off = 0; i < argc; i++) {
		argv[i] = text + off;
		off += (int)strlen(text + off) + 1;
	}

	struct fn_request req;
	memset(&req, 0, sizeof(req));
	struct err *e = NULL;
	int rc = docker_args_parse(argc, argv, fuzz_environ, &req, &e);
	fuzz_check_err(rc, e, "docker_args_parse");
	if (rc == 0)
		check_request(&req);
	fn_request_clear(&req);
	err_free(e);

	const char *version = argc > 0 ? argv[0] : "";
	char *out = NULL;
	e = NULL;
	rc = docker_args_version(argc > 0 ? argc - 1 : 0, argv + (argc > 0), version, &out, &e);
	fuzz_check_err(rc, e, "docker_args_version");
	if (rc == 0 && (out == NULL || out[0] == '\0' || out[strlen(out) - 1] != '\n'))
		fuzz_fail("docker version's answer does not end in a newline");
	free(out);
	err_free(e);

	char *engine = docker_args_engine_version(version);
	check_engine_version(engine);
	free(engine);

	free(argv);
	free(text);
	return 0;
}

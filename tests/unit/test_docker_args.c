/* Unit tests: the docker run / docker version parser. */
#include "base/err.h"
#include "check.h"
#include "shim/docker_args.h"

static char *env_fixture[] = {"FROM_ENV=hello", "EMPTY=", NULL};

static int parse(struct fn_request *req, struct err **e, char **argv, int argc)
{
	memset(req, 0, sizeof(*req));
	return docker_args_parse(argc, argv, env_fixture, req, e);
}

#define ARGV(...) ((char *[]){__VA_ARGS__}), (int)(sizeof((char *[]){__VA_ARGS__}) / sizeof(char *))

TEST(kustomize_line)
{
	struct fn_request req;
	struct err *e = NULL;
	/* Exactly what kustomize 5.5 emits (sorted K=V, then bare names). */
	int rc = parse(&req, &e,
	               ARGV("--rm", "-i", "-a", "STDIN", "-a", "STDOUT", "-a", "STDERR",
	                    "--network", "none", "--user", "nobody",
	                    "--security-opt=no-new-privileges", "-e", "LOG_TO_STDERR=true", "-e",
	                    "STRUCTURED_RESULTS=true", "-e", "FROM_ENV", "example.com/fn:v1"));
	CHECK_INT(rc, 0);
	CHECK_STR(req.image, "example.com/fn:v1");
	CHECK_INT(req.n_args, 0);
	CHECK(req.want_stdin);
	CHECK_INT(req.network, FN_NETWORK_NONE);
	CHECK_INT(req.run_as_user, 65534);
	CHECK_INT(req.n_env, 3);
	if (req.n_env == 3) {
		CHECK_STR(req.env[0].name, "LOG_TO_STDERR");
		CHECK_STR(req.env[0].value, "true");
		CHECK_STR(req.env[2].name, "FROM_ENV");
		CHECK_STR(req.env[2].value, "hello");
	}
	fn_request_clear(&req);
	err_free(e);
}

TEST(equals_forms_and_args)
{
	struct fn_request req;
	struct err *e = NULL;
	int rc = parse(&req, &e,
	               ARGV("--network=host", "--pull", "never", "-eA=1=2", "--env=B=", "-u",
	                    "1000:2000", "img", "arg1", "--flag-for-container"));
	CHECK_INT(rc, 0);
	CHECK_INT(req.network, FN_NETWORK_HOST);
	CHECK_INT(req.pull, FN_PULL_NEVER);
	CHECK_INT(req.run_as_user, 1000);
	CHECK_INT(req.run_as_group, 2000);
	CHECK_INT(req.n_env, 2);
	if (req.n_env == 2) {
		CHECK_STR(req.env[0].value, "1=2");
		CHECK_STR(req.env[1].name, "B");
		CHECK_STR(req.env[1].value, "");
	}
	CHECK_INT(req.n_args, 2);
	if (req.n_args == 2)
		CHECK_STR(req.args[1], "--flag-for-container");
	fn_request_clear(&req);
	err_free(e);
}

TEST(bare_env_unset_is_left_out)
{
	struct fn_request req;
	struct err *e = NULL;
	CHECK_INT(parse(&req, &e, ARGV("-e", "NOT_SET_ANYWHERE", "-e", "EMPTY", "img")), 0);
	CHECK_INT(req.n_env, 1);
	if (req.n_env == 1) {
		CHECK_STR(req.env[0].name, "EMPTY");
		CHECK_STR(req.env[0].value, "");
	}
	fn_request_clear(&req);
	err_free(e);
}

TEST(later_env_replaces_earlier)
{
	struct fn_request req;
	struct err *e = NULL;
	CHECK_INT(parse(&req, &e, ARGV("-e", "A=1", "-e", "A=2", "img")), 0);
	CHECK_INT(req.n_env, 1);
	if (req.n_env == 1)
		CHECK_STR(req.env[0].value, "2");
	fn_request_clear(&req);
	err_free(e);
}

static void expect_usage(char **argv, int argc, const char *needle)
{
	struct fn_request req;
	struct err *e = NULL;
	int rc = parse(&req, &e, argv, argc);
	CHECK_INT(rc, -1);
	CHECK(e != NULL && e->code == ERR_USAGE);
	if (e)
		CHECK_CONTAINS(e->msg, needle);
	fn_request_clear(&req);
	err_free(e);
}

TEST(errors_name_the_flag)
{
	expect_usage(ARGV("--privileged", "img"), "unknown flag --privileged");
	expect_usage(ARGV("-it", "img"), "unknown flag -t");
	expect_usage(ARGV("--mount", "type=volume,source=/k/myvol,target=/vol,readonly", "img"),
	             "--mount type=volume,source=/k/myvol,target=/vol,readonly: named docker "
	             "volumes cannot exist in a cluster");
	expect_usage(ARGV("--mount", "type=bind,source=data,target=/d", "img"),
	             "needs an absolute source=");
	expect_usage(ARGV("--mount", "type=bind,source=/k/a b,x=y,target=/d", "img"),
	             "unsupported mount option \"x\"");
	expect_usage(ARGV("--mount", "type=bind,source=/k/a,target=/d/../etc", "img"),
	             "target= must be an absolute path");
	expect_usage(ARGV("--mount", "type=bind,source=/k/a,target=/", "img"),
	             "target= must be an absolute path");
	expect_usage(ARGV("--mount", "source=/k/a,target=/d", "img"), "type= is missing");
	expect_usage(ARGV("--mount", "type=bind,source=/k/a,target=/d,readonly=maybe", "img"),
	             "readonly=maybe");
	expect_usage(ARGV("--mount", "type=bind,source=/k/a,target=/d", "--mount",
	                  "type=tmpfs,target=/d", "img"),
	             "target /d is already used by --mount type=bind,source=/k/a,target=/d");
	expect_usage(ARGV("--network", "bridge", "img"), "--network bridge");
	expect_usage(ARGV("--user", "root", "img"), "--user root");
	expect_usage(ARGV("--user", "0", "img"), "never run as root");
	expect_usage(ARGV("-a", "STDFOO", "img"), "-a STDFOO");
	expect_usage(ARGV("--security-opt", "seccomp=unconfined", "img"), "seccomp=unconfined");
	expect_usage(ARGV("--pull", "sometimes", "img"), "--pull sometimes");
	expect_usage(ARGV("-e"), "flag -e needs a value");
	expect_usage(ARGV("--rm", "-i"), "no image given");
	expect_usage(ARGV("-e", "=x", "img"), "variable name is empty");
}

TEST(mounts_as_kustomize_writes_them)
{
	struct fn_request req;
	struct err *e = NULL;
	/* kustomize 5.5: bind (readonly unless rw: true), tmpfs (with the kustomization dir as
	 * a source it fills in itself). */
	int rc = parse(&req, &e,
	               ARGV("--mount", "type=bind,source=/k/app/data,target=/data,readonly",
	                    "--mount=type=bind,source=/k/app/out,target=/out", "--mount",
	                    "type=tmpfs,source=/k/app,target=/tmp,readonly", "--mount",
	                    "type=bind,src=/k/app/x,dst=/x,ro=false", "img"));
	CHECK_INT(rc, 0);
	CHECK_INT(req.n_mounts, 4);
	if (req.n_mounts == 4) {
		CHECK_INT(req.mounts[0].type, FN_MOUNT_BIND);
		CHECK_STR(req.mounts[0].source, "/k/app/data");
		CHECK_STR(req.mounts[0].target, "/data");
		CHECK(req.mounts[0].readonly);
		CHECK_STR(req.mounts[0].spec, "type=bind,source=/k/app/data,target=/data,readonly");
		CHECK(!req.mounts[1].readonly);
		CHECK_STR(req.mounts[1].target, "/out");
		CHECK_INT(req.mounts[2].type, FN_MOUNT_TMPFS);
		CHECK(req.mounts[2].source == NULL);
		CHECK(req.mounts[2].readonly);
		CHECK_STR(req.mounts[3].source, "/k/app/x");
		CHECK_STR(req.mounts[3].target, "/x");
		CHECK(!req.mounts[3].readonly);
	}
	fn_request_clear(&req);
	err_free(e);
}

TEST(version)
{
	char *out = NULL;
	struct err *e = NULL;
	CHECK_INT(docker_args_version(0, NULL, "1.2.3", &out, &e), 0);
	CHECK_CONTAINS(out, "Version:           24.0.0-krmpod.1.2.3\n");
	CHECK_CONTAINS(out, "krmpod version:    1.2.3\n");
	free(out);
	struct {
		int argc;
		char *argv[2];
		const char *want;
	} ok[] = {
	        {2, {"--format", "{{.Client.Version}}"}, "24.0.0-krmpod.1.2.3\n"},
	        {2, {"-f", "{{ .Server.Version }}"}, "24.0.0-krmpod.1.2.3\n"},
	        {1,
	         {"--format={{.Client.Version}}/{{.Server.Version}}"},
	         "24.0.0-krmpod.1.2.3/24.0.0-krmpod.1.2.3\n"},
	        {1, {"--format=plain"}, "plain\n"},
	        {1,
	         {"--format={{json .}}"},
	         "{\"Client\":{\"Platform\":{\"Name\":\"krmpod (KRM functions as Kubernetes "
	         "pods)\"},\"Version\":\"24.0.0-krmpod.1.2.3\",\"KrmpodVersion\":\"1.2.3\"},"
	         "\"Server\":{\"Platform\":{\"Name\":\"krmpod (KRM functions as Kubernetes "
	         "pods)\"},\"Version\":\"24.0.0-krmpod.1.2.3\",\"KrmpodVersion\":\"1.2.3\"}}\n"},
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		out = NULL;
		CHECK_INT(docker_args_version(ok[i].argc, ok[i].argv, "1.2.3", &out, &e), 0);
		CHECK_STR(out, ok[i].want);
		free(out);
	}
	struct {
		int argc;
		char *argv[2];
		const char *named;
	} bad[] = {
	        {1, {"--bogus"}, "--bogus"},
	        {2, {"--format", "{{.Client.Os}}"}, "{{.Client.Os}}"},
	        {2, {"--format", "{{.Client.Version}} {{.Server.Os}}"}, "{{.Server.Os}}"},
	        {2, {"--format", "{{.Client.Version"}, "a {{ without its }}"},
	        {1, {"--format"}, "--format needs a value"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		out = NULL;
		CHECK_INT(docker_args_version(bad[i].argc, bad[i].argv, "1.2.3", &out, &e), -1);
		CHECK(out == NULL);
		CHECK(e != NULL);
		if (e)
			CHECK_CONTAINS(e->msg, bad[i].named);
		err_free(e);
		e = NULL;
	}
}

/* kpt checks the answer with golang.org/x/mod/semver (IsValid, then >= v20.10.0): krmpod's
 * own version, whatever git describe made of it, must become legal pre-release identifiers. */
TEST(engine_version_is_semver)
{
	struct {
		const char *in, *want;
	} cases[] = {
	        {"39ed41f", "24.0.0-krmpod.39ed41f"},
	        {"39ed41f-dirty", "24.0.0-krmpod.39ed41f-dirty"},
	        {"v0.3.0-12-g39ed41f-dirty", "24.0.0-krmpod.v0.3.0-12-g39ed41f-dirty"},
	        {"0123456", "24.0.0-krmpod.g0123456"},            /* numeric, leading zero */
	        {"1.02.0", "24.0.0-krmpod.1.g02.0"},              /* the same inside */
	        {"1234567", "24.0.0-krmpod.1234567"},             /* numeric without one is fine */
	        {"0", "24.0.0-krmpod.0"},                         /* a lone zero is fine */
	        {"1.0+build_7/x", "24.0.0-krmpod.1.0-build-7-x"}, /* no '+', '_' or '/' */
	        {"a..b.", "24.0.0-krmpod.a.0.b.0"},               /* no empty identifier */
	        {"", "24.0.0-krmpod"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *v = docker_args_engine_version(cases[i].in);
		CHECK_STR(v, cases[i].want);
		free(v);
	}
	char longv[200];
	memset(longv, 'a', sizeof(longv) - 1);
	longv[sizeof(longv) - 1] = '\0';
	char *v = docker_args_engine_version(longv);
	CHECK_INT((long long)strlen(v), (long long)(strlen("24.0.0-krmpod.") + DOCKER_VERSION_MAX));
	free(v);
}

int main(void)
{
	RUN(kustomize_line);
	RUN(equals_forms_and_args);
	RUN(bare_env_unset_is_left_out);
	RUN(later_env_replaces_earlier);
	RUN(errors_name_the_flag);
	RUN(mounts_as_kustomize_writes_them);
	RUN(version);
	RUN(engine_version_is_semver);
	return check_summary();
}

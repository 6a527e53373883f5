/* Unit tests: the plugin hooks' pure parts — the kustomize command line from the settings,
 * resource quantities and sizes, the prestart key, and the kustomization walk. */
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "cmp/kustomization.h"
#include "cmp/prestart.h"
#include "cmp/tree_copy.h"
#include "config/plugin_settings.h"
#include "config/settings.h"
#include "fn/fn_config.h"
#include "unit_settings.h"

extern char **environ;

static void clear_env(void)
{
	static const char *vars[] = {"KRMPOD_KUSTOMIZE",     "KRMPOD_KUSTOMIZE_FLAGS",
	                             "KRMPOD_ALLOW_NETWORK", "KRMPOD_GENERATE_TIMEOUT",
	                             "KRMPOD_SHIM_DIR",      "KRMPOD_PRESTART",
	                             "KRMPOD_PRESTART_MAX",  "KRMPOD_GENERATE_MAX_STDERR"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

static char *joined(const struct cmp_settings *s)
{
	size_t n = 1;
	for (size_t i = 0; i < s->kustomize_argc; i++)
		n += strlen(s->kustomize_argv[i]) + 1;
	char *out = calloc(1, n);
	size_t off = 0;
	for (size_t i = 0; i < s->kustomize_argc; i++)
		off += (size_t)snprintf(out + off, n - off, "%s%s", i ? " " : "",
		                        s->kustomize_argv[i]);
	return out;
}

TEST(kustomize_command_line)
{
	struct cmp_settings s;
	struct err *e = NULL;
	clear_env();
	CHECK(cmp_settings_load(&s, environ, &e) == 0);
	char *cmd = joined(&s);
	CHECK_STR(cmd, "kustomize build --enable-alpha-plugins .");
	CHECK(!s.is_kubectl && !s.allow_network && s.prestart && s.prestart_max == 8);
	CHECK_INT(s.timeout_ms, 45000); /* Argo CD's 60 s less the fetch and init before generate */
	CHECK(s.max_output == 90ll << 20); /* below Argo CD's 100 MiB plugin limit */
	free(cmd);
	cmp_settings_clear(&s);

	setenv("KRMPOD_KUSTOMIZE", " kubectl   kustomize ", 1);
	setenv("KRMPOD_ALLOW_NETWORK", "TRUE", 1);
	setenv("KRMPOD_KUSTOMIZE_FLAGS", "--load-restrictor=LoadRestrictionsNone --reorder=none",
	       1);
	CHECK(cmp_settings_load(&s, environ, &e) == 0);
	cmd = joined(&s);
	CHECK_STR(cmd, "kubectl kustomize --enable-alpha-plugins --network "
	               "--load-restrictor=LoadRestrictionsNone --reorder=none .");
	CHECK(s.is_kubectl && s.allow_network);
	free(cmd);
	cmp_settings_clear(&s);
	clear_env();
}

TEST(bad_hook_settings_name_the_variable)
{
	struct {
		const char *var, *value;
	} bad[] = {{"KRMPOD_KUSTOMIZE", "kubectl"},
	           {"KRMPOD_KUSTOMIZE", "   "},
	           {"KRMPOD_KUSTOMIZE_FLAGS", "--x overlay"},
	           {"KRMPOD_ALLOW_NETWORK", "maybe"},
	           {"KRMPOD_GENERATE_TIMEOUT", "soon"},
	           {"KRMPOD_PRESTART_MAX", "65"},
	           {"KRMPOD_PRESTART", "2"},
	           {"KRMPOD_GENERATE_MAX_STDERR", "1k"},
	           {"KRMPOD_GENERATE_MAX_STDERR", "lots"}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		clear_env();
		setenv(bad[i].var, bad[i].value, 1);
		struct cmp_settings s;
		struct err *e = NULL;
		CHECK(cmp_settings_load(&s, environ, &e) < 0);
		if (e) {
			CHECK_CONTAINS(e->msg, bad[i].var);
			err_free(e);
		}
	}
	clear_env();
}

TEST(quantities_and_sizes)
{
	double v = 0;
	CHECK(settings_quantity_value("500m", &v) == 0 && v == 0.5);
	CHECK(settings_quantity_value("2", &v) == 0 && v == 2);
	CHECK(settings_quantity_value("1Gi", &v) == 0 && v == 1073741824.0);
	CHECK(settings_quantity_value("1.5G", &v) == 0 && v == 1.5e9);
	CHECK(settings_quantity_value("1e3", &v) == 0 && v == 1000);
	CHECK(settings_quantity_value("lots", &v) < 0);
	CHECK(settings_quantity_value("-1", &v) < 0);
	int64_t n = 0;
	struct err *e = NULL;
	CHECK(settings_parse_size("X", "64Mi", &n, &e) == 0 && n == 64LL << 20);
	CHECK(settings_parse_size("X", "1000", &n, &e) == 0 && n == 1000);
	CHECK(settings_parse_size("X", "10k", &n, &e) == 0 && n == 10000);
	CHECK(settings_parse_size("X", "0", &n, &e) < 0);
	CHECK(e && strstr(e->msg, "X=0") != NULL);
	err_free(e);
}

TEST(fn_config_key_is_the_pod_not_the_order_or_the_clock)
{
	struct fn_env ab[] = {{"A", "1"}, {"B", "2"}}, ba[] = {{"B", "2"}, {"A", "1"}};
	struct fn_request r1 = {.image = "example.com/fn:v1",
	                        .env = ab,
	                        .n_env = 2,
	                        .run_as_user = 65534,
	                        .run_as_group = 65534,
	                        .want_stdin = true};
	struct fn_request r2 = r1;
	r2.env = ba;
	struct settings s1 = unit_settings(300000), s2 = unit_settings(300000);
	s2.timeout_ms = 12345;
	CHECK(fn_config_key(&r1, &s1) == fn_config_key(&r2, &s2));
	struct fn_request r3 = r1;
	r3.image = "example.com/fn:v2";
	CHECK(fn_config_key(&r1, &s1) != fn_config_key(&r3, &s1));
	struct fn_env a2[] = {{"A", "1"}, {"B", "3"}};
	struct fn_request r4 = r1;
	r4.env = a2;
	CHECK(fn_config_key(&r1, &s1) != fn_config_key(&r4, &s1));
	struct settings s3 = unit_settings(300000);
	s3.memory_limit = "1Gi";
	CHECK(fn_config_key(&r1, &s1) != fn_config_key(&r1, &s3));
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

TEST(kustomization_walk)
{
	char root[] = "/tmp/krmpod-unit-XXXXXX";
	CHECK(mkdtemp(root) != NULL);
	char base[600], fns[600];
	snprintf(base, sizeof(base), "%s/base", root);
	snprintf(fns, sizeof(fns), "%s/fns", root);
	mkdir(base, 0700);
	mkdir(fns, 0700);
	write_file(root, "kustomization.yaml",
	           "resources:\n- base\n- https://example.com/remote\ntransformers:\n- fns\n"
	           "- |\n  apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: inline\n"
	           "    annotations:\n      config.kubernetes.io/function: |\n"
	           "        container:\n          image: example.com/inline:v1\n");
	write_file(base, "kustomization.yaml", "resources:\n- ..\ngenerators:\n- gen.yaml\n");
	write_file(base, "gen.yaml",
	           "# two documents\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"
	           "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gen\n"
	           "  annotations:\n    krmpod.dev/memory-limit: 1Gi\n"
	           "    config.kubernetes.io/function: |\n      container:\n"
	           "        image: example.com/gen:v1\n        network: true\n"
	           "        envs: [A=1, B]\n        mounts:\n        - {type: bind, src: ./x, "
	           "dst: /x}\n");
	write_file(fns, "kustomization.yaml", "resources:\n- fn.yaml\n");
	write_file(fns, "fn.yaml",
	           "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: f\n  annotations:\n"
	           "    config.k8s.io/function: |\n      container:\n        image: "
	           "example.com/legacy:v1\n");
	struct kfn *f = NULL;
	size_t n = 0;
	struct err *e = NULL;
	CHECK(kustomization_functions(root, &f, &n, &e) == 0);
	if (e)
		fprintf(stderr, "%s\n", e->msg);
	CHECK_INT(n, 3);
	bool gen = false, legacy = false, inline_ = false;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(f[i].image, "example.com/gen:v1") == 0) {
			gen = f[i].network && f[i].has_mounts && f[i].n_envs == 2 &&
			      strcmp(f[i].envs[0], "A=1") == 0 && f[i].memory_limit &&
			      strcmp(f[i].memory_limit, "1Gi") == 0 && f[i].cpu_limit == NULL;
			CHECK_STR(f[i].where, "base/kustomization.yaml: generators: gen.yaml");
		}
		legacy |= strcmp(f[i].image, "example.com/legacy:v1") == 0;
		inline_ |= strcmp(f[i].image, "example.com/inline:v1") == 0;
	}
	CHECK(gen && legacy && inline_);
	kustomization_functions_free(f, n);
	/* a missing kustomization is an error naming the directory */
	char empty[620];
	snprintf(empty, sizeof(empty), "%s/none", root);
	mkdir(empty, 0700);
	CHECK(kustomization_functions(empty, &f, &n, &e) < 0);
	CHECK(e && strstr(e->msg, "no kustomization.yaml") != NULL);
	err_free(e);
	CHECK(nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0);
}

/* A path maps into the copy only when it is under the ancestor, and never climbs out. */
TEST(tree_copy_path_stays_in_the_copy)
{
	char *p = tree_copy_path("/tmp/copy", "/repo/apps", "/repo/apps/a/k.yaml");
	CHECK_STR(p, "/tmp/copy/a/k.yaml");
	free(p);
	p = tree_copy_path("/tmp/copy", "/repo/apps", "/repo/apps");
	CHECK_STR(p, "/tmp/copy");
	free(p);
	p = tree_copy_path("/tmp/copy", "/", "/repo/x.yaml");
	CHECK_STR(p, "/tmp/copy/repo/x.yaml");
	free(p);
	CHECK(tree_copy_path("/tmp/copy", "/repo/apps", "/repo") == NULL); /* shorter */
	CHECK(tree_copy_path("/tmp/copy", "/repo/apps", "/repo/apps2/x") == NULL);
	CHECK(tree_copy_path("/tmp/copy", "/repo/apps", "/repo/apps/../x.yaml") == NULL);
	CHECK(tree_copy_path("/tmp/copy", "/repo/apps", "/repo/apps/a/../../x") == NULL);
	p = tree_copy_path("/tmp/copy", "/repo/apps", "/repo/apps/..x/y");
	CHECK_STR(p, "/tmp/copy/..x/y");
	free(p);
}

int main(void)
{
	RUN(tree_copy_path_stays_in_the_copy);
	RUN(kustomize_command_line);
	RUN(bad_hook_settings_name_the_variable);
	RUN(quantities_and_sizes);
	RUN(fn_config_key_is_the_pod_not_the_order_or_the_clock);
	RUN(kustomization_walk);
	return check_summary();
}

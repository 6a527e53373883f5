/* Unit tests: settings from the environment. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config/settings.h"

extern char **environ;

static const char *const vars[] = {"KRMPOD_NAMESPACE",
                                   "KRMPOD_START_TIMEOUT",
                                   "KRMPOD_TIMEOUT",
                                   "KRMPOD_CPU_REQUEST",
                                   "KRMPOD_CPU_LIMIT",
                                   "KRMPOD_MEMORY_REQUEST",
                                   "KRMPOD_MEMORY_LIMIT",
                                   "KRMPOD_EXTRA_LABELS",
                                   "KRMPOD_OWNER_POD",
                                   "KRMPOD_OWNER_UID",
                                   "KRMPOD_NETWORK_GATE",
                                   "KRMPOD_NETWORK_GATE_DNS",
                                   "KRMPOD_LEASE_RENEW",
                                   "KRMPOD_HELPER_IMAGE",
                                   "KRMPOD_IMAGE_PULL_SECRETS",
                                   "KRMPOD_MODE",
                                   "KRMPOD_WARM_POOL",
                                   "KRMPOD_SIGNATURE_POLICY",
                                   "KRMPOD_ATTACH_UNVERIFIED",
                                   "KRMPOD_MAX_STDERR"};

static void clear_env(void)
{
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

TEST(defaults)
{
	clear_env();
	struct settings s;
	struct err *e = NULL;
	CHECK_INT(settings_load_env(&s, environ, &e), 0);
	CHECK(s.namespace == NULL);
	CHECK_INT(s.start_timeout_ms, 120000);
	CHECK_INT(s.timeout_ms, 300000);
	CHECK(!s.attach_unverified); /* attach mode fails closed by default (issue 29) */
	CHECK_INT(s.max_stderr, 1 << 20);
	CHECK_STR(s.cpu_request, "100m");
	CHECK_STR(s.memory_limit, "512Mi");
	CHECK_INT(s.n_labels, 0);
	/* the pool's cap stays below the shipped quota's 16 pods (manifests/functions) */
	CHECK_INT(s.pool_max, 8);
	CHECK_INT(s.pool_size, 2);
	/* outside Argo CD the Application is empty, but part of every pod key all the same */
	CHECK_STR(s.pool_tenant, "app=\nproject=\nnamespace=");
	settings_clear(&s);
	err_free(e);
}

TEST(values)
{
	clear_env();
	setenv("KRMPOD_NAMESPACE", "krmpod-functions", 1);
	setenv("KRMPOD_START_TIMEOUT", "1500ms", 1);
	setenv("KRMPOD_TIMEOUT", "2m", 1);
	setenv("KRMPOD_MEMORY_LIMIT", "1Gi", 1);
	setenv("KRMPOD_EXTRA_LABELS", "team=a, example.com/tier=fn ,", 1);
	setenv("KRMPOD_OWNER_POD", "argocd-repo-server-abc", 1);
	setenv("KRMPOD_OWNER_UID", "1234-5678", 1);
	setenv("KRMPOD_ATTACH_UNVERIFIED", "allow", 1);
	setenv("KRMPOD_MAX_STDERR", "64Ki", 1);
	struct settings s;
	struct err *e = NULL;
	CHECK_INT(settings_load_env(&s, environ, &e), 0);
	CHECK_STR(s.namespace, "krmpod-functions");
	CHECK_INT(s.start_timeout_ms, 1500);
	CHECK_INT(s.timeout_ms, 120000);
	CHECK_STR(s.memory_limit, "1Gi");
	CHECK_INT(s.n_labels, 2);
	if (s.n_labels == 2) {
		CHECK_STR(s.labels[1].key, "example.com/tier");
		CHECK_STR(s.labels[1].value, "fn");
	}
	CHECK_STR(s.owner_uid, "1234-5678");
	CHECK(s.attach_unverified);
	CHECK_INT(s.max_stderr, 64 << 10);
	settings_clear(&s);
	err_free(e);
	clear_env();
}

TEST(short_timeout_clamps_default_start_timeout)
{
	clear_env();
	setenv("KRMPOD_TIMEOUT", "30", 1);
	struct settings s;
	struct err *e = NULL;
	CHECK_INT(settings_load_env(&s, environ, &e), 0);
	CHECK_INT(s.start_timeout_ms, 30000);
	settings_clear(&s);
	clear_env();
}

static void expect_error(const char *var, const char *value, const char *needle)
{
	clear_env();
	setenv(var, value, 1);
	struct settings s;
	struct err *e = NULL;
	CHECK_INT(settings_load_env(&s, environ, &e), -1);
	CHECK(e && e->code == ERR_CONFIG);
	if (e) {
		CHECK_CONTAINS(e->msg, var);
		CHECK_CONTAINS(e->msg, needle);
	}
	err_free(e);
	clear_env();
}

TEST(bad_values_name_the_variable)
{
	expect_error("KRMPOD_TIMEOUT", "soon", "not a duration");
	expect_error("KRMPOD_TIMEOUT", "-5", "not a duration");
	expect_error("KRMPOD_START_TIMEOUT", "10x", "not a duration");
	expect_error("KRMPOD_CPU_LIMIT", "lots", "not a Kubernetes quantity");
	expect_error("KRMPOD_MEMORY_REQUEST", "12Mb", "not a Kubernetes quantity");
	expect_error("KRMPOD_NAMESPACE", "Bad_NS", "not a valid namespace");
	expect_error("KRMPOD_EXTRA_LABELS", "novalue", "not key=value");
	expect_error("KRMPOD_EXTRA_LABELS", "a=b c", "not a valid value");
	expect_error("KRMPOD_EXTRA_LABELS", "krmpod.dev/network=granted", "cannot be overridden");
	expect_error("KRMPOD_OWNER_POD", "x", "KRMPOD_OWNER_UID");
	expect_error("KRMPOD_ATTACH_UNVERIFIED", "yes", "use deny (the default");
	expect_error("KRMPOD_MAX_STDERR", "1k", "at least 4096 bytes");
	expect_error("KRMPOD_MAX_STDERR", "lots", "not a size");
}

TEST(start_timeout_longer_than_timeout)
{
	clear_env();
	setenv("KRMPOD_TIMEOUT", "10s", 1);
	setenv("KRMPOD_START_TIMEOUT", "20s", 1);
	struct settings s;
	struct err *e = NULL;
	CHECK_INT(settings_load_env(&s, environ, &e), -1);
	if (e)
		CHECK_CONTAINS(e->msg, "KRMPOD_START_TIMEOUT");
	err_free(e);
	clear_env();
}

/* KRMPOD_NETWORK_GATE: off by default and with 0/off; a duration needs the helper image. */
TEST(network_gate)
{
	struct settings s;
	struct err *e = NULL;
	clear_env();
	CHECK_INT(settings_load_env(&s, environ, &e), 0);
	CHECK(s.net_gate_ms == 0);
	settings_clear(&s);
	setenv("KRMPOD_NETWORK_GATE", "off", 1);
	CHECK_INT(settings_load_env(&s, environ, &e), 0);
	CHECK(s.net_gate_ms == 0);
	settings_clear(&s);
	setenv("KRMPOD_NETWORK_GATE", "10s", 1);
	CHECK_INT(settings_load_env(&s, environ, &e), -1);
	if (e)
		CHECK_CONTAINS(e->msg, "needs KRMPOD_HELPER_IMAGE");
	err_free(e);
	e = NULL;
	setenv("KRMPOD_HELPER_IMAGE", "example.com/krmpod:1", 1);
	CHECK_INT(settings_load_env(&s, environ, &e), 0);
	CHECK(s.net_gate_ms == 10000);
	settings_clear(&s);
	clear_env();
	setenv("KRMPOD_HELPER_IMAGE", "example.com/krmpod:1", 1);
	expect_error("KRMPOD_NETWORK_GATE", "soon", "not a duration");
	/* shorter than the gate can prove anything in */
	expect_error("KRMPOD_NETWORK_GATE", "1500ms", "too short: the gate needs at least 2000 ms");
	/* KRMPOD_NETWORK_GATE_DNS: on by default, false where the admin opens DNS */
	setenv("KRMPOD_HELPER_IMAGE", "example.com/krmpod:1", 1);
	setenv("KRMPOD_NETWORK_GATE", "10s", 1);
	CHECK_INT(settings_load_env(&s, environ, &e), 0);
	CHECK(s.net_gate_dns);
	settings_clear(&s);
	setenv("KRMPOD_NETWORK_GATE_DNS", "false", 1);
	CHECK_INT(settings_load_env(&s, environ, &e), 0);
	CHECK(!s.net_gate_dns);
	settings_clear(&s);
	expect_error("KRMPOD_NETWORK_GATE_DNS", "maybe", "KRMPOD_NETWORK_GATE_DNS");
	clear_env();
}

TEST(mode_defaults_to_auto)
{
	struct settings s;
	struct err *e = NULL;
	clear_env();
	CHECK_INT(settings_load_env(&s, environ, &e), 0);
	CHECK_INT(s.mode, FN_MODE_AUTO);
	CHECK(s.signature_policy == NULL);
	settings_clear(&s);
	/* auto needs no helper image (it then runs every function in attach mode); exec does */
	static const struct {
		const char *value;
		int mode;
	} ok[] = {{"auto", FN_MODE_AUTO}, {"attach", FN_MODE_ATTACH}};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		setenv("KRMPOD_MODE", ok[i].value, 1);
		CHECK_INT(settings_load_env(&s, environ, &e), 0);
		CHECK_INT(s.mode, ok[i].mode);
		settings_clear(&s);
	}
	expect_error("KRMPOD_MODE", "exec", "needs KRMPOD_HELPER_IMAGE");
	expect_error("KRMPOD_MODE", "fast", "use auto, attach or exec");
	/* the warm pool: auto or exec, and a helper image */
	clear_env();
	setenv("KRMPOD_WARM_POOL", "true", 1);
	setenv("KRMPOD_MODE", "attach", 1);
	CHECK_INT(settings_load_env(&s, environ, &e), -1);
	if (e)
		CHECK_CONTAINS(e->msg, "needs KRMPOD_MODE=exec or auto, not attach");
	err_free(e);
	e = NULL;
	clear_env();
	setenv("KRMPOD_WARM_POOL", "true", 1);
	CHECK_INT(settings_load_env(&s, environ, &e), -1);
	if (e)
		CHECK_CONTAINS(e->msg, "KRMPOD_WARM_POOL=true needs KRMPOD_HELPER_IMAGE");
	err_free(e);
	e = NULL;
	setenv("KRMPOD_HELPER_IMAGE", "example.com/krmpod:1", 1);
	CHECK_INT(settings_load_env(&s, environ, &e), 0);
	CHECK_INT(s.mode, FN_MODE_AUTO);
	settings_clear(&s);
	setenv("KRMPOD_SIGNATURE_POLICY", "/etc/krmpod/signatures/policy.yaml", 1);
	CHECK_INT(settings_load_env(&s, environ, &e), 0);
	CHECK_STR(s.signature_policy, "/etc/krmpod/signatures/policy.yaml");
	settings_clear(&s);
	clear_env();
}

/* KRMPOD_LEASE_RENEW: 20 s by default; shorter than a second is refused, named. */
TEST(lease_renew)
{
	struct settings s;
	struct err *e = NULL;
	clear_env();
	CHECK_INT(settings_load_env(&s, environ, &e), 0);
	CHECK_INT(s.lease_renew_ms, 20000);
	settings_clear(&s);
	setenv("KRMPOD_LEASE_RENEW", "2s", 1);
	CHECK_INT(settings_load_env(&s, environ, &e), 0);
	CHECK_INT(s.lease_renew_ms, 2000);
	settings_clear(&s);
	expect_error("KRMPOD_LEASE_RENEW", "500ms", "at least 1s");
	expect_error("KRMPOD_LEASE_RENEW", "often", "not a duration");
	clear_env();
}

/* KRMPOD_CLOCK_OFFSET (tests only): a signed duration. */
TEST(clock_offset)
{
	int64_t ms = -1;
	struct err *e = NULL;
	char *none[] = {NULL};
	CHECK_INT(settings_clock_offset(none, &ms, &e), 0);
	CHECK(ms == 0);
	char *ahead[] = {"KRMPOD_CLOCK_OFFSET=105s", NULL};
	CHECK_INT(settings_clock_offset(ahead, &ms, &e), 0);
	CHECK(ms == 105000);
	char *plus[] = {"KRMPOD_CLOCK_OFFSET=+2m", NULL};
	CHECK_INT(settings_clock_offset(plus, &ms, &e), 0);
	CHECK(ms == 120000);
	char *behind[] = {"KRMPOD_CLOCK_OFFSET=-90s", NULL};
	CHECK_INT(settings_clock_offset(behind, &ms, &e), 0);
	CHECK(ms == -90000);
	char *bad[] = {"KRMPOD_CLOCK_OFFSET=soon", NULL};
	CHECK_INT(settings_clock_offset(bad, &ms, &e), -1);
	if (e)
		CHECK_CONTAINS(e->msg, "KRMPOD_CLOCK_OFFSET");
	err_free(e);
}

/* Inside a function pod: the gate's milliseconds and targets pod_manifest.c gave it. */
TEST(agent_net_gate)
{
	struct settings_gate g;
	struct err *e = NULL;
	char *none[] = {NULL};
	CHECK_INT(settings_agent_net_gate(none, &g, &e), 0);
	CHECK(g.ms == 0 && g.node == NULL && !g.dns);
	char *set[] = {"KRMPOD_NET_GATE_MS=10000", "KRMPOD_NET_GATE_NODE=10.0.0.7",
	               "KRMPOD_NET_GATE_DNS=1", NULL};
	CHECK_INT(settings_agent_net_gate(set, &g, &e), 0);
	CHECK(g.ms == 10000 && g.dns);
	CHECK_STR(g.node, "10.0.0.7");
	char *bad[] = {"KRMPOD_NET_GATE_MS=10s", NULL};
	CHECK_INT(settings_agent_net_gate(bad, &g, &e), -1);
	CHECK(e && e->code == ERR_CONFIG);
	if (e)
		CHECK_CONTAINS(e->msg, "KRMPOD_NET_GATE_MS=10s is not a number of milliseconds");
	err_free(e);
	e = NULL;
	char *bad_dns[] = {"KRMPOD_NET_GATE_DNS=yes", NULL};
	CHECK_INT(settings_agent_net_gate(bad_dns, &g, &e), -1);
	if (e)
		CHECK_CONTAINS(e->msg, "KRMPOD_NET_GATE_DNS=yes");
	err_free(e);
}

/* KRMPOD_IMAGE_PULL_SECRETS: Secret names (DNS subdomains), blanks around them dropped,
 * each kept once; anything else names the variable and the bad name. */
TEST(image_pull_secrets)
{
	struct settings s;
	struct err *e = NULL;
	clear_env();
	CHECK_INT(settings_load_env(&s, environ, &e), 0);
	CHECK_INT(s.n_pull_secrets, 0);
	CHECK(s.pull_secrets == NULL);
	settings_clear(&s);
	setenv("KRMPOD_IMAGE_PULL_SECRETS", "registry-creds, team.example.com ,registry-creds,", 1);
	CHECK_INT(settings_load_env(&s, environ, &e), 0);
	CHECK_INT(s.n_pull_secrets, 2);
	if (s.n_pull_secrets == 2) {
		CHECK_STR(s.pull_secrets[0], "registry-creds");
		CHECK_STR(s.pull_secrets[1], "team.example.com");
	}
	settings_clear(&s);
	CHECK(s.pull_secrets == NULL && s.n_pull_secrets == 0);
	expect_error("KRMPOD_IMAGE_PULL_SECRETS", "Registry-Creds",
	             "\"Registry-Creds\" is not a Secret name (a DNS subdomain");
	expect_error("KRMPOD_IMAGE_PULL_SECRETS", "ok,-bad", "\"-bad\" is not a Secret name");
	expect_error("KRMPOD_IMAGE_PULL_SECRETS", "a b", "\"a b\" is not a Secret name");
	expect_error("KRMPOD_IMAGE_PULL_SECRETS", "a/b", "\"a/b\" is not a Secret name");
	expect_error("KRMPOD_IMAGE_PULL_SECRETS", "ok, ,x", "\"\" is not a Secret name");
	expect_error("KRMPOD_IMAGE_PULL_SECRETS", ",,", "names no Secret");
	char long_name[300];
	memset(long_name, 'a', 254);
	long_name[254] = '\0';
	expect_error("KRMPOD_IMAGE_PULL_SECRETS", long_name, "at most 253");
	clear_env();
}

TEST(quantities)
{
	struct err *e = NULL;
	const char *good[] = {"100m", "1", "0.5", "512Mi", "1G", "1e3", "2Ki"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		CHECK_INT(settings_check_quantity("X", good[i], &e), 0);
	const char *bad[] = {"", "m", "-1", "1.2.3", "1Mb", "1e"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_INT(settings_check_quantity("X", bad[i], &e), -1);
	err_free(e);
}

int main(void)
{
	RUN(defaults);
	RUN(values);
	RUN(short_timeout_clamps_default_start_timeout);
	RUN(bad_values_name_the_variable);
	RUN(start_timeout_longer_than_timeout);
	RUN(network_gate);
	RUN(mode_defaults_to_auto);
	RUN(agent_net_gate);
	RUN(clock_offset);
	RUN(lease_renew);
	RUN(quantities);
	RUN(image_pull_secrets);
	return check_summary();
}

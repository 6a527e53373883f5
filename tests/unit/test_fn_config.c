/* Unit tests for fn_config.c: the one resolution of the function-run settings. */
#include <string.h>

#include "check.h"
#include "fn/fn_config.h"

static const struct kube_config ctx_ns = {.namespace = "from-context"};
static const struct kube_config no_ns = {0};

TEST(namespace_from_setting_then_context_then_default)
{
	struct settings s;
	struct err *e = NULL;
	char *env1[] = {"KRMPOD_NAMESPACE=fns", NULL};
	CHECK(fn_config_base(env1, &ctx_ns, &s, &e) == 0);
	CHECK_STR(s.namespace, "fns");
	settings_clear(&s);
	char *env2[] = {"OTHER=1", NULL};
	CHECK(fn_config_base(env2, &ctx_ns, &s, &e) == 0);
	CHECK_STR(s.namespace, "from-context");
	settings_clear(&s);
	CHECK(fn_config_base(env2, &no_ns, &s, &e) == 0);
	CHECK_STR(s.namespace, "default");
	settings_clear(&s);
	CHECK(e == NULL);
}

/* The shipped install: repo-server in argocd, functions in krmpod-functions. The owner is
 * kept (the pods name it in an annotation); pod_manifest.c leaves out the ownerReference, which
 * resolves in the pod's own namespace only (test_pod_manifest.c). */
TEST(owner_in_another_namespace_is_kept)
{
	char *env[] = {"KRMPOD_NAMESPACE=krmpod-functions", "KRMPOD_OWNER_POD=repo-1",
	               "KRMPOD_OWNER_UID=u-1", "KRMPOD_OWNER_NAMESPACE=argocd", NULL};
	struct settings s;
	struct err *e = NULL;
	CHECK(fn_config_base(env, &no_ns, &s, &e) == 0);
	CHECK(s.owner_pod && strcmp(s.owner_pod, "repo-1") == 0);
	CHECK(s.owner_namespace && strcmp(s.owner_namespace, "argocd") == 0);
	settings_clear(&s);
	char *same[] = {"KRMPOD_NAMESPACE=argocd", "KRMPOD_OWNER_POD=repo-1",
	                "KRMPOD_OWNER_UID=u-1", "KRMPOD_OWNER_NAMESPACE=argocd", NULL};
	CHECK(fn_config_base(same, &no_ns, &s, &e) == 0);
	CHECK(s.owner_pod && strcmp(s.owner_pod, "repo-1") == 0);
	settings_clear(&s);
	/* no owner namespace given: the owner is taken to be where the functions run */
	char *unknown[] = {"KRMPOD_OWNER_POD=repo-1", "KRMPOD_OWNER_UID=u-1", NULL};
	CHECK(fn_config_base(unknown, &ctx_ns, &s, &e) == 0);
	CHECK(s.owner_pod != NULL);
	settings_clear(&s);
}

/* Prestart and the shim resolve from the same environment: the same key, whatever else the
 * environment holds; a setting that changes the pod changes the key. */
TEST(same_environment_same_key)
{
	struct fn_request req = {.image = "example.com/fn:v1",
	                         .run_as_user = 65534,
	                         .run_as_group = 65534,
	                         .want_stdin = true};
	char *gen[] = {"KRMPOD_NAMESPACE=krmpod-functions",
	               "KRMPOD_OWNER_POD=repo-1",
	               "KRMPOD_OWNER_UID=u-1",
	               "KRMPOD_OWNER_NAMESPACE=argocd",
	               "KRMPOD_DEADLINE_MS=99999999999999",
	               NULL};
	char *shim[] = {"PATH=/shim:/usr/bin",
	                "KRMPOD_NAMESPACE=krmpod-functions",
	                "KRMPOD_OWNER_POD=repo-1",
	                "KRMPOD_OWNER_UID=u-1",
	                "KRMPOD_OWNER_NAMESPACE=argocd",
	                "KRMPOD_DEADLINE_MS=99999999999000",
	                NULL};
	char *other[] = {"KRMPOD_NAMESPACE=krmpod-functions", "KRMPOD_MEMORY_LIMIT=1Gi", NULL};
	struct settings a, b, c;
	struct err *e = NULL;
	CHECK(fn_config_resolve(gen, (struct kube_config *)&no_ns, &req, &a, &e) == 0);
	CHECK(fn_config_resolve(shim, (struct kube_config *)&no_ns, &req, &b, &e) == 0);
	CHECK(fn_config_resolve(other, (struct kube_config *)&no_ns, &req, &c, &e) == 0);
	CHECK(fn_config_key(&req, &a) == fn_config_key(&req, &b));
	CHECK(fn_config_key(&req, &a) != fn_config_key(&req, &c));
	settings_clear(&a);
	settings_clear(&b);
	settings_clear(&c);
}

TEST(network_refused_unless_allowed)
{
	struct fn_request req = {.image = "example.com/net:v1", .network = FN_NETWORK_HOST};
	char *env[] = {"KRMPOD_NAMESPACE=fns", NULL};
	struct settings s;
	struct err *e = NULL;
	CHECK(fn_config_resolve(env, (struct kube_config *)&no_ns, &req, &s, &e) < 0);
	CHECK(e && strstr(e->msg, "example.com/net:v1") && strstr(e->msg, "KRMPOD_ALLOW_NETWORK"));
	err_free(e);
	e = NULL;
	char *allowed[] = {"KRMPOD_NAMESPACE=fns", "KRMPOD_ALLOW_NETWORK=true", NULL};
	CHECK(fn_config_resolve(allowed, (struct kube_config *)&no_ns, &req, &s, &e) == 0);
	settings_clear(&s);
}

TEST(bad_setting_is_named)
{
	char *env[] = {"KRMPOD_TIMEOUT=soon", NULL};
	struct settings s;
	struct err *e = NULL;
	CHECK(fn_config_base(env, &no_ns, &s, &e) < 0);
	CHECK(e && strstr(e->msg, "KRMPOD_TIMEOUT=soon"));
	err_free(e);
}

int main(void)
{
	RUN(namespace_from_setting_then_context_then_default);
	RUN(owner_in_another_namespace_is_kept);
	RUN(same_environment_same_key);
	RUN(network_refused_unless_allowed);
	RUN(bad_setting_is_named);
	return check_summary();
}

/* Unit tests: kube_version (parsing what /version says, the 1.30 floor) and the message for a
 * refused stream upgrade (kube_attach), which names the likely cause first. */
#include "base/cleanup.h"
#include "base/json.h"
#include "check.h"
#include "kube/kube_stream.h"
#include "kube/kube_version.h"

static void check_parse(const char *text, int major, int minor, int patch)
{
	struct kube_version v;
	if (kube_version_parse(text, &v) != 0) {
		CHECK_FAIL_("kube_version_parse(\"%s\") failed", text);
		return;
	}
	CHECK_INT(v.major, major);
	CHECK_INT(v.minor, minor);
	CHECK_INT(v.patch, patch);
	CHECK_STR(v.text, text);
}

TEST(parses_the_forms_servers_use)
{
	check_parse("v1.20.15", 1, 20, 15);
	check_parse("1.34", 1, 34, -1);
	check_parse("1.34+", 1, 34, -1);
	check_parse("v1.30.0-gke.1", 1, 30, 0);
	check_parse("v1.29.3+k3s1", 1, 29, 3);
	check_parse("v1.30.4-eks-a737599", 1, 30, 4);
	check_parse("v1.34.0-kubesim", 1, 34, 0);
	check_parse("v2.0.0", 2, 0, 0);
}

TEST(refuses_what_is_not_a_version)
{
	static const char *bad[] = {"",      "v",     "1",       "v1.",      "1.x",
	                            "1.34x", "1..34", "one.two", "v1.30.x",  "1.30.",
	                            " 1.30", "1.30 ", "-1.30",   "1.999999", "1.30.0~rc"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct kube_version v = {.major = 7};
		if (kube_version_parse(bad[i], &v) == 0)
			CHECK_FAIL_("kube_version_parse(\"%s\") accepted it", bad[i]);
		CHECK_INT(v.major, 7); /* untouched */
	}
	struct kube_version v;
	CHECK_INT(kube_version_parse(NULL, &v), -1);
}

TEST(the_floor_is_1_30)
{
	struct kube_version v;
	static const struct {
		const char *text;
		bool ok;
	} cases[] = {{"v1.20.15", false},     {"1.29+", false}, {"v1.29.9", false}, {"1.30", true},
	             {"v1.30.0-gke.1", true}, {"1.34", true},   {"v2.0.0", true}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK_INT(kube_version_parse(cases[i].text, &v), 0);
		if (kube_version_supported(&v) != cases[i].ok)
			CHECK_FAIL_("%s: supported should be %d", cases[i].text, cases[i].ok);
	}
}

static int decode(const char *body, struct kube_version *v, struct err **e)
{
	cleanup_json struct json *doc = NULL;
	CHECK_INT(json_parse(body, strlen(body), "test", &doc, NULL), 0);
	return kube_version_decode(doc, v, e);
}

TEST(decodes_version_answers)
{
	struct kube_version v;
	cleanup_err struct err *e = NULL;
	/* what a real 1.34 answers (tests/conformance/data/version.json) */
	CHECK_INT(decode("{\"major\":\"1\",\"minor\":\"34\",\"emulationMajor\":\"1\","
	                 "\"gitVersion\":\"v1.34.9\",\"platform\":\"linux/amd64\"}",
	                 &v, &e),
	          0);
	CHECK_STR(v.text, "v1.34.9");
	CHECK_INT(v.minor, 34);
	/* a managed cluster: gitVersion with a suffix, minor with a "+" */
	CHECK_INT(decode("{\"major\":\"1\",\"minor\":\"20+\",\"gitVersion\":\"v1.20.15-gke.1\"}",
	                 &v, &e),
	          0);
	CHECK_INT(v.minor, 20);
	CHECK(!kube_version_supported(&v));
	/* no usable gitVersion: major and minor */
	CHECK_INT(decode("{\"major\":\"1\",\"minor\":\"30+\",\"gitVersion\":\"custom-build\"}", &v,
	                 &e),
	          0);
	CHECK_STR(v.text, "1.30+");
	CHECK(kube_version_supported(&v));
	/* nothing usable */
	CHECK_INT(decode("{\"kind\":\"Status\"}", &v, &e), -1);
	CHECK(e != NULL && e->code == ERR_API);
	if (e)
		CHECK_CONTAINS(e->msg, "GET /version: no Kubernetes version in the answer");
}

TEST(refusal_names_the_likely_cause_first)
{
	const char *path = "/api/v1/namespaces/fns/pods/krmpod-cat-x1y2z/attach?container=fn&stdin="
	                   "true&stdout=true&stderr=true&tty=false";
	struct kube_version old, cur;
	CHECK_INT(kube_version_parse("v1.20.15", &old), 0);
	CHECK_INT(kube_version_parse("v1.34.9", &cur), 0);

	cleanup_free char *t = kube_stream_refusal_text(path, &old, NULL);
	CHECK_CONTAINS(t, "likely cause: the server runs Kubernetes v1.20.15, older than 1.30");
	CHECK_CONTAINS(t, "upgrade the cluster to 1.30 or newer");
	CHECK_CONTAINS(t, "other possible cause: RBAC: the credentials need pods/attach create and "
	                  "get in namespace fns");
	CHECK(strstr(t, "v1.20.15") < strstr(t, "RBAC"));

	cleanup_free char *u = kube_stream_refusal_text(path, &cur, NULL);
	CHECK_CONTAINS(u, "likely cause: RBAC: the credentials need pods/attach create and get in "
	                  "namespace fns");
	CHECK_CONTAINS(u, "not the server's version: it runs Kubernetes v1.34.9");

	cleanup_free char *w = kube_stream_refusal_text(
	        "/api/v1/namespaces/other/pods/p/exec?container=fn&command=sh", NULL,
	        "GET /version: 500 InternalError: boom");
	CHECK_CONTAINS(w, "possible causes: RBAC: the credentials need pods/exec create and get in "
	                  "namespace other");
	CHECK_CONTAINS(w, "or a server older than Kubernetes 1.30");
	CHECK_CONTAINS(w, "its version could not be read: GET /version: 500 InternalError: boom");
}

int main(void)
{
	RUN(parses_the_forms_servers_use);
	RUN(refuses_what_is_not_a_version);
	RUN(the_floor_is_1_30);
	RUN(decodes_version_answers);
	RUN(refusal_names_the_likely_cause_first);
	return check_summary();
}

/* Unit tests: NetworkPolicy evaluation for `krmpod doctor` (netpol.h). */
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "check.h"
#include "pod/netpol.h"

static struct json *parse(const char *text)
{
	struct json *j = NULL;
	struct err *e = NULL;
	if (json_parse(text, strlen(text), "test", &j, &e) < 0) {
		fprintf(stderr, "parse: %s\n", e->msg);
		err_free(e);
	}
	return j;
}

static struct label none_pod[] = {{"app.kubernetes.io/managed-by", "krmpod"},
                                  {"krmpod.dev/function", "true"},
                                  {"krmpod.dev/network", "none"}};
static struct label granted_pod[] = {{"app.kubernetes.io/managed-by", "krmpod"},
                                     {"krmpod.dev/function", "true"},
                                     {"krmpod.dev/network", "granted"}};

TEST(selectors)
{
	bool ok;
	struct json *all = parse("{}");
	CHECK(netpol_selector_matches(all, none_pod, 3, &ok) && ok);
	struct json *ml = parse("{matchLabels: {krmpod.dev/network: granted}}");
	CHECK(!netpol_selector_matches(ml, none_pod, 3, &ok) && ok);
	CHECK(netpol_selector_matches(ml, granted_pod, 3, &ok) && ok);
	struct json *in = parse("{matchExpressions: [{key: krmpod.dev/network, operator: In, "
	                        "values: [none, other]}]}");
	CHECK(netpol_selector_matches(in, none_pod, 3, &ok) && ok);
	CHECK(!netpol_selector_matches(in, granted_pod, 3, &ok) && ok);
	struct json *notin = parse("{matchExpressions: [{key: krmpod.dev/network, operator: "
	                           "NotIn, values: [none]}]}");
	CHECK(!netpol_selector_matches(notin, none_pod, 3, &ok) && ok);
	struct json *dne = parse("{matchExpressions: [{key: team, operator: DoesNotExist}, "
	                         "{key: krmpod.dev/function, operator: Exists}]}");
	CHECK(netpol_selector_matches(dne, none_pod, 3, &ok) && ok);
	struct json *bad = parse("{matchExpressions: [{key: x, operator: Near}]}");
	CHECK(!netpol_selector_matches(bad, none_pod, 3, &ok) && !ok);
	json_free(all), json_free(ml), json_free(in), json_free(notin), json_free(dne);
	json_free(bad);
}

/* The policies manifests/functions/networkpolicies.yaml installs. */
static const char *INSTALLED =
        "{items: ["
        " {metadata: {name: krmpod-deny-all}, spec: {podSelector: {}, policyTypes: [Ingress, "
        "Egress]}},"
        " {metadata: {name: krmpod-network-granted}, spec: {podSelector: {matchLabels: "
        "{krmpod.dev/network: granted}}, policyTypes: [Egress], egress: [{to: [{ipBlock: "
        "{cidr: 0.0.0.0/0}}]}, {ports: [{port: 53}]}]}}]}";

TEST(installed_policies)
{
	struct json *list = parse(INSTALLED);
	struct netpol_verdict v;
	netpol_evaluate(list, none_pod, 3, &v, NULL);
	CHECK(v.ingress_isolated && v.egress_isolated);
	CHECK_INT(v.ingress_rules, 0);
	CHECK_INT(v.egress_rules, 0);
	CHECK_STR(v.selecting.data, "krmpod-deny-all");
	netpol_verdict_clear(&v);
	netpol_evaluate(list, granted_pod, 3, &v, NULL);
	CHECK(v.egress_isolated);
	CHECK_INT(v.egress_rules, 2);
	CHECK_STR(v.selecting.data, "krmpod-deny-all, krmpod-network-granted");
	netpol_verdict_clear(&v);
	json_free(list);
}

TEST(no_policies_and_defaults)
{
	struct json *empty = parse("{items: []}");
	struct netpol_verdict v;
	netpol_evaluate(empty, none_pod, 3, &v, NULL);
	CHECK(!v.ingress_isolated && !v.egress_isolated && v.selecting.len == 0);
	netpol_verdict_clear(&v);
	/* Without policyTypes: Ingress always; Egress only with egress rules. */
	struct json *ing = parse("{items: [{metadata: {name: a}, spec: {podSelector: {}}}]}");
	netpol_evaluate(ing, none_pod, 3, &v, NULL);
	CHECK(v.ingress_isolated && !v.egress_isolated);
	netpol_verdict_clear(&v);
	struct json *bad = parse("{items: [{metadata: {name: odd}, spec: {podSelector: "
	                         "{matchExpressions: [{key: x, operator: Near}]}}}]}");
	struct buf invalid;
	buf_init(&invalid, 0);
	netpol_evaluate(bad, none_pod, 3, &v, &invalid);
	CHECK(v.selecting.len == 0);
	CHECK_STR(invalid.data, "odd");
	netpol_verdict_clear(&v);
	buf_free(&invalid);
	json_free(empty), json_free(ing), json_free(bad);
}

int main(void)
{
	RUN(selectors);
	RUN(installed_policies);
	RUN(no_policies_and_defaults);
	return check_summary();
}

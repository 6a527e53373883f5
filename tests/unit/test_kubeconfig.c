/* Unit tests: kubeconfig. The server URL parser both clients use (the path prefix kept),
 * and the TLS settings a kubeconfig gives: insecure-skip-tls-verify honoured as kubectl
 * honours it, the CA both clients verify against. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "check.h"
#include "config/kubeconfig.h"

static void parses(const char *url, const char *host, int port, const char *prefix)
{
	struct kube_server s;
	struct err *e = NULL;
	CHECK_INT(kube_server_parse(url, &s, &e), 0);
	if (e == NULL) {
		CHECK_STR(s.scheme, "https");
		CHECK_STR(s.host, host);
		CHECK_INT(s.port, port);
		CHECK_STR(s.prefix, prefix);
	}
	err_free(e);
	kube_server_clear(&s);
}

static void refuses(const char *url, const char *why)
{
	struct kube_server s;
	struct err *e = NULL;
	CHECK_INT(kube_server_parse(url, &s, &e), -1);
	CHECK(e && e->code == ERR_CONFIG);
	CHECK_CONTAINS(e ? e->msg : NULL, url);
	CHECK_CONTAINS(e ? e->msg : NULL, why);
	err_free(e);
}

TEST(server_urls)
{
	parses("https://10.96.0.1:443", "10.96.0.1", 443, "");
	parses("https://api.example.com", "api.example.com", 443, "");
	parses("https://api.example.com:6443/", "api.example.com", 6443, "");
	parses("https://gw.example.com/k8s/", "gw.example.com", 443, "/k8s");
	parses("https://gw.example.com:8443/clusters/prod//", "gw.example.com", 8443,
	       "/clusters/prod");
	parses("https://[fd00::1]:6443/k8s", "fd00::1", 6443, "/k8s");
	parses("https://[fd00::1]", "fd00::1", 443, "");
	refuses("api.example.com:6443", "has no scheme");
	refuses("https://:6443", "has no host");
	refuses("https://api.example.com:0", "bad port");
	refuses("https://api.example.com:70000", "bad port");
	refuses("https://api.example.com:64x3", "bad port");
	refuses("https://[fd00::1:6443", "IPv6");
	refuses("https://api.example.com/k8s?x=1", "query or fragment");
}

/* Writes a kubeconfig with one cluster (its extra lines) and a token user. */
static char *write_kubeconfig(const char *cluster_lines)
{
	char *path = xstrdup("/tmp/krmpod-unit-kubeconfig-XXXXXX");
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	fprintf(f,
	        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
	        "clusters:\n- name: k\n  cluster:\n    server: https://gw.example.com/k8s/\n%s"
	        "users:\n- name: u\n  user:\n    token: t\n"
	        "contexts:\n- name: c\n  context: {cluster: k, user: u, namespace: fns}\n",
	        cluster_lines);
	fclose(f);
	return path;
}

TEST(kubeconfig_keeps_the_prefix_and_the_ca)
{
	/* "hello" is no certificate, but loading does not parse it: the clients do. */
	char *path = write_kubeconfig("    certificate-authority-data: aGVsbG8=\n");
	struct kube_config *cfg = NULL;
	struct err *e = NULL;
	CHECK_INT(kube_config_load_kubeconfig(path, NULL, &cfg, &e), 0);
	if (cfg) {
		CHECK_STR(cfg->server, "https://gw.example.com/k8s");
		CHECK_STR(cfg->srv.prefix, "/k8s");
		CHECK_STR(cfg->namespace, "fns");
		const char *pem, *file;
		size_t len;
		kube_config_ca(cfg, &pem, &len, &file);
		CHECK(pem != NULL && len == 5 && memcmp(pem, "hello", 5) == 0);
		CHECK(file == NULL);
	}
	kube_config_free(cfg);
	unlink(path);
	free(path);
}

TEST(insecure_skip_tls_verify_as_kubectl)
{
	char *path = write_kubeconfig("    insecure-skip-tls-verify: true\n");
	struct kube_config *cfg = NULL;
	struct err *e = NULL;
	CHECK_INT(kube_config_load_kubeconfig(path, NULL, &cfg, &e), 0);
	if (cfg) {
		CHECK(cfg->insecure);
		const char *pem, *file;
		size_t len;
		kube_config_ca(cfg, &pem, &len, &file);
		CHECK(pem == NULL && file == NULL); /* nothing to verify against: not verified */
	}
	kube_config_free(cfg);
	unlink(path);
	free(path);
	/* kubectl: "specifying a root certificates file with the insecure flag is not allowed" */
	path = write_kubeconfig("    insecure-skip-tls-verify: true\n"
	                        "    certificate-authority-data: aGVsbG8=\n");
	cfg = NULL;
	CHECK_INT(kube_config_load_kubeconfig(path, NULL, &cfg, &e), -1);
	CHECK(cfg == NULL);
	CHECK_CONTAINS(e ? e->msg : NULL, "cluster \"k\" sets insecure-skip-tls-verify and a "
	                                  "certificate-authority");
	CHECK_CONTAINS(e ? e->msg : NULL, "remove one of them");
	err_free(e);
	unlink(path);
	free(path);
}

int main(void)
{
	RUN(server_urls);
	RUN(kubeconfig_keeps_the_prefix_and_the_ca);
	RUN(insecure_skip_tls_verify_as_kubectl);
	return check_summary();
}

/* fuzz_kubeconfig.c — loading a kubeconfig (src/kube/kubeconfig.h): YAML, `*-data` base64,
 * files named relative to the kubeconfig, the merge of a KUBECONFIG list; then the REST
 * client's set-up from it (TLS blobs, tls-server-name; no connection is made).
 *
 * The input is written into a private scratch directory: the text before the first "#@ NAME"
 * line is `config`, each such line starts another file (a second kubeconfig `config2`,
 * which the KUBECONFIG list names too, or a CA, certificate, key or token file).
 *
 * Invariants: a failure sets its error; a loaded configuration has an https server whose
 * host is not empty and whose port is valid, PEM blobs NUL-terminated at their length, a
 * client certificate only with its key, never insecure with a CA, and a client. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/kubeconfig.h"
#include "fuzz_util.h"
#include "kube/kube_http.h"

static void check_blob(const char *what, const char *p, size_t len)
{
	if (p && p[len] != '\0')
		fuzz_fail("the %s is not NUL-terminated at its length", what);
}

static void check_config(struct kube_config *c)
{
	if (c->server == NULL || strncmp(c->server, "https://", 8) != 0)
		fuzz_fail("server %s", c->server ? c->server : "(null)");
	size_t n = strlen(c->server);
	if (n > 8 && c->server[n - 1] == '/')
		fuzz_fail("server %s ends in '/'", c->server);
	if (c->srv.host == NULL || c->srv.host[0] == '\0' || c->srv.port < 1 ||
	    c->srv.port > 65535 || c->srv.prefix == NULL || strcmp(c->srv.scheme, "https") != 0)
		fuzz_fail("server %s parsed badly", c->server);
	if (c->srv.prefix[0] &&
	    (c->srv.prefix[0] != '/' || c->srv.prefix[strlen(c->srv.prefix) - 1] == '/'))
		fuzz_fail("server %s: prefix \"%s\"", c->server, c->srv.prefix);
	check_blob("CA", c->ca_pem, c->ca_len);
	check_blob("client certificate", c->cert_pem, c->cert_len);
	check_blob("client key", c->key_pem, c->key_len);
	if ((c->cert_pem == NULL) != (c->key_pem == NULL))
		fuzz_fail("a client certificate without its key, or the other way round");
	if (c->insecure && c->ca_pem)
		fuzz_fail("insecure-skip-tls-verify together with a CA");
	const char *pem = NULL, *file = NULL;
	size_t pem_len = 0;
	kube_config_ca(c, &pem, &pem_len, &file);
	if (c->insecure && (pem || file))
		fuzz_fail("an insecure configuration names a CA to verify with");

	struct kube_client *client = NULL;
	struct err *e = NULL;
	int rc = kube_client_new(c, &client, &e);
	fuzz_check_err(rc, e, "kube_client_new");
	kube_client_free(client);
	err_free(e);

	char *token = NULL;
	e = NULL;
	rc = kube_config_token(c, false, &token, &e);
	fuzz_check_err(rc, e, "kube_config_token");
	if (rc == 0 && token && token[0] == '\0')
		fuzz_fail("an empty token");
	free(token);
	err_free(e);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	log_set_level(LOG_ERROR);
	fuzz_scratch();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *dir = fuzz_scratch();
	fuzz_write_tree(dir, "config", data, size);
	char list[4200];
	snprintf(list, sizeof(list), "%s/config:%s/config2", dir, dir);

	struct kube_config *cfg = NULL;
	struct err *e = NULL;
	int rc = kube_config_load_kubeconfig(list, NULL, &cfg, &e);
	fuzz_check_err(rc, e, "kube_config_load_kubeconfig");
	if (rc == 0)
		check_config(cfg);
	kube_config_free(cfg);
	err_free(e);

	/* The server URL parser alone, on the input's first line. */
	const char *nl = memchr(data, '\n', size);
	char *url = fuzz_cstr(data, nl ? (size_t)(nl - (const char *)data) : size);
	struct kube_server srv;
	e = NULL;
	rc = kube_server_parse(url, &srv, &e);
	fuzz_check_err(rc, e, "kube_server_parse");
	if (rc == 0) {
		if (srv.host[0] == '\0' || srv.port < 1 || srv.port > 65535)
			fuzz_fail("URL %s: host \"%s\", port %d", url, srv.host, srv.port);
		kube_server_clear(&srv);
	}
	err_free(e);
	free(url);

	fuzz_empty_dir(dir);
	return 0;
}

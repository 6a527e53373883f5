/* kubeconfig.h — where the cluster is and who we are: in-cluster service-account files or
 * a kubeconfig. Produces one struct kube_config that the REST client (kube_http) and the
 * stream client (kube_stream) both use: the same server (one parser, which keeps a path
 * prefix such as https://host/k8s/ for an API server behind a proxy) and the same TLS
 * settings (kube_config_ca()).
 *
 * Selection, first match wins:
 *   1. KUBECONFIG is set (a ':'-separated list, merged first-wins like kubectl: the first
 *      file that sets current-context wins; for each named cluster/user/context the first
 *      file that defines it wins). The context named by the caller (KRMPOD_CONTEXT) overrides
 *      current-context.
 *   2. KUBERNETES_SERVICE_HOST is set: in-cluster. Server https://HOST:PORT (IPv6 hosts are
 *      bracketed), token/ca.crt/namespace from the caller's service-account directory
 *      (KRMPOD_SERVICEACCOUNT_DIR; default /var/run/secrets/kubernetes.io/serviceaccount).
 *   3. $HOME/.kube/config if it exists.
 *   Otherwise ERR_CONFIG saying all three were tried and how to fix it.
 *
 * In a kubeconfig: clusters[].cluster.{server, certificate-authority,
 * certificate-authority-data, insecure-skip-tls-verify, tls-server-name},
 * users[].user.{client-certificate[-data], client-key[-data], token, tokenFile},
 * contexts[].context.{cluster, user, namespace}. *-data is base64 PEM; file paths are
 * relative to the kubeconfig that names them. insecure-skip-tls-verify is honoured as kubectl
 * honours it: the server's certificate is not verified (said once, as a warning), and a
 * cluster that also names a certificate authority is refused, as kubectl refuses it. `exec` and `auth-provider` users are rejected
 * with an ERR_CONFIG naming the user (not supported). Keys and certificates stay in memory;
 * nothing is ever written to a temporary file.
 */
#ifndef KRMPOD_KUBECONFIG_H
#define KRMPOD_KUBECONFIG_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "base/err.h"

/* A server URL taken apart (kube_server_parse). */
struct kube_server {
	char *scheme; /* "https" ("http" only in configurations tests make by hand) */
	char *host;   /* without the brackets of an IPv6 address */
	int port;     /* 443 when the URL names none */
	char *prefix; /* the URL's path without trailing slashes: "" or "/k8s" */
};

struct kube_config {
	char *source; /* "in-cluster (DIR)" or "kubeconfig PATH context NAME": for messages */
	char *server; /* "https://host:port[/prefix]", no trailing slash */
	struct kube_server srv; /* server, parsed */
	char *tls_server_name;  /* name to verify the server certificate against, or NULL */
	bool insecure;          /* insecure-skip-tls-verify */
	char *ca_pem;           /* CA bundle (PEM, NUL-terminated) or NULL */
	size_t ca_len;          /* length without the NUL */
	char *cert_pem;         /* client certificate (PEM) or NULL */
	size_t cert_len;
	char *key_pem; /* client key (PEM) or NULL */
	size_t key_len;
	char *namespace; /* context namespace / in-cluster namespace file; NULL if unset */

	/* Bearer token state; use kube_config_token(), which is thread-safe. */
	char *token;      /* static token, or the last value read from token_file */
	char *token_file; /* re-read at most every 60 s, and on demand after a 401 */
	time_t token_read_at;
	pthread_mutex_t token_lock;
};

/* Where kube_config_load() looks, besides KUBECONFIG, KUBERNETES_SERVICE_HOST/_PORT and
 * HOME (read from the process environment). Both may be NULL. */
struct kube_config_opts {
	const char *context; /* overrides current-context (KRMPOD_CONTEXT) */
	const char
	        *sa_dir; /* the in-cluster service-account directory (KRMPOD_SERVICEACCOUNT_DIR) */
};

/* Loads the configuration as described above. *out is owned by the caller. */
int kube_config_load(const struct kube_config_opts *o, struct kube_config **out, struct err **err);

/* Parses a server URL: "https://host[:port][/prefix]" (an IPv6 host in brackets). Fails with
 * ERR_CONFIG naming the URL when it has no scheme or host, a bad port, a query or a
 * fragment. Fills *out (free with kube_server_clear). */
int kube_server_parse(const char *url, struct kube_server *out, struct err **err);
void kube_server_clear(struct kube_server *s);

/* Sets cfg->server (without trailing slashes) and cfg->srv from url; as kube_server_parse. */
int kube_config_set_server(struct kube_config *cfg, const char *url, struct err **err);

/* The certificate authority both clients verify the server against: *pem (cfg->ca_pem, with
 * its length) when the configuration has one, else *file, the system's CA bundle (NULL when
 * none of the usual places has one). Both NULL when cfg->insecure. */
void kube_config_ca(const struct kube_config *cfg, const char **pem, size_t *pem_len,
                    const char **file);

/* A new empty configuration (for tests and loaders); free with kube_config_free. */
struct kube_config *kube_config_new(void);

/* Loads from an explicit KUBECONFIG-style list (for tests and callers that know the path);
 * `context` overrides current-context when not NULL. */
int kube_config_load_kubeconfig(const char *list, const char *context, struct kube_config **out,
                                struct err **err);

/* Loads in-cluster configuration from the given service-account directory and the
 * KUBERNETES_SERVICE_HOST/_PORT variables. */
int kube_config_load_incluster(const char *sa_dir, struct kube_config **out, struct err **err);

/* Returns the bearer token to send, or NULL if this config has none (client certificates).
 * Re-reads token_file when the last read is older than 60 s or `force_reread` is true (after a
 * 401). The returned string is a copy the caller frees. Fails with ERR_CONFIG naming the file
 * if it cannot be read or is empty. */
int kube_config_token(struct kube_config *cfg, bool force_reread, char **out, struct err **err);

void kube_config_free(struct kube_config *cfg);

#endif

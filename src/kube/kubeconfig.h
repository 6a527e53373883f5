/* kubeconfig.h — where the cluster is and who we are: in-cluster service-account files or
 * a kubeconfig. Produces one struct kube_config that the REST client (kube_http) and the
 * stream client (kube_attach) both use.
 *
 * Selection, first match wins:
 *   1. KUBECONFIG is set (a ':'-separated list, merged first-wins like kubectl: the first
 *      file that sets current-context wins; for each named cluster/user/context the first
 *      file that defines it wins). KRMPOD_CONTEXT overrides current-context.
 *   2. KUBERNETES_SERVICE_HOST is set: in-cluster. Server https://HOST:PORT (IPv6 hosts are
 *      bracketed), token/ca.crt/namespace from KRMPOD_SERVICEACCOUNT_DIR (default
 *      /var/run/secrets/kubernetes.io/serviceaccount).
 *   3. $HOME/.kube/config if it exists.
 *   Otherwise ERR_CONFIG saying all three were tried and how to fix it.
 *
 * In a kubeconfig: clusters[].cluster.{server, certificate-authority,
 * certificate-authority-data, insecure-skip-tls-verify, tls-server-name},
 * users[].user.{client-certificate[-data], client-key[-data], token, tokenFile},
 * contexts[].context.{cluster, user, namespace}. *-data is base64 PEM; file paths are
 * relative to the kubeconfig that names them. `exec` and `auth-provider` users are rejected
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

struct kube_config {
	char *source; /* "in-cluster (DIR)" or "kubeconfig PATH context NAME": for messages */
	char *server; /* "https://host:port", no trailing slash */
	char *tls_server_name; /* name to verify the server certificate against, or NULL */
	bool insecure;         /* insecure-skip-tls-verify */
	char *ca_pem;          /* CA bundle (PEM, NUL-terminated) or NULL */
	size_t ca_len;         /* length without the NUL */
	char *cert_pem;        /* client certificate (PEM) or NULL */
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

/* Loads the configuration as described above. *out is owned by the caller. */
int kube_config_load(struct kube_config **out, struct err **err);

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

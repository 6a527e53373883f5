/* kubeconfig.c — see kubeconfig.h. */
#include "kube/kubeconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/json.h"
#include "base/size_limits.h"
#include "base/xalloc.h"

#define DEFAULT_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define TOKEN_MAX_AGE  60

static int read_file(const char *path, size_t limit, const char *what, char **out, size_t *len,
                     struct err **err)
{
	return buf_read_file(path, limit, what, ERR_CONFIG, out, len, err);
}

static void trim(char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
}

static struct kube_config *config_new(void)
{
	struct kube_config *c = xcalloc(1, sizeof(*c));
	pthread_mutex_init(&c->token_lock, NULL);
	return c;
}

void kube_config_free(struct kube_config *cfg)
{
	if (cfg == NULL)
		return;
	free(cfg->source);
	free(cfg->server);
	free(cfg->tls_server_name);
	free(cfg->ca_pem);
	free(cfg->cert_pem);
	if (cfg->key_pem) {
		explicit_bzero(cfg->key_pem, cfg->key_len);
		free(cfg->key_pem);
	}
	free(cfg->namespace);
	if (cfg->token) {
		explicit_bzero(cfg->token, strlen(cfg->token));
		free(cfg->token);
	}
	free(cfg->token_file);
	pthread_mutex_destroy(&cfg->token_lock);
	free(cfg);
}

static int read_token_locked(struct kube_config *cfg, struct err **err)
{
	char *tok = NULL;
	size_t len = 0;
	if (read_file(cfg->token_file, LIMIT_TOKEN_FILE, "token file", &tok, &len, err) < 0)
		return -1;
	trim(tok);
	if (tok[0] == '\0') {
		free(tok);
		return err_set(err, ERR_CONFIG, "token file %s is empty", cfg->token_file);
	}
	if (cfg->token) {
		explicit_bzero(cfg->token, strlen(cfg->token));
		free(cfg->token);
	}
	cfg->token = tok;
	cfg->token_read_at = time(NULL);
	return 0;
}

int kube_config_token(struct kube_config *cfg, bool force_reread, char **out, struct err **err)
{
	*out = NULL;
	pthread_mutex_lock(&cfg->token_lock);
	int rc = 0;
	if (cfg->token_file && (force_reread || cfg->token == NULL ||
	                        time(NULL) - cfg->token_read_at >= TOKEN_MAX_AGE))
		rc = read_token_locked(cfg, err);
	if (rc == 0 && cfg->token)
		*out = xstrdup(cfg->token);
	pthread_mutex_unlock(&cfg->token_lock);
	return rc;
}

int kube_config_load_incluster(const char *sa_dir, struct kube_config **out, struct err **err)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	if (host == NULL || *host == '\0')
		return err_set(err, ERR_CONFIG,
		               "in-cluster configuration: KUBERNETES_SERVICE_HOST is not set");
	if (port == NULL || *port == '\0')
		port = "443";
	struct kube_config *c = config_new();
	c->source = xasprintf("in-cluster (%s)", sa_dir);
	if (strchr(host, ':') && host[0] != '[')
		c->server = xasprintf("https://[%s]:%s", host, port);
	else
		c->server = xasprintf("https://%s:%s", host, port);
	c->token_file = xasprintf("%s/token", sa_dir);
	cleanup_free char *ca_path = xasprintf("%s/ca.crt", sa_dir);
	cleanup_free char *ns_path = xasprintf("%s/namespace", sa_dir);
	char *tok = NULL;
	if (kube_config_token(c, true, &tok, err) < 0 ||
	    read_file(ca_path, LIMIT_PEM_FILE, "service-account CA", &c->ca_pem, &c->ca_len, err) <
	            0) {
		kube_config_free(c);
		return err_wrap(err,
		                "in-cluster configuration (set KRMPOD_SERVICEACCOUNT_DIR if the "
		                "token is mounted elsewhere)");
	}
	free(tok);
	char *ns = NULL;
	size_t nslen = 0;
	if (access(ns_path, F_OK) == 0) {
		if (read_file(ns_path, 256, "namespace file", &ns, &nslen, err) < 0) {
			kube_config_free(c);
			return -1;
		}
		trim(ns);
		if (ns[0])
			c->namespace = ns;
		else
			free(ns);
	}
	*out = c;
	return 0;
}

/* --- kubeconfig ------------------------------------------------------------------------ */

struct kfile {
	char *path;
	char *dir;
	struct json *doc;
};

struct kfiles {
	struct kfile *f;
	size_t n;
};

static void kfiles_free(struct kfiles *fs)
{
	for (size_t i = 0; i < fs->n; i++) {
		free(fs->f[i].path);
		free(fs->f[i].dir);
		json_free(fs->f[i].doc);
	}
	free(fs->f);
}

/* Finds `name` in the named list `list` ("clusters", "users", "contexts") across the files,
 * first file wins; returns the inner object (key `inner`) and the file. */
static const struct json *find_named(const struct kfiles *fs, const char *list, const char *inner,
                                     const char *name, const struct kfile **from)
{
	for (size_t i = 0; i < fs->n; i++) {
		const struct json *arr = json_get(fs->f[i].doc, list);
		for (size_t k = 0; k < json_len(arr); k++) {
			const struct json *e = json_at(arr, k);
			const char *n = json_str(json_get(e, "name"));
			if (n && strcmp(n, name) == 0) {
				*from = &fs->f[i];
				return json_get(e, inner);
			}
		}
	}
	return NULL;
}

static char *resolve(const struct kfile *f, const char *path)
{
	if (path[0] == '/')
		return xstrdup(path);
	return xasprintf("%s/%s", f->dir, path);
}

/* Loads `key-data` (base64) or `key` (a file relative to the kubeconfig). */
static int load_blob(const struct kfile *f, const struct json *obj, const char *key,
                     const char *entry, char **out, size_t *len, struct err **err)
{
	char data_key[96];
	snprintf(data_key, sizeof(data_key), "%s-data", key);
	const char *data = json_scalar(json_get(obj, data_key));
	if (data && *data) {
		char what[256];
		snprintf(what, sizeof(what), "kubeconfig %s: %s %s", f->path, entry, data_key);
		return base64_decode(data, strlen(data), what, out, len, err);
	}
	const char *path = json_str(json_get(obj, key));
	if (path && *path) {
		cleanup_free char *full = resolve(f, path);
		if (read_file(full, LIMIT_PEM_FILE, key, out, len, err) < 0)
			return err_wrap(err, "kubeconfig %s: %s", f->path, entry);
	}
	return 0;
}

static int load_files(const char *list, struct kfiles *fs, struct err **err)
{
	cleanup_free char *copy = xstrdup(list);
	char *save = NULL;
	for (char *p = strtok_r(copy, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
		if (*p == '\0' || access(p, F_OK) != 0)
			continue; /* like kubectl: missing files in the list are skipped */
		char *text = NULL;
		size_t len = 0;
		if (read_file(p, LIMIT_KUBECONFIG, "kubeconfig", &text, &len, err) < 0)
			return -1;
		cleanup_free char *what = xasprintf("kubeconfig %s", p);
		struct json *doc = NULL;
		int rc = json_parse(text, len, what, &doc, err);
		free(text);
		if (rc < 0)
			return -1;
		fs->f = xrealloc(fs->f, (fs->n + 1) * sizeof(*fs->f));
		struct kfile *f = &fs->f[fs->n++];
		f->path = xstrdup(p);
		cleanup_free char *d = xstrdup(p);
		char *slash = strrchr(d, '/');
		f->dir = slash ? xstrndup(d, (size_t)(slash - d) + (slash == d)) : xstrdup(".");
		f->doc = doc;
	}
	return 0;
}

static int build_from_files(const struct kfiles *fs, const char *list, const char *context,
                            struct kube_config **out, struct err **err)
{
	const char *ctx_name = context;
	const char *ctx_from = "KRMPOD_CONTEXT";
	for (size_t i = 0; ctx_name == NULL && i < fs->n; i++) {
		const char *cc = json_str(json_get(fs->f[i].doc, "current-context"));
		if (cc && *cc) {
			ctx_name = cc;
			ctx_from = fs->f[i].path;
		}
	}
	if (ctx_name == NULL)
		return err_set(
		        err, ERR_CONFIG,
		        "kubeconfig %s: no current-context is set: set one with `kubectl config "
		        "use-context NAME` or set KRMPOD_CONTEXT",
		        list);
	const struct kfile *cf = NULL;
	const struct json *ctx = find_named(fs, "contexts", "context", ctx_name, &cf);
	if (ctx == NULL)
		return err_set(err, ERR_CONFIG,
		               "kubeconfig %s: context \"%s\" (from %s) is not defined", list,
		               ctx_name, ctx_from);
	const char *cluster_name = json_str(json_get(ctx, "cluster"));
	const char *user_name = json_str(json_get(ctx, "user"));
	if (cluster_name == NULL)
		return err_set(err, ERR_CONFIG, "kubeconfig %s: context \"%s\" names no cluster",
		               cf->path, ctx_name);
	const struct kfile *clf = NULL, *uf = NULL;
	const struct json *cluster = find_named(fs, "clusters", "cluster", cluster_name, &clf);
	if (cluster == NULL)
		return err_set(err, ERR_CONFIG,
		               "kubeconfig %s: cluster \"%s\" (of context \"%s\") is not defined",
		               list, cluster_name, ctx_name);
	const struct json *user = NULL;
	if (user_name && *user_name) {
		user = find_named(fs, "users", "user", user_name, &uf);
		if (user == NULL)
			return err_set(
			        err, ERR_CONFIG,
			        "kubeconfig %s: user \"%s\" (of context \"%s\") is not defined",
			        list, user_name, ctx_name);
	}
	cleanup_free char *centry = xasprintf("cluster \"%s\"", cluster_name);
	struct kube_config *c = config_new();
	c->source = xasprintf("kubeconfig %s, context %s", list, ctx_name);
	const char *server = json_str(json_get(cluster, "server"));
	if (server == NULL || *server == '\0') {
		err_set(err, ERR_CONFIG, "kubeconfig %s: cluster \"%s\" has no server", clf->path,
		        cluster_name);
		goto fail;
	}
	if (strncmp(server, "https://", 8) != 0) {
		err_set(err, ERR_CONFIG,
		        "kubeconfig %s: cluster \"%s\": server %s is not https://: krmpod requires "
		        "TLS",
		        clf->path, cluster_name, server);
		goto fail;
	}
	c->server = xstrdup(server);
	size_t sl = strlen(c->server);
	while (sl > 8 && c->server[sl - 1] == '/')
		c->server[--sl] = '\0';
	const char *tsn = json_str(json_get(cluster, "tls-server-name"));
	if (tsn && *tsn)
		c->tls_server_name = xstrdup(tsn);
	bool insecure = false;
	if (json_bool(json_get(cluster, "insecure-skip-tls-verify"), &insecure))
		c->insecure = insecure;
	if (load_blob(clf, cluster, "certificate-authority", centry, &c->ca_pem, &c->ca_len, err) <
	    0)
		goto fail;
	const char *ns = json_str(json_get(ctx, "namespace"));
	if (ns && *ns)
		c->namespace = xstrdup(ns);
	if (user) {
		cleanup_free char *uentry = xasprintf("user \"%s\"", user_name);
		if (json_get(user, "exec") || json_get(user, "auth-provider")) {
			err_set(err, ERR_CONFIG,
			        "kubeconfig %s: user \"%s\" uses %s, which krmpod does not "
			        "support: use a "
			        "token, tokenFile or client certificate",
			        uf->path, user_name,
			        json_get(user, "exec") ? "exec" : "auth-provider");
			goto fail;
		}
		if (load_blob(uf, user, "client-certificate", uentry, &c->cert_pem, &c->cert_len,
		              err) < 0 ||
		    load_blob(uf, user, "client-key", uentry, &c->key_pem, &c->key_len, err) < 0)
			goto fail;
		if ((c->cert_pem == NULL) != (c->key_pem == NULL)) {
			err_set(err, ERR_CONFIG,
			        "kubeconfig %s: user \"%s\" has a client %s but no client %s",
			        uf->path, user_name, c->cert_pem ? "certificate" : "key",
			        c->cert_pem ? "key" : "certificate");
			goto fail;
		}
		const char *token = json_str(json_get(user, "token"));
		const char *token_file = json_str(json_get(user, "tokenFile"));
		if (token && *token) {
			c->token = xstrdup(token);
		} else if (token_file && *token_file) {
			c->token_file = resolve(uf, token_file);
			char *tok = NULL;
			if (kube_config_token(c, true, &tok, err) < 0) {
				err_wrap(err, "kubeconfig %s: user \"%s\" tokenFile", uf->path,
				         user_name);
				goto fail;
			}
			free(tok);
		}
	}
	*out = c;
	return 0;
fail:
	kube_config_free(c);
	return -1;
}

int kube_config_load_kubeconfig(const char *list, const char *context, struct kube_config **out,
                                struct err **err)
{
	struct kfiles fs = {0};
	int rc = load_files(list, &fs, err);
	if (rc == 0 && fs.n == 0)
		rc = err_set(err, ERR_CONFIG, "kubeconfig: none of the files in \"%s\" exists",
		             list);
	if (rc == 0)
		rc = build_from_files(&fs, list, context, out, err);
	kfiles_free(&fs);
	return rc;
}

int kube_config_load(struct kube_config **out, struct err **err)
{
	const char *context = getenv("KRMPOD_CONTEXT");
	if (context && *context == '\0')
		context = NULL;
	const char *list = getenv("KUBECONFIG");
	if (list && *list) {
		if (kube_config_load_kubeconfig(list, context, out, err) < 0)
			return err_wrap(err, "KUBECONFIG=%s", list);
		return 0;
	}
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	if (host && *host) {
		const char *sa = getenv("KRMPOD_SERVICEACCOUNT_DIR");
		return kube_config_load_incluster(sa && *sa ? sa : DEFAULT_SA_DIR, out, err);
	}
	const char *home = getenv("HOME");
	if (home && *home) {
		cleanup_free char *path = xasprintf("%s/.kube/config", home);
		if (access(path, F_OK) == 0)
			return kube_config_load_kubeconfig(path, context, out, err);
	}
	return err_set(
	        err, ERR_CONFIG,
	        "no cluster credentials: KUBECONFIG is not set, this is not a pod "
	        "(KUBERNETES_SERVICE_HOST is not set) and $HOME/.kube/config does not exist; "
	        "set KUBECONFIG or run in a pod with a service-account token");
}

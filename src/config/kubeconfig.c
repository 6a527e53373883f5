/* kubeconfig.c — see kubeconfig.h. */
#include "config/kubeconfig.h"

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
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "http/http_util.h"

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

struct kube_config *kube_config_new(void)
{
	struct kube_config *c = xcalloc(1, sizeof(*c));
	pthread_mutex_init(&c->token_lock, NULL);
	return c;
}

void kube_server_clear(struct kube_server *s)
{
	free(s->scheme);
	free(s->host);
	free(s->prefix);
	memset(s, 0, sizeof(*s));
}

static int bad_server(const char *url, const char *why, struct err **err)
{
	return err_set(err, ERR_CONFIG, "server URL \"%s\" %s", url, why);
}

int kube_server_parse(const char *url, struct kube_server *out, struct err **err)
{
	memset(out, 0, sizeof(*out));
	const char *sep = strstr(url, "://");
	if (sep == NULL || sep == url)
		return bad_server(url, "has no scheme (write https://HOST[:PORT][/PATH])", err);
	if (strpbrk(url, "?#"))
		return bad_server(url, "has a query or fragment; write https://HOST[:PORT][/PATH]",
		                  err);
	const char *h = sep + 3, *end = h + strcspn(h, "/");
	const char *port = NULL;
	size_t hlen;
	if (*h == '[') {
		const char *rb = memchr(h, ']', (size_t)(end - h));
		if (rb == NULL || (rb[1] != ':' && rb + 1 != end))
			return bad_server(url, "has a malformed IPv6 host", err);
		port = rb[1] == ':' ? rb + 2 : NULL;
		h++;
		hlen = (size_t)(rb - h);
	} else {
		const char *colon = memchr(h, ':', (size_t)(end - h));
		port = colon ? colon + 1 : NULL;
		hlen = (size_t)((colon ? colon : end) - h);
	}
	if (hlen == 0)
		return bad_server(url, "has no host", err);
	int portno = 443;
	if (port) {
		char *pend = NULL;
		long v = strtol(port, &pend, 10);
		if (pend == port || pend != end || v <= 0 || v > 65535)
			return bad_server(url, "has a bad port", err);
		portno = (int)v;
	}
	size_t plen = strlen(end);
	while (plen > 0 && end[plen - 1] == '/')
		plen--;
	out->scheme = xstrndup(url, (size_t)(sep - url));
	out->host = xstrndup(h, hlen);
	out->port = portno;
	out->prefix = xstrndup(end, plen);
	return 0;
}

int kube_config_set_server(struct kube_config *cfg, const char *url, struct err **err)
{
	struct kube_server srv;
	if (kube_server_parse(url, &srv, err) < 0)
		return -1;
	kube_server_clear(&cfg->srv);
	cfg->srv = srv;
	free(cfg->server);
	size_t n = strlen(url);
	while (n > 0 && url[n - 1] == '/')
		n--;
	cfg->server = xstrndup(url, n);
	return 0;
}

void kube_config_ca(const struct kube_config *cfg, const char **pem, size_t *pem_len,
                    const char **file)
{
	*pem = NULL;
	*pem_len = 0;
	*file = NULL;
	if (cfg->insecure)
		return;
	if (cfg->ca_pem) {
		*pem = cfg->ca_pem;
		*pem_len = cfg->ca_len;
		return;
	}
	*file = system_ca_file();
}

void kube_config_free(struct kube_config *cfg)
{
	if (cfg == NULL)
		return;
	free(cfg->source);
	free(cfg->server);
	kube_server_clear(&cfg->srv);
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
	cfg->token_read_at = epoch_s();
	return 0;
}

int kube_config_token(struct kube_config *cfg, bool force_reread, char **out, struct err **err)
{
	*out = NULL;
	pthread_mutex_lock(&cfg->token_lock);
	int rc = 0;
	if (cfg->token_file &&
	    (force_reread || cfg->token == NULL || epoch_s() - cfg->token_read_at >= TOKEN_MAX_AGE))
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
	struct kube_config *c = kube_config_new();
	c->source = xasprintf("in-cluster (%s)", sa_dir);
	bool v6 = strchr(host, ':') && host[0] != '[';
	cleanup_free char *url =
	        xasprintf("https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port);
	if (kube_config_set_server(c, url, err) < 0) {
		kube_config_free(c);
		return err_wrap(err, "in-cluster configuration (KUBERNETES_SERVICE_HOST/_PORT)");
	}
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

/* The context to use, its file, and the cluster and user objects it names (NULL user:
 * none). */
struct selection {
	const char *ctx_name;
	const struct json *ctx;
	const char *cluster_name, *user_name;
	const struct json *cluster, *user;
	const struct kfile *ctx_file, *cluster_file, *user_file;
};

static int select_context(const struct kfiles *fs, const char *list, const char *context,
                          struct selection *sel, struct err **err)
{
	memset(sel, 0, sizeof(*sel));
	const char *ctx_from = "KRMPOD_CONTEXT";
	sel->ctx_name = context;
	for (size_t i = 0; sel->ctx_name == NULL && i < fs->n; i++) {
		const char *cc = json_str(json_get(fs->f[i].doc, "current-context"));
		if (cc && *cc) {
			sel->ctx_name = cc;
			ctx_from = fs->f[i].path;
		}
	}
	if (sel->ctx_name == NULL)
		return err_set(
		        err, ERR_CONFIG,
		        "kubeconfig %s: no current-context is set: set one with `kubectl config "
		        "use-context NAME` or set KRMPOD_CONTEXT",
		        list);
	sel->ctx = find_named(fs, "contexts", "context", sel->ctx_name, &sel->ctx_file);
	if (sel->ctx == NULL)
		return err_set(err, ERR_CONFIG,
		               "kubeconfig %s: context \"%s\" (from %s) is not defined", list,
		               sel->ctx_name, ctx_from);
	sel->cluster_name = json_str(json_get(sel->ctx, "cluster"));
	sel->user_name = json_str(json_get(sel->ctx, "user"));
	if (sel->cluster_name == NULL)
		return err_set(err, ERR_CONFIG, "kubeconfig %s: context \"%s\" names no cluster",
		               sel->ctx_file->path, sel->ctx_name);
	sel->cluster = find_named(fs, "clusters", "cluster", sel->cluster_name, &sel->cluster_file);
	if (sel->cluster == NULL)
		return err_set(err, ERR_CONFIG,
		               "kubeconfig %s: cluster \"%s\" (of context \"%s\") is not defined",
		               list, sel->cluster_name, sel->ctx_name);
	if (sel->user_name && *sel->user_name) {
		sel->user = find_named(fs, "users", "user", sel->user_name, &sel->user_file);
		if (sel->user == NULL)
			return err_set(
			        err, ERR_CONFIG,
			        "kubeconfig %s: user \"%s\" (of context \"%s\") is not defined",
			        list, sel->user_name, sel->ctx_name);
	}
	return 0;
}

/* The cluster's server and TLS settings into c. */
static int load_cluster(const struct selection *sel, struct kube_config *c, struct err **err)
{
	const char *path = sel->cluster_file->path, *name = sel->cluster_name;
	const char *server = json_str(json_get(sel->cluster, "server"));
	if (server == NULL || *server == '\0')
		return err_set(err, ERR_CONFIG, "kubeconfig %s: cluster \"%s\" has no server", path,
		               name);
	if (strncmp(server, "https://", 8) != 0)
		return err_set(err, ERR_CONFIG,
		               "kubeconfig %s: cluster \"%s\": server %s is not https://: krmpod "
		               "requires TLS",
		               path, name, server);
	if (kube_config_set_server(c, server, err) < 0)
		return err_wrap(err, "kubeconfig %s: cluster \"%s\"", path, name);
	const char *tsn = json_str(json_get(sel->cluster, "tls-server-name"));
	if (tsn && *tsn)
		c->tls_server_name = xstrdup(tsn);
	bool insecure = false;
	if (json_bool(json_get(sel->cluster, "insecure-skip-tls-verify"), &insecure))
		c->insecure = insecure;
	cleanup_free char *centry = xasprintf("cluster \"%s\"", name);
	if (load_blob(sel->cluster_file, sel->cluster, "certificate-authority", centry, &c->ca_pem,
	              &c->ca_len, err) < 0)
		return -1;
	if (c->insecure && c->ca_pem)
		return err_set(
		        err, ERR_CONFIG,
		        "kubeconfig %s: cluster \"%s\" sets insecure-skip-tls-verify and a "
		        "certificate-authority: specifying a root certificates file with the "
		        "insecure flag is not allowed (as in kubectl): remove one of them",
		        path, name);
	if (c->insecure)
		log_warn("kubeconfig %s: cluster \"%s\" sets insecure-skip-tls-verify: the API "
		         "server's certificate is not verified (anyone on the path can read the "
		         "credentials and the functions' data)",
		         path, name);
	return 0;
}

/* The user's credentials into c. */
static int load_user(const struct selection *sel, struct kube_config *c, struct err **err)
{
	const struct json *user = sel->user;
	const char *path = sel->user_file->path, *name = sel->user_name;
	if (json_get(user, "exec") || json_get(user, "auth-provider"))
		return err_set(err, ERR_CONFIG,
		               "kubeconfig %s: user \"%s\" uses %s, which krmpod does not support: "
		               "use a token, tokenFile or client certificate",
		               path, name, json_get(user, "exec") ? "exec" : "auth-provider");
	cleanup_free char *uentry = xasprintf("user \"%s\"", name);
	if (load_blob(sel->user_file, user, "client-certificate", uentry, &c->cert_pem,
	              &c->cert_len, err) < 0 ||
	    load_blob(sel->user_file, user, "client-key", uentry, &c->key_pem, &c->key_len, err) <
	            0)
		return -1;
	if ((c->cert_pem == NULL) != (c->key_pem == NULL))
		return err_set(err, ERR_CONFIG,
		               "kubeconfig %s: user \"%s\" has a client %s but no client %s", path,
		               name, c->cert_pem ? "certificate" : "key",
		               c->cert_pem ? "key" : "certificate");
	const char *token = json_str(json_get(user, "token"));
	const char *token_file = json_str(json_get(user, "tokenFile"));
	if (token && *token) {
		c->token = xstrdup(token);
	} else if (token_file && *token_file) {
		c->token_file = resolve(sel->user_file, token_file);
		cleanup_free char *tok = NULL;
		if (kube_config_token(c, true, &tok, err) < 0)
			return err_wrap(err, "kubeconfig %s: user \"%s\" tokenFile", path, name);
	}
	return 0;
}

static int build_from_files(const struct kfiles *fs, const char *list, const char *context,
                            struct kube_config **out, struct err **err)
{
	struct selection sel;
	if (select_context(fs, list, context, &sel, err) < 0)
		return -1;
	struct kube_config *c = kube_config_new();
	c->source = xasprintf("kubeconfig %s, context %s", list, sel.ctx_name);
	if (load_cluster(&sel, c, err) < 0 || (sel.user && load_user(&sel, c, err) < 0)) {
		kube_config_free(c);
		return -1;
	}
	const char *ns = json_str(json_get(sel.ctx, "namespace"));
	if (ns && *ns)
		c->namespace = xstrdup(ns);
	*out = c;
	return 0;
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

int kube_config_load(const struct kube_config_opts *o, struct kube_config **out, struct err **err)
{
	const char *context = o && o->context && *o->context ? o->context : NULL;
	const char *list = getenv("KUBECONFIG");
	if (list && *list) {
		if (kube_config_load_kubeconfig(list, context, out, err) < 0)
			return err_wrap(err, "KUBECONFIG=%s", list);
		return 0;
	}
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	if (host && *host) {
		const char *sa = o && o->sa_dir && *o->sa_dir ? o->sa_dir : DEFAULT_SA_DIR;
		return kube_config_load_incluster(sa, out, err);
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

/* plugin_settings.c — see plugin_settings.h. */
#include "config/plugin_settings.h"

#include <stdlib.h>
#include <string.h>

#include "base/fd_cap.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "config/settings.h"

/* Argo CD's deadline is the application controller's 60 s repo-server call, counted from its
 * request: the git fetch, the tarball to the sidecar and init come out of it before generate
 * starts (docs/install.md, "Timeouts"); 45 s leaves them 15 s. */
#define DEFAULT_GENERATE_TIMEOUT_MS 45000
/* Argo CD's repo-server takes at most 100 MiB from a plugin (ARGOCD_GRPC_MAX_SIZE_MB), the
 * manifests as JSON strings in one gRPC message: 90 MiB of YAML leaves room for that. */
#define DEFAULT_GENERATE_MAX_OUTPUT (90ll << 20)
#define DEFAULT_GENERATE_MAX_STDERR (4ll << 20)
/* A sidecar killed mid-render (the repo-server pod deleted or rolled) leaves its pods to
 * their deadline; the next generates sweep them, one LIST at most this often. */
#define DEFAULT_GC_INTERVAL_MS (5 * 60 * 1000)

static void push(struct cmp_settings *s, size_t *cap, const char *word, size_t n)
{
	if (s->kustomize_argc + 2 > *cap) {
		*cap = *cap ? *cap * 2 : 16;
		s->kustomize_argv = xrealloc(s->kustomize_argv, *cap * sizeof(char *));
	}
	s->kustomize_argv[s->kustomize_argc++] = xstrndup(word, n);
	s->kustomize_argv[s->kustomize_argc] = NULL;
}

/* Splits text on blanks (no quoting: flags with spaces are not supported, and the
 * documentation says so). Returns the number of words. */
static size_t push_words(struct cmp_settings *s, size_t *cap, const char *text)
{
	size_t words = 0;
	for (const char *p = text; *p;) {
		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		const char *q = p;
		while (*q && *q != ' ' && *q != '\t' && *q != '\n')
			q++;
		if (q > p) {
			push(s, cap, p, (size_t)(q - p));
			words++;
		}
		p = q;
	}
	return words;
}

/* The kustomize command line (plugin_settings.h); `cap` is kustomize_argv's room. */
static int load_kustomize(struct cmp_settings *s, char *const *envp, size_t *cap, struct err **err)
{
	const char *kz = settings_env(envp, "KRMPOD_KUSTOMIZE");
	if (push_words(s, cap, kz ? kz : "kustomize") == 0)
		return err_set(
		        err, ERR_CONFIG,
		        "KRMPOD_KUSTOMIZE is blank: set it to the kustomize binary (a path or a "
		        "name on PATH) or to \"kubectl kustomize\"");
	const char *base = strrchr(s->kustomize_argv[0], '/');
	base = base ? base + 1 : s->kustomize_argv[0];
	s->is_kubectl = strcmp(base, "kubectl") == 0;
	if (s->is_kubectl &&
	    (s->kustomize_argc < 2 || strcmp(s->kustomize_argv[1], "kustomize") != 0))
		return err_set(err, ERR_CONFIG,
		               "KRMPOD_KUSTOMIZE=%s: with kubectl, write \"kubectl kustomize\"",
		               kz);
	if (!s->is_kubectl)
		push(s, cap, "build", 5);
	push(s, cap, "--enable-alpha-plugins", strlen("--enable-alpha-plugins"));
	const char *net = settings_env(envp, "KRMPOD_ALLOW_NETWORK");
	if (net && settings_parse_bool("KRMPOD_ALLOW_NETWORK", net, &s->allow_network, err) < 0)
		return -1;
	if (s->allow_network)
		push(s, cap, "--network", strlen("--network"));
	const char *flags = settings_env(envp, "KRMPOD_KUSTOMIZE_FLAGS");
	size_t first = s->kustomize_argc;
	if (flags)
		push_words(s, cap, flags);
	for (size_t i = first; i < s->kustomize_argc; i++)
		if (s->kustomize_argv[i][0] != '-')
			return err_set(
			        err, ERR_CONFIG,
			        "KRMPOD_KUSTOMIZE_FLAGS: \"%s\" is not a flag: only flags are "
			        "allowed (generate always builds the application's directory)",
			        s->kustomize_argv[i]);
	push(s, cap, ".", 1);
	return 0;
}

static int load(struct cmp_settings *s, char *const *envp, struct err **err)
{
	size_t cap = 0;
	if (load_kustomize(s, envp, &cap, err) < 0)
		return -1;
	const char *t = settings_env(envp, "KRMPOD_GENERATE_TIMEOUT");
	s->timeout_ms = DEFAULT_GENERATE_TIMEOUT_MS;
	if (t && settings_parse_duration("KRMPOD_GENERATE_TIMEOUT", t, &s->timeout_ms, err) < 0)
		return -1;
	s->max_output = DEFAULT_GENERATE_MAX_OUTPUT;
	const char *mo = settings_env(envp, "KRMPOD_GENERATE_MAX_OUTPUT");
	if (mo && settings_parse_size("KRMPOD_GENERATE_MAX_OUTPUT", mo, &s->max_output, err) < 0)
		return -1;
	if (s->max_output < 1 || s->max_output > (int64_t)LIMIT_GENERATE_OUTPUT)
		return err_set(err, ERR_CONFIG,
		               "KRMPOD_GENERATE_MAX_OUTPUT=%s: use a size from 1 to %uMi (Argo CD "
		               "takes at most ARGOCD_GRPC_MAX_SIZE_MB, 100 MiB by default)",
		               mo, (unsigned)(LIMIT_GENERATE_OUTPUT >> 20));
	s->max_stderr = DEFAULT_GENERATE_MAX_STDERR;
	const char *me = settings_env(envp, "KRMPOD_GENERATE_MAX_STDERR");
	if (me && settings_parse_size("KRMPOD_GENERATE_MAX_STDERR", me, &s->max_stderr, err) < 0)
		return -1;
	if (s->max_stderr < FD_CAP_MIN)
		return err_set(err, ERR_CONFIG,
		               "KRMPOD_GENERATE_MAX_STDERR=%s: at least %d bytes (it keeps the "
		               "first and the last half of a render's stderr)",
		               me, FD_CAP_MIN);
	s->prestart = true;
	const char *pre = settings_env(envp, "KRMPOD_PRESTART");
	if (pre && settings_parse_bool("KRMPOD_PRESTART", pre, &s->prestart, err) < 0)
		return -1;
	s->prestart_max = 8;
	const char *pmax = settings_env(envp, "KRMPOD_PRESTART_MAX");
	if (pmax) {
		char *end = NULL;
		long v = strtol(pmax, &end, 10);
		if (end == pmax || *end != '\0' || v < 1 || v > 64)
			return err_set(err, ERR_CONFIG,
			               "KRMPOD_PRESTART_MAX=%s is not a number from 1 to 64 (use "
			               "KRMPOD_PRESTART=false to turn prestart off)",
			               pmax);
		s->prestart_max = (size_t)v;
	}
	const char *shim = settings_env(envp, "KRMPOD_SHIM_DIR");
	if (shim)
		s->shim_dir = xstrdup(shim);
	s->log_level_given = settings_env(envp, "KRMPOD_LOG_LEVEL") != NULL;
	s->gc_interval_ms = DEFAULT_GC_INTERVAL_MS;
	const char *gi = settings_env(envp, "KRMPOD_GC_INTERVAL");
	if (gi && strcmp(gi, "0") == 0)
		s->gc_interval_ms = 0; /* off */
	else if (gi &&
	         settings_parse_duration("KRMPOD_GC_INTERVAL", gi, &s->gc_interval_ms, err) < 0)
		return -1;
	return 0;
}

int cmp_settings_load(struct cmp_settings *s, char *const *envp, struct err **err)
{
	memset(s, 0, sizeof(*s));
	if (load(s, envp, err) < 0) {
		cmp_settings_clear(s);
		return -1;
	}
	return 0;
}

void cmp_settings_clear(struct cmp_settings *s)
{
	for (size_t i = 0; i < s->kustomize_argc; i++)
		free(s->kustomize_argv[i]);
	free(s->kustomize_argv);
	free(s->shim_dir);
	memset(s, 0, sizeof(*s));
}

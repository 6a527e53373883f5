/* cmp_settings.c — see cmp_settings.h. */
#include "config/cmp_settings.h"

#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "config/settings.h"

#define DEFAULT_GENERATE_TIMEOUT_MS 50000 /* Argo CD's own deadline is 60 s by default */

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

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

int cmp_settings_load(struct cmp_settings *s, struct err **err)
{
	memset(s, 0, sizeof(*s));
	size_t cap = 0;
	const char *kz = env("KRMPOD_KUSTOMIZE");
	if (push_words(s, &cap, kz ? kz : "kustomize") == 0) {
		cmp_settings_clear(s);
		return err_set(
		        err, ERR_CONFIG,
		        "KRMPOD_KUSTOMIZE is blank: set it to the kustomize binary (a path or a "
		        "name on PATH) or to \"kubectl kustomize\"");
	}
	const char *base = strrchr(s->kustomize_argv[0], '/');
	base = base ? base + 1 : s->kustomize_argv[0];
	s->is_kubectl = strcmp(base, "kubectl") == 0;
	if (s->is_kubectl &&
	    (s->kustomize_argc < 2 || strcmp(s->kustomize_argv[1], "kustomize") != 0)) {
		cmp_settings_clear(s);
		return err_set(err, ERR_CONFIG,
		               "KRMPOD_KUSTOMIZE=%s: with kubectl, write \"kubectl kustomize\"",
		               kz);
	}
	if (!s->is_kubectl)
		push(s, &cap, "build", 5);
	push(s, &cap, "--enable-alpha-plugins", strlen("--enable-alpha-plugins"));
	const char *net = env("KRMPOD_ALLOW_NETWORK");
	if (net && settings_parse_bool("KRMPOD_ALLOW_NETWORK", net, &s->allow_network, err) < 0)
		goto fail;
	if (s->allow_network)
		push(s, &cap, "--network", strlen("--network"));
	const char *flags = env("KRMPOD_KUSTOMIZE_FLAGS");
	if (flags) {
		size_t first = s->kustomize_argc;
		push_words(s, &cap, flags);
		for (size_t i = first; i < s->kustomize_argc; i++) {
			if (s->kustomize_argv[i][0] != '-') {
				err_set(err, ERR_CONFIG,
				        "KRMPOD_KUSTOMIZE_FLAGS: \"%s\" is not a flag: only flags "
				        "are "
				        "allowed (generate always builds the application's "
				        "directory)",
				        s->kustomize_argv[i]);
				goto fail;
			}
		}
	}
	push(s, &cap, ".", 1);
	const char *t = env("KRMPOD_GENERATE_TIMEOUT");
	s->timeout_ms = DEFAULT_GENERATE_TIMEOUT_MS;
	if (t && settings_parse_duration("KRMPOD_GENERATE_TIMEOUT", t, &s->timeout_ms, err) < 0)
		goto fail;
	s->prestart = true;
	const char *pre = env("KRMPOD_PRESTART");
	if (pre && settings_parse_bool("KRMPOD_PRESTART", pre, &s->prestart, err) < 0)
		goto fail;
	s->prestart_max = 8;
	const char *pmax = env("KRMPOD_PRESTART_MAX");
	if (pmax) {
		char *end = NULL;
		long v = strtol(pmax, &end, 10);
		if (end == pmax || *end != '\0' || v < 1 || v > 64) {
			err_set(err, ERR_CONFIG,
			        "KRMPOD_PRESTART_MAX=%s is not a number from 1 to 64 (use "
			        "KRMPOD_PRESTART=false to turn prestart off)",
			        pmax);
			goto fail;
		}
		s->prestart_max = (size_t)v;
	}
	const char *shim = env("KRMPOD_SHIM_DIR");
	if (shim)
		s->shim_dir = xstrdup(shim);
	return 0;
fail:
	cmp_settings_clear(s);
	return -1;
}

void cmp_settings_clear(struct cmp_settings *s)
{
	for (size_t i = 0; i < s->kustomize_argc; i++)
		free(s->kustomize_argv[i]);
	free(s->kustomize_argv);
	free(s->shim_dir);
	memset(s, 0, sizeof(*s));
}

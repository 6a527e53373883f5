/* settings.c — see settings.h. */
#include "config/settings.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/fd_cap.h"
#include "base/fdio.h"
#include "base/xalloc.h"

/* A duration's milliseconds, or -1 when text is not one (settings_parse_duration). */
static double duration_ms(const char *text)
{
	static const struct {
		const char *suffix;
		double mult;
	} units[] = {{"", 1000}, {"s", 1000}, {"ms", 1}, {"m", 60000}, {"h", 3600000}};
	errno = 0;
	char *end = NULL;
	double v = strtod(text, &end);
	if (end == text || errno || !(v > 0))
		return -1;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(end, units[i].suffix) == 0)
			return v * units[i].mult;
	return -1;
}

int settings_parse_duration(const char *var, const char *text, int64_t *out_ms, struct err **err)
{
	double ms = duration_ms(text);
	if (ms >= 1 && ms <= 7 * 24 * 3600 * 1000.0) {
		*out_ms = (int64_t)ms;
		return 0;
	}
	return err_set(
	        err, ERR_CONFIG,
	        "%s=%s is not a duration: use seconds (\"90\") or a number with ms, s, m or h "
	        "(\"500ms\", \"90s\", \"2m\"), greater than zero and at most a week",
	        var, text);
}

/* <signedNumber><suffix>: digits with an optional fraction, then a binary (Ki..Ei),
 * decimal (m, k, M, G, T, P, E) or exponent (e3, E-2) suffix. Negative is refused. */
static bool is_quantity(const char *text)
{
	const char *p = text;
	bool digits = false;
	while (isdigit((unsigned char)*p))
		p++, digits = true;
	if (*p == '.') {
		p++;
		while (isdigit((unsigned char)*p))
			p++, digits = true;
	}
	if (!digits)
		return false;
	static const char *const suffixes[] = {"",  "m",  "k",  "M",  "G",  "T",  "P",
	                                       "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
		if (strcmp(p, suffixes[i]) == 0)
			return true;
	if (*p != 'e' && *p != 'E')
		return false;
	p++;
	if (*p == '+' || *p == '-')
		p++;
	if (!isdigit((unsigned char)*p))
		return false;
	while (isdigit((unsigned char)*p))
		p++;
	return *p == '\0';
}

int settings_check_quantity(const char *var, const char *text, struct err **err)
{
	if (is_quantity(text))
		return 0;
	return err_set(
	        err, ERR_CONFIG,
	        "%s=%s is not a Kubernetes quantity: use e.g. 100m or 1 for CPU, 128Mi or 1Gi "
	        "for memory",
	        var, text);
}

static bool label_name_ok(const char *s, size_t n)
{
	if (n == 0 || n > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

static bool dns_subdomain_ok(const char *s, size_t n)
{
	if (n == 0 || n > 253)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!(islower((unsigned char)c) || isdigit((unsigned char)c) || c == '-' ||
		      c == '.'))
			return false;
	}
	return isalnum((unsigned char)s[0]) && isalnum((unsigned char)s[n - 1]);
}

int settings_check_label(const char *var, const char *key, const char *value, struct err **err)
{
	const char *slash = strchr(key, '/');
	bool ok = slash ? dns_subdomain_ok(key, (size_t)(slash - key)) &&
	                          label_name_ok(slash + 1, strlen(slash + 1))
	                : label_name_ok(key, strlen(key));
	if (!ok)
		return err_set(
		        err, ERR_CONFIG,
		        "%s: \"%s\" is not a valid label key (an optional DNS prefix and \"/\", "
		        "then up to 63 letters, digits, '-', '_' or '.', starting and ending "
		        "with a letter or digit)",
		        var, key);
	if (*value && !label_name_ok(value, strlen(value)))
		return err_set(
		        err, ERR_CONFIG,
		        "%s: \"%s\" is not a valid value for label %s (up to 63 letters, digits, "
		        "'-', '_' or '.', starting and ending with a letter or digit)",
		        var, value, key);
	if (strncmp(key, "krmpod.dev/", 11) == 0 ||
	    strcmp(key, "app.kubernetes.io/managed-by") == 0)
		return err_set(err, ERR_CONFIG,
		               "%s: label %s is set by krmpod itself and cannot be overridden", var,
		               key);
	return 0;
}

static int parse_labels(const char *var, const char *text, struct settings *s, struct err **err)
{
	cleanup_free char *copy = xstrdup(text);
	char *save = NULL;
	for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		while (isspace((unsigned char)*item))
			item++;
		size_t n = strlen(item);
		while (n && isspace((unsigned char)item[n - 1]))
			item[--n] = '\0';
		if (n == 0)
			continue;
		char *eq = strchr(item, '=');
		if (eq == NULL)
			return err_set(err, ERR_CONFIG,
			               "%s: \"%s\" is not key=value (use k1=v1,k2=v2)", var, item);
		*eq = '\0';
		if (settings_check_label(var, item, eq + 1, err) < 0)
			return -1;
		s->labels = xrealloc(s->labels, (s->n_labels + 1) * sizeof(*s->labels));
		s->labels[s->n_labels].key = xstrdup(item);
		s->labels[s->n_labels].value = xstrdup(eq + 1);
		s->n_labels++;
	}
	return 0;
}

const char *settings_env(char *const *envp, const char *name)
{
	size_t n = strlen(name);
	for (char *const *p = envp; p && *p; p++)
		if (strncmp(*p, name, n) == 0 && (*p)[n] == '=')
			return (*p)[n + 1] ? *p + n + 1 : NULL;
	return NULL;
}

int settings_log_level(char *const *envp, enum log_level *level, bool *set, struct err **err)
{
	const char *v = settings_env(envp, "KRMPOD_LOG_LEVEL");
	*set = v != NULL;
	return v ? log_parse_level(v, "KRMPOD_LOG_LEVEL", level, err) : 0;
}

static int load_duration(char *const *e, const char *var, int64_t def_ms, int64_t *out,
                         struct err **err)
{
	const char *v = settings_env(e, var);
	if (v == NULL) {
		*out = def_ms;
		return 0;
	}
	return settings_parse_duration(var, v, out, err);
}

static int load_quantity(char *const *e, const char *var, const char *def, char **out, unsigned bit,
                         unsigned *set, struct err **err)
{
	const char *v = settings_env(e, var);
	if (v)
		*set |= bit;
	if (v && settings_check_quantity(var, v, err) < 0)
		return -1;
	*out = xstrdup(v ? v : def);
	return 0;
}

static int load_dns_label(char *const *e, const char *var, char **out, struct err **err)
{
	const char *v = settings_env(e, var);
	if (v == NULL)
		return 0;
	size_t n = strlen(v);
	bool ok = n <= 63 && isalnum((unsigned char)v[0]) && isalnum((unsigned char)v[n - 1]);
	for (size_t i = 0; ok && i < n; i++)
		ok = islower((unsigned char)v[i]) || isdigit((unsigned char)v[i]) || v[i] == '-';
	if (!ok)
		return err_set(err, ERR_CONFIG,
		               "%s=%s is not a valid namespace name (lowercase letters, digits and "
		               "'-', at most 63)",
		               var, v);
	*out = xstrdup(v);
	return 0;
}

int settings_parse_bool(const char *var, const char *text, bool *out, struct err **err)
{
	static const char *yes[] = {"true", "1", "yes"}, *no[] = {"false", "0", "no"};
	for (size_t i = 0; i < 3; i++) {
		if (strcasecmp(text, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(text, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return err_set(err, ERR_CONFIG, "%s=%s is not a boolean: use true or false", var, text);
}

int settings_parse_size(const char *var, const char *text, int64_t *out, struct err **err)
{
	static const struct {
		const char *suffix;
		int64_t mult;
	} units[] = {{"Ki", 1LL << 10},
	             {"Mi", 1LL << 20},
	             {"Gi", 1LL << 30},
	             {"k", 1000},
	             {"M", 1000000},
	             {"G", 1000000000},
	             {"", 1}};
	char *end = NULL;
	errno = 0;
	long long v = strtoll(text, &end, 10);
	if (errno == 0 && end != text && v > 0) {
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			if (strcmp(end, units[i].suffix) == 0 && v <= INT64_MAX / units[i].mult) {
				*out = v * units[i].mult;
				return 0;
			}
		}
	}
	return err_set(err, ERR_CONFIG,
	               "%s=%s is not a size: use bytes or a number with Ki, Mi, Gi (or k, M, G), "
	               "e.g. 64Mi",
	               var, text);
}

int settings_quantity_value(const char *text, double *out)
{
	static const struct {
		const char *suffix;
		double mult;
	} units[] = {{"", 1},
	             {"m", 1e-3},
	             {"k", 1e3},
	             {"M", 1e6},
	             {"G", 1e9},
	             {"T", 1e12},
	             {"P", 1e15},
	             {"E", 1e18},
	             {"Ki", 1024.0},
	             {"Mi", 1048576.0},
	             {"Gi", 1073741824.0},
	             {"Ti", 1099511627776.0},
	             {"Pi", 1125899906842624.0},
	             {"Ei", 1152921504606846976.0}};
	if (settings_check_quantity("quantity", text, NULL) < 0)
		return -1;
	char *end = NULL;
	double v = strtod(text, &end); /* also takes an exponent suffix (1e3) */
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix) == 0) {
			*out = v * units[i].mult;
			return 0;
		}
	}
	return -1;
}

int settings_check_override(const struct settings *s, const char *what, const char *annotation,
                            const char *value, struct err **err)
{
	bool cpu = strcmp(annotation, ANNOTATION_CPU_LIMIT) == 0;
	const char *max = cpu ? s->max_cpu_limit : s->max_memory_limit;
	const char *max_var = cpu ? "KRMPOD_MAX_CPU_LIMIT" : "KRMPOD_MAX_MEMORY_LIMIT";
	double v, m;
	if (settings_quantity_value(value, &v) < 0 || v <= 0)
		return err_set(err, ERR_CONFIG, "%s: %s=%s is not a resource quantity (e.g. %s)",
		               what, annotation, value, cpu ? "2 or 500m" : "1Gi");
	if (settings_quantity_value(max, &m) == 0 && v > m)
		return err_set(
		        err, ERR_CONFIG,
		        "%s: %s=%s is above the cluster admin's maximum %s=%s: ask for less, "
		        "or ask the admin to raise %s",
		        what, annotation, value, max_var, max, max_var);
	return 0;
}

/* Lowers a request to its limit when the limit went below it. */
static void clamp_request(char **request, const char *limit)
{
	double r, l;
	if (settings_quantity_value(*request, &r) == 0 && settings_quantity_value(limit, &l) == 0 &&
	    r > l) {
		free(*request);
		*request = xstrdup(limit);
	}
}

int settings_apply_overrides(struct settings *s, const char *image, struct err **err)
{
	if (s->fn_overrides == NULL)
		return 0;
	cleanup_free char *text = NULL;
	size_t len = 0;
	if (buf_read_file(s->fn_overrides, 1u << 20, "KRMPOD_FN_OVERRIDES file", ERR_CONFIG, &text,
	                  &len, err) < 0)
		return -1;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[3] = {line, NULL, NULL};
		for (int i = 1; i < 3 && f[i - 1]; i++) {
			char *tab = strchr(f[i - 1], '\t');
			if (tab) {
				*tab = '\0';
				f[i] = tab + 1;
			}
		}
		if (f[2] == NULL || strcmp(f[0], image) != 0)
			continue;
		cleanup_free char *what = xasprintf("function %s", image);
		if (*f[1]) {
			if (settings_check_override(s, what, ANNOTATION_CPU_LIMIT, f[1], err) < 0)
				return -1;
			free(s->cpu_limit);
			s->cpu_limit = xstrdup(f[1]);
			clamp_request(&s->cpu_request, s->cpu_limit);
		}
		if (*f[2]) {
			if (settings_check_override(s, what, ANNOTATION_MEMORY_LIMIT, f[2], err) <
			    0)
				return -1;
			free(s->memory_limit);
			s->memory_limit = xstrdup(f[2]);
			clamp_request(&s->memory_request, s->memory_limit);
		}
	}
	return 0;
}

/* KRMPOD_DEADLINE_MS: set by `krmpod generate` for the shims it runs, so that no function
 * (and no pod's activeDeadlineSeconds) outlives generate's own deadline. */
static int apply_deadline(char *const *e, struct settings *s, struct err **err)
{
	const char *v = settings_env(e, "KRMPOD_DEADLINE_MS");
	if (v == NULL)
		return 0;
	char *end = NULL;
	errno = 0;
	long long deadline = strtoll(v, &end, 10);
	if (errno || end == v || *end != '\0' || deadline <= 0)
		return err_set(err, ERR_CONFIG,
		               "KRMPOD_DEADLINE_MS=%s is not a time in ms since the epoch (krmpod "
		               "generate sets it; unset it when running the shim by hand)",
		               v);
	long long now = (long long)epoch_ms();
	if (deadline - now <= 0)
		return err_set(err, ERR_TIMEOUT,
		               "generate's deadline (KRMPOD_GENERATE_TIMEOUT) passed before this "
		               "function could start");
	if (deadline - now < s->timeout_ms)
		s->timeout_ms = deadline - now;
	if (s->start_timeout_ms > s->timeout_ms)
		s->start_timeout_ms = s->timeout_ms;
	return 0;
}

/* The owner pod of the function pods (the repo-server's, from the downward API). */
static int load_owner(char *const *e, struct settings *s, struct err **err)
{
	const char *owner = settings_env(e, "KRMPOD_OWNER_POD"),
	           *uid = settings_env(e, "KRMPOD_OWNER_UID");
	if ((owner == NULL) != (uid == NULL))
		return err_set(err, ERR_CONFIG,
		               "%s is set but %s is not: set both (from the downward API: "
		               "metadata.name and metadata.uid) or neither",
		               owner ? "KRMPOD_OWNER_POD" : "KRMPOD_OWNER_UID",
		               owner ? "KRMPOD_OWNER_UID" : "KRMPOD_OWNER_POD");
	if (owner) {
		s->owner_pod = xstrdup(owner);
		s->owner_uid = xstrdup(uid);
	}
	return load_dns_label(e, "KRMPOD_OWNER_NAMESPACE", &s->owner_namespace, err);
}

/* Copies a variable's value, when set, into *out. */
static void load_string(char *const *e, const char *var, char **out)
{
	const char *v = settings_env(e, var);
	if (v)
		*out = xstrdup(v);
}

/* The start timeout must fit in the overall one: a default start timeout is cut to it, an
 * explicit one that does not fit is an error. */
static int fit_start_timeout(char *const *e, struct settings *s, struct err **err)
{
	if (s->start_timeout_ms <= s->timeout_ms)
		return 0;
	if (settings_env(e, "KRMPOD_START_TIMEOUT") == NULL) {
		s->start_timeout_ms = s->timeout_ms;
		return 0;
	}
	return err_set(err, ERR_CONFIG,
	               "KRMPOD_START_TIMEOUT (%lld ms) is longer than KRMPOD_TIMEOUT (%lld ms): "
	               "the start timeout must fit in the overall timeout",
	               (long long)s->start_timeout_ms, (long long)s->timeout_ms);
}

/* The next item of a comma-separated list split in place (strtok_r's way: list the first
 * time, NULL after), spaces around it dropped; NULL after the last. */
static char *next_item(char *list, char **save)
{
	char *p = strtok_r(list, ",", save);
	if (p == NULL)
		return NULL;
	while (*p == ' ')
		p++;
	size_t len = strlen(p);
	while (len > 0 && p[len - 1] == ' ')
		p[--len] = '\0';
	return p;
}

/* Comma-separated image patterns ('*' any run of characters). */
static int load_patterns(char *const *e, const char *var, char ***out, size_t *n, struct err **err)
{
	const char *v = settings_env(e, var);
	if (v == NULL)
		return 0;
	cleanup_free char *copy = xstrdup(v);
	char *save = NULL;
	for (char *p = next_item(copy, &save); p; p = next_item(NULL, &save)) {
		if (*p == '\0' || strpbrk(p, " \t"))
			return err_set(err, ERR_CONFIG,
			               "%s=%s: \"%s\" is not an image pattern (e.g. "
			               "registry.example.co/fns/*)",
			               var, v, p);
		*out = xrealloc(*out, (*n + 1) * sizeof(char *));
		(*out)[(*n)++] = xstrdup(p);
	}
	if (*n == 0)
		return err_set(err, ERR_CONFIG, "%s=%s holds no pattern", var, v);
	return 0;
}

/* KRMPOD_IMAGE_ALLOWLIST: comma-separated patterns, '*' matching any run of characters. */
static int load_allowlist(char *const *e, struct settings *s, struct err **err)
{
	return load_patterns(e, "KRMPOD_IMAGE_ALLOWLIST", &s->image_allowlist,
	                     &s->n_image_allowlist, err);
}

/* KRMPOD_IMAGE_POLICY and what it needs (docs/catalogs.md). */
static int load_policy(char *const *e, struct settings *s, struct err **err)
{
	const char *v = settings_env(e, "KRMPOD_IMAGE_POLICY");
	if (v == NULL || strcmp(v, "any") == 0)
		s->image_policy = IMAGE_POLICY_ANY;
	else if (strcmp(v, "catalog") == 0)
		s->image_policy = IMAGE_POLICY_CATALOG;
	else if (strcmp(v, "allowlist") == 0)
		s->image_policy = IMAGE_POLICY_ALLOWLIST;
	else
		return err_set(err, ERR_CONFIG,
		               "KRMPOD_IMAGE_POLICY=%s: use any, catalog or allowlist", v);
	if (load_allowlist(e, s, err) < 0)
		return -1;
	if (s->image_policy == IMAGE_POLICY_ALLOWLIST && s->n_image_allowlist == 0)
		return err_set(err, ERR_CONFIG,
		               "KRMPOD_IMAGE_POLICY=allowlist needs KRMPOD_IMAGE_ALLOWLIST: the "
		               "image patterns that may run (e.g. registry.example.co/fns/*)");
	if (s->image_policy != IMAGE_POLICY_ALLOWLIST && s->n_image_allowlist > 0)
		return err_set(err, ERR_CONFIG,
		               "KRMPOD_IMAGE_ALLOWLIST is set but KRMPOD_IMAGE_POLICY is %s: set "
		               "KRMPOD_IMAGE_POLICY=allowlist for it to apply, or unset it",
		               v ? v : "any (the default)");
	if (s->image_policy == IMAGE_POLICY_CATALOG && s->n_trusted_catalogs == 0 &&
	    s->n_default_catalogs == 0)
		return err_set(
		        err, ERR_CONFIG,
		        "KRMPOD_IMAGE_POLICY=catalog, but neither KRMPOD_TRUSTED_CATALOGS nor "
		        "KRMPOD_DEFAULT_CATALOGS names a catalog: no function could run");
	const char *d = settings_env(e, "KRMPOD_REQUIRE_DIGEST");
	return d ? settings_parse_bool("KRMPOD_REQUIRE_DIGEST", d, &s->require_digest, err) : 0;
}

static int load_mirrors(char *const *e, struct settings *s, struct err **err);

/* The catalogs, the image policy, and where catalogs and images are fetched from. */
static int load_catalogs(char *const *e, struct settings *s, struct err **err)
{
	const char *t = settings_env(e, "KRMPOD_TRUSTED_CATALOGS");
	const char *d = settings_env(e, "KRMPOD_DEFAULT_CATALOGS");
	if ((t && catalog_refs_parse_list(t, "KRMPOD_TRUSTED_CATALOGS", &s->trusted_catalogs,
	                                  &s->n_trusted_catalogs, err) < 0) ||
	    (d && catalog_refs_parse_list(d, "KRMPOD_DEFAULT_CATALOGS", &s->default_catalogs,
	                                  &s->n_default_catalogs, err) < 0) ||
	    load_policy(e, s, err) < 0)
		return -1;
	load_string(e, "KRMPOD_REGISTRY_CA", &s->registry_ca);
	load_string(e, "KRMPOD_REGISTRY_AUTH", &s->registry_auth);
	load_string(e, "KRMPOD_POLICY_FILE", &s->policy_file);
	load_string(e, "KRMPOD_SIGNATURE_POLICY", &s->signature_policy);
	const char *c = settings_env(e, "KRMPOD_CACHE_DIR");
	s->cache_dir = c ? xstrdup(c) : xasprintf("%s/krmpod-cache", tmp_dir());
	return load_mirrors(e, s, err);
}

/* KRMPOD_REGISTRY_MIRRORS: "registry=host[:port],..." */
static int load_mirrors(char *const *e, struct settings *s, struct err **err)
{
	const char *v = settings_env(e, "KRMPOD_REGISTRY_MIRRORS");
	if (v == NULL)
		return 0;
	cleanup_free char *copy = xstrdup(v);
	char *save = NULL;
	for (char *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(p, '=');
		if (eq == NULL || eq == p || eq[1] == '\0' || strpbrk(p, " \t/@"))
			return err_set(
			        err, ERR_CONFIG,
			        "KRMPOD_REGISTRY_MIRRORS=%s: \"%s\" is not registry=host[:port] "
			        "(e.g. docker.io=mirror.example.co:5000)",
			        v, p);
		*eq = '\0';
		s->registry_mirrors =
		        xrealloc(s->registry_mirrors,
		                 (s->n_registry_mirrors + 1) * sizeof(*s->registry_mirrors));
		s->registry_mirrors[s->n_registry_mirrors].key = xstrdup(p);
		s->registry_mirrors[s->n_registry_mirrors].value = xstrdup(eq + 1);
		s->n_registry_mirrors++;
	}
	return 0;
}

static int load_count(char *const *e, const char *var, long def, long max, long *out,
                      struct err **err)
{
	const char *v = settings_env(e, var);
	*out = def;
	if (v == NULL)
		return 0;
	char *end = NULL;
	long n = strtol(v, &end, 10);
	if (end == v || *end != '\0' || n < 1 || n > max)
		return err_set(err, ERR_CONFIG, "%s=%s is not a number from 1 to %ld", var, v, max);
	*out = n;
	return 0;
}

/* The warm pool's settings (docs/internals/warm-pool.md). */
static int load_pool(char *const *e, struct settings *s, struct err **err)
{
	const char *v = settings_env(e, "KRMPOD_WARM_POOL");
	if (v && settings_parse_bool("KRMPOD_WARM_POOL", v, &s->warm_pool, err) < 0)
		return -1;
	if (load_patterns(e, "KRMPOD_WARM_POOL_IMAGES", &s->pool_images, &s->n_pool_images, err) <
	            0 ||
	    load_count(e, "KRMPOD_WARM_POOL_SIZE", 2, 16, &s->pool_size, err) < 0 ||
	    load_count(e, "KRMPOD_WARM_POOL_MAX", 8, 1024, &s->pool_max, err) < 0 ||
	    load_duration(e, "KRMPOD_WARM_POOL_TTL", 600000, &s->pool_ttl_ms, err) < 0 ||
	    load_duration(e, "KRMPOD_WARM_POOL_MAX_LIFE", 3600000, &s->pool_life_ms, err) < 0)
		return -1;
	const char *app = settings_env(e, "ARGOCD_APP_NAME");
	const char *project = settings_env(e, "ARGOCD_APP_PROJECT_NAME");
	const char *dest = settings_env(e, "ARGOCD_APP_NAMESPACE");
	free(s->pool_tenant);
	s->pool_tenant = xasprintf("app=%s\nproject=%s\nnamespace=%s", app ? app : "",
	                           project ? project : "", dest ? dest : "");
	if (s->warm_pool && s->mode == FN_MODE_ATTACH)
		return err_set(err, ERR_CONFIG,
		               "KRMPOD_WARM_POOL=true needs KRMPOD_MODE=exec or auto, not attach "
		               "(pool pods hold, and each call runs through pods/exec)");
	if (s->warm_pool && s->helper_image == NULL)
		return err_set(
		        err, ERR_CONFIG,
		        "KRMPOD_WARM_POOL=true needs KRMPOD_HELPER_IMAGE (krmpod's own image: "
		        "its init container puts krmpod into the pool's pods)");
	return 0;
}

/* KRMPOD_MODE, and what exec mode needs. */
static int load_mode(char *const *e, struct settings *s, struct err **err)
{
	const char *v = settings_env(e, "KRMPOD_MODE");
	if (v == NULL || strcmp(v, "auto") == 0)
		s->mode = FN_MODE_AUTO;
	else if (strcmp(v, "attach") == 0)
		s->mode = FN_MODE_ATTACH;
	else if (strcmp(v, "exec") == 0)
		s->mode = FN_MODE_EXEC;
	else
		return err_set(err, ERR_CONFIG, "KRMPOD_MODE=%s: use auto, attach or exec", v);
	const char *u = settings_env(e, "KRMPOD_ATTACH_UNVERIFIED");
	s->attach_unverified = false;
	if (u && strcmp(u, "allow") == 0)
		s->attach_unverified = true;
	else if (u && strcmp(u, "deny") != 0)
		return err_set(err, ERR_CONFIG,
		               "KRMPOD_ATTACH_UNVERIFIED=%s: use deny (the default: attach-mode "
		               "output krmpod cannot prove complete fails the call) or allow",
		               u);
	if (s->mode == FN_MODE_EXEC && s->helper_image == NULL)
		return err_set(
		        err, ERR_CONFIG,
		        "KRMPOD_MODE=exec needs KRMPOD_HELPER_IMAGE (krmpod's own image: its "
		        "init container puts krmpod into the function pod)");
	return 0;
}

int settings_clock_offset(char *const *envp, int64_t *ms, struct err **err)
{
	const char *v = settings_env(envp, "KRMPOD_CLOCK_OFFSET");
	*ms = 0;
	if (v == NULL)
		return 0;
	bool negative = *v == '-';
	if (settings_parse_duration("KRMPOD_CLOCK_OFFSET", v + (negative || *v == '+'), ms, err) <
	    0)
		return -1;
	if (negative)
		*ms = -*ms;
	return 0;
}

int settings_agent_net_gate(char *const *envp, struct settings_gate *g, struct err **err)
{
	*g = (struct settings_gate){.node = settings_env(envp, SETTINGS_NET_GATE_NODE_ENV)};
	const char *dns = settings_env(envp, SETTINGS_NET_GATE_DNS_ENV);
	if (dns && strcmp(dns, "1") != 0)
		return err_set(err, ERR_CONFIG, "%s=%s: only 1 (probe the cluster DNS) is meant",
		               SETTINGS_NET_GATE_DNS_ENV, dns);
	g->dns = dns != NULL;
	const char *v = settings_env(envp, SETTINGS_NET_GATE_ENV);
	if (v == NULL)
		return 0;
	char *end = NULL;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	if (errno || end == v || *end || n <= 0)
		return err_set(err, ERR_CONFIG, "%s=%s is not a number of milliseconds",
		               SETTINGS_NET_GATE_ENV, v);
	g->ms = n;
	return 0;
}

/* KRMPOD_NETWORK_GATE: "0"/"off" or a duration; its container runs the helper image. */
static int load_net_gate(char *const *e, struct settings *s, struct err **err)
{
	const char *v = settings_env(e, "KRMPOD_NETWORK_GATE");
	const char *dns = settings_env(e, "KRMPOD_NETWORK_GATE_DNS");
	s->net_gate_ms = 0;
	s->net_gate_dns = true;
	if (dns && settings_parse_bool("KRMPOD_NETWORK_GATE_DNS", dns, &s->net_gate_dns, err) < 0)
		return -1;
	if (v == NULL || strcmp(v, "0") == 0 || strcmp(v, "off") == 0)
		return 0;
	if (settings_parse_duration("KRMPOD_NETWORK_GATE", v, &s->net_gate_ms, err) < 0)
		return -1;
	if (s->net_gate_ms < SETTINGS_NET_GATE_MIN_MS)
		return err_set(err, ERR_CONFIG,
		               "KRMPOD_NETWORK_GATE=%s is too short: the gate needs at least %d ms "
		               "to prove a pod isolated (docs/network.md, \"The gate\"); the "
		               "shipped manifests set 10s, 0 turns it off",
		               v, SETTINGS_NET_GATE_MIN_MS);
	if (s->helper_image == NULL)
		return err_set(
		        err, ERR_CONFIG,
		        "KRMPOD_NETWORK_GATE=%s needs KRMPOD_HELPER_IMAGE (krmpod's own image: "
		        "the gate runs from it inside each function pod)",
		        v);
	return 0;
}

/* KRMPOD_IMAGE_PULL_SECRETS: comma-separated Secret names (DNS subdomains), each kept once. */
static int load_pull_secrets(char *const *e, struct settings *s, struct err **err)
{
	const char *var = "KRMPOD_IMAGE_PULL_SECRETS", *v = settings_env(e, var);
	if (v == NULL)
		return 0;
	cleanup_free char *copy = xstrdup(v);
	char *save = NULL;
	for (char *p = next_item(copy, &save); p; p = next_item(NULL, &save)) {
		if (!dns_subdomain_ok(p, strlen(p)))
			return err_set(
			        err, ERR_CONFIG,
			        "%s=%s: \"%s\" is not a Secret name (a DNS subdomain: lowercase "
			        "letters, digits, '-' and '.', starting and ending with a letter "
			        "or digit, at most 253)",
			        var, v, p);
		bool dup = false;
		for (size_t i = 0; i < s->n_pull_secrets && !dup; i++)
			dup = strcmp(s->pull_secrets[i], p) == 0;
		if (dup)
			continue;
		s->pull_secrets =
		        xrealloc(s->pull_secrets, (s->n_pull_secrets + 1) * sizeof(char *));
		s->pull_secrets[s->n_pull_secrets++] = xstrdup(p);
	}
	if (s->n_pull_secrets == 0)
		return err_set(err, ERR_CONFIG,
		               "%s=%s names no Secret (e.g. registry-credentials,other-registry)",
		               var, v);
	return 0;
}

/* The byte limits: a mount's files, a function's output and its stderr. */
static int load_sizes(char *const *e, struct settings *s, struct err **err)
{
	const char *mmax = settings_env(e, "KRMPOD_MOUNT_MAX_BYTES");
	s->mount_max_bytes = 64LL << 20;
	if (mmax &&
	    settings_parse_size("KRMPOD_MOUNT_MAX_BYTES", mmax, &s->mount_max_bytes, err) < 0)
		return -1;
	const char *omax = settings_env(e, "KRMPOD_MAX_OUTPUT");
	s->max_output = 64LL << 20;
	if (omax && settings_parse_size("KRMPOD_MAX_OUTPUT", omax, &s->max_output, err) < 0)
		return -1;
	const char *emax = settings_env(e, "KRMPOD_MAX_STDERR");
	s->max_stderr = 1LL << 20;
	if (emax && settings_parse_size("KRMPOD_MAX_STDERR", emax, &s->max_stderr, err) < 0)
		return -1;
	if (s->max_stderr < FD_CAP_MIN)
		return err_set(
		        err, ERR_CONFIG,
		        "KRMPOD_MAX_STDERR=%s: at least %d bytes (it keeps the first and the "
		        "last half of a function's stderr)",
		        emax, FD_CAP_MIN);
	return 0;
}

static int load(char *const *e, struct settings *s, struct err **err)
{
	if (load_dns_label(e, "KRMPOD_NAMESPACE", &s->namespace, err) < 0 ||
	    load_duration(e, "KRMPOD_START_TIMEOUT", 120000, &s->start_timeout_ms, err) < 0 ||
	    load_duration(e, "KRMPOD_TIMEOUT", 300000, &s->timeout_ms, err) < 0 ||
	    load_quantity(e, "KRMPOD_CPU_REQUEST", "100m", &s->cpu_request,
	                  SETTINGS_SET_CPU_REQUEST, &s->resources_set, err) < 0 ||
	    load_quantity(e, "KRMPOD_CPU_LIMIT", "1", &s->cpu_limit, SETTINGS_SET_CPU_LIMIT,
	                  &s->resources_set, err) < 0 ||
	    load_quantity(e, "KRMPOD_MEMORY_REQUEST", "64Mi", &s->memory_request,
	                  SETTINGS_SET_MEMORY_REQUEST, &s->resources_set, err) < 0 ||
	    load_quantity(e, "KRMPOD_MEMORY_LIMIT", "512Mi", &s->memory_limit,
	                  SETTINGS_SET_MEMORY_LIMIT, &s->resources_set, err) < 0)
		return -1;
	const char *labels = settings_env(e, "KRMPOD_EXTRA_LABELS");
	if ((labels && parse_labels("KRMPOD_EXTRA_LABELS", labels, s, err) < 0) ||
	    load_owner(e, s, err) < 0 || apply_deadline(e, s, err) < 0)
		return -1;
	const char *net = settings_env(e, "KRMPOD_ALLOW_NETWORK");
	if (net && settings_parse_bool("KRMPOD_ALLOW_NETWORK", net, &s->allow_network, err) < 0)
		return -1;
	if (load_quantity(e, "KRMPOD_MAX_CPU_LIMIT", s->cpu_limit, &s->max_cpu_limit, 0,
	                  &s->resources_set, err) < 0 ||
	    load_quantity(e, "KRMPOD_MAX_MEMORY_LIMIT", s->memory_limit, &s->max_memory_limit, 0,
	                  &s->resources_set, err) < 0)
		return -1;
	load_string(e, "KRMPOD_FN_OVERRIDES", &s->fn_overrides);
	load_string(e, "KRMPOD_PRESTART_DIR", &s->prestart_dir);
	load_string(e, "KRMPOD_RUNNING_DIR", &s->running_dir);
	load_string(e, "KRMPOD_POD_TEMPLATE", &s->pod_template);
	load_string(e, "KRMPOD_HELPER_IMAGE", &s->helper_image);
	load_string(e, "KRMPOD_CONTEXT", &s->kube_context);
	load_string(e, "KRMPOD_SERVICEACCOUNT_DIR", &s->serviceaccount_dir);
	if (load_sizes(e, s, err) < 0 || load_catalogs(e, s, err) < 0 || load_mode(e, s, err) < 0 ||
	    load_pool(e, s, err) < 0 || load_net_gate(e, s, err) < 0 ||
	    load_pull_secrets(e, s, err) < 0 ||
	    load_duration(e, "KRMPOD_LEASE_RENEW", 20000, &s->lease_renew_ms, err) < 0)
		return -1;
	if (s->lease_renew_ms < 1000)
		return err_set(err, ERR_CONFIG,
		               "KRMPOD_LEASE_RENEW=%s: at least 1s (a shim renews its lease on its "
		               "pod this often; the default is 20s)",
		               settings_env(e, "KRMPOD_LEASE_RENEW"));
	return fit_start_timeout(e, s, err);
}

int settings_load_env(struct settings *s, char *const *envp, struct err **err)
{
	memset(s, 0, sizeof(*s));
	if (load(envp, s, err) < 0) {
		settings_clear(s);
		return -1;
	}
	return 0;
}

void settings_clear(struct settings *s)
{
	free(s->namespace);
	free(s->cpu_request);
	free(s->cpu_limit);
	free(s->memory_request);
	free(s->memory_limit);
	for (size_t i = 0; i < s->n_labels; i++) {
		free(s->labels[i].key);
		free(s->labels[i].value);
	}
	free(s->labels);
	free(s->owner_pod);
	free(s->owner_uid);
	free(s->owner_namespace);
	free(s->pod_template);
	free(s->helper_image);
	json_free(s->template_doc);
	free(s->max_cpu_limit);
	free(s->max_memory_limit);
	free(s->fn_overrides);
	free(s->prestart_dir);
	free(s->running_dir);
	free(s->kube_context);
	free(s->serviceaccount_dir);
	catalog_refs_free(s->trusted_catalogs, s->n_trusted_catalogs);
	catalog_refs_free(s->default_catalogs, s->n_default_catalogs);
	for (size_t i = 0; i < s->n_image_allowlist; i++)
		free(s->image_allowlist[i]);
	free(s->image_allowlist);
	free(s->registry_ca);
	free(s->registry_auth);
	free(s->signature_policy);
	for (size_t i = 0; i < s->n_pull_secrets; i++)
		free(s->pull_secrets[i]);
	free(s->pull_secrets);
	free(s->cache_dir);
	free(s->policy_file);
	for (size_t i = 0; i < s->n_registry_mirrors; i++) {
		free(s->registry_mirrors[i].key);
		free(s->registry_mirrors[i].value);
	}
	free(s->registry_mirrors);
	for (size_t i = 0; i < s->n_pool_images; i++)
		free(s->pool_images[i]);
	free(s->pool_images);
	free(s->pool_tenant);
	memset(s, 0, sizeof(*s));
}

/* docker_args.c — see docker_args.h.
 *
 * The parser is table-driven: each accepted flag names whether it takes a value and a
 * handler. Long flags take `--flag value` or `--flag=value`; short flags `-e value`,
 * `-e=value` or `-evalue`; `-i` may be combined with other boolean short flags docker-style
 * (`-it` is refused because of -t). Docker also accepts single-dash long forms only for
 * legacy flags we do not need.
 */
#include "shim/docker_args.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/json.h"
#include "base/log.h"
#include "base/size_limits.h"
#include "base/xalloc.h"

struct flag {
	const char *long_name; /* without dashes */
	char short_name;       /* 0 if none */
	bool takes_value;
	int (*handle)(struct fn_request *req, const char *flag, const char *value,
	              char *const *environ_, struct err **err);
};

static int h_ignore(struct fn_request *req, const char *flag, const char *value,
                    char *const *environ_, struct err **err)
{
	(void)req, (void)flag, (void)value, (void)environ_, (void)err;
	return 0;
}

static int h_interactive(struct fn_request *req, const char *flag, const char *value,
                         char *const *environ_, struct err **err)
{
	(void)flag, (void)value, (void)environ_, (void)err;
	req->want_stdin = true;
	return 0;
}

static int h_attach(struct fn_request *req, const char *flag, const char *value,
                    char *const *environ_, struct err **err)
{
	(void)environ_;
	if (strcasecmp(value, "STDIN") == 0)
		req->want_stdin = true;
	else if (strcasecmp(value, "STDOUT") != 0 && strcasecmp(value, "STDERR") != 0)
		return err_set(err, ERR_USAGE, "%s %s: expected STDIN, STDOUT or STDERR", flag,
		               value);
	return 0;
}

static int h_network(struct fn_request *req, const char *flag, const char *value,
                     char *const *environ_, struct err **err)
{
	(void)environ_;
	if (strcmp(value, "none") == 0)
		req->network = FN_NETWORK_NONE;
	else if (strcmp(value, "host") == 0)
		req->network = FN_NETWORK_HOST;
	else
		return err_set(err, ERR_USAGE,
		               "%s %s: krmpod supports only \"none\" and \"host\" (function "
		               "network access)",
		               flag, value);
	return 0;
}

/* Parses a decimal id > 0 (root is never allowed: the pod runs as non-root). */
static int parse_id(const char *s, size_t n, const char *flag, const char *value, long *out,
                    struct err **err)
{
	char tmp[32];
	if (n == 0 || n >= sizeof(tmp))
		return err_set(err, ERR_USAGE, "%s %s: expected nobody or UID[:GID]", flag, value);
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)tmp[i]))
			return err_set(
			        err, ERR_USAGE,
			        "%s %s: only \"nobody\" or numeric UID[:GID] can be used in a pod "
			        "(user names cannot be resolved inside the image)",
			        flag, value);
	errno = 0;
	long v = strtol(tmp, NULL, 10);
	if (errno == 0 && v == 0)
		return err_set(
		        err, ERR_USAGE,
		        "%s %s: function pods never run as root (kpt's --as-current-user "
		        "passes the ids kpt runs with: run kpt as a non-root user, or without "
		        "--as-current-user)",
		        flag, value);
	if (errno || v <= 0 || v > 2147483647L)
		return err_set(
		        err, ERR_USAGE,
		        "%s %s: the id must be between 1 and 2147483647 (function pods never run "
		        "as root)",
		        flag, value);
	*out = v;
	return 0;
}

static int h_user(struct fn_request *req, const char *flag, const char *value,
                  char *const *environ_, struct err **err)
{
	(void)environ_;
	if (strcmp(value, "nobody") == 0 || strcmp(value, "nobody:nogroup") == 0) {
		req->run_as_user = req->run_as_group = 65534;
		return 0;
	}
	const char *colon = strchr(value, ':');
	size_t ulen = colon ? (size_t)(colon - value) : strlen(value);
	if (parse_id(value, ulen, flag, value, &req->run_as_user, err) < 0)
		return -1;
	if (colon)
		return parse_id(colon + 1, strlen(colon + 1), flag, value, &req->run_as_group, err);
	req->run_as_group = req->run_as_user;
	return 0;
}

static int h_security_opt(struct fn_request *req, const char *flag, const char *value,
                          char *const *environ_, struct err **err)
{
	(void)req, (void)environ_;
	if (strcmp(value, "no-new-privileges") == 0 ||
	    strcmp(value, "no-new-privileges=true") == 0 ||
	    strcmp(value, "no-new-privileges:true") == 0)
		return 0; /* the pod always sets allowPrivilegeEscalation: false */
	return err_set(err, ERR_USAGE,
	               "%s %s: only no-new-privileges is supported (function pods always run with "
	               "allowPrivilegeEscalation: false and all capabilities dropped)",
	               flag, value);
}

static bool valid_env_name(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '=' || s[i] == '\0')
			return false;
	return true;
}

static void add_env(struct fn_request *req, const char *name, size_t name_len, const char *value)
{
	/* A later -e for the same name replaces the earlier one, like docker. */
	for (size_t i = 0; i < req->n_env; i++) {
		if (strlen(req->env[i].name) == name_len &&
		    memcmp(req->env[i].name, name, name_len) == 0) {
			free(req->env[i].value);
			req->env[i].value = xstrdup(value);
			return;
		}
	}
	req->env = xrealloc(req->env, (req->n_env + 1) * sizeof(*req->env));
	req->env[req->n_env].name = xstrndup(name, name_len);
	req->env[req->n_env].value = xstrdup(value);
	req->n_env++;
}

static int h_env(struct fn_request *req, const char *flag, const char *value, char *const *environ_,
                 struct err **err)
{
	const char *eq = strchr(value, '=');
	if (eq) {
		if (!valid_env_name(value, (size_t)(eq - value)))
			return err_set(err, ERR_USAGE, "%s %s: the variable name is empty", flag,
			               value);
		add_env(req, value, (size_t)(eq - value), eq + 1);
		return 0;
	}
	if (!valid_env_name(value, strlen(value)))
		return err_set(err, ERR_USAGE, "%s: empty variable name", flag);
	size_t n = strlen(value);
	for (char *const *e = environ_; e && *e; e++) {
		if (strncmp(*e, value, n) == 0 && (*e)[n] == '=') {
			add_env(req, value, n, *e + n + 1);
			return 0;
		}
	}
	/* An Argo CD Application's user variable NAME reaches the plugin as ARGOCD_ENV_NAME: a
	 * function config that names NAME gets it (README, "Environment"). */
	for (char *const *e = environ_; e && *e; e++) {
		if (strncmp(*e, "ARGOCD_ENV_", 11) == 0 && strncmp(*e + 11, value, n) == 0 &&
		    (*e)[11 + n] == '=') {
			add_env(req, value, n, *e + 11 + n + 1);
			return 0;
		}
	}
	/* docker leaves a bare NAME that is unset out of the container's environment. */
	log_debug("%s %s: not set in krmpod's environment; left out, as docker does", flag, value);
	return 0;
}

static int h_pull(struct fn_request *req, const char *flag, const char *value,
                  char *const *environ_, struct err **err)
{
	(void)environ_;
	if (strcmp(value, "always") == 0)
		req->pull = FN_PULL_ALWAYS;
	else if (strcmp(value, "missing") == 0)
		req->pull = FN_PULL_MISSING;
	else if (strcmp(value, "never") == 0)
		req->pull = FN_PULL_NEVER;
	else
		return err_set(err, ERR_USAGE, "%s %s: expected always, missing or never", flag,
		               value);
	return 0;
}

/* A container path for a mount target: absolute, no "." or ".." component, not "/". */
static bool target_ok(const char *t)
{
	if (t[0] != '/' || t[1] == '\0' || strlen(t) >= LIMIT_MOUNT_PATH)
		return false;
	for (const char *p = t; *p;) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += n;
	}
	return true;
}

/* Parses readonly/ro's optional value. */
static int parse_ro(const char *flag, const char *value, const char *v, bool *out, struct err **err)
{
	if (v == NULL || strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
		*out = true;
	else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
		*out = false;
	else
		return err_set(err, ERR_USAGE, "%s %s: readonly=%s: expected true or false", flag,
		               value, v);
	return 0;
}

/* The options of one --mount value, split in place (into `copy`). */
struct mount_opts {
	const char *type, *source, *target;
	bool readonly;
};

static int split_mount(const char *flag, const char *value, char *copy, struct mount_opts *o,
                       struct err **err)
{
	char *save = NULL;
	for (char *kv = strtok_r(copy, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		const char *v = eq ? eq + 1 : NULL;
		if (eq)
			*eq = '\0';
		if (strcmp(kv, "type") == 0 && v) {
			o->type = v;
		} else if ((strcmp(kv, "source") == 0 || strcmp(kv, "src") == 0) && v) {
			o->source = v;
		} else if ((strcmp(kv, "target") == 0 || strcmp(kv, "destination") == 0 ||
		            strcmp(kv, "dst") == 0) &&
		           v) {
			o->target = v;
		} else if (strcmp(kv, "readonly") == 0 || strcmp(kv, "ro") == 0) {
			if (parse_ro(flag, value, v, &o->readonly, err) < 0)
				return -1;
		} else {
			return err_set(err, ERR_USAGE,
			               "%s %s: unsupported mount option \"%s\" (krmpod takes type, "
			               "source, target and readonly, as kustomize writes them; a "
			               "comma in a path cannot be passed)",
			               flag, value, kv);
		}
	}
	return 0;
}

/* --mount type=bind|tmpfs,source=ABS,target=DST[,readonly]: what kustomize builds from a
 * function's `mounts` (kyaml runtimeutil.StorageMount.String()). */
static int h_mount(struct fn_request *req, const char *flag, const char *value,
                   char *const *environ_, struct err **err)
{
	(void)environ_;
	if (req->n_mounts >= LIMIT_MOUNTS)
		return err_set(err, ERR_USAGE, "%s %s: more than %d mounts", flag, value,
		               LIMIT_MOUNTS);
	cleanup_free char *copy = xstrdup(value);
	struct mount_opts o = {0};
	if (split_mount(flag, value, copy, &o, err) < 0)
		return -1;
	const char *type = o.type, *source = o.source, *target = o.target;
	struct fn_mount m = {.type = FN_MOUNT_BIND, .readonly = o.readonly};
	if (type == NULL)
		return err_set(err, ERR_USAGE, "%s %s: type= is missing (bind or tmpfs)", flag,
		               value);
	if (strcmp(type, "tmpfs") == 0) {
		m.type = FN_MOUNT_TMPFS; /* kustomize fills in a source; a tmpfs has none */
	} else if (strcmp(type, "volume") == 0) {
		return err_set(err, ERR_USAGE,
		               "%s %s: named docker volumes cannot exist in a cluster: krmpod "
		               "supports type=bind (files of the kustomization, copied into the "
		               "pod) and type=tmpfs (an empty in-memory directory)",
		               flag, value);
	} else if (strcmp(type, "bind") != 0) {
		return err_set(err, ERR_USAGE,
		               "%s %s: mount type \"%s\" is not supported: krmpod supports "
		               "type=bind and type=tmpfs",
		               flag, value, type);
	}
	if (m.type == FN_MOUNT_BIND && (source == NULL || source[0] != '/'))
		return err_set(err, ERR_USAGE,
		               "%s %s: a bind mount needs an absolute source= (kustomize makes the "
		               "function config's src absolute)",
		               flag, value);
	if (target == NULL || !target_ok(target))
		return err_set(err, ERR_USAGE,
		               "%s %s: target= must be an absolute path in the container, without "
		               "\".\" or \"..\" components, and not \"/\"",
		               flag, value);
	for (size_t i = 0; i < req->n_mounts; i++)
		if (strcmp(req->mounts[i].target, target) == 0)
			return err_set(err, ERR_USAGE, "%s %s: target %s is already used by %s %s",
			               flag, value, target, flag, req->mounts[i].spec);
	m.source = m.type == FN_MOUNT_BIND ? xstrdup(source) : NULL;
	m.target = xstrdup(target);
	m.spec = xstrdup(value);
	req->mounts = xrealloc(req->mounts, (req->n_mounts + 1) * sizeof(*req->mounts));
	req->mounts[req->n_mounts++] = m;
	return 0;
}

static const struct flag flags[] = {
        {"rm", 0, false, h_ignore},
        {"interactive", 'i', false, h_interactive},
        {"attach", 'a', true, h_attach},
        {"network", 0, true, h_network},
        {"net", 0, true, h_network},
        {"user", 'u', true, h_user},
        {"security-opt", 0, true, h_security_opt},
        {"env", 'e', true, h_env},
        {"pull", 0, true, h_pull},
        {"mount", 0, true, h_mount},
};

static const struct flag *find_long(const char *name, size_t n)
{
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (strlen(flags[i].long_name) == n && memcmp(flags[i].long_name, name, n) == 0)
			return &flags[i];
	return NULL;
}

static const struct flag *find_short(char c)
{
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (flags[i].short_name == c)
			return &flags[i];
	return NULL;
}

static int unknown_flag(const char *arg, struct err **err)
{
	return err_set(err, ERR_USAGE,
	               "unknown flag %s: krmpod's docker shim accepts only the flags kustomize and "
	               "kpt use (--rm, -i, -a, --network, --user, --security-opt, -e, --pull, "
	               "--mount)",
	               arg);
}

/* Handles one long flag at argv[*i]; advances *i past a separate value. */
static int parse_long(int argc, char *const *argv, int *i, char *const *environ_,
                      struct fn_request *req, struct err **err)
{
	const char *arg = argv[*i] + 2;
	const char *eq = strchr(arg, '=');
	size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
	const struct flag *f = find_long(arg, n);
	char display[96];
	snprintf(display, sizeof(display), "--%.*s", (int)(n < 80 ? n : 80), arg);
	if (f == NULL)
		return unknown_flag(display, err);
	const char *value = NULL;
	if (f->takes_value) {
		if (eq)
			value = eq + 1;
		else if (*i + 1 < argc)
			value = argv[++*i];
		else
			return err_set(err, ERR_USAGE, "flag %s needs a value", display);
	} else if (eq) {
		if (strcmp(eq + 1, "true") != 0)
			return err_set(err, ERR_USAGE, "flag %s takes no value other than true",
			               display);
	}
	return f->handle(req, display, value, environ_, err);
}

/* Handles a short-flag group at argv[*i] ("-i", "-eK=V", "-e", "-ia STDIN"). */
static int parse_short(int argc, char *const *argv, int *i, char *const *environ_,
                       struct fn_request *req, struct err **err)
{
	const char *arg = argv[*i];
	for (size_t k = 1; arg[k]; k++) {
		char display[3] = {'-', arg[k], '\0'};
		const struct flag *f = find_short(arg[k]);
		if (f == NULL)
			return unknown_flag(display, err);
		if (!f->takes_value) {
			if (f->handle(req, display, NULL, environ_, err) < 0)
				return -1;
			continue;
		}
		const char *value;
		if (arg[k + 1] == '=')
			value = arg + k + 2;
		else if (arg[k + 1])
			value = arg + k + 1;
		else if (*i + 1 < argc)
			value = argv[++*i];
		else
			return err_set(err, ERR_USAGE, "flag %s needs a value", display);
		return f->handle(req, display, value, environ_, err);
	}
	return 0;
}

int docker_args_parse(int argc, char *const *argv, char *const *environ_, struct fn_request *req,
                      struct err **err)
{
	req->run_as_user = req->run_as_group = 65534;
	int i = 0;
	for (; i < argc; i++) {
		const char *arg = argv[i];
		if (strcmp(arg, "--") == 0) {
			i++;
			break;
		}
		if (arg[0] != '-' || arg[1] == '\0')
			break;
		int rc = arg[1] == '-' ? parse_long(argc, argv, &i, environ_, req, err)
		                       : parse_short(argc, argv, &i, environ_, req, err);
		if (rc < 0)
			return -1;
	}
	if (i >= argc)
		return err_set(err, ERR_USAGE, "no image given: expected docker run [flags] IMAGE");
	if (argv[i][0] == '\0')
		return err_set(err, ERR_USAGE, "the image name is empty");
	req->image = xstrdup(argv[i++]);
	req->n_args = (size_t)(argc - i);
	if (req->n_args) {
		req->args = xcalloc(req->n_args, sizeof(char *));
		for (size_t k = 0; k < req->n_args; k++)
			req->args[k] = xstrdup(argv[i + (int)k]);
	}
	return 0;
}

/* Appends one semver pre-release identifier made of ident[0..n): characters other than
 * [0-9A-Za-z-] become '-', an empty identifier becomes "0", and a numeric one with a leading
 * zero (a git hash like 0123456) gets a 'g' in front, since semver forbids leading zeros. */
static void put_identifier(struct buf *b, const char *ident, size_t n)
{
	if (n == 0) {
		buf_putc(b, '0');
		return;
	}
	bool numeric = true;
	for (size_t i = 0; i < n; i++)
		numeric = numeric && isdigit((unsigned char)ident[i]);
	if (numeric && n > 1 && ident[0] == '0')
		buf_putc(b, 'g');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)ident[i];
		buf_putc(b, isalnum(c) || c == '-' ? (char)c : '-');
	}
}

char *docker_args_engine_version(const char *krmpod_version)
{
	struct buf b;
	buf_init(&b, 0);
	buf_puts(&b, DOCKER_COMPAT_VERSION "-krmpod");
	size_t len = strnlen(krmpod_version, DOCKER_VERSION_MAX);
	for (size_t i = 0; i < len;) {
		size_t n = 0;
		while (i + n < len && krmpod_version[i + n] != '.')
			n++;
		buf_putc(&b, '.');
		put_identifier(&b, krmpod_version + i, n);
		i += n + 1;
		if (i == len && krmpod_version[len - 1] == '.') /* "1." ends in an empty one */
			buf_puts(&b, ".0");
	}
	return buf_steal(&b, NULL);
}

/* Evaluates one `{{ACTION}}` of a docker version template (ACTION without the braces and
 * the blanks around it). */
static int template_action(const char *action, size_t n, const char *engine,
                           const char *krmpod_version, struct buf *out, const char *format,
                           struct err **err)
{
#define IS(lit) (n == sizeof(lit) - 1 && memcmp(action, lit, n) == 0)
	if (IS(".Client.Version") || IS(".Server.Version")) {
		buf_puts(out, engine);
		return 0;
	}
	if (IS("json .")) {
		struct jw w;
		jw_init(&w, out);
		jw_obj_begin(&w);
		static const char *const sides[] = {"Client", "Server"};
		for (size_t i = 0; i < 2; i++) {
			jw_key(&w, sides[i]);
			jw_obj_begin(&w);
			jw_key(&w, "Platform");
			jw_obj_begin(&w);
			jw_kv_str(&w, "Name", "krmpod (KRM functions as Kubernetes pods)");
			jw_obj_end(&w);
			jw_kv_str(&w, "Version", engine);
			jw_kv_str(&w, "KrmpodVersion", krmpod_version);
			jw_obj_end(&w);
		}
		jw_obj_end(&w);
		return 0;
	}
#undef IS
	return err_set(err, ERR_USAGE,
	               "docker version --format %s: krmpod's docker shim cannot answer {{%.*s}}: "
	               "it knows only {{.Client.Version}}, {{.Server.Version}} and {{json .}}",
	               format, (int)(n < 200 ? n : 200), action);
}

/* Renders a Go-template-like docker version format: text is copied, each {{ACTION}} is
 * evaluated by template_action(); docker ends the output with a newline. */
static int render_template(const char *format, const char *engine, const char *krmpod_version,
                           struct buf *out, struct err **err)
{
	for (const char *p = format; *p;) {
		const char *open = strstr(p, "{{");
		if (open == NULL) {
			buf_puts(out, p);
			break;
		}
		buf_append(out, p, (size_t)(open - p), "docker version output", NULL);
		const char *close = strstr(open + 2, "}}");
		if (close == NULL)
			return err_set(err, ERR_USAGE,
			               "docker version --format %s: a {{ without its }}", format);
		const char *a = open + 2, *e = close;
		while (a < e && (*a == ' ' || *a == '\t'))
			a++;
		while (e > a && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (template_action(a, (size_t)(e - a), engine, krmpod_version, out, format, err) <
		    0)
			return -1;
		p = close + 2;
	}
	buf_putc(out, '\n');
	return 0;
}

int docker_args_version(int argc, char *const *argv, const char *krmpod_version, char **out,
                        struct err **err)
{
	const char *format = NULL;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--format") == 0 || strcmp(a, "-f") == 0) {
			if (i + 1 >= argc)
				return err_set(err, ERR_USAGE, "flag %s needs a value", a);
			format = argv[++i];
		} else if (strncmp(a, "--format=", 9) == 0) {
			format = a + 9;
		} else {
			return err_set(err, ERR_USAGE,
			               "unknown argument %s to docker version: krmpod accepts only "
			               "--format",
			               a);
		}
	}
	cleanup_free char *engine = docker_args_engine_version(krmpod_version);
	if (format == NULL) {
		*out = xasprintf("Client: krmpod (KRM functions as Kubernetes pods)\n"
		                 " Version:           %s\n"
		                 " krmpod version:    %s\n"
		                 "\n"
		                 "Server: krmpod (KRM functions as Kubernetes pods)\n"
		                 " Engine:\n"
		                 "  Version:          %s\n",
		                 engine, krmpod_version, engine);
		return 0;
	}
	cleanup_buf struct buf b;
	buf_init(&b, 0);
	if (render_template(format, engine, krmpod_version, &b, err) < 0)
		return -1;
	*out = buf_steal(&b, NULL);
	return 0;
}

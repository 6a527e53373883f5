/* cmp.c — see cmp.h and docs/internals/generate.md. */
#include "cmp/cmp.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/fd_cap.h"
#include "base/fdio.h"
#include "base/json.h"
#include "base/log.h"
#include "base/signals.h"
#include "base/strv.h"
#include "base/xalloc.h"
#include "catalog/catalog_store.h"
#include "catalog/image_policy.h"
#include "cmp/cmp_catalogs.h"
#include "cmp/kustomization.h"
#include "cmp/kustomize_run.h"
#include "cmp/prestart.h"
#include "config/kubeconfig.h"
#include "config/plugin_settings.h"
#include "config/settings.h"
#include "fn/fn_config.h"
#include "handoff/markers.h"
#include "kube/kube_api.h"
#include "kube/kube_http.h"
#include "ops/gc.h"
#include "sign/sig_policy.h"

#define INIT_KUSTOMIZE_TIMEOUT_MS 2000
/* How long deleting the pods of killed shims may take (lost_shims). */
#define LOST_POD_DELETE_MS 3000

static int need_kustomization(const char *what, struct err **err)
{
	if (kustomization_file(".") != NULL)
		return 0;
	char cwd[PATH_MAX];
	if (getcwd(cwd, sizeof(cwd)) == NULL)
		snprintf(cwd, sizeof(cwd), ".");
	return err_set(err, ERR_CONFIG,
	               "%s: no kustomization.yaml, kustomization.yml or Kustomization in %s: point "
	               "the Application's source path at a kustomization directory",
	               what, cwd);
}

/* Validates every setting the shims will read, so a bad value fails once, up front. */
static int check_function_settings(char *const *envp, struct err **err)
{
	struct settings s;
	if (settings_load_env(&s, envp, err) < 0)
		return -1;
	settings_clear(&s);
	return 0;
}

/* --- the shim's private bin dir ------------------------------------------------------- */

struct shim_dir {
	char *path;
	bool made; /* we made it: remove it afterwards */
};

static int shim_dir_open(const struct cmp_settings *cs, struct shim_dir *d, struct err **err)
{
	memset(d, 0, sizeof(*d));
	if (cs->shim_dir) {
		cleanup_free char *docker = xasprintf("%s/docker", cs->shim_dir);
		if (access(docker, X_OK) < 0)
			return err_set(
			        err, ERR_CONFIG,
			        "KRMPOD_SHIM_DIR=%s: %s is not an executable (%s): it must be a "
			        "symlink to krmpod named docker",
			        cs->shim_dir, docker, strerror(errno));
		d->path = xstrdup(cs->shim_dir);
		return 0;
	}
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		return err_set_sys(err, ERR_IO, errno,
		                   "cannot find krmpod's own path (/proc/self/exe)");
	self[n] = '\0';
	if (tmp_dir_make("krmpod-shim", "the shim's bin directory (or set KRMPOD_SHIM_DIR)",
	                 &d->path, err) < 0)
		return -1;
	d->made = true;
	cleanup_free char *docker = xasprintf("%s/docker", d->path);
	if (symlink(self, docker) < 0)
		return err_set_sys(err, ERR_IO, errno, "symlink %s", docker);
	return 0;
}

static void shim_dir_close(struct shim_dir *d)
{
	if (d->made && d->path) {
		cleanup_free char *docker = xasprintf("%s/docker", d->path);
		unlink(docker);
		rmdir(d->path);
	}
	free(d->path);
	d->path = NULL;
}

/* Writes data to a new private file TMPDIR/PREFIX-XXXXXX for the shims; *out is its path. */
static int write_temp_file(const char *prefix, const char *data, size_t len, char **out,
                           struct err **err)
{
	char *path = NULL;
	cleanup_close int fd = tmp_file_make(prefix, "the shims", &path, err);
	if (fd < 0)
		return -1;
	if (fd_write_all(fd, data, len, path, err) < 0) {
		unlink(path);
		free(path);
		return -1;
	}
	*out = path;
	return 0;
}

/* What generate hands its shims through kustomize's environment. */
struct shim_env {
	bool level_given;            /* KRMPOD_LOG_LEVEL is set: keep it */
	const char *shim_dir;        /* first on PATH */
	long long deadline_epoch_ms; /* KRMPOD_DEADLINE_MS */
	const char *template_file;   /* KRMPOD_POD_TEMPLATE, when prefetched */
	const char *overrides_file;  /* KRMPOD_FN_OVERRIDES */
	const char *prestart_dir;    /* KRMPOD_PRESTART_DIR */
	const char *policy_file;     /* KRMPOD_POLICY_FILE */
	/* KRMPOD_WARM_POOL_IMAGES: the admin's patterns, and the images of the functions
	 * resolved from idempotent catalog entries (NULL: as inherited) */
	char *pool_images;
	const char *running_dir; /* KRMPOD_RUNNING_DIR */
};

/* Whether an environment entry is one generate sets itself (so the inherited one goes). */
static bool replaced(const char *entry, const struct shim_env *se)
{
	static const char *const ours[] = {"PATH=",
	                                   "KRMPOD_DEADLINE_MS=",
	                                   "KRMPOD_FN_OVERRIDES=",
	                                   "KRMPOD_PRESTART_DIR=",
	                                   "KRMPOD_POLICY_FILE=",
	                                   "KRMPOD_RUNNING_DIR="};
	if (se->pool_images && strncmp(entry, "KRMPOD_WARM_POOL_IMAGES=", 24) == 0)
		return true;
	for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		if (strncmp(entry, ours[i], strlen(ours[i])) == 0)
			return true;
	return (!se->level_given && strncmp(entry, "KRMPOD_LOG_LEVEL=", 17) == 0) ||
	       (se->template_file && strncmp(entry, "KRMPOD_POD_TEMPLATE=", 20) == 0);
}

/* kustomize's environment: ours, with the shim dir first on PATH, and for the shims
 * generate's deadline, its files and a log level (info when the user chose none). Nothing
 * else is added or removed: what a function sees is decided by the shim, which passes only
 * the variables the function's config names. */
static char **kustomize_env(char *const *envp, const struct shim_env *se)
{
	size_t n = 0;
	while (envp[n])
		n++;
	char **env = xcalloc(n + 9, sizeof(char *));
	size_t k = 0;
	/* The shims are quiet by default (kpt copies their stderr into its results); under
	 * generate each function's line is wanted, unless the user chose a level. */
	if (!se->level_given)
		env[k++] = xstrdup("KRMPOD_LOG_LEVEL=info");
	const char *path = settings_env(envp, "PATH");
	env[k++] = xasprintf("PATH=%s:%s", se->shim_dir, path && *path ? path : "/usr/bin:/bin");
	env[k++] = xasprintf("KRMPOD_DEADLINE_MS=%lld", se->deadline_epoch_ms);
	if (se->template_file)
		env[k++] = xasprintf("KRMPOD_POD_TEMPLATE=%s", se->template_file);
	env[k++] =
	        xasprintf("KRMPOD_FN_OVERRIDES=%s", se->overrides_file ? se->overrides_file : "");
	env[k++] = xasprintf("KRMPOD_PRESTART_DIR=%s", se->prestart_dir ? se->prestart_dir : "");
	env[k++] = xasprintf("KRMPOD_POLICY_FILE=%s", se->policy_file ? se->policy_file : "");
	if (se->pool_images)
		env[k++] = xasprintf("KRMPOD_WARM_POOL_IMAGES=%s", se->pool_images);
	env[k++] = xasprintf("KRMPOD_RUNNING_DIR=%s", se->running_dir ? se->running_dir : "");
	for (size_t i = 0; i < n; i++)
		if (!replaced(envp[i], se))
			env[k++] = xstrdup(envp[i]);
	return env;
}

/* Per-function resource overrides: the krmpod.dev/cpu-limit and krmpod.dev/memory-limit
 * annotations of the function configs in the tree, checked against the admin's maxima and
 * handed to the shims as a file (*out; NULL when no config has one). */
static int collect_overrides(const struct settings *s, const struct kfn *fns, size_t n, char **out,
                             struct err **err)
{
	*out = NULL;
	cleanup_buf struct buf b;
	buf_init(&b, 0);
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (!fns[i].cpu_limit && !fns[i].memory_limit)
			continue;
		if ((fns[i].cpu_limit &&
		     settings_check_override(s, fns[i].where, ANNOTATION_CPU_LIMIT,
		                             fns[i].cpu_limit, err) < 0) ||
		    (fns[i].memory_limit &&
		     settings_check_override(s, fns[i].where, ANNOTATION_MEMORY_LIMIT,
		                             fns[i].memory_limit, err) < 0)) {
			rc = -1;
			break;
		}
		buf_printf(&b, "%s\t%s\t%s\n", fns[i].image,
		           fns[i].cpu_limit ? fns[i].cpu_limit : "",
		           fns[i].memory_limit ? fns[i].memory_limit : "");
	}
	if (rc < 0 || b.len == 0)
		return rc;
	return write_temp_file("krmpod-overrides", b.data, b.len, out, err);
}

/* A PodTemplate named by KRMPOD_POD_TEMPLATE is read once per generate run (into s),
 * checked, and handed to the shims as a file (*out: its path, to unlink; NULL when there is
 * nothing to prefetch), so that no function pays a request for it. */
static int prefetch_template(struct settings *s, struct kube_config *cfg, char **out,
                             struct err **err)
{
	*out = NULL;
	if (s->pod_template == NULL || strchr(s->pod_template, '/'))
		return 0;
	if (fn_config_load_template(s, cfg, err) < 0)
		return -1;
	cleanup_buf struct buf b;
	buf_init(&b, 0);
	struct jw w;
	jw_init(&w, &b);
	json_write(&w, s->template);
	return write_temp_file("krmpod-podtemplate", b.data, b.len, out, err);
}

static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\n' && s[i] != '\t' && s[i] != '\r')
			return false;
	return true;
}

/* Everything one generate owns; render_free() releases it on every path. */
struct render {
	int64_t t0;
	struct cmp_settings cs;
	struct kfn *fns;
	size_t n_fns;
	struct settings fs; /* the shims' settings */
	struct kube_config *cfg;
	struct shim_dir sd;
	char *template_file, *overrides_file; /* handed to the shims, unlinked at the end */
	struct catalog_store *store;          /* the catalogs, loaded once */
	struct catalog_apply cat;             /* where kustomize builds, with catalogs applied */
	struct policy policy;                 /* the image policy */
	char *policy_file;                    /* ... handed to the shims */
	struct prestart *pre;
	char *running_dir; /* the shims' markers (handoff/markers.h) */
	char **env;        /* kustomize's */
	struct buf out;
};

static void unlink_free(char *path)
{
	if (path)
		unlink(path);
	free(path);
}

static void render_free(struct render *r)
{
	prestart_end(r->pre);
	if (r->running_dir)
		shim_markers_remove_dir(r->running_dir);
	free(r->running_dir);
	settings_clear(&r->fs);
	kube_config_free(r->cfg);
	kustomization_functions_free(r->fns, r->n_fns);
	shim_dir_close(&r->sd);
	unlink_free(r->template_file);
	unlink_free(r->overrides_file);
	unlink_free(r->policy_file);
	policy_clear(&r->policy);
	catalog_apply_free(&r->cat);
	catalog_store_free(r->store);
	strv_free(r->env);
	buf_free(&r->out);
	cmp_settings_clear(&r->cs);
}

/* The image policy (image_policy.h), checked for every function of the tree before kustomize
 * runs, and handed to the shims as a file, which check it again. With the warm pool, the
 * file also carries the admin's catalog images for shareAcrossApplications (fn_config.c) and
 * the entrypoints they record (entrypoint.c), so that no shim fetches a catalog. */
static int check_policy(struct render *r, struct err **err)
{
	policy_init(&r->policy, &r->fs);
	bool sig_catalogs = false;
	if (r->fs.signature_policy) { /* read before kustomize runs: a bad one fails at once */
		struct sig_policy sp;
		if (sig_policy_load(r->fs.signature_policy, "KRMPOD_SIGNATURE_POLICY", &sp, err) <
		    0)
			return err_wrap(err, "generate");
		sig_catalogs = sig_policy_has_catalogs(&sp);
		sig_policy_clear(&sp);
	}
	bool admin_catalogs = r->fs.n_trusted_catalogs + r->fs.n_default_catalogs > 0;
	bool images = r->fs.image_policy == IMAGE_POLICY_CATALOG ||
	              ((r->fs.warm_pool || sig_catalogs) && admin_catalogs);
	/* otherwise the shims need the admin's catalogs only for the entrypoints they record
	 * (entrypoint.h), whenever exec mode is possible: from those that can be loaded */
	bool records = !images && admin_catalogs && r->fs.mode != FN_MODE_ATTACH &&
	               r->fs.helper_image != NULL;
	if (r->fs.image_policy == IMAGE_POLICY_ANY && !r->fs.require_digest && !images && !records)
		return 0;
	if (images && catalog_store_admin_images(r->store, &r->policy, err) < 0)
		return err_wrap(err, "generate: the image policy");
	if (records)
		catalog_store_admin_records(r->store, &r->policy);
	for (size_t i = 0; i < r->n_fns; i++)
		policy_add_named(&r->policy, r->fns[i].image, r->fns[i].where);
	for (size_t i = 0; i < r->n_fns; i++) {
		const struct kfn *f = &r->fns[i];
		if (policy_check(&r->policy, f->image, f->network, f->has_mounts, f->where, err) <
		    0)
			return err_wrap(err, "generate");
	}
	cleanup_buf struct buf b;
	buf_init(&b, 0);
	policy_write(&r->policy, &b);
	return write_temp_file("krmpod-policy", b.data, b.len, &r->policy_file, err);
}

/* The catalogs, then the function configs of the tree as kustomize will read them. */
static int functions(struct render *r, char *const *envp, struct err **err)
{
	if (need_kustomization("generate", err) < 0 || settings_load_env(&r->fs, envp, err) < 0)
		return -1;
	catalog_store_open(&r->fs, &signals_cancel, r->t0 + r->cs.timeout_ms, &r->store);
	if (catalog_apply(&r->fs, r->store, &r->cat, err) < 0)
		return err_wrap(err, "generate");
	if (kustomization_functions(r->cat.work_dir, &r->fns, &r->n_fns, err) < 0)
		return err_wrap(err, "generate: read the function configs");
	if (check_policy(r, err) < 0)
		return -1;
	if (r->n_fns == 0) /* no cluster to ask: the settings were only checked */
		return 0;
	settings_clear(&r->fs);
	if (fn_config_load(envp, &r->fs, &r->cfg, err) < 0)
		return err_wrap(err, "generate: the kustomization runs functions, so krmpod needs "
		                     "cluster credentials");
	return 0;
}

/* KRMPOD_WARM_POOL_IMAGES for the shims: the admin's, and the images this render resolved
 * from idempotent catalog entries (the KEP's mark of a function safe to run again). NULL
 * when there are none of the latter. */
static char *pool_images(const struct settings *s, const char *idempotent)
{
	if (idempotent == NULL)
		return NULL;
	struct buf b;
	buf_init(&b, 0);
	for (size_t i = 0; i < s->n_pool_images; i++)
		buf_printf(&b, "%s,", s->pool_images[i]);
	buf_puts(&b, idempotent);
	return buf_steal(&b, NULL);
}

/* Up to kustomize: the function configs, the shims' settings, their bin dir and files,
 * prestart, and kustomize's environment. */
static int prepare(struct render *r, char *const *envp, struct err **err)
{
	if (functions(r, envp, err) < 0 || shim_dir_open(&r->cs, &r->sd, err) < 0 ||
	    (r->cfg && prefetch_template(&r->fs, r->cfg, &r->template_file, err) < 0) ||
	    collect_overrides(&r->fs, r->fns, r->n_fns, &r->overrides_file, err) < 0)
		return -1;
	if (r->cs.prestart && r->n_fns > 0 &&
	    prestart_new(&r->pre, r->t0 + r->cs.timeout_ms, err) < 0)
		return -1;
	if (r->cfg &&
	    tmp_dir_make("krmpod-running", "the running shims' markers", &r->running_dir, err) < 0)
		return -1;
	struct shim_env se = {.level_given = r->cs.log_level_given,
	                      .shim_dir = r->sd.path,
	                      .deadline_epoch_ms = epoch_ms() + r->cs.timeout_ms,
	                      .template_file = r->template_file,
	                      .overrides_file = r->overrides_file,
	                      .prestart_dir = prestart_dir(r->pre),
	                      .policy_file = r->policy_file,
	                      .running_dir = r->running_dir,
	                      .pool_images = pool_images(&r->fs, r->cat.idempotent_images)};
	r->env = kustomize_env(envp, &se);
	free(se.pool_images);
	/* Prestart resolves each pod from the very environment the shims will get. */
	if (r->pre && prestart_begin(r->pre, r->fns, r->n_fns, r->cs.prestart_max,
	                             r->cs.allow_network, r->env, r->cfg, err) < 0)
		return -1;
	return 0;
}

/* Shims that died without a word, as their markers tell once kustomize ended
 * (handoff/markers.h): each one's function is named in *what (NULL when there is none) and
 * its pod, when it had one, deleted (bounded, not cancellable: nobody else will). */
static void lost_shims(struct render *r, char **what)
{
	*what = NULL;
	struct shim_marker *m = NULL;
	size_t n = 0;
	if (r->running_dir)
		shim_markers_collect(r->running_dir, &m, &n);
	if (n == 0)
		return;
	cleanup_kube_client struct kube_client *c = NULL;
	cleanup_err struct err *ce = NULL;
	if (kube_client_new(r->cfg, &c, &ce) < 0)
		log_warn("cannot delete the pods of killed shims: %s", ce->msg);
	else
		kube_client_set_deadline(c, now_ms() + LOST_POD_DELETE_MS);
	struct buf b;
	buf_init(&b, 0);
	for (size_t i = 0; i < n; i++) {
		buf_printf(&b,
		           "%sfunction %s: its shim (pid %d) was killed before it finished (by "
		           "SIGKILL, or the OOM killer)",
		           i ? "; " : "", m[i].image, (int)m[i].pid);
		if (m[i].pod == NULL)
			continue;
		cleanup_err struct err *de = NULL;
		if (c && kube_api_pod_delete(c, m[i].ns, m[i].pod, &de) == 0) {
			buf_printf(&b, "; its pod %s/%s was deleted", m[i].ns, m[i].pod);
			continue;
		}
		buf_printf(&b, "; its pod %s/%s is left for `krmpod gc`", m[i].ns, m[i].pod);
		if (de)
			log_warn("delete pod %s/%s: %s", m[i].ns, m[i].pod, de->msg);
	}
	shim_markers_free(m, n);
	*what = buf_steal(&b, NULL);
}

/* kustomize, then the manifests on out_fd only when it succeeded with some. */
static int render(struct render *r, int out_fd, struct err **err)
{
	cleanup_free char *deadline_name =
	        xasprintf("KRMPOD_GENERATE_TIMEOUT (%lld ms)", (long long)r->cs.timeout_ms);
	struct kustomize_opts ko = {
	        .argv = r->cs.kustomize_argv,
	        .envp = r->env,
	        .deadline_ms = r->t0 + r->cs.timeout_ms,
	        .deadline_name = deadline_name,
	        .cancel = &signals_cancel,
	        .keep = {prestart_janitor(r->pre)},
	        .dir = r->cat.work_dir,
	        .max_output = (size_t)r->cs.max_output,
	        .max_output_name = "KRMPOD_GENERATE_MAX_OUTPUT",
	};
	/* Argo CD keeps a plugin's whole stderr in memory: the render's is bounded */
	struct fd_cap *cap = NULL;
	if (fd_cap_pipe(2, (uint64_t)r->cs.max_stderr, "the render's stderr",
	                "KRMPOD_GENERATE_MAX_STDERR", &cap, err) < 0)
		return err_wrap(err, "generate");
	ko.err_fd = fd_cap_fd(cap);
	ko.keep[1] = fd_cap_pid(cap);
	int rc = kustomize_run(&ko, &r->out, err);
	uint64_t dropped = fd_cap_end(cap);
	if (dropped)
		log_warn("%llu bytes of the render's stderr were dropped "
		         "(KRMPOD_GENERATE_MAX_STDERR)",
		         (unsigned long long)dropped);
	cleanup_free char *lost = NULL;
	lost_shims(r, &lost);
	if (rc < 0)
		return lost ? err_wrap(err, "generate: %s", lost) : err_wrap(err, "generate");
	if (lost)
		log_warn("%s", lost);
	/* the render's pods go before its manifests are printed: one left running fails it */
	if (prestart_finish(r->pre, err) < 0)
		return err_wrap(err, "generate");
	if (blank(r->out.data, r->out.len))
		return err_set(err, ERR_IO,
		               "generate: kustomize succeeded but produced no manifests; refusing "
		               "to print empty output (with auto-prune, Argo CD would delete every "
		               "resource of the application)");
	if (fd_write_all(out_fd, r->out.data, r->out.len, "stdout", err) < 0)
		return err_wrap(err, "generate: print the manifests");
	log_info("%zu bytes of manifests in %lld ms", r->out.len, (long long)(now_ms() - r->t0));
	return 0;
}

/* Pods a sidecar killed mid-render left (gc.h), swept now and then after a render; a
 * failure to sweep is a warning, never the render's failure. */
static void sweep_leftovers(struct render *r)
{
	struct fn_gc_result res;
	cleanup_err struct err *e = NULL;
	if (fn_gc_periodic(&r->fs, r->cfg, r->cs.gc_interval_ms, &signals_cancel, &res, &e) < 0)
		log_warn("%s (KRMPOD_GC_INTERVAL: the sweep of leftover pods after a render)",
		         e->msg);
}

int cmp_generate(char *const *envp, int out_fd, struct err **err)
{
	struct render r = {.t0 = now_ms()};
	buf_init(&r.out, 0);
	int rc = cmp_settings_load(&r.cs, envp, err);
	if (rc == 0)
		rc = prepare(&r, envp, err);
	if (rc == 0)
		rc = render(&r, out_fd, err);
	if (r.cfg && !signals_cancel)
		sweep_leftovers(&r);
	render_free(&r);
	return rc;
}

/* Runs `kustomize version` (or `kubectl version --client`) to prove the binary runs. */
static int check_kustomize(const struct cmp_settings *cs, char *const *envp, struct err **err)
{
	char *const kz_argv[] = {cs->kustomize_argv[0], "version", NULL};
	char *const kubectl_argv[] = {cs->kustomize_argv[0], "version", "--client", NULL};
	struct kustomize_opts ko = {
	        .argv = cs->is_kubectl ? kubectl_argv : kz_argv,
	        .envp = envp,
	        .deadline_ms = now_ms() + INIT_KUSTOMIZE_TIMEOUT_MS,
	        .deadline_name = "init's check of KRMPOD_KUSTOMIZE",
	        .cancel = &signals_cancel,
	};
	cleanup_buf struct buf out;
	buf_init(&out, 0);
	if (kustomize_run(&ko, &out, err) < 0)
		return err_wrap(err, "KRMPOD_KUSTOMIZE=%s does not run", cs->kustomize_argv[0]);
	return 0;
}

/* init's checks, in the order a user fixes them. */
static int init_checks(const struct cmp_settings *cs, char *const *envp, struct err **err)
{
	int64_t t0 = now_ms();
	if (check_function_settings(envp, err) < 0 || need_kustomization("init", err) < 0 ||
	    check_kustomize(cs, envp, err) < 0)
		return -1;
	struct settings s;
	struct kube_config *cfg = NULL;
	if (fn_config_load(envp, &s, &cfg, err) < 0)
		return err_wrap(err, "init: no usable cluster credentials (the sidecar needs the "
		                     "projected service-account token volume, see "
		                     "docs/install.md)");
	log_info("init: ok: kustomization found, %s runs, credentials from %s (%lld ms)",
	         cs->kustomize_argv[0], cfg->source, (long long)(now_ms() - t0));
	settings_clear(&s);
	kube_config_free(cfg);
	return 0;
}

int cmp_init(char *const *envp, struct err **err)
{
	struct cmp_settings cs;
	if (cmp_settings_load(&cs, envp, err) < 0)
		return -1;
	int rc = init_checks(&cs, envp, err);
	cmp_settings_clear(&cs);
	return rc;
}

/* What discover prints for a tree that uses catalogs: its layers' catalogs, and the
 * function configs a catalog would resolve. Returns whether there is any. */
static bool discover_catalogs(const struct settings *s, FILE *out, const struct ktree *t)
{
	bool any = false;
	for (size_t i = 0; i < t->n_layers; i++)
		for (size_t c = 0; c < t->layers[i].n_catalogs; c++) {
			fprintf(out, "%s: catalog %s\n", t->layers[i].where,
			        t->layers[i].catalogs[c]);
			any = true;
		}
	bool defaults = s->n_default_catalogs > 0;
	for (size_t i = 0; i < t->n_docs; i++) {
		const struct kdoc *d = &t->docs[i];
		bool builtin = d->api_version && strncmp(d->api_version, "builtin", 7) == 0;
		if (!d->has_runtime && d->kind && !builtin &&
		    (defaults || t->layers[d->layer].n_catalogs > 0)) {
			fprintf(out, "%s: function %s %s, from a catalog\n", d->where,
			        d->api_version ? d->api_version : "", d->kind);
			any = true;
		}
	}
	return any;
}

int cmp_discover(char *const *envp, FILE *out, bool *found, struct err **err)
{
	*found = false;
	if (kustomization_file(".") == NULL) {
		log_debug("discover: no kustomization here");
		return 0;
	}
	struct kfn *fns = NULL;
	size_t n = 0;
	if (kustomization_functions(".", &fns, &n, err) < 0)
		return err_wrap(err, "discover");
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s: container function %s\n", fns[i].where, fns[i].image);
	kustomization_functions_free(fns, n);
	struct ktree t;
	struct settings s;
	if (settings_load_env(&s, envp, err) < 0)
		return err_wrap(err, "discover");
	if (kustomization_tree(".", &t, err) < 0) {
		settings_clear(&s);
		return err_wrap(err, "discover");
	}
	bool catalogs = discover_catalogs(&s, out, &t);
	kustomization_tree_free(&t);
	settings_clear(&s);
	*found = n > 0 || catalogs;
	if (!*found)
		log_debug(
		        "discover: the kustomization uses no containerized KRM functions: left to "
		        "Argo CD's built-in kustomize");
	return 0;
}

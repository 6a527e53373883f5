/* entrypoint.c — see entrypoint.h. */
#include "admit/entrypoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admit/pull_auth.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/sha256.h"
#include "base/strv.h"
#include "base/xalloc.h"
#include "catalog/catalog_store.h"
#include "catalog/image_policy.h"
#include "registry/registry.h"

/* Docker's rule: ENTRYPOINT, then the run's args or else CMD. */
static char **argv_of(char *const *entrypoint, char *const *cmd, const struct fn_request *req)
{
	size_t ne = strv_len(entrypoint), nc = req->n_args ? req->n_args : strv_len(cmd);
	char **argv = xcalloc(ne + nc + 1, sizeof(char *));
	for (size_t i = 0; i < ne; i++)
		argv[i] = xstrdup(entrypoint[i]);
	for (size_t i = 0; i < nc; i++)
		argv[ne + i] = xstrdup(req->n_args ? req->args[i] : cmd[i]);
	return argv;
}

/* The marker of what was said of image under the cache dir ("attach-fallback" or
 * "exec-chosen"), keyed by the image and the settings that decide whether its config can be
 * read (credentials, mirrors, CA): a new string. */
static char *marker_path(const struct settings *s, const char *kind, const char *image)
{
	cleanup_buf struct buf key;
	buf_init(&key, 0);
	buf_printf(&key, "%s\n%s\n%s\n", image, s->registry_auth ? s->registry_auth : "",
	           s->registry_ca ? s->registry_ca : "");
	for (size_t i = 0; i < s->n_registry_mirrors; i++)
		buf_printf(&key, "%s=%s,", s->registry_mirrors[i].key,
		           s->registry_mirrors[i].value);
	char hex[SHA256_HEX_LEN + 1];
	sha256_hex(key.data, key.len, hex);
	return xasprintf("%s/%s/%s", s->cache_dir, kind, hex);
}

/* Makes the marker; true when it is new (the first time: say it at info level). */
static bool first_time(const struct settings *s, const char *kind, const char *image)
{
	cleanup_free char *dir = xasprintf("%s/%s", s->cache_dir, kind);
	if (mkdir(s->cache_dir, 0700) < 0 && errno != EEXIST)
		return true;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return true;
	cleanup_free char *marker = marker_path(s, kind, image);
	cleanup_close int fd = open(marker, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST)
		utimensat(AT_FDCWD, marker, NULL, 0); /* the fallback is fresh again */
	return fd >= 0 || errno != EEXIST;
}

/* Whether image fell back to attach mode within FN_IMAGE_TAG_TTL_MS, with these registry
 * settings: its config is not asked for again until then, so that a cluster without
 * registry access pays the failed read once per image, not once per function. */
static bool recent_fallback(const struct settings *s, const char *image)
{
	cleanup_free char *marker = marker_path(s, "attach-fallback", image);
	struct stat st;
	if (stat(marker, &st) < 0)
		return false;
	int64_t age =
	        epoch_ms() - ((int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000);
	return age >= 0 && age < FN_IMAGE_TAG_TTL_MS;
}

static const char *mode_name(enum fn_mode m)
{
	return m == FN_MODE_AUTO ? "auto" : m == FN_MODE_EXEC ? "exec" : "attach";
}

/* The admin catalog entry that records image's entrypoint (catalog.h): from the policy file
 * generate wrote (it carries the records), else from the admin's catalogs that can be
 * loaded (catalog_store_admin_records). *rec points into *p (cleared by the caller). */
static int recorded(const struct settings *s, const struct fn_request *req, atomic_int *cancel,
                    struct policy *p, const struct policy_image **rec, struct err **err)
{
	*rec = NULL;
	if (s->policy_file) {
		if (catalog_store_policy(s, cancel, false, p, err) < 0)
			return err_wrap(err,
			                "exec mode: the entrypoints the admin's catalogs record");
	} else if (s->n_trusted_catalogs + s->n_default_catalogs > 0) {
		policy_init(p, s);
		struct catalog_store *st = NULL;
		catalog_store_open(s, cancel, now_ms() + s->start_timeout_ms, &st);
		catalog_store_admin_records(st, p);
		catalog_store_free(st);
	}
	if (policy_recorded(p, req->image, rec, err) < 0)
		return err_wrap(err, "exec mode");
	return 0;
}

/* Exec mode with what the catalog entry rec records (the config was not read: why). */
static int from_record(const struct settings *s, struct fn_request *req,
                       const struct policy_image *rec, const char *why)
{
	req->exec_argv = argv_of(rec->entrypoint, rec->cmd, req);
	enum log_level lvl = first_time(s, "exec-recorded", req->image) ? LOG_INFO : LOG_DEBUG;
	log_msg(lvl,
	        "%s runs in exec mode (KRMPOD_MODE=%s) with the entrypoint recorded by %s: its "
	        "image config %s",
	        req->image, mode_name(s->mode), rec->origin, why);
	return 0;
}

/* Exec mode on the image's own entrypoint (the config cannot be read and no catalog records
 * it: why): the runtime starts the entrypoint, and the call runs its command line. */
static int from_pid1(const struct settings *s, struct fn_request *req, const char *why, bool first)
{
	if (!req->want_stdin) { /* without -i (`--help`, `kpt fn doc`) it would not wait */
		log_msg(first ? LOG_INFO : LOG_DEBUG,
		        "%s runs in attach mode: its image config %s, and run without -i its "
		        "entrypoint would not wait on its stdin for krmpod's call",
		        req->image, why);
		return 0;
	}
	req->exec_argv = xcalloc(1, sizeof(char *));
	req->exec_pid1 = true;
	log_msg(first ? LOG_INFO : LOG_DEBUG,
	        "%s runs in exec mode (KRMPOD_MODE=%s) on its image's own entrypoint: its image "
	        "config %s, so the function's process, started by the container runtime and "
	        "held on its stdin, tells krmpod its command line (a catalog entry that records "
	        "the entrypoint saves that process)",
	        req->image, mode_name(s->mode), why);
	return 0;
}

/* Exec mode from the image config c, which must agree with rec when there is one. */
static int from_config(const struct settings *s, struct fn_request *req,
                       const struct registry_image_config *c, const struct policy_image *rec,
                       struct err **err)
{
	if (rec && !(strv_equal(rec->entrypoint, c->entrypoint) && strv_equal(rec->cmd, c->cmd))) {
		cleanup_free char *want = policy_describe_run(rec->entrypoint, rec->cmd);
		cleanup_free char *got = policy_describe_run(c->entrypoint, c->cmd);
		return err_set(err, ERR_CONFIG,
		               "image %s: %s records %s, but its config in the registry (manifest "
		               "%s) says %s: correct the catalog entry (or pin the image it was "
		               "recorded from)",
		               req->image, rec->origin, want, c->manifest_digest, got);
	}
	if (strv_len(c->entrypoint) + (req->n_args ? req->n_args : strv_len(c->cmd)) == 0)
		return err_set(
		        err, ERR_CONFIG,
		        "image %s: its config has neither Entrypoint nor Cmd: nothing to run",
		        req->image);
	req->exec_argv = argv_of(c->entrypoint, c->cmd, req);
	enum log_level lvl = s->mode == FN_MODE_AUTO && first_time(s, "exec-chosen", req->image)
	                             ? LOG_INFO
	                             : LOG_DEBUG;
	log_msg(lvl, "%s runs in exec mode (KRMPOD_MODE=%s): manifest %s, argv[0] %s%s", req->image,
	        mode_name(s->mode), c->manifest_digest, req->exec_argv[0],
	        rec ? " (as its catalog entry records)" : "");
	return 0;
}

/* The image's config with the registry settings' credentials; when the registry wants
 * credentials those do not have (401), again with the function pods' pull Secrets the
 * sidecar may read (pull_auth.h). */
static int read_config(const struct settings *s, struct kube_config *cfg, struct registry_opts *o,
                       const struct oci_ref *ref, struct registry_image_config *c, struct err **err)
{
	if (registry_image_config(o, ref, c, err) == 0)
		return 0;
	if ((*err)->http_status != 401 || cfg == NULL)
		return -1;
	struct fn_pull_auths a;
	cleanup_err struct err *le = NULL;
	if (fn_pull_auths_load(s, cfg, o->cancel, &a, &le) < 0 || a.n == 0) {
		fn_pull_auths_clear(&a);
		return -1;
	}
	err_free(*err);
	*err = NULL;
	o->auth_docs = a.docs;
	o->n_auth_docs = a.n;
	int rc = registry_image_config(o, ref, c, err);
	o->auth_docs = NULL;
	o->n_auth_docs = 0;
	fn_pull_auths_clear(&a);
	return rc;
}

static int resolve(const struct settings *s, struct kube_config *cfg, struct fn_request *req,
                   const struct policy_image *rec, atomic_int *cancel, int64_t deadline_ms,
                   struct err **err)
{
	/* auto only: under exec the admin asked for exec mode, and a registry that failed a
	 * moment ago is asked again */
	if (s->mode == FN_MODE_AUTO && recent_fallback(s, req->image)) {
		if (rec)
			return from_record(s, req, rec, "could not be read in the last 300 s");
		cleanup_free char *why =
		        xasprintf("could not be read in the last %d s", FN_IMAGE_TAG_TTL_MS / 1000);
		return from_pid1(s, req, why, false);
	}
	struct registry_opts o;
	registry_opts_init(&o, s, cancel, deadline_ms);
	o.tag_ttl_ms = FN_IMAGE_TAG_TTL_MS;
	struct oci_ref ref;
	struct registry_image_config c;
	cleanup_err struct err *e = NULL;
	int rc = oci_ref_parse(req->pinned_image ? req->pinned_image : req->image, &ref, &e);
	if (rc == 0) {
		rc = read_config(s, cfg, &o, &ref, &c, &e);
		oci_ref_clear(&ref);
	}
	if (rc == 0) {
		rc = from_config(s, req, &c, rec, err);
		registry_image_config_clear(&c);
		return rc;
	}
	if (e->code == ERR_SIGNAL) {
		*err = e;
		e = NULL;
		return -1;
	}
	bool first = first_time(s, "attach-fallback", req->image);
	if (rec) {
		cleanup_free char *why = xasprintf("cannot be read (%s)", e->msg);
		return from_record(s, req, rec, why);
	}
	cleanup_free char *why = xasprintf("cannot be read (%s)", e->msg);
	return from_pid1(s, req, why, first);
}

int fn_image_resolve(const struct settings *s, struct kube_config *cfg, struct fn_request *req,
                     atomic_int *cancel, int64_t deadline_ms, struct err **err)
{
	if (s->mode == FN_MODE_ATTACH || req->exec_argv)
		return 0;
	if (s->helper_image == NULL) { /* auto: exec mode needs krmpod in the pod */
		if (first_time(s, "attach-fallback", req->image))
			log_info("%s runs in attach mode: KRMPOD_MODE=auto runs functions in exec "
			         "mode "
			         "only with KRMPOD_HELPER_IMAGE set",
			         req->image);
		return 0;
	}
	struct policy p = {0};
	const struct policy_image *rec = NULL;
	int rc = recorded(s, req, cancel, &p, &rec, err);
	if (rc == 0)
		rc = resolve(s, cfg, req, rec, cancel, deadline_ms, err);
	policy_clear(&p);
	return rc;
}

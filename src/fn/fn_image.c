/* fn_image.c — see fn_image.h. */
#include "fn/fn_image.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/sha256.h"
#include "base/xalloc.h"
#include "registry/registry.h"

static size_t count(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

/* Docker's rule: ENTRYPOINT, then the run's args or else CMD. */
static char **argv_of(const struct registry_image_config *c, const struct fn_request *req)
{
	size_t ne = count(c->entrypoint), nc = req->n_args ? req->n_args : count(c->cmd);
	char **argv = xcalloc(ne + nc + 1, sizeof(char *));
	for (size_t i = 0; i < ne; i++)
		argv[i] = xstrdup(c->entrypoint[i]);
	for (size_t i = 0; i < nc; i++)
		argv[ne + i] = xstrdup(req->n_args ? req->args[i] : c->cmd[i]);
	return argv;
}

/* Whether this is the first fallback for image under the cache dir (a marker file is made,
 * so the info line comes once, not once per function call). */
static bool first_fallback(const struct settings *s, const char *image)
{
	char hex[SHA256_HEX_LEN + 1];
	sha256_hex(image, strlen(image), hex);
	cleanup_free char *dir = xasprintf("%s/attach-fallback", s->cache_dir);
	if (mkdir(s->cache_dir, 0700) < 0 && errno != EEXIST)
		return true;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return true;
	cleanup_free char *marker = xasprintf("%s/%s", dir, hex);
	cleanup_close int fd = open(marker, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	return fd >= 0 || errno != EEXIST;
}

int fn_image_resolve(const struct settings *s, struct fn_request *req, atomic_int *cancel,
                     int64_t deadline_ms, struct err **err)
{
	if (s->mode != FN_MODE_EXEC || req->exec_argv)
		return 0;
	struct registry_opts o;
	registry_opts_init(&o, s, cancel, deadline_ms);
	o.tag_ttl_ms = FN_IMAGE_TAG_TTL_MS;
	struct oci_ref ref;
	struct registry_image_config c;
	cleanup_err struct err *e = NULL;
	int rc = oci_ref_parse(req->pinned_image ? req->pinned_image : req->image, &ref, &e);
	if (rc == 0) {
		rc = registry_image_config(&o, &ref, &c, &e);
		oci_ref_clear(&ref);
	}
	if (rc < 0) {
		if (e->code == ERR_SIGNAL) {
			*err = e;
			e = NULL;
			return -1;
		}
		enum log_level lvl = first_fallback(s, req->image) ? LOG_INFO : LOG_DEBUG;
		log_msg(lvl, "%s runs in attach mode: its image config cannot be read (%s)",
		        req->image, e->msg);
		return 0;
	}
	if (count(c.entrypoint) + (req->n_args ? req->n_args : count(c.cmd)) == 0) {
		registry_image_config_clear(&c);
		return err_set(
		        err, ERR_CONFIG,
		        "image %s: its config has neither Entrypoint nor Cmd: nothing to run",
		        req->image);
	}
	req->exec_argv = argv_of(&c, req);
	log_debug("%s: exec mode, manifest %s, argv[0] %s", req->image, c.manifest_digest,
	          req->exec_argv[0]);
	registry_image_config_clear(&c);
	return 0;
}

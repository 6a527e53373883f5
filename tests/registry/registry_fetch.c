/* registry-fetch — drives the registry client (src/registry/) without krmpod's CLI, for the
 * tests against a real registry (tests/registry_tests):
 *
 *   registry-fetch [OPTIONS] layer OCI_REF MEDIA_TYPE   the layer's bytes to stdout, its
 *                                                       digest to stderr ("digest: sha256:…")
 *   registry-fetch [OPTIONS] config OCI_REF             the image config as JSON to stdout
 *   registry-fetch [OPTIONS] https URL                  the body to stdout
 *
 * Options: --ca FILE (KRMPOD_REGISTRY_CA), --auth FILE (KRMPOD_REGISTRY_AUTH), --cache DIR,
 * --max BYTES (layer and https; default 16 MiB), --timeout MS (default 30000), --plain-http.
 * A failure prints "registry-fetch: CODE: message" (CODE the err_code's name: CONFIG, NET,
 * IO...) and exits 1; bad usage exits 2. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/fdio.h"
#include "base/json.h"
#include "base/log.h"
#include "registry/registry.h"

#define DEFAULT_MAX        (16u << 20)
#define DEFAULT_TIMEOUT_MS 30000

static const char *const code_names[] = {
        [ERR_OK] = "OK",         [ERR_USAGE] = "USAGE",
        [ERR_CONFIG] = "CONFIG", [ERR_IO] = "IO",
        [ERR_NET] = "NET",       [ERR_API] = "API",
        [ERR_POD] = "POD",       [ERR_TIMEOUT] = "TIMEOUT",
        [ERR_SIGNAL] = "SIGNAL", [ERR_INTERNAL] = "INTERNAL",
};

static int usage(void)
{
	fprintf(stderr,
	        "usage: registry-fetch [--ca FILE] [--auth FILE] [--cache DIR] [--max BYTES] "
	        "[--timeout MS] [--plain-http]\n"
	        "         layer OCI_REF MEDIA_TYPE | config OCI_REF | https URL\n");
	return 2;
}

static int fail(struct err *e)
{
	fprintf(stderr, "registry-fetch: %s: %s\n", e ? code_names[e->code] : "INTERNAL",
	        e ? e->msg : "(no error)");
	err_free(e);
	return 1;
}

static int parse_ref(const char *text, struct oci_ref *ref, struct err **e)
{
	if (strncmp(text, "oci://", 6) == 0)
		text += 6;
	return oci_ref_parse(text, ref, e);
}

static int cmd_layer(const struct registry_opts *o, const char *text, const char *media_type,
                     size_t max)
{
	struct oci_ref ref;
	struct err *e = NULL;
	struct buf out;
	buf_init(&out, 0);
	char digest[SHA256_DIGEST_LEN + 1];
	if (parse_ref(text, &ref, &e) < 0)
		return fail(e);
	int rc = registry_pull_layer(o, &ref, media_type, max, &out, digest, &e);
	oci_ref_clear(&ref);
	if (rc == 0)
		rc = fd_write_all(STDOUT_FILENO, out.data ? out.data : "", out.len, "stdout", &e);
	buf_free(&out);
	if (rc < 0)
		return fail(e);
	fprintf(stderr, "digest: %s\n", digest);
	return 0;
}

static void write_vector(struct jw *w, const char *key, char **v)
{
	jw_key(w, key);
	if (v == NULL) {
		jw_null(w);
		return;
	}
	jw_arr_begin(w);
	for (size_t i = 0; v[i]; i++)
		jw_str(w, v[i]);
	jw_arr_end(w);
}

static void write_config(struct buf *b, const struct registry_image_config *c)
{
	struct jw w;
	jw_init(&w, b);
	jw_obj_begin(&w);
	jw_kv_str(&w, "manifestDigest", c->manifest_digest);
	write_vector(&w, "entrypoint", c->entrypoint);
	write_vector(&w, "cmd", c->cmd);
	write_vector(&w, "env", c->env);
	const char *keys[] = {"workingDir", "user"}, *values[] = {c->working_dir, c->user};
	for (size_t i = 0; i < 2; i++) {
		jw_key(&w, keys[i]);
		if (values[i])
			jw_str(&w, values[i]);
		else
			jw_null(&w);
	}
	jw_obj_end(&w);
	buf_putc(b, '\n');
}

static int cmd_config(const struct registry_opts *o, const char *text)
{
	struct oci_ref ref;
	struct err *e = NULL;
	if (parse_ref(text, &ref, &e) < 0)
		return fail(e);
	struct registry_image_config c;
	int rc = registry_image_config(o, &ref, &c, &e);
	oci_ref_clear(&ref);
	if (rc < 0)
		return fail(e);
	struct buf b;
	buf_init(&b, 0);
	write_config(&b, &c);
	registry_image_config_clear(&c);
	rc = fd_write_all(STDOUT_FILENO, b.data, b.len, "stdout", &e);
	buf_free(&b);
	return rc < 0 ? fail(e) : 0;
}

static int cmd_https(const struct registry_opts *o, const char *url, size_t max)
{
	struct err *e = NULL;
	struct buf out;
	buf_init(&out, 0);
	int rc = registry_https_get(o, url, max, &out, &e);
	if (rc == 0)
		rc = fd_write_all(STDOUT_FILENO, out.data ? out.data : "", out.len, "stdout", &e);
	buf_free(&out);
	return rc < 0 ? fail(e) : 0;
}

static bool number(const char *text, long long *out)
{
	char *end = NULL;
	errno = 0;
	*out = strtoll(text, &end, 10);
	return errno == 0 && end != text && *end == '\0' && *out > 0;
}

int main(int argc, char **argv)
{
	struct registry_opts o = {0};
	long long max = DEFAULT_MAX, timeout = DEFAULT_TIMEOUT_MS;
	int i = 1;
	log_set_role("registry-fetch");
	log_set_level(getenv("REGISTRY_FETCH_DEBUG") ? LOG_DEBUG : LOG_WARN);
	for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
		const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(opt, "--plain-http") == 0) {
			o.plain_http = true;
			continue;
		}
		if (val == NULL)
			return usage();
		i++;
		if (strcmp(opt, "--ca") == 0)
			o.ca_file = val;
		else if (strcmp(opt, "--auth") == 0)
			o.auth_file = val;
		else if (strcmp(opt, "--cache") == 0)
			o.cache_dir = val;
		else if (strcmp(opt, "--max") == 0 && number(val, &max))
			;
		else if (strcmp(opt, "--timeout") == 0 && number(val, &timeout))
			;
		else
			return usage();
	}
	o.deadline_ms = now_ms() + timeout;
	int left = argc - i;
	if (left == 3 && strcmp(argv[i], "layer") == 0)
		return cmd_layer(&o, argv[i + 1], argv[i + 2], (size_t)max);
	if (left == 2 && strcmp(argv[i], "config") == 0)
		return cmd_config(&o, argv[i + 1]);
	if (left == 2 && strcmp(argv[i], "https") == 0)
		return cmd_https(&o, argv[i + 1], (size_t)max);
	return usage();
}

/* fuzz_registry.c — what krmpod reads from container registries and their users
 * (src/registry/): OCI and Docker manifests, indexes and image configs (oci_manifest.h), a
 * dockerconfigjson and WWW-Authenticate challenges (registry_auth.h), OCI references
 * (registry.h, oci_ref.h).
 *
 * The whole input is read as a manifest, an image config and a dockerconfigjson; each of
 * its first lines as a challenge and as a reference.
 *
 * Invariants: a failure sets its error; descriptors have a valid sha256 digest, a size
 * >= 0 and a terminated media type; an image config's lists are NULL-terminated and its Env
 * never NULL; found credentials have a user and name their key, the same key every time; a
 * reference prints as text that parses back to
 * the same reference. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/sha256.h"
#include "fuzz_util.h"
#include "registry/oci_manifest.h"
#include "registry/oci_ref.h"
#include "registry/registry.h"
#include "registry/registry_auth.h"

#define CATALOG_LAYER "application/vnd.cncf.kubernetes.krm-func-catalog.layer.v1+yaml"

static void check_descriptor(int rc, const struct err *e, const struct oci_descriptor *d,
                             const char *call)
{
	fuzz_check_err(rc, e, call);
	if (rc < 0)
		return;
	if (!sha256_digest_valid(d->digest) || d->size < 0 ||
	    memchr(d->media_type, '\0', sizeof(d->media_type)) == NULL)
		fuzz_fail("%s gave a bad descriptor", call);
}

static void manifest(const char *text, size_t len)
{
	struct json *m = NULL;
	if (json_parse(text, len, "manifest", &m, NULL) < 0)
		return;
	enum oci_manifest_kind kind;
	struct err *e = NULL;
	int rc = oci_manifest_kind(m, &kind, &e);
	fuzz_check_err(rc, e, "oci_manifest_kind");
	err_free(e);
	struct oci_descriptor d;
	e = NULL;
	rc = oci_manifest_layer(m, CATALOG_LAYER, &d, &e);
	check_descriptor(rc, e, &d, "oci_manifest_layer");
	if (rc == 0 && strcmp(d.media_type, CATALOG_LAYER) != 0)
		fuzz_fail("the layer found has media type %s", d.media_type);
	err_free(e);
	e = NULL;
	rc = oci_manifest_config(m, &d, &e);
	check_descriptor(rc, e, &d, "oci_manifest_config");
	err_free(e);
	e = NULL;
	rc = oci_index_platform(m, "linux", "amd64", &d, &e);
	check_descriptor(rc, e, &d, "oci_index_platform");
	err_free(e);
	json_free(m);
}

static void check_vector(char **v, const char *what)
{
	for (size_t i = 0; v && i < 1u << 20; i++)
		if (v[i] == NULL)
			return;
	if (v)
		fuzz_fail("config.%s is not NULL-terminated", what);
}

static void image_config(const char *text, size_t len)
{
	struct registry_image_config c;
	memset(&c, 0, sizeof(c));
	struct err *e = NULL;
	int rc = oci_image_config_parse(text, len, &c, &e);
	fuzz_check_err(rc, e, "oci_image_config_parse");
	if (rc == 0) {
		if (c.env == NULL)
			fuzz_fail("config.Env is NULL");
		check_vector(c.entrypoint, "Entrypoint");
		check_vector(c.cmd, "Cmd");
		check_vector(c.env, "Env");
		if ((c.working_dir && c.working_dir[0] == '\0') || (c.user && c.user[0] == '\0'))
			fuzz_fail("an empty WorkingDir or User is kept");
	} else if (c.entrypoint || c.cmd || c.env || c.working_dir || c.user) {
		fuzz_fail("a refused image config leaves fields set");
	}
	registry_image_config_clear(&c);
	err_free(e);
}

static void auth(const char *text, size_t len)
{
	static const struct {
		const char *registry, *repository;
	} images[] = {{"docker.io", "library/alpine"},
	              {"registry.example.co:5000", "team/app"},
	              {"a.example.co", "team/app/sub"},
	              {"localhost:5000", "fns/x"},
	              {"[::1]:5000", ""}};
	for (size_t i = 0; i < sizeof(images) / sizeof(images[0]); i++) {
		struct registry_creds c;
		struct err *e = NULL;
		int rc = registry_auth_lookup(text, len, "auth file", images[i].registry,
		                              images[i].repository, &c, &e);
		if (rc < -1 || rc > 1)
			fuzz_fail("registry_auth_lookup returned %d", rc);
		fuzz_check_err(rc, e, "registry_auth_lookup");
		if (rc == 1) {
			if (c.user == NULL || c.user[0] == '\0' || c.password == NULL)
				fuzz_fail("credentials without a user or password");
			if (c.key == NULL)
				fuzz_fail("credentials without the key they came from");
			char *basic = registry_auth_basic(&c);
			if (strncmp(basic, "Basic ", 6) != 0)
				fuzz_fail("Authorization %s", basic);
			free(basic);
			/* the pick is a pure function of the text */
			struct registry_creds again;
			struct err *e2 = NULL;
			if (registry_auth_lookup(text, len, "auth file", images[i].registry,
			                         images[i].repository, &again, &e2) != 1 ||
			    strcmp(again.key, c.key) != 0)
				fuzz_fail("a second lookup for %s/%s picked another key",
				          images[i].registry, images[i].repository);
			registry_creds_clear(&again);
			err_free(e2);
		} else if (c.user || c.password || c.key) {
			fuzz_fail("no credentials found, but some returned");
		}
		registry_creds_clear(&c);
		registry_host(images[i].registry);
		err_free(e);
	}
}

static void reference(const char *text)
{
	struct oci_ref r;
	struct err *e = NULL;
	int rc = oci_ref_parse(text, &r, &e);
	fuzz_check_err(rc, e, "oci_ref_parse");
	err_free(e);
	if (rc < 0)
		return;
	if (r.registry == NULL || r.repository == NULL || (r.tag == NULL && r.digest == NULL) ||
	    oci_ref_reference(&r) == NULL)
		fuzz_fail("reference %s parsed without registry, repository, tag or digest", text);
	char *s = oci_ref_string(&r);
	struct oci_ref again;
	e = NULL;
	if (oci_ref_parse(s, &again, &e) < 0)
		fuzz_fail("reference %s prints as %s, which does not parse: %s", text, s, e->msg);
	if (strcmp(r.registry, again.registry) != 0 ||
	    strcmp(r.repository, again.repository) != 0 || (r.tag == NULL) != (again.tag == NULL) ||
	    (r.tag && strcmp(r.tag, again.tag) != 0) ||
	    (r.digest == NULL) != (again.digest == NULL) ||
	    (r.digest && strcmp(r.digest, again.digest) != 0))
		fuzz_fail("reference %s prints as %s, which is another reference", text, s);
	oci_ref_clear(&again);
	oci_ref_clear(&r);
	free(s);
}

static void check_line(const char *line, size_t len, void *ud)
{
	unsigned *n = ud;
	if ((*n)++ >= 8)
		return;
	char *text = fuzz_cstr((const uint8_t *)line, len);
	struct registry_challenge c;
	struct err *e = NULL;
	int rc = registry_challenge_parse(text, &c, &e);
	fuzz_check_err(rc, e, "registry_challenge_parse");
	if (rc == 0 && (c.scheme == NULL || c.scheme[0] == '\0'))
		fuzz_fail("a challenge without a scheme");
	registry_challenge_clear(&c);
	err_free(e);
	reference(text);
	free(text);
}

FUZZ_QUIET_LOG

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* an exact copy, so that reading past the text is caught */
	char *text = malloc(size ? size : 1);
	if (text == NULL)
		abort();
	memcpy(text, data, size);
	manifest(text, size);
	image_config(text, size);
	auth(text, size);
	free(text);
	unsigned lines = 0;
	fuzz_split(data, size, '\n', check_line, &lines);
	return 0;
}

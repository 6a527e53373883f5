/* fuzz_catalog.c — KEP-2906 function catalogs (src/catalog/catalog.h) and catalog
 * references (src/config/locations.h).
 *
 * The whole input is parsed as a catalog; each of its first lines is also parsed as a
 * catalog reference (admin and kustomization forms), as a comma-separated list of them, as
 * an image reference and as an apiVersion.
 *
 * Invariants: a failure sets its error; a parsed catalog has a kind, a name, its digest,
 * and functions with a kind and versions that each have a name and an image, whose digest
 * (when there is one) is a valid sha256 one; every version is found again by
 * catalog_find() (the first match wins) and catalog_resolve(); the image it runs names
 * that digest. A parsed reference keeps its text, a location and a valid pin; a copy is
 * the same reference. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"
#include "catalog/catalog.h"
#include "config/locations.h"
#include "fuzz_util.h"

static void check_catalog(const struct catalog *c)
{
	if (c->kind == NULL || c->name == NULL || c->source == NULL ||
	    !sha256_digest_valid(c->digest))
		fuzz_fail("a parsed catalog without kind, name, source or digest");
	for (size_t i = 0; i < c->n_fns; i++) {
		const struct catalog_fn *f = &c->fns[i];
		if (f->group == NULL || f->kind == NULL || f->kind[0] == '\0' || f->n_versions == 0)
			fuzz_fail("function %zu is incomplete", i);
		for (size_t k = 0; k < f->n_versions; k++) {
			const struct catalog_version *v = &f->versions[k];
			if (v->name == NULL || v->image == NULL || v->image[0] == '\0')
				fuzz_fail("function %zu version %zu is incomplete", i, k);
			if (v->sha256 && !sha256_digest_valid(v->sha256))
				fuzz_fail("version %s: digest %s", v->name, v->sha256);
			const struct catalog_fn *found_fn = NULL;
			const struct catalog_version *found =
			        catalog_find(c, f->group, v->name, f->kind, &found_fn);
			if (found == NULL || found_fn == NULL)
				fuzz_fail("version %s of %s is not found again", v->name, f->kind);
			/* the first match wins: nothing before it may match */
			if (found_fn > f || (found_fn == f && found > v))
				fuzz_fail("catalog_find skipped an earlier match");
			const struct catalog *which = NULL;
			const struct catalog *const list[] = {c};
			if (catalog_resolve(list, 1, f->group, v->name, f->kind, &which, NULL) !=
			            found ||
			    which != c)
				fuzz_fail("catalog_resolve and catalog_find disagree");
			char *image = catalog_version_image(v);
			if (image == NULL || image[0] == '\0')
				fuzz_fail("version %s runs no image", v->name);
			if (v->sha256) {
				size_t n = strlen(image), d = strlen(v->sha256);
				if (n < d + 1 || image[n - d - 1] != '@' ||
				    strcmp(image + n - d, v->sha256) != 0)
					fuzz_fail("version %s runs %s, not its digest %s", v->name,
					          image, v->sha256);
			}
			free(image);
		}
	}
}

static void check_ref(const char *text, bool admin)
{
	struct catalog_ref r;
	struct err *e = NULL;
	int rc = catalog_ref_parse(text, "fuzz", admin, &r, &e);
	fuzz_check_err(rc, e, "catalog_ref_parse");
	err_free(e);
	if (rc < 0)
		return;
	if (r.text == NULL || strcmp(r.text, text) != 0 || r.location == NULL ||
	    r.location[0] == '\0' || (r.pin && !sha256_digest_valid(r.pin)) ||
	    (admin && r.type == CATALOG_REF_FILE && r.location[0] != '/'))
		fuzz_fail("reference \"%s\" parsed badly", text);
	struct catalog_ref copy;
	catalog_ref_copy(&r, &copy);
	if (!catalog_ref_same(&r, &copy) || strcmp(copy.text, r.text) != 0 ||
	    (r.pin == NULL) != (copy.pin == NULL))
		fuzz_fail("a copy of \"%s\" differs", text);
	catalog_ref_clear(&copy);
	catalog_ref_clear(&r);
}

static void check_line(const char *line, size_t len, void *ud)
{
	unsigned *n = ud;
	if ((*n)++ >= 8)
		return;
	char *text = fuzz_cstr((const uint8_t *)line, len);
	check_ref(text, true);
	check_ref(text, false);

	struct catalog_ref *refs = NULL;
	size_t count = 0;
	struct err *e = NULL;
	int rc = catalog_refs_parse_list(text, "KRMPOD_TRUSTED_CATALOGS", &refs, &count, &e);
	fuzz_check_err(rc, e, "catalog_refs_parse_list");
	if (rc == 0 && count == 0)
		fuzz_fail("an empty list parsed");
	catalog_refs_free(refs, count);
	err_free(e);

	char *name = NULL, *tag = NULL, *digest = NULL;
	if (catalog_image_split(text, &name, &tag, &digest) == 0 &&
	    (name == NULL || name[0] == '\0'))
		fuzz_fail("image %s split without a name", text);
	if (tag)
		catalog_tag_is_semver(tag);
	free(name);
	free(tag);
	free(digest);

	const char *version = NULL;
	char *group = catalog_api_group(text, &version);
	if (group == NULL || version == NULL)
		fuzz_fail("apiVersion %s", text);
	free(group);
	free(text);
}

FUZZ_QUIET_LOG

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct catalog *c = NULL;
	struct err *e = NULL;
	int rc = catalog_parse((const char *)data, size, "fuzz.yaml", &c, &e);
	fuzz_check_err(rc, e, "catalog_parse");
	if (rc == 0)
		check_catalog(c);
	else if (c != NULL)
		fuzz_fail("catalog_parse failed but returned a catalog");
	catalog_free(c);
	err_free(e);

	unsigned lines = 0;
	fuzz_split(data, size, '\n', check_line, &lines);
	return 0;
}

/* locations.c — see locations.h. */
#include "config/locations.h"

#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/sha256.h"
#include "base/xalloc.h"

#define FORMS                                                                          \
	"an absolute file path, an https:// URL or oci://REGISTRY/REPOSITORY:TAG (or " \
	"@sha256:...), "                                                               \
	"optionally ending in #sha256:<64 hex> to pin the content"

static int bad(const char *text, const char *source, const char *why, struct err **err)
{
	return err_set(err, ERR_CONFIG, "%s: catalog reference \"%s\" %s: use %s", source, text,
	               why, FORMS);
}

int catalog_ref_parse(const char *text, const char *source, bool admin, struct catalog_ref *out,
                      struct err **err)
{
	memset(out, 0, sizeof(*out));
	const char *hash = strrchr(text, '#');
	size_t loc_len = hash ? (size_t)(hash - text) : strlen(text);
	if (loc_len == 0)
		return bad(text, source, "is empty", err);
	if (hash && !sha256_digest_valid(hash + 1))
		return bad(text, source, "has a pin that is not sha256:<64 lowercase hex>", err);
	cleanup_free char *loc = xstrndup(text, loc_len);
	enum catalog_ref_type type;
	if (strncmp(loc, "https://", 8) == 0) {
		type = CATALOG_REF_HTTPS;
		if (loc[8] == '\0' || loc[8] == '/')
			return bad(text, source, "has no host", err);
	} else if (strncmp(loc, "oci://", 6) == 0) {
		type = CATALOG_REF_OCI;
		if (loc[6] == '\0' || strchr(loc + 6, '/') == NULL)
			return bad(text, source, "is not REGISTRY/REPOSITORY[:TAG|@sha256:...]",
			           err);
	} else if (strstr(loc, "://")) {
		return bad(text, source, "has a scheme krmpod does not fetch (http:// is refused)",
		           err);
	} else {
		type = CATALOG_REF_FILE;
		if (admin && loc[0] != '/')
			return bad(text, source, "is a relative path", err);
	}
	out->type = type;
	out->text = xstrdup(text);
	out->location = xstrdup(type == CATALOG_REF_OCI ? loc + 6 : loc);
	out->pin = hash ? xstrdup(hash + 1) : NULL;
	return 0;
}

void catalog_ref_clear(struct catalog_ref *r)
{
	free(r->text);
	free(r->location);
	free(r->pin);
	memset(r, 0, sizeof(*r));
}

void catalog_ref_copy(const struct catalog_ref *r, struct catalog_ref *out)
{
	out->type = r->type;
	out->text = xstrdup(r->text);
	out->location = xstrdup(r->location);
	out->pin = r->pin ? xstrdup(r->pin) : NULL;
}

int catalog_refs_parse_list(const char *text, const char *setting, struct catalog_ref **out,
                            size_t *n, struct err **err)
{
	*out = NULL;
	*n = 0;
	cleanup_free char *copy = xstrdup(text);
	struct catalog_ref *refs = NULL;
	size_t count = 0;
	char *save = NULL;
	for (char *p = copy;; p = NULL) {
		char *e = strtok_r(p, ",", &save);
		if (e == NULL)
			break;
		while (*e == ' ' || *e == '\t')
			e++;
		size_t l = strlen(e);
		while (l > 0 && (e[l - 1] == ' ' || e[l - 1] == '\t'))
			e[--l] = '\0';
		refs = xrealloc(refs, (count + 1) * sizeof(*refs));
		if (catalog_ref_parse(e, setting, true, &refs[count], err) < 0) {
			catalog_refs_free(refs, count);
			return -1;
		}
		count++;
	}
	if (count == 0 || strstr(text, ",,") || text[strspn(text, " \t")] == ',' ||
	    text[strlen(text) - 1] == ',') {
		catalog_refs_free(refs, count);
		return err_set(err, ERR_CONFIG,
		               "%s=%s: an empty entry: list catalog references separated by commas",
		               setting, text);
	}
	*out = refs;
	*n = count;
	return 0;
}

void catalog_refs_free(struct catalog_ref *refs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		catalog_ref_clear(&refs[i]);
	free(refs);
}

bool catalog_ref_same(const struct catalog_ref *a, const struct catalog_ref *b)
{
	return a->type == b->type && strcmp(a->location, b->location) == 0;
}

/* oci_manifest.c — see oci_manifest.h (and registry_image_config_clear of registry.h). */
#include "registry/oci_manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/strv.h"
#include "base/xalloc.h"

#define NAMED_MAX 8 /* media types or platforms listed in a message */

int oci_manifest_kind(const struct json *m, enum oci_manifest_kind *out, struct err **err)
{
	if (json_type(m) != JSON_OBJECT)
		return err_set(err, ERR_NET, "the manifest is not a JSON object");
	const char *type = json_str(json_get(m, "mediaType"));
	if (type == NULL && json_get(m, "manifests"))
		type = OCI_INDEX;
	else if (type == NULL && json_get(m, "layers"))
		type = OCI_MANIFEST;
	if (type && (strcmp(type, OCI_INDEX) == 0 || strcmp(type, DOCKER_LIST) == 0)) {
		*out = OCI_KIND_INDEX;
		return 0;
	}
	if (type && (strcmp(type, OCI_MANIFEST) == 0 || strcmp(type, DOCKER_MANIFEST) == 0)) {
		*out = OCI_KIND_MANIFEST;
		return 0;
	}
	long long schema = 0;
	if (json_int(json_get(m, "schemaVersion"), &schema) && schema == 1)
		return err_set(err, ERR_NET,
		               "the manifest is Docker's schema 1, which krmpod "
		               "does not read (push the image again with a current "
		               "client)");
	return err_set(err, ERR_NET, "the manifest's media type %s%s%s is not one krmpod reads",
	               type ? "\"" : "", type ? type : "(none)", type ? "\"" : "");
}

/* Reads a descriptor; `what` names it in errors ("layer 2"). */
int oci_descriptor_read(const struct json *d, const char *what, struct oci_descriptor *out,
                        struct err **err)
{
	const char *type = json_str(json_get(d, "mediaType"));
	const char *digest = json_str(json_get(d, "digest"));
	memset(out, 0, sizeof(*out));
	if (json_type(d) != JSON_OBJECT)
		return err_set(err, ERR_NET, "the manifest's %s is not an object", what);
	if (digest == NULL || !sha256_digest_valid(digest))
		return err_set(err, ERR_NET, "the manifest's %s has %s digest %s%s%s", what,
		               digest ? "the unsupported" : "no", digest ? "\"" : "",
		               digest ? digest : "", digest ? "\" (krmpod reads sha256 only)" : "");
	if (!json_int(json_get(d, "size"), &out->size) || out->size < 0)
		return err_set(err, ERR_NET, "the manifest's %s has no valid size", what);
	if (type && strlen(type) >= sizeof(out->media_type))
		return err_set(err, ERR_NET,
		               "the manifest's %s has a media type longer than %zu "
		               "bytes",
		               what, sizeof(out->media_type) - 1);
	snprintf(out->media_type, sizeof(out->media_type), "%s", type ? type : "");
	memcpy(out->digest, digest, sizeof(out->digest));
	return 0;
}

/* "a, b, c" of the layers' media types, for messages. */
static void list_media_types(struct buf *b, const struct json *layers)
{
	for (size_t i = 0; i < json_len(layers) && i < NAMED_MAX; i++) {
		const char *t = json_str(json_get(json_at(layers, i), "mediaType"));
		buf_printf(b, "%s%s", i ? ", " : "", t ? t : "(none)");
	}
	if (json_len(layers) > NAMED_MAX)
		buf_puts(b, ", ...");
	if (json_len(layers) == 0)
		buf_puts(b, "none");
}

int oci_manifest_layer(const struct json *m, const char *media_type, struct oci_descriptor *out,
                       struct err **err)
{
	const struct json *layers = json_get(m, "layers");
	size_t found = 0, at = 0;
	for (size_t i = 0; i < json_len(layers); i++) {
		const char *t = json_str(json_get(json_at(layers, i), "mediaType"));
		if (t && strcmp(t, media_type) == 0)
			found++, at = i;
	}
	if (found > 1)
		return err_set(err, ERR_CONFIG,
		               "the manifest has %zu layers of media type %s; "
		               "krmpod reads an artifact with exactly one",
		               found, media_type);
	if (found == 0) {
		cleanup_buf struct buf types;
		buf_init(&types, 0);
		list_media_types(&types, layers);
		return err_set(err, ERR_CONFIG,
		               "the manifest has no layer of media type %s (its "
		               "layers: %s)",
		               media_type, types.data);
	}
	char what[32];
	snprintf(what, sizeof(what), "layer %zu", at);
	return oci_descriptor_read(json_at(layers, at), what, out, err);
}

int oci_manifest_config(const struct json *m, struct oci_descriptor *out, struct err **err)
{
	if (json_get(m, "config") == NULL)
		return err_set(err, ERR_NET, "the manifest has no config");
	return oci_descriptor_read(json_get(m, "config"), "config", out, err);
}

/* Whether index entry e is for os/arch; *plain when it names no variant. */
static bool platform_is(const struct json *e, const char *os, const char *arch, bool *plain)
{
	const struct json *p = json_get(e, "platform");
	const char *eos = json_str(json_get(p, "os")),
	           *earch = json_str(json_get(p, "architecture"));
	const char *variant = json_str(json_get(p, "variant"));
	*plain = variant == NULL || *variant == '\0';
	return eos && earch && strcmp(eos, os) == 0 && strcmp(earch, arch) == 0;
}

static void list_platforms(struct buf *b, const struct json *manifests)
{
	for (size_t i = 0; i < json_len(manifests) && i < NAMED_MAX; i++) {
		const struct json *p = json_get(json_at(manifests, i), "platform");
		const char *os = json_str(json_get(p, "os")),
		           *arch = json_str(json_get(p, "architecture"));
		const char *variant = json_str(json_get(p, "variant"));
		buf_printf(b, "%s%s/%s%s%s", i ? ", " : "", os ? os : "?", arch ? arch : "?",
		           variant ? "/" : "", variant ? variant : "");
	}
	if (json_len(manifests) > NAMED_MAX)
		buf_puts(b, ", ...");
	if (json_len(manifests) == 0)
		buf_puts(b, "none");
}

int oci_index_platform(const struct json *idx, const char *os, const char *arch,
                       struct oci_descriptor *out, struct err **err)
{
	const struct json *manifests = json_get(idx, "manifests");
	long pick = -1;
	for (size_t i = 0; i < json_len(manifests); i++) {
		bool plain = false;
		if (!platform_is(json_at(manifests, i), os, arch, &plain))
			continue;
		if (pick < 0 || plain)
			pick = (long)i;
		if (plain)
			break;
	}
	if (pick < 0) {
		cleanup_buf struct buf have;
		buf_init(&have, 0);
		list_platforms(&have, manifests);
		return err_set(err, ERR_CONFIG, "the index has no manifest for %s/%s (it has: %s)",
		               os, arch, have.data);
	}
	char what[48];
	snprintf(what, sizeof(what), "index entry %ld (%s/%s)", pick, os, arch);
	return oci_descriptor_read(json_at(manifests, (size_t)pick), what, out, err);
}

/* Frees what the config says (not the manifest digest). */
static void clear_fields(struct registry_image_config *c)
{
	strv_free(c->entrypoint);
	strv_free(c->cmd);
	strv_free(c->env);
	free(c->working_dir);
	free(c->user);
	c->entrypoint = c->cmd = c->env = NULL;
	c->working_dir = c->user = NULL;
}

/* A string field as a new string; NULL for "", null or absent. -1 for another type. */
static int optional_string(const struct json *s, char **out)
{
	*out = NULL;
	if (json_type(s) == JSON_NULL)
		return 0;
	if (json_str(s) == NULL)
		return -1;
	if (*json_str(s))
		*out = xstrdup(json_str(s));
	return 0;
}

int oci_image_config_parse(const char *text, size_t len, struct registry_image_config *out,
                           struct err **err)
{
	out->entrypoint = out->cmd = out->env = NULL;
	out->working_dir = out->user = NULL;
	cleanup_json struct json *doc = NULL;
	if (json_parse(text, len, "image config", &doc, err) < 0) {
		if (err)
			(*err)->code = ERR_NET;
		return -1;
	}
	const struct json *c = json_get(doc, "config");
	if (json_type(doc) != JSON_OBJECT ||
	    (json_type(c) != JSON_OBJECT && json_type(c) != JSON_NULL))
		return err_set(err, ERR_NET,
		               "the image config is not an object with a \"config\" "
		               "object");
	const char *bad = NULL;
	if (json_strv(json_get(c, "Entrypoint"), false, &out->entrypoint) < 0)
		bad = "Entrypoint";
	else if (json_strv(json_get(c, "Cmd"), false, &out->cmd) < 0)
		bad = "Cmd";
	else if (json_strv(json_get(c, "Env"), true, &out->env) < 0)
		bad = "Env";
	else if (optional_string(json_get(c, "WorkingDir"), &out->working_dir) < 0)
		bad = "WorkingDir";
	else if (optional_string(json_get(c, "User"), &out->user) < 0)
		bad = "User";
	if (bad == NULL)
		return 0;
	clear_fields(out);
	return err_set(err, ERR_NET, "the image config's config.%s is not %s", bad,
	               bad[0] == 'W' || bad[0] == 'U' ? "a string" : "a list of strings");
}

void registry_image_config_clear(struct registry_image_config *c)
{
	clear_fields(c);
	memset(c->manifest_digest, 0, sizeof(c->manifest_digest));
}

/* oci_manifest.h — reading OCI and Docker manifests, indexes and image configs: pure
 * functions on parsed JSON, for the pull (registry_pull.c) and for unit tests.
 *
 * Errors: ERR_CONFIG when the content is well-formed but not what the reference should name
 * (no such layer, no such platform, not an image), ERR_NET when it breaks the format (a bad
 * descriptor, an unknown manifest type). Messages do not name the reference; the caller adds
 * it.
 */
#ifndef KRMPOD_OCI_MANIFEST_H
#define KRMPOD_OCI_MANIFEST_H

#include "base/json.h"
#include "base/sha256.h"
#include "registry/registry.h"

#define OCI_MANIFEST    "application/vnd.oci.image.manifest.v1+json"
#define OCI_INDEX       "application/vnd.oci.image.index.v1+json"
#define DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define DOCKER_LIST     "application/vnd.docker.distribution.manifest.list.v2+json"
/* The Accept header of a manifest request: all four. */
#define OCI_MANIFEST_ACCEPT OCI_MANIFEST ", " OCI_INDEX ", " DOCKER_MANIFEST ", " DOCKER_LIST

#define OCI_IMAGE_CONFIG    "application/vnd.oci.image.config.v1+json"
#define DOCKER_IMAGE_CONFIG "application/vnd.docker.container.image.v1+json"

#define OCI_MEDIA_TYPE_MAX 256

enum oci_manifest_kind { OCI_KIND_MANIFEST, OCI_KIND_INDEX };

/* A content descriptor: what a manifest says about a blob or another manifest. */
struct oci_descriptor {
	char media_type[OCI_MEDIA_TYPE_MAX];
	char digest[SHA256_DIGEST_LEN + 1];
	long long size;
};

/* Reads descriptor d (`what` names it: "layer 0") into *out: a sha256 digest, a size and
 * the media type ("" when it has none). ERR_NET for one that is not a descriptor. */
int oci_descriptor_read(const struct json *d, const char *what, struct oci_descriptor *out,
                        struct err **err);

/* Whether m is an image manifest or an index: by its mediaType, else (an OCI manifest may
 * omit it) by its shape: "manifests" for an index, "layers" for a manifest. ERR_NET for
 * anything else (a schema 1 manifest, an unknown type). */
int oci_manifest_kind(const struct json *m, enum oci_manifest_kind *out, struct err **err);

/* The one layer of media_type in image manifest m. ERR_CONFIG when there is none (naming
 * the media types it has) or more than one. */
int oci_manifest_layer(const struct json *m, const char *media_type, struct oci_descriptor *out,
                       struct err **err);

/* The config descriptor of image manifest m. */
int oci_manifest_config(const struct json *m, struct oci_descriptor *out, struct err **err);

/* The manifest for os/arch in index idx: the first entry whose platform matches, one without
 * a variant preferred. ERR_CONFIG naming the platforms it has when none does. */
int oci_index_platform(const struct json *idx, const char *os, const char *arch,
                       struct oci_descriptor *out, struct err **err);

/* Reads an image config (JSON text) into *out (the manifest digest is left alone):
 * config.Entrypoint, Cmd, Env, WorkingDir, User. An empty WorkingDir or User is unset; Env is
 * never NULL (empty when unset). ERR_NET for text that is not such a config. */
int oci_image_config_parse(const char *text, size_t len, struct registry_image_config *out,
                           struct err **err);

#endif

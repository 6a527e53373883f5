/* oci_ref.h — OCI references as text (the parser itself is registry.h's oci_ref_parse). */
#ifndef KRMPOD_OCI_REF_H
#define KRMPOD_OCI_REF_H

#include "registry/registry.h"

/* The canonical text of r: "REGISTRY/REPOSITORY[:TAG][@DIGEST]" (Docker Hub's names with
 * "docker.io/" and "library/"), for messages. A new string; the caller frees it. */
char *oci_ref_string(const struct oci_ref *r);

/* The reference's tag or digest as it goes into a manifest URL: the digest when there is
 * one (it pins the content), else the tag. Borrowed from r. */
const char *oci_ref_reference(const struct oci_ref *r);

#endif

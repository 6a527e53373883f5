/* oci_ref.c — parsing OCI references (registry.h) as docker does, and printing them
 * (oci_ref.h).
 *
 * The grammar (distribution's reference package): [REGISTRY/]PATH[:TAG][@DIGEST]. REGISTRY
 * is the first component when it has a '.' or a ':' or is "localhost"; PATH is one or more
 * lowercase components of [a-z0-9] joined by '.', '_', "__" or runs of '-'; TAG is
 * [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}; only sha256 digests are accepted.
 */
#include "registry/oci_ref.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/xalloc.h"

#define DOCKER_HUB     "docker.io"
#define TAG_MAX        128
#define REPOSITORY_MAX 255
#define REGISTRY_MAX   255
#define PORT_MAX       65535

static bool lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* One path component: [a-z0-9]+ ((\.|_|__|-+)[a-z0-9]+)*. */
static bool component_valid(const char *p, size_t n)
{
	size_t i = 0;
	while (i < n) {
		if (!lower_alnum(p[i]))
			return false;
		while (i < n && lower_alnum(p[i]))
			i++;
		if (i == n)
			return true;
		if (p[i] == '.')
			i++;
		else if (p[i] == '_')
			i += (i + 1 < n && p[i + 1] == '_') ? 2 : 1;
		else if (p[i] == '-')
			while (i < n && p[i] == '-')
				i++;
		else
			return false;
		if (i == n)
			return false; /* a separator must be followed by a component */
	}
	return n > 0;
}

static const char *repository_problem(const char *repo)
{
	if (*repo == '\0')
		return "the repository is empty";
	if (strlen(repo) > REPOSITORY_MAX)
		return "the repository is longer than 255 characters";
	for (const char *p = repo;;) {
		size_t n = strcspn(p, "/");
		if (!component_valid(p, n))
			return "the repository must be lowercase letters and digits, separated by "
			       "'/', '.', '_', '__' or '-'";
		if (p[n] == '\0')
			return NULL;
		p += n + 1;
	}
}

static const char *tag_problem(const char *tag)
{
	size_t n = strlen(tag);
	if (n == 0)
		return "the tag is empty";
	if (n > TAG_MAX)
		return "the tag is longer than 128 characters";
	for (size_t i = 0; i < n; i++) {
		char c = tag[i];
		if (!(isalnum((unsigned char)c) || c == '_' || (i > 0 && (c == '.' || c == '-'))))
			return "the tag must be letters, digits, '_', '.' and '-' (not first)";
	}
	return NULL;
}

/* host[:port], the host a name or an IPv6 address in brackets. */
static const char *registry_problem(const char *reg)
{
	size_t n = strlen(reg);
	if (n == 0 || n > REGISTRY_MAX)
		return "the registry name is empty or too long";
	const char *colon = NULL;
	if (reg[0] == '[') {
		const char *end = strchr(reg, ']');
		if (end == NULL || end == reg + 1 ||
		    strspn(reg + 1, "0123456789abcdefABCDEF:.") != (size_t)(end - reg - 1))
			return "the registry's IPv6 address is malformed";
		if (end[1] != '\0' && end[1] != ':')
			return "the registry's IPv6 address is malformed";
		colon = end[1] == ':' ? end + 1 : NULL;
	} else {
		colon = strchr(reg, ':');
		size_t host = colon ? (size_t)(colon - reg) : n;
		if (host == 0 || strspn(reg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		                             "0123456789.-") != host)
			return "the registry must be a host name or address, with an optional "
			       ":port";
	}
	if (colon) {
		char *end = NULL;
		long port = strtol(colon + 1, &end, 10);
		if (colon[1] == '\0' || !isdigit((unsigned char)colon[1]) || *end != '\0' ||
		    port < 1 || port > PORT_MAX)
			return "the registry's port must be a number from 1 to 65535";
	}
	return NULL;
}

static const char *digest_problem(const char *digest)
{
	if (strncmp(digest, "sha256:", 7) != 0)
		return "only sha256 digests are supported (sha256:<64 lowercase hex digits>)";
	if (!sha256_digest_valid(digest))
		return "the digest must be sha256: and 64 lowercase hex digits";
	return NULL;
}

/* Whether the first component of a name is a registry (docker's rule). */
static bool is_registry(const char *name, size_t n)
{
	return memchr(name, '.', n) || memchr(name, ':', n) ||
	       (n == 9 && memcmp(name, "localhost", 9) == 0);
}

/* Splits name (no tag, no digest) into registry and repository. */
static void split_name(const char *name, struct oci_ref *out)
{
	const char *slash = strchr(name, '/');
	if (slash && is_registry(name, (size_t)(slash - name))) {
		out->registry = xstrndup(name, (size_t)(slash - name));
		out->repository = xstrdup(slash + 1);
	} else {
		out->registry = xstrdup(DOCKER_HUB);
		out->repository = xstrdup(name);
	}
	if (strcmp(out->registry, "index.docker.io") == 0) {
		free(out->registry);
		out->registry = xstrdup(DOCKER_HUB);
	}
	if (strcmp(out->registry, DOCKER_HUB) == 0 && strchr(out->repository, '/') == NULL) {
		char *full = xasprintf("library/%s", out->repository);
		free(out->repository);
		out->repository = full;
	}
}

/* Fills out from text; returns what is wrong, or NULL. */
static const char *parse(const char *text, struct oci_ref *out)
{
	if (*text == '\0')
		return "the reference is empty";
	if (strstr(text, "://"))
		return "a reference has no scheme: write REGISTRY/REPOSITORY[:TAG][@DIGEST]";
	for (const char *p = text; *p; p++)
		if (isspace((unsigned char)*p) || iscntrl((unsigned char)*p))
			return "the reference contains white space or control characters";
	const char *at = strchr(text, '@');
	if (at) {
		out->digest = xstrdup(at + 1);
		const char *why = digest_problem(out->digest);
		if (why)
			return why;
	}
	cleanup_free char *name = xstrndup(text, at ? (size_t)(at - text) : strlen(text));
	char *slash = strrchr(name, '/'), *colon = strrchr(name, ':');
	if (colon && (slash == NULL || colon > slash)) {
		*colon = '\0';
		out->tag = xstrdup(colon + 1);
		const char *why = tag_problem(out->tag);
		if (why)
			return why;
	}
	split_name(name, out);
	const char *why = registry_problem(out->registry);
	if (why == NULL)
		why = repository_problem(out->repository);
	if (why == NULL && out->tag == NULL && out->digest == NULL)
		out->tag = xstrdup("latest");
	return why;
}

int oci_ref_parse(const char *text, struct oci_ref *out, struct err **err)
{
	memset(out, 0, sizeof(*out));
	const char *why = parse(text ? text : "", out);
	if (why == NULL)
		return 0;
	oci_ref_clear(out);
	return err_set(err, ERR_CONFIG, "bad OCI reference \"%s\": %s", text ? text : "", why);
}

void oci_ref_clear(struct oci_ref *r)
{
	free(r->registry);
	free(r->repository);
	free(r->tag);
	free(r->digest);
	memset(r, 0, sizeof(*r));
}

char *oci_ref_string(const struct oci_ref *r)
{
	return xasprintf("%s/%s%s%s%s%s", r->registry, r->repository, r->tag ? ":" : "",
	                 r->tag ? r->tag : "", r->digest ? "@" : "", r->digest ? r->digest : "");
}

const char *oci_ref_reference(const struct oci_ref *r)
{
	return r->digest ? r->digest : r->tag;
}

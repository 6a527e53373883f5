/* kube_version.c — see kube_version.h. */
#include "kube/kube_version.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "base/cleanup.h"

/* Version components above this are not a Kubernetes version (and would overflow). */
#define VERSION_PART_MAX 100000

/* Reads decimal digits at *p into *out; returns false when there are none or too many. */
static bool read_number(const char **p, int *out)
{
	const char *s = *p;
	long v = 0;
	if (!isdigit((unsigned char)*s))
		return false;
	for (; isdigit((unsigned char)*s); s++) {
		v = v * 10 + (*s - '0');
		if (v > VERSION_PART_MAX)
			return false;
	}
	*out = (int)v;
	*p = s;
	return true;
}

int kube_version_parse(const char *text, struct kube_version *out)
{
	if (text == NULL)
		return -1;
	const char *p = text;
	if (*p == 'v')
		p++;
	int major, minor, patch = -1;
	if (!read_number(&p, &major) || *p++ != '.' || !read_number(&p, &minor))
		return -1;
	if (*p == '.') {
		p++;
		if (!read_number(&p, &patch))
			return -1;
	}
	if (*p != '\0' && *p != '-' && *p != '+')
		return -1;
	out->major = major;
	out->minor = minor;
	out->patch = patch;
	snprintf(out->text, sizeof(out->text), "%s", text);
	return 0;
}

bool kube_version_supported(const struct kube_version *v)
{
	return v->major > KUBE_VERSION_MIN_MAJOR ||
	       (v->major == KUBE_VERSION_MIN_MAJOR && v->minor >= KUBE_VERSION_MIN_MINOR);
}

int kube_version_decode(const struct json *doc, struct kube_version *out, struct err **err)
{
	const char *git = json_str(json_get(doc, "gitVersion"));
	if (kube_version_parse(git, out) == 0)
		return 0;
	const char *major = json_str(json_get(doc, "major"));
	const char *minor = json_str(json_get(doc, "minor"));
	if (major && minor) {
		char text[KUBE_VERSION_TEXT_MAX];
		snprintf(text, sizeof(text), "%s.%s", major, minor);
		if (kube_version_parse(text, out) == 0)
			return 0;
	}
	return err_set(err, ERR_API,
	               "GET /version: no Kubernetes version in the answer (gitVersion \"%s\", "
	               "major \"%s\", minor \"%s\")",
	               git ? git : "", major ? major : "", minor ? minor : "");
}

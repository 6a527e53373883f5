/* kube_version.h — the API server's Kubernetes version (GET /version) and the oldest one
 * krmpod works with.
 *
 * krmpod streams a function's stdin and output over attach with the WebSocket subprotocol
 * v5.channel.k8s.io, the first one that can close stdin; Kubernetes 1.30 is the first
 * release whose API server speaks it. An older server refuses the upgrade with 403 and an
 * empty body, which looks like an RBAC denial. `krmpod doctor` checks the version up front;
 * the attach path reads it only after a refused upgrade, to name the likely cause.
 */
#ifndef KRMPOD_KUBE_VERSION_H
#define KRMPOD_KUBE_VERSION_H

#include <stdbool.h>

#include "base/err.h"
#include "base/json.h"

/* The oldest Kubernetes krmpod supports (v5.channel.k8s.io). */
#define KUBE_VERSION_MIN_MAJOR 1
#define KUBE_VERSION_MIN_MINOR 30
/* Bytes kept of the version text the server sent (gitVersion). */
#define KUBE_VERSION_TEXT_MAX 64

struct kube_version {
	int major, minor;
	int patch;                        /* -1 when the server did not say */
	char text[KUBE_VERSION_TEXT_MAX]; /* as the server said it: gitVersion, else "1.30" */
};

/* Parses "v1.20.15", "1.34", "1.34+", "v1.30.0-gke.1", "v1.29.3+k3s1": an optional 'v',
 * MAJOR '.' MINOR, optionally '.' PATCH, then nothing or a suffix starting with '-' or '+'.
 * Sets major, minor, patch and text (a copy of the input, cut to fit). Returns 0, or -1
 * (out untouched) when text is not of that form. */
int kube_version_parse(const char *text, struct kube_version *out);

/* Whether v is KUBE_VERSION_MIN_MAJOR.KUBE_VERSION_MIN_MINOR or newer. */
bool kube_version_supported(const struct kube_version *v);

/* Decodes a /version answer: its gitVersion when that parses, else its major and minor
 * fields (managed clusters answer minor "30+"). Returns 0, or -1 with *err (ERR_API)
 * quoting what the answer held. */
int kube_version_decode(const struct json *doc, struct kube_version *out, struct err **err);

#endif

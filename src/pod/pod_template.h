/* pod_template.h — function pods that start from an admin's PodTemplate (docs/levels.md,
 * "PodTemplate").
 *
 * KRMPOD_POD_TEMPLATE names a PodTemplate in the functions namespace (read with one GET,
 * which needs `podtemplates get`), or, when it contains a '/', a YAML file: a PodTemplate, or
 * just its `template` ({metadata, spec}). Reading it is fn_config.c's; this module is pure.
 *
 * Taken from the template: metadata labels and annotations; spec tolerations, nodeSelector,
 * affinity, priorityClassName, imagePullSecrets (KRMPOD_IMAGE_PULL_SECRETS adds to them),
 * runtimeClassName, volumes (extra ones; the
 * template's first container's volumeMounts go to the function container); and the first
 * container's cpu/memory requests and limits as defaults (an explicit KRMPOD_CPU_* /
 * KRMPOD_MEMORY_* setting wins).
 *
 * Always krmpod's: the function container's image, command, stdin/stdinOnce/tty, env,
 * restartPolicy, the security context floor, automountServiceAccountToken false, and
 * krmpod's own labels. A template that tries to weaken the floor (privileged, host
 * namespaces, root, added capabilities, privilege escalation, Unconfined seccomp, hostPath
 * volumes, a mounted token) or to set krmpod's labels is rejected with an error naming the
 * field. */
#ifndef KRMPOD_POD_TEMPLATE_H
#define KRMPOD_POD_TEMPLATE_H

#include "base/err.h"
#include "base/json.h"
#include "config/settings.h"

/* Takes doc (owned: freed on failure too), the template KRMPOD_POD_TEMPLATE names as read
 * (by fn_config.c, from its file or the API), `what` naming it in errors: a PodTemplate or
 * just its template ({metadata, spec}). Checks it against the floor and stores it in s
 * (s->template_doc owns the document, s->template points at {metadata, spec}); its resources
 * become defaults where no KRMPOD_* setting was given. */
int pod_template_adopt(struct settings *s, struct json *doc, const char *what, struct err **err);

/* Checks a template ({metadata, spec}) against the floor; `what` names it in errors. */
int pod_template_check(const struct json *tmpl, const char *what, struct err **err);

/* The first container of the template, or NULL. */
const struct json *pod_template_container(const struct json *tmpl);

#endif

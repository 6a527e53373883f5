/* cmp.h — the Argo CD config-management-plugin hooks (plugin.yaml names them;
 * docs/internals/generate.md). Each works on the current directory, the application's
 * source path, with the settings of envp (plugin_settings.h for the hooks, settings.h for the
 * shims they run).
 *
 * generate: kustomize with krmpod first on its PATH as `docker` (a private bin dir), every
 * function run as a pod by a shim, pods started ahead (cmp/prestart.h), generate's own deadline
 * (KRMPOD_GENERATE_TIMEOUT) handed to every shim and pod. The manifests are held and
 * written to out_fd only when kustomize succeeded with non-empty output: a failure or an
 * empty render writes nothing (Argo CD with auto-prune would delete the application).
 *
 * init: a fast preflight: the settings are valid, a kustomization is here, kustomize runs,
 * cluster credentials load.
 *
 * discover: writes each containerized function of the kustomization tree ("WHERE:
 * container function IMAGE"), each catalog a layer lists and each function config a
 * catalog would resolve (cmp_catalogs.h) to out; *found says whether there is any (else
 * the kustomization is left to Argo CD's built-in kustomize). No kustomization is *found
 * false, not an error. */
#ifndef KRMPOD_CMP_H
#define KRMPOD_CMP_H

#include <stdbool.h>
#include <stdio.h>

#include "base/err.h"

int cmp_generate(char *const *envp, int out_fd, struct err **err);
int cmp_init(char *const *envp, struct err **err);
int cmp_discover(char *const *envp, FILE *out, bool *found, struct err **err);

#endif

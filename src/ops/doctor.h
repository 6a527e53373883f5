/* doctor.h — the preflight of the cluster side (`krmpod doctor`): the settings, the
 * credentials, the server's Kubernetes version (1.30 or newer, for v5.channel.k8s.io), the
 * PodTemplate, the helper image, the permissions krmpod needs in the functions namespace
 * (SelfSubjectAccessReview), the image pull Secrets (KRMPOD_IMAGE_PULL_SECRETS and the
 * PodTemplate's: they exist and are kubernetes.io/dockerconfigjson), and what the
 * namespace's NetworkPolicies do to function pods (netpol.h). One line per check, "[ok  ]",
 * "[WARN]" or "[FAIL]", then a summary. */
#ifndef KRMPOD_DOCTOR_H
#define KRMPOD_DOCTOR_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include "base/err.h"

/* Runs the checks with the settings of envp, writing the report to out; *failed counts the
 * FAIL lines. With probe, it also runs a pod as a function without a grant gets it, whose
 * command is the network gate (`krmpod net-gate` from KRMPOD_HELPER_IMAGE; agent_gate.h):
 * whether the policies are enforced, seen from inside a pod, not only which exist. Fails (-1)
 * only when the settings or credentials cannot be loaded. */
int fn_doctor(char *const *envp, FILE *out, bool probe, atomic_int *cancel, unsigned *failed,
              struct err **err);

/* How long the probe pod waits for its isolation. */
#define FN_DOCTOR_PROBE_MS 15000

#endif

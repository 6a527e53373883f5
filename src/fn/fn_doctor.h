/* fn_doctor.h — the preflight of the cluster side (`krmpod doctor`): the settings, the
 * credentials, the server's Kubernetes version (1.30 or newer, for v5.channel.k8s.io), the
 * PodTemplate, the helper image, the permissions krmpod needs in the functions namespace
 * (SelfSubjectAccessReview), and what the namespace's NetworkPolicies do to function pods
 * (netpol.h). One line per check, "[ok  ]", "[WARN]" or "[FAIL]", then a summary. */
#ifndef KRMPOD_FN_DOCTOR_H
#define KRMPOD_FN_DOCTOR_H

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>

#include "base/err.h"

/* Runs the checks with the settings of envp, writing the report to out; *failed counts the
 * FAIL lines. Fails (-1) only when the settings or credentials cannot be loaded. */
int fn_doctor(char *const *envp, FILE *out, atomic_int *cancel, unsigned *failed, struct err **err);

#endif

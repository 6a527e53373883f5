/* fn_invoke.h — the whole of "run one function" behind the shim and `krmpod run`: load the
 * settings and the cluster configuration, pick the namespace, and run the pod. */
#ifndef KRMPOD_FN_INVOKE_H
#define KRMPOD_FN_INVOKE_H

#include "err.h"
#include "fn_request.h"
#include "fn_run.h"
#include "kubeconfig.h"
#include "settings.h"

/* The functions namespace: KRMPOD_NAMESPACE, else the kubeconfig context's / in-cluster
 * namespace, else "default". */
const char *fn_invoke_namespace(const struct settings *s, const struct kube_config *cfg);

/* Namespace: KRMPOD_NAMESPACE, else the kubeconfig context's / in-cluster namespace, else
 * "default". Returns like fn_run(). */
int fn_invoke(const struct fn_request *req, const struct fn_io *io, int *exit_code,
              struct err **err);

#endif

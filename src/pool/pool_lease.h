/* pool_lease.h — a shim's lease on the function pod it holds (docs/install.md, "Housekeeping").
 *
 * While a shim holds a pod, a thread of its own writes the pod's POD_ANNOTATION_RENEWED
 * every KRMPOD_LEASE_RENEW (settings.h), as "COUNT/PERIOD-MS". The API server stamps each
 * write in the pod's managedFields with its own clock, so a sweep (gc.c) can tell, on that
 * clock alone, that a pod's shim is gone: a renewed pod whose last write by krmpod is
 * FN_LEASE_PERIODS of its own period old (the period in the pod, so that sidecars with other
 * settings judge it alike). A pod whose shim died before its first renewal is left to the
 * older rules (its deadline). Pool pods have leases of their own (pool.h) and take none.
 */
#ifndef KRMPOD_POOL_LEASE_H
#define KRMPOD_POOL_LEASE_H

#include <stdint.h>

#include "base/err.h"
#include "config/kubeconfig.h"

#define FN_LEASE_PERIODS 3
/* The shortest period a sweep believes of a pod's annotation. */
#define FN_LEASE_MIN_PERIOD_MS 1000

/* The period a renewed pod's annotation value ("COUNT/PERIOD-MS") names, at least
 * FN_LEASE_MIN_PERIOD_MS; 0 when the value is not one. */
int64_t fn_lease_period(const char *value);

struct fn_lease;

/* Starts renewing pod ns/name (cfg borrowed, ns and name copied). ERR_INTERNAL when no thread
 * could be started. */
int fn_lease_start(struct kube_config *cfg, const char *ns, const char *name, int64_t period_ms,
                   struct fn_lease **out, struct err **err);

/* Stops renewing (an in-flight write is cut short) and frees l; NULL is fine. */
void fn_lease_stop(struct fn_lease *l);

#endif

/* agent_gate.h — the network gate: a function pod proves its own isolation before the
 * function starts (docs/network.md, "The gate").
 *
 * NetworkPolicy enforcement is asynchronous: the CNI's policy agent programs a new pod's
 * rules some time after the pod has its address (measured with kube-router 2.1.0: a pod in a
 * namespace under deny-all reached the API server for 0.25 s and more after its start). A
 * function that started at once could use that window. The gate runs inside the pod, in a
 * krmpod container's postStart hook, which the kubelet completes before it starts the next
 * container (the function's): it connects to the Kubernetes API server at the address every
 * pod is given (KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT) until the connection no
 * longer succeeds (refused, unreachable or no answer within AGENT_GATE_CONNECT_MS) — the mark
 * that the pod's policies are in effect, since both shipped policies close the API server —
 * or fails when it still succeeds after the gate's time.
 */
#ifndef KRMPOD_AGENT_GATE_H
#define KRMPOD_AGENT_GATE_H

#include <stdint.h>

#include "base/err.h"

/* How long one connection attempt may wait for an answer: a policy that drops packets gives
 * none. An API server on the cluster network answers a SYN in well under a millisecond. */
#define AGENT_GATE_CONNECT_MS 500
/* The pause between attempts while the API server is still reachable. */
#define AGENT_GATE_RETRY_MS 50

/* `krmpod net-gate`'s exit codes: isolated; still open after its time (ERR_TIMEOUT); could
 * not check (no address, no socket: the message says why). `krmpod doctor --probe` reads
 * them. */
#define AGENT_GATE_EXIT_ISOLATED 0
#define AGENT_GATE_EXIT_OPEN     1
#define AGENT_GATE_EXIT_UNKNOWN  3

/* Waits until the API server is unreachable from this network namespace, at most timeout_ms.
 * host and port: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT (a numeric address).
 * 0 when isolated (*waited_ms: how long it took); -1 with ERR_TIMEOUT when the API server was
 * still reachable at the end, ERR_CONFIG for a missing or bad address, ERR_IO when no socket
 * could be made. */
int agent_net_gate(const char *host, const char *port, int64_t timeout_ms, int64_t *waited_ms,
                   struct err **err);

#endif

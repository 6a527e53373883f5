/* agent_gate.h — the network gate: a function pod proves its own isolation before the
 * function starts (docs/network.md, "The gate").
 *
 * NetworkPolicy enforcement is asynchronous: the CNI's policy agent programs a new pod's
 * rules some time after the pod has its address (measured with kube-router 2.1.0: a pod in a
 * namespace under deny-all reached the API server for 0.25 s and more after its start). A
 * function that started at once could use that window. The gate runs inside the pod, before
 * the function: it probes a set of targets the pod's policies close — the Kubernetes API
 * server (KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT), the node's kubelet, and, for a
 * pod without a network grant, the cluster DNS — until none of them answers.
 *
 * One missed connection is not isolation: an API server that restarts refuses, one whose
 * accept queue is full drops the SYN, and both look like a policy. So the gate passes only
 * after AGENT_GATE_ROUNDS consecutive rounds in which no target connected, spread over at
 * least AGENT_GATE_SPAN_MS; any target that connects starts the count again. And the API
 * server is never probed alone: a second target (the kubelet, on another process, and the
 * DNS, on another pod) must be silent too, which a restart or a full queue of the API server
 * does not make it.
 */
#ifndef KRMPOD_AGENT_GATE_H
#define KRMPOD_AGENT_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* How long one round waits for an answer: a policy that drops packets gives none. A server
 * on the cluster network answers a SYN in well under a millisecond. */
#define AGENT_GATE_CONNECT_MS 500
/* The pause between rounds. */
#define AGENT_GATE_PAUSE_MS 100
/* Isolation: this many consecutive silent rounds, the first and the last at least
 * AGENT_GATE_SPAN_MS apart. */
#define AGENT_GATE_ROUNDS  3
#define AGENT_GATE_SPAN_MS 1000
/* The shortest gate time that can prove isolation: the span, and a round's wait either side. */
#define AGENT_GATE_MIN_MS (AGENT_GATE_SPAN_MS + 2 * AGENT_GATE_CONNECT_MS)
/* The ports of the second and third targets: the kubelet's API on the node's address, and
 * DNS over TCP at the pod's nameserver (the cluster DNS Service under dnsPolicy
 * ClusterFirst, which krmpod's pods have). */
#define AGENT_GATE_KUBELET_PORT "10250"
#define AGENT_GATE_DNS_PORT     "53"
#define AGENT_GATE_MAX_TARGETS  3

/* `krmpod net-gate`'s exit codes: isolated; still open after its time (ERR_TIMEOUT); could
 * not check (no address, no socket: the message says why). `krmpod doctor --probe` reads
 * them. */
#define AGENT_GATE_EXIT_ISOLATED 0
#define AGENT_GATE_EXIT_OPEN     1
#define AGENT_GATE_EXIT_UNKNOWN  3

/* One address the gate probes. what names it and where the address came from, for the
 * messages ("the API server (KUBERNETES_SERVICE_HOST)"). host and port are numeric. */
struct agent_gate_target {
	const char *what;
	const char *host;
	const char *port;
};

/* Waits until no target answers, as above, at most timeout_ms. targets[0] is the API server;
 * n is 2 or 3. 0 when isolated (*waited_ms: how long it took); -1 with ERR_TIMEOUT when a
 * target still answered within the last AGENT_GATE_SPAN_MS of the time (the message names
 * it), ERR_CONFIG for a missing or non-numeric address, fewer than two targets, or a time
 * below AGENT_GATE_MIN_MS, ERR_IO when no socket could be made. */
int agent_net_gate(const struct agent_gate_target *targets, size_t n, int64_t timeout_ms,
                   int64_t *waited_ms, struct err **err);

/* The mark of a pod that passed its gate, for exec mode's later calls and sessions in the
 * same pod: AGENT_GATE_MARK as the content of the call lock file in WORKDIR (agent.h, the
 * one file a call's cleanup keeps). Only a pod's first gate can have written it: no function
 * runs in the pod before that gate passed, so what a function writes there later changes
 * nothing. agent_gate_passed: true when the mark is there; agent_gate_mark writes it (ERR_IO
 * naming the file). */
#define AGENT_GATE_MARK "krmpod-net-gate-passed\n"
bool agent_gate_passed(const char *workdir);
int agent_gate_mark(const char *workdir, struct err **err);

/* The first `nameserver` of a resolv.conf (path: /etc/resolv.conf in a pod) into out, a
 * numeric address. ERR_IO when the file cannot be read, ERR_CONFIG when it names none. */
int agent_gate_nameserver(const char *path, char *out, size_t size, struct err **err);

#endif

/* cmd_gate.c — the network gate in a function pod (agent_gate.h): `krmpod net-gate MS`,
 * attach mode's init container, and the gate exec mode's first call passes
 * (cmd_gate_from_env). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

#include "agent/agent.h"
#include "agent/agent_gate.h"
#include "cli/cmd.h"
#include "config/settings.h"

/* MS, the gate's time in milliseconds: a number > 0. */
static int gate_ms(const char *text, int64_t *out, struct err **err)
{
	char *end = NULL;
	errno = 0;
	long long v = strtoll(text, &end, 10);
	if (errno || end == text || *end || v <= 0)
		return err_set(err, ERR_USAGE, "net-gate: %s is not a number of milliseconds",
		               text);
	*out = v;
	return 0;
}

/* The gate's targets, from the container's environment (settings_agent_net_gate): the API
 * server, the node's kubelet, and the cluster DNS when the pod has no network grant. */
struct gate_targets {
	struct agent_gate_target t[AGENT_GATE_MAX_TARGETS];
	size_t n;
	char nameserver[64];
};

static int gate_targets(const struct settings_gate *g, struct gate_targets *out, struct err **err)
{
	out->t[0] = (struct agent_gate_target){
	        "the API server (KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT)",
	        getenv("KUBERNETES_SERVICE_HOST"), getenv("KUBERNETES_SERVICE_PORT")};
	out->t[1] = (struct agent_gate_target){"the node's kubelet (" SETTINGS_NET_GATE_NODE_ENV
	                                       ", the pod's status.hostIP)",
	                                       g->node, AGENT_GATE_KUBELET_PORT};
	out->n = 2;
	if (!g->dns)
		return 0;
	if (agent_gate_nameserver("/etc/resolv.conf", out->nameserver, sizeof(out->nameserver),
	                          err) < 0)
		return -1;
	out->t[out->n++] = (struct agent_gate_target){"the cluster DNS (the pod's nameserver)",
	                                              out->nameserver, AGENT_GATE_DNS_PORT};
	return 0;
}

/* The gate, from inside the pod (agent_gate.h). With say, it tells on stderr how long it
 * waited (the init container's log); never in a call, whose stderr is the function's and is
 * counted byte for byte (agent.h, the trailer). */
static int run_gate(const struct settings_gate *g, bool say, struct err **err)
{
	struct gate_targets t;
	int64_t waited = 0;
	if (gate_targets(g, &t, err) < 0 || agent_net_gate(t.t, t.n, g->ms, &waited, err) < 0)
		return -1;
	if (say)
		fprintf(stderr, "krmpod net-gate: isolated after %lld ms (%zu targets silent)\n",
		        (long long)waited, t.n);
	return 0;
}

/* Exec mode: the gate's time in the function container (pod_manifest.c) holds the pod's first
 * function back until the pod is isolated; the mark in WORKDIR (agent_gate.h) spares the
 * later calls and sessions of the same pod. Unset afterwards, so that the functions a
 * session runs do not see the variables. */
int cmd_gate_from_env(const char *workdir, struct err **err)
{
	struct settings_gate g;
	if (settings_agent_net_gate(environ, &g, err) < 0)
		return -1;
	if (g.ms == 0)
		return 0;
	if (!agent_gate_passed(workdir) &&
	    (run_gate(&g, false, err) < 0 || agent_gate_mark(workdir, err) < 0))
		return -1;
	unsetenv(SETTINGS_NET_GATE_ENV);
	unsetenv(SETTINGS_NET_GATE_NODE_ENV);
	unsetenv(SETTINGS_NET_GATE_DNS_ENV);
	return 0;
}

int cmd_net_gate(int argc, char **argv, int *exit_code, struct err **err)
{
	struct settings_gate g;
	if (argc != 2)
		return err_set(err, ERR_USAGE,
		               "usage: krmpod net-gate MS (run by attach-mode function pods' init "
		               "container: wait until the pod's NetworkPolicies are in effect)");
	if (settings_agent_net_gate(environ, &g, err) < 0 || gate_ms(argv[1], &g.ms, err) < 0)
		return -1;
	if (run_gate(&g, true, err) < 0) {
		if ((*err)->code == ERR_TIMEOUT)
			return -1; /* AGENT_GATE_EXIT_OPEN: the error's exit code, 1 */
		fprintf(stderr, "krmpod net-gate: cannot check: %s\n", (*err)->msg);
		err_free(*err);
		*err = NULL;
		*exit_code = AGENT_GATE_EXIT_UNKNOWN;
		return 0;
	}
	*exit_code = AGENT_GATE_EXIT_ISOLATED;
	return 0;
}

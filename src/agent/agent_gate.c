/* agent_gate.c — see agent_gate.h. */
#include "agent/agent_gate.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/clock.h"

/* One connection attempt: 1 connected, 0 not (refused, unreachable, no answer), -1 error. */
static int try_connect(const struct addrinfo *ai, struct err **err)
{
	cleanup_close int fd =
	        socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return err_set_sys(err, ERR_IO, errno, "network gate: cannot make a socket");
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
		return 1;
	if (errno != EINPROGRESS)
		return 0; /* refused, unreachable, or forbidden at once: a firewall's reject */
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	int n;
	do
		n = poll(&p, 1, AGENT_GATE_CONNECT_MS);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return 0; /* no answer: dropped */
	int soerr = 0;
	socklen_t len = sizeof(soerr);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
		return err_set_sys(err, ERR_IO, errno, "network gate: getsockopt");
	return soerr == 0 ? 1 : 0;
}

int agent_net_gate(const char *host, const char *port, int64_t timeout_ms, int64_t *waited_ms,
                   struct err **err)
{
	if (host == NULL || port == NULL || *host == '\0' || *port == '\0')
		return err_set(err, ERR_CONFIG,
		               "network gate: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
		               "are not set in this container, so its isolation cannot be checked "
		               "(the kubelet sets them in every pod)");
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
	                         .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
	struct addrinfo *ai = NULL;
	int rc = getaddrinfo(host, port, &hints, &ai);
	if (rc != 0)
		return err_set(
		        err, ERR_CONFIG,
		        "network gate: KUBERNETES_SERVICE_HOST=%s KUBERNETES_SERVICE_PORT=%s "
		        "is not a numeric address: %s",
		        host, port, gai_strerror(rc));
	int64_t t0 = now_ms(), deadline = t0 + timeout_ms;
	int r;
	while ((r = try_connect(ai, err)) == 1 && now_ms() < deadline)
		sleep_ms(AGENT_GATE_RETRY_MS, NULL);
	freeaddrinfo(ai);
	if (r < 0)
		return -1;
	*waited_ms = now_ms() - t0;
	if (r == 1)
		return err_set(
		        err, ERR_TIMEOUT,
		        "network gate: this pod still reaches the API server at %s:%s after "
		        "%lld ms: its NetworkPolicies are not in effect (apply "
		        "manifests/functions/networkpolicies.yaml, on a CNI that enforces "
		        "NetworkPolicy; `krmpod doctor` checks them), so the function does not "
		        "start; KRMPOD_NETWORK_GATE on the sidecar sets how long to wait, 0 "
		        "turns the gate off",
		        host, port, (long long)*waited_ms);
	return 0;
}

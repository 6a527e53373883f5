/* agent_gate.c — see agent_gate.h. */
#include "agent/agent_gate.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/agent.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "config/settings.h"

_Static_assert(SETTINGS_NET_GATE_MIN_MS >= AGENT_GATE_MIN_MS,
               "KRMPOD_NETWORK_GATE may not be shorter than the gate can prove");

/* The targets, resolved once. */
struct resolved {
	struct addrinfo *ai[AGENT_GATE_MAX_TARGETS];
	size_t n;
};

static void resolved_free(struct resolved *r)
{
	for (size_t i = 0; i < r->n; i++)
		freeaddrinfo(r->ai[i]);
	r->n = 0;
}

static int resolve(const struct agent_gate_target *t, size_t n, struct resolved *out,
                   struct err **err)
{
	if (n < 2 || n > AGENT_GATE_MAX_TARGETS)
		return err_set(err, ERR_CONFIG,
		               "network gate: %zu targets: the API server and one or two others "
		               "(the API server alone cannot prove isolation: a restarting server "
		               "refuses too)",
		               n);
	for (size_t i = 0; i < n; i++) {
		if (t[i].host == NULL || t[i].port == NULL || !*t[i].host || !*t[i].port) {
			resolved_free(out);
			return err_set(err, ERR_CONFIG,
			               "network gate: no address for %s in this container, so its "
			               "isolation cannot be checked (krmpod's pod spec sets it)",
			               t[i].what);
		}
		struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
		                         .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
		int rc = getaddrinfo(t[i].host, t[i].port, &hints, &out->ai[i]);
		if (rc != 0) {
			resolved_free(out);
			return err_set(err, ERR_CONFIG,
			               "network gate: %s at %s:%s is not a numeric address: %s",
			               t[i].what, t[i].host, t[i].port, gai_strerror(rc));
		}
		out->n = i + 1;
	}
	return 0;
}

/* One round: a connection to every target at once, each given AGENT_GATE_CONNECT_MS to
 * answer. Returns the set of targets that connected (bit i: target i; 0 when none did:
 * refused, unreachable, forbidden, or no answer: dropped), -1 on error. */
static int probe_round(const struct resolved *r, struct err **err)
{
	struct pollfd p[AGENT_GATE_MAX_TARGETS];
	int connected = 0, rc = 0;
	size_t waiting = 0;
	for (size_t i = 0; i < r->n; i++)
		p[i] = (struct pollfd){.fd = -1, .events = POLLOUT};
	for (size_t i = 0; i < r->n && rc == 0; i++) {
		const struct addrinfo *ai = r->ai[i];
		p[i].fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (p[i].fd < 0) {
			rc = err_set_sys(err, ERR_IO, errno, "network gate: cannot make a socket");
		} else if (connect(p[i].fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			connected |= 1 << i;
		} else if (errno == EINPROGRESS) {
			waiting++;
			continue;
		}
		/* connected, or refused, unreachable, a firewall's reject */
		if (p[i].fd >= 0)
			close(p[i].fd);
		p[i].fd = -1;
	}
	int64_t deadline = now_ms() + AGENT_GATE_CONNECT_MS;
	while (rc == 0 && waiting > 0) {
		int64_t left = deadline - now_ms();
		if (left <= 0)
			break; /* no answer: dropped */
		int k = poll(p, r->n, (int)left);
		if (k < 0 && errno != EINTR)
			rc = err_set_sys(err, ERR_IO, errno, "network gate: poll");
		for (size_t i = 0; k > 0 && i < r->n; i++) {
			if (p[i].fd < 0 || p[i].revents == 0)
				continue;
			int soerr = 0;
			socklen_t len = sizeof(soerr);
			if (getsockopt(p[i].fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
				rc = err_set_sys(err, ERR_IO, errno, "network gate: getsockopt");
			else if (soerr == 0)
				connected |= 1 << i;
			close(p[i].fd);
			p[i].fd = -1;
			waiting--;
		}
	}
	for (size_t i = 0; i < r->n; i++)
		if (p[i].fd >= 0)
			close(p[i].fd);
	return rc < 0 ? -1 : connected;
}

/* "the API server at H:P and the node's kubelet at H:P": the targets of set. */
static void name_targets(const struct agent_gate_target *t, size_t n, int set, char *out,
                         size_t size)
{
	size_t len = 0;
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (!(set & (1 << i)))
			continue;
		int rest = set & ~((2 << i) - 1);
		int w = snprintf(out + len, size - len, "%s%s at %s:%s",
		                 len ? (rest ? ", " : " and ") : "", t[i].what, t[i].host,
		                 t[i].port);
		if (w < 0 || (size_t)w >= size - len)
			return;
		len += (size_t)w;
	}
}

int agent_net_gate(const struct agent_gate_target *t, size_t n, int64_t timeout_ms,
                   int64_t *waited_ms, struct err **err)
{
	if (timeout_ms < AGENT_GATE_MIN_MS)
		return err_set(err, ERR_CONFIG,
		               "network gate: %lld ms cannot prove isolation: it needs %d silent "
		               "rounds over %d ms, so at least %d ms (KRMPOD_NETWORK_GATE)",
		               (long long)timeout_ms, AGENT_GATE_ROUNDS, AGENT_GATE_SPAN_MS,
		               AGENT_GATE_MIN_MS);
	struct resolved r = {0};
	if (resolve(t, n, &r, err) < 0)
		return -1;
	int64_t t0 = now_ms(), deadline = t0 + timeout_ms, streak_start = 0, last_seen = -1;
	int streak = 0, seen = 0, k;
	for (;;) {
		int64_t round_start = now_ms();
		if ((k = probe_round(&r, err)) < 0)
			break;
		if (k != 0) {
			streak = 0;
			seen = k;
			last_seen = now_ms();
		} else {
			if (streak++ == 0)
				streak_start = round_start;
			if (streak >= AGENT_GATE_ROUNDS &&
			    now_ms() - streak_start >= AGENT_GATE_SPAN_MS)
				break;
		}
		if (now_ms() + AGENT_GATE_PAUSE_MS >= deadline)
			break;
		sleep_ms(AGENT_GATE_PAUSE_MS, NULL);
	}
	resolved_free(&r);
	*waited_ms = now_ms() - t0;
	if (k < 0)
		return -1;
	if (streak >= AGENT_GATE_ROUNDS && now_ms() - streak_start >= AGENT_GATE_SPAN_MS)
		return 0;
	if (seen == 0)
		return err_set(err, ERR_TIMEOUT,
		               "network gate: nothing answered, but for only %lld of the %d ms "
		               "the gate needs within its %lld ms (raise KRMPOD_NETWORK_GATE)",
		               (long long)(now_ms() - streak_start), AGENT_GATE_SPAN_MS,
		               (long long)timeout_ms);
	char names[3 * 160];
	name_targets(t, n, seen, names, sizeof(names));
	return err_set(err, ERR_TIMEOUT,
	               "network gate: this pod still reached %s %lld ms after it started "
	               "checking (last %lld ms ago): its NetworkPolicies are not in effect (apply "
	               "manifests/functions/networkpolicies.yaml, on a CNI that enforces "
	               "NetworkPolicy; `krmpod doctor --probe` checks them), so the function "
	               "does not start; KRMPOD_NETWORK_GATE on the sidecar sets how long to wait, "
	               "0 turns the gate off",
	               names, (long long)*waited_ms, (long long)(now_ms() - last_seen));
}

int agent_gate_nameserver(const char *path, char *out, size_t size, struct err **err)
{
	cleanup_free char *text = NULL;
	size_t len = 0;
	if (buf_read_file(path, LIMIT_RESOLV_CONF, "the pod's resolver configuration", ERR_IO,
	                  &text, &len, err) < 0)
		return -1;
	for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		line += strspn(line, " \t");
		if (strncmp(line, "nameserver", 10) != 0 || (line[10] != ' ' && line[10] != '\t'))
			continue;
		line += 10 + strspn(line + 10, " \t");
		size_t m = strcspn(line, " \t\r#;");
		if (m == 0 || m >= size)
			break;
		memcpy(out, line, m);
		out[m] = '\0';
		return 0;
	}
	return err_set(err, ERR_CONFIG,
	               "network gate: %s names no nameserver, so the cluster DNS cannot be "
	               "probed (KRMPOD_NETWORK_GATE_DNS=false on the sidecar skips that probe)",
	               path);
}

bool agent_gate_passed(const char *workdir)
{
	char got[sizeof(AGENT_GATE_MARK)] = {0};
	cleanup_free char *path = xasprintf("%s/%s", workdir, AGENT_LOCK_NAME);
	cleanup_close int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	return fd >= 0 && pread(fd, got, sizeof(got) - 1, 0) == (ssize_t)sizeof(got) - 1 &&
	       memcmp(got, AGENT_GATE_MARK, sizeof(got) - 1) == 0;
}

int agent_gate_mark(const char *workdir, struct err **err)
{
	cleanup_free char *path = xasprintf("%s/%s", workdir, AGENT_LOCK_NAME);
	cleanup_close int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || pwrite(fd, AGENT_GATE_MARK, sizeof(AGENT_GATE_MARK) - 1, 0) !=
	                      (ssize_t)sizeof(AGENT_GATE_MARK) - 1)
		return err_set_sys(err, ERR_IO, errno, "network gate: cannot mark %s", path);
	return 0;
}

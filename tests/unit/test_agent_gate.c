/* Unit tests: the network gate (agent_gate.h) against real sockets on 127.0.0.1: what a
 * policy looks like (nothing answers), and what only looks like one (an API server that
 * restarts, or whose accept queue is full) while another target still answers. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/agent_gate.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/fdio.h"
#include "check.h"

static uint16_t port_of(const char *text)
{
	return (uint16_t)strtol(text, NULL, 10);
}

/* A socket bound to 127.0.0.1 (port 0: any), listening with backlog (or not, backlog < 0);
 * its port in port. */
static int bound(int want_port, int backlog, char *port, size_t size)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	                        .sin_port = htons((uint16_t)want_port)};
	socklen_t len = sizeof(a);
	CHECK(fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0);
	CHECK(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	CHECK(backlog < 0 || listen(fd, backlog) == 0);
	CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
	snprintf(port, size, "%d", ntohs(a.sin_port));
	return fd;
}

/* A port nothing listens on (bound, so no other test takes it): connections are refused. */
static int closed_port(char *port, size_t size)
{
	return bound(0, -1, port, size);
}

/* Does a connection to port answer within ms? 1 yes, 0 no. */
static int answers(const char *port, int ms)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	                        .sin_port = htons(port_of(port))};
	int rc = connect(fd, (struct sockaddr *)&a, sizeof(a));
	if (rc < 0 && errno == EINPROGRESS) {
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		int soerr = 1;
		socklen_t len = sizeof(soerr);
		rc = poll(&p, 1, ms) == 1 &&
		                     getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 &&
		                     soerr == 0
		             ? 0
		             : -1;
	}
	close(fd);
	return rc == 0;
}

/* A listener whose accept queue is full: it never accepts, and connections beyond its
 * backlog get no SYN-ACK (Linux drops the SYN), so a connection waits as under a policy that
 * drops. The connections that fill it stay open in held[]. */
#define HELD 8
static int full_queue(char *port, size_t size, int held[HELD])
{
	int fd = bound(0, 0, port, size);
	for (int i = 0; i < HELD; i++) {
		held[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		struct sockaddr_in a = {.sin_family = AF_INET,
		                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
		                        .sin_port = htons(port_of(port))};
		(void)connect(held[i], (struct sockaddr *)&a, sizeof(a));
	}
	sleep_ms(100, NULL);
	return fd;
}

static int gate(const char *api, const char *node, int64_t ms, int64_t *waited, struct err **e)
{
	struct agent_gate_target t[] = {{"the API server", "127.0.0.1", api},
	                                {"the node's kubelet", "127.0.0.1", node}};
	return agent_net_gate(t, 2, ms, waited, e);
}

/* Nothing answers: isolated, but only after the silent rounds span a second. */
TEST(nothing_answers_after_a_second)
{
	char api[16], node[16];
	int a = closed_port(api, sizeof(api)), n = closed_port(node, sizeof(node));
	struct err *e = NULL;
	int64_t waited = -1;
	CHECK(gate(api, node, 3000, &waited, &e) == 0 && e == NULL);
	CHECK(waited >= AGENT_GATE_SPAN_MS && waited < 3000);
	close(a);
	close(n);
}

/* A reachable API server keeps the gate closed until its time ends, naming it. */
TEST(a_reachable_api_server)
{
	char api[16], node[16];
	int a = bound(0, 64, api, sizeof(api)), n = closed_port(node, sizeof(node));
	struct err *e = NULL;
	int64_t waited = -1;
	CHECK(gate(api, node, 2000, &waited, &e) == -1 && e && e->code == ERR_TIMEOUT);
	CHECK(e && strstr(e->msg, "the API server at 127.0.0.1:") &&
	      strstr(e->msg, "KRMPOD_NETWORK_GATE"));
	CHECK(waited >= 1900);
	err_free(e);
	e = NULL;
	/* both answer: the message names both, in order */
	close(n);
	n = bound(0, 64, node, sizeof(node));
	CHECK(gate(api, node, 2000, &waited, &e) == -1 && e && e->code == ERR_TIMEOUT);
	CHECK(e && strstr(e->msg, "still reached the API server at 127.0.0.1:") &&
	      strstr(e->msg, " and the node's kubelet at 127.0.0.1:"));
	err_free(e);
	close(a);
	close(n);
}

/* An API server that restarts refuses: the old gate passed at once. The kubelet still
 * answers, so nothing isolates the pod, and the gate says which target answered. */
TEST(a_restarting_api_server_is_not_isolation)
{
	char api[16], node[16];
	int a = closed_port(api, sizeof(api)), n = bound(0, 64, node, sizeof(node));
	CHECK(!answers(api, 200)); /* the premise: refused */
	struct err *e = NULL;
	int64_t waited = -1;
	CHECK(gate(api, node, 2000, &waited, &e) == -1 && e && e->code == ERR_TIMEOUT);
	CHECK(e && strstr(e->msg, "the node's kubelet at 127.0.0.1:"));
	err_free(e);
	close(a);
	close(n);
}

/* An API server whose accept queue is full gives no SYN-ACK, as a dropping policy: the old
 * gate passed after 500 ms. The kubelet still answers. */
TEST(a_full_accept_queue_is_not_isolation)
{
	char api[16], node[16];
	int held[HELD];
	int a = full_queue(api, sizeof(api), held), n = bound(0, 64, node, sizeof(node));
	CHECK(!answers(api, 300)); /* the premise: no answer */
	struct err *e = NULL;
	int64_t waited = -1;
	CHECK(gate(api, node, 2500, &waited, &e) == -1 && e && e->code == ERR_TIMEOUT);
	CHECK(e && strstr(e->msg, "the node's kubelet at 127.0.0.1:"));
	err_free(e);
	for (int i = 0; i < HELD; i++)
		close(held[i]);
	close(a);
	close(n);
}

/* The API server is down for 400 ms and then back: the missed connections do not add up to
 * isolation, however quiet the other target. */
struct restart {
	char port[16];
	int fd;
};

static void *come_back(void *arg)
{
	struct restart *r = arg;
	sleep_ms(400, NULL);
	char again[16];
	r->fd = bound(port_of(r->port), 64, again, sizeof(again));
	return NULL;
}

TEST(missed_connections_during_a_restart_are_not_isolation)
{
	char node[16];
	struct restart r;
	int old = bound(0, 64, r.port, sizeof(r.port)), n = closed_port(node, sizeof(node));
	close(old); /* the server goes down */
	pthread_t t;
	CHECK(pthread_create(&t, NULL, come_back, &r) == 0);
	struct err *e = NULL;
	int64_t waited = -1;
	int rc = gate(r.port, node, 2500, &waited, &e);
	pthread_join(t, NULL);
	CHECK(rc == -1 && e && e->code == ERR_TIMEOUT);
	CHECK(e && strstr(e->msg, "the API server at 127.0.0.1:"));
	err_free(e);
	close(r.fd);
	close(n);
}

/* Settings the gate refuses: one target, a time too short, no or a bad address. */
TEST(what_the_gate_refuses)
{
	char api[16], node[16];
	int a = closed_port(api, sizeof(api)), n = closed_port(node, sizeof(node));
	struct agent_gate_target one[] = {{"the API server", "127.0.0.1", api}};
	struct err *e = NULL;
	int64_t waited = -1;
	CHECK(agent_net_gate(one, 1, 3000, &waited, &e) == -1 && e->code == ERR_CONFIG);
	CHECK(strstr(e->msg, "the API server alone cannot prove isolation") != NULL);
	err_free(e);
	e = NULL;
	CHECK(gate(api, node, AGENT_GATE_MIN_MS - 1, &waited, &e) == -1 && e->code == ERR_CONFIG);
	CHECK(strstr(e->msg, "KRMPOD_NETWORK_GATE") != NULL);
	err_free(e);
	e = NULL;
	struct agent_gate_target none[] = {
	        {"the API server (KUBERNETES_SERVICE_HOST)", NULL, "443"},
	        {"the node's kubelet", "127.0.0.1", node}};
	CHECK(agent_net_gate(none, 2, 3000, &waited, &e) == -1 && e->code == ERR_CONFIG);
	CHECK(strstr(e->msg, "KUBERNETES_SERVICE_HOST") != NULL);
	err_free(e);
	e = NULL;
	CHECK(gate(api, "kubelet", 3000, &waited, &e) == -1 && e->code == ERR_CONFIG);
	CHECK(strstr(e->msg, "not a numeric address") != NULL);
	err_free(e);
	close(a);
	close(n);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	fputs(text, f);
	fclose(f);
}

/* The pod's nameserver: the first `nameserver` line, comments and options around it. */
TEST(nameserver)
{
	char dir[] = "/tmp/krmpod-gate-XXXXXX", path[64], ns[64];
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/resolv.conf", dir);
	write_file(path, "# kubelet\nsearch ns.svc.cluster.local svc.cluster.local\n"
	                 "nameserverx 1.1.1.1\n  nameserver\t10.96.0.10 # dns\n"
	                 "nameserver 10.96.0.11\noptions ndots:5\n");
	struct err *e = NULL;
	CHECK(agent_gate_nameserver(path, ns, sizeof(ns), &e) == 0 &&
	      strcmp(ns, "10.96.0.10") == 0);
	write_file(path, "search x\n# nameserver 1.2.3.4\n");
	CHECK(agent_gate_nameserver(path, ns, sizeof(ns), &e) == -1 && e->code == ERR_CONFIG);
	CHECK(strstr(e->msg, "KRMPOD_NETWORK_GATE_DNS") != NULL);
	err_free(e);
	e = NULL;
	unlink(path);
	CHECK(agent_gate_nameserver(path, ns, sizeof(ns), &e) == -1 && e->code == ERR_IO);
	err_free(e);
	fd_remove_tree(dir, "test", NULL);
}

/* The pod's mark: absent, then written into the call lock file; anything else is no mark. */
TEST(mark)
{
	char dir[] = "/tmp/krmpod-gate-XXXXXX", path[64];
	CHECK(mkdtemp(dir) != NULL);
	struct err *e = NULL;
	CHECK(!agent_gate_passed(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, AGENT_LOCK_NAME);
	write_file(path, "");
	CHECK(!agent_gate_passed(dir)); /* a call's empty lock file */
	write_file(path, "krmpod-net-gate-passe");
	CHECK(!agent_gate_passed(dir));
	CHECK(agent_gate_mark(dir, &e) == 0 && e == NULL);
	CHECK(agent_gate_passed(dir));
	fd_remove_tree(dir, "test", NULL);
	CHECK(agent_gate_mark(dir, &e) == -1 && e->code == ERR_IO && strstr(e->msg, dir));
	err_free(e);
}

int main(void)
{
	RUN(nothing_answers_after_a_second);
	RUN(a_reachable_api_server);
	RUN(a_restarting_api_server_is_not_isolation);
	RUN(a_full_accept_queue_is_not_isolation);
	RUN(missed_connections_during_a_restart_are_not_isolation);
	RUN(what_the_gate_refuses);
	RUN(nameserver);
	RUN(mark);
	return check_summary();
}

/* netprobe: one TCP connection attempt, for the real-cluster network tests
 * (tests/realkube/test_cluster.py). Runs inside a pod, built static.
 *
 *   netprobe HOST-IPV4 PORT [TIMEOUT_MS]
 *   netprobe --get HOST-IPV4 PORT [TIMEOUT_MS]
 *
 * Prints one word and exits with it: "connected" 0, "refused" 1, "timeout" 2,
 * "unreachable" 3 (EHOSTUNREACH, ENETUNREACH, EACCES, EPERM: a reject by a firewall),
 * "error" 4 (anything else, with errno's text). With --get, once connected it sends
 * "GET / HTTP/1.0" and prints the response's body after the word instead (busybox's static
 * wget crashes in glibc's resolver code, even for an address). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <unistd.h>

static int report(const char *word, int code, int err)
{
	if (err)
		printf("%s (%s)\n", word, strerror(err));
	else
		printf("%s\n", word);
	return code;
}

static int classify(int err)
{
	switch (err) {
	case 0:
		return report("connected", 0, 0);
	case ECONNREFUSED:
		return report("refused", 1, 0);
	case ETIMEDOUT:
		return report("timeout", 2, 0);
	case EHOSTUNREACH:
	case ENETUNREACH:
	case EACCES:
	case EPERM:
		return report("unreachable", 3, err);
	default:
		return report("error", 4, err);
	}
}

/* GET / over the connected socket; the body after the header to stdout. */
static int http_get(int fd, int timeout_ms)
{
	static const char req[] = "GET / HTTP/1.0\r\nConnection: close\r\n\r\n";
	static char buf[65536];
	size_t have = 0;
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		return report("error", 4, errno);
	struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (write(fd, req, sizeof req - 1) != (ssize_t)(sizeof req - 1))
		return report("error", 4, errno);
	for (;;) {
		if (have == sizeof buf - 1)
			return report("error", 4, EMSGSIZE);
		ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
		if (n < 0)
			return report(errno == EAGAIN ? "timeout" : "error", errno == EAGAIN ? 2 : 4, errno);
		if (n == 0)
			break;
		have += (size_t)n;
	}
	buf[have] = '\0';
	const char *body = strstr(buf, "\r\n\r\n");
	if (!body)
		return report("error", 4, EPROTO);
	printf("connected\n%s", body + 4);
	return 0;
}

int main(int argc, char **argv)
{
	int get = argc > 1 && strcmp(argv[1], "--get") == 0;
	argv += get;
	argc -= get;
	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: netprobe [--get] HOST-IPV4 PORT [TIMEOUT_MS]\n");
		return 64;
	}
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((unsigned short)strtol(argv[2], NULL, 10))};
	if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) {
		fprintf(stderr, "netprobe: %s is not an IPv4 address\n", argv[1]);
		return 64;
	}
	int timeout_ms = argc == 4 ? (int)strtol(argv[3], NULL, 10) : 2000;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return report("error", 4, errno);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
		return get ? http_get(fd, timeout_ms) : classify(0);
	if (errno != EINPROGRESS)
		return classify(errno);
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	int n = poll(&p, 1, timeout_ms);
	if (n == 0)
		return classify(ETIMEDOUT);
	if (n < 0)
		return report("error", 4, errno);
	int err = 0;
	socklen_t len = sizeof err;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
		return report("error", 4, errno);
	if (err == 0 && get)
		return http_get(fd, timeout_ms);
	close(fd);
	return classify(err);
}

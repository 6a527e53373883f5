/* fake_http.c — the scripted HTTP/1.1 server of the unit tests (fake_http.h). */
#include "fake_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/xalloc.h"

int fake_http_listen(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 8) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &al) < 0) {
		perror("fake_http: listening on 127.0.0.1");
		abort();
	}
	*port = ntohs(a.sin_port);
	return fd;
}

void fake_http_send_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n > 0) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
		if (w <= 0)
			return;
		c += w;
		n -= (size_t)w;
	}
}

static void pause_ms(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Waits until fd can be read; false once the server is stopping. */
static bool wait_readable(struct fake_http *f, int fd)
{
	while (!f->stop) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 20) > 0)
			return true;
	}
	return false;
}

/* Reads more of a request into req (room for `size` bytes and a NUL); false when the
 * client closed, the request is too large or the server is stopping. */
static bool read_more(struct fake_http *f, int fd, char *req, size_t size, size_t *len)
{
	if (*len == size - 1 || !wait_readable(f, fd))
		return false;
	ssize_t n = read(fd, req + *len, size - 1 - *len);
	if (n <= 0)
		return false;
	*len += (size_t)n;
	return true;
}

/* Reads one request, its head and its Content-Length body, and records it. Returns false
 * when the client closed. */
static bool read_request(struct fake_http *f, int fd)
{
	char req[8192];
	size_t len = 0;
	char *end = NULL;
	while ((end = memmem(req, len, "\r\n\r\n", 4)) == NULL)
		if (!read_more(f, fd, req, sizeof(req), &len))
			return false;
	req[len] = '\0';
	size_t head = (size_t)(end - req) + 4;
	size_t clen = 0;
	char *cl = strcasestr(req, "\r\nContent-Length:");
	if (cl && cl < end)
		clen = strtoul(cl + strlen("\r\nContent-Length:"), NULL, 10);
	while (len < head + clen && len < sizeof(req) - 1) /* a longer body is cut */
		if (!read_more(f, fd, req, sizeof(req), &len))
			return false;
	req[len] = '\0';
	cleanup_buf struct buf rec;
	buf_init(&rec, 0);
	buf_printf(&rec, "%.*s", (int)strcspn(req, "\r"), req);
	static const char *const keep[] = {
	        "\r\nAuthorization:", "\r\nContent-Type:", "\r\nAccept:",
	        "\r\nUser-Agent:",    "\r\nHost:",         "\r\nExpect:"};
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		char *h = strcasestr(req, keep[i]);
		if (h && h < end)
			buf_printf(&rec, " |%.*s", (int)strcspn(h + 2, "\r"), h + 2);
	}
	if (clen)
		buf_printf(&rec, " |body=%.*s", (int)clen, req + head);
	pthread_mutex_lock(&f->lock);
	if (f->nreq < FAKE_HTTP_MAX_REQS)
		snprintf(f->reqs[f->nreq], FAKE_HTTP_REQ_MAX, "%s", rec.data);
	f->nreq++;
	pthread_mutex_unlock(&f->lock);
	return true;
}

/* A hanging step: waits until the client goes away or the server stops. */
static void hang(struct fake_http *f, int fd)
{
	while (!f->stop) {
		char c;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 20) > 0 && recv(fd, &c, 1, MSG_PEEK) <= 0)
			return; /* the client went away */
	}
}

/* Answers the requests on one connection until a step closes it, the script ends or the
 * client goes away. */
static void serve_connection(struct fake_http *f, int fd)
{
	while (!f->stop && read_request(f, fd)) {
		pthread_mutex_lock(&f->lock);
		const struct fake_http_step *s = f->next < f->nsteps ? &f->steps[f->next++] : NULL;
		pthread_mutex_unlock(&f->lock);
		if (s == NULL)
			return;
		if (s->hang) {
			hang(f, fd);
			return;
		}
		if (s->response == NULL)
			return;
		fake_http_send_all(fd, s->response, s->len ? s->len : strlen(s->response));
		for (int i = 0; i < 4 && s->pieces[i]; i++) {
			pause_ms(30);
			fake_http_send_all(fd, s->pieces[i], strlen(s->pieces[i]));
		}
		if (s->close)
			return;
	}
}

static void *serve(void *arg)
{
	struct fake_http *f = arg;
	while (!f->stop) {
		if (!wait_readable(f, f->lfd))
			break;
		cleanup_close int fd = accept(f->lfd, NULL, NULL);
		if (fd >= 0)
			serve_connection(f, fd);
	}
	return NULL;
}

void fake_http_start(struct fake_http *f, const struct fake_http_step *steps, int n)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
	f->lfd = fake_http_listen(&f->port);
	for (int i = 0; i < n; i++)
		fake_http_add(f, &steps[i]);
	pthread_create(&f->thread, NULL, serve, f);
}

/* Adds a step whose bytes are `owned` (freed by fake_http_stop) or borrowed (NULL). */
static void add_step(struct fake_http *f, const struct fake_http_step *step, char *owned)
{
	pthread_mutex_lock(&f->lock);
	if (f->nsteps == FAKE_HTTP_MAX_STEPS)
		abort(); /* a test's script is too long: raise FAKE_HTTP_MAX_STEPS */
	f->owned[f->nsteps] = owned;
	f->steps[f->nsteps++] = *step;
	pthread_mutex_unlock(&f->lock);
}

void fake_http_add(struct fake_http *f, const struct fake_http_step *step)
{
	add_step(f, step, NULL);
}

void fake_http_answer(struct fake_http *f, const char *status, const char *headers,
                      const char *body)
{
	struct buf b;
	buf_init(&b, 0);
	size_t blen = strlen(body);
	buf_printf(&b, "HTTP/1.1 %s\r\nContent-Length: %zu\r\nConnection: close\r\n%s\r\n", status,
	           blen, headers ? headers : "");
	buf_append(&b, body, blen, "answer", NULL);
	size_t n = 0;
	char *data = buf_steal(&b, &n);
	add_step(f, &(struct fake_http_step){.response = data, .len = n, .close = true}, data);
}

void fake_http_answer_raw(struct fake_http *f, const char *raw, size_t len)
{
	char *data = xmalloc(len + 1);
	memcpy(data, raw, len);
	data[len] = '\0';
	add_step(f, &(struct fake_http_step){.response = data, .len = len, .close = true}, data);
}

/* The lock is taken only while the server runs: fake_http_stop destroys it. */
static bool lock_if_running(struct fake_http *f)
{
	if (f->lfd < 0)
		return false;
	pthread_mutex_lock(&f->lock);
	return true;
}

int fake_http_nreq(struct fake_http *f)
{
	bool locked = lock_if_running(f);
	int n = f->nreq;
	if (locked)
		pthread_mutex_unlock(&f->lock);
	return n;
}

const char *fake_http_req(struct fake_http *f, int i)
{
	return i >= 0 && i < fake_http_nreq(f) && i < FAKE_HTTP_MAX_REQS ? f->reqs[i]
	                                                                 : "(no such request)";
}

void fake_http_stop(struct fake_http *f)
{
	if (f->lfd < 0)
		return;
	f->stop = 1;
	pthread_join(f->thread, NULL);
	close(f->lfd);
	f->lfd = -1;
	pthread_mutex_destroy(&f->lock);
	for (int i = 0; i < f->nsteps; i++) {
		free(f->owned[i]);
		f->owned[i] = NULL;
	}
}

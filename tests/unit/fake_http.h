/* fake_http.h — a scripted HTTP/1.1 server for unit tests, on 127.0.0.1 over plain TCP.
 *
 * Starts: fake_http_start() listens on a free loopback port (f->port) and serves from a
 * thread of its own, one connection at a time, until fake_http_stop().
 *
 * Scripts: the server answers each request it reads with the next step of its script, in
 * order: a raw response sent as is (optionally followed by streamed pieces), nothing (the
 * connection is closed unanswered), or no answer at all (it hangs until the client goes away
 * or the server stops). A step either keeps the connection open for the next request or
 * closes it. Once the script is used up, a request is met by closing the connection. Steps
 * are given to fake_http_start() and may be added after it (fake_http_add,
 * fake_http_answer, fake_http_answer_raw), also while it runs.
 *
 * Records: every request is read whole (its head, then a Content-Length body) and recorded
 * as one line, before it is answered:
 *
 *     GET /path HTTP/1.1 |Authorization: Bearer tok |Accept: application/json |body={}
 *
 * the request line, then those of the headers Authorization, Content-Type, Accept,
 * User-Agent, Host and Expect that it has (in that order, as sent), then its body when it
 * has one. fake_http_nreq() counts the requests read; fake_http_req(f, i) is the i-th line.
 *
 * Stops: fake_http_stop() ends the thread (a hanging step included) and closes the port:
 * connecting to f->port is refused from then on. The records stay readable; steps the
 * server built (fake_http_answer, fake_http_answer_raw) are freed. Stopping twice is
 * harmless.
 *
 * The lower-level pieces, fake_http_listen() and fake_http_send_all(), serve the tests'
 * servers that speak more than this (test_kube_stream.c: a WebSocket server).
 */
#ifndef KRMPOD_FAKE_HTTP_H
#define KRMPOD_FAKE_HTTP_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#define FAKE_HTTP_MAX_STEPS 16   /* steps in a script */
#define FAKE_HTTP_MAX_REQS  16   /* requests recorded (more are counted) */
#define FAKE_HTTP_REQ_MAX   2048 /* bytes of one record, its NUL included */

/* One answer to one request. */
struct fake_http_step {
	const char *response;  /* raw HTTP response, sent as is; NULL closes unanswered */
	size_t len;            /* its length; 0 for strlen(response) */
	bool hang;             /* never answer: wait until the client goes away */
	bool close;            /* close the connection after answering */
	const char *pieces[4]; /* sent after `response`, 30 ms apart (NULL ends them) */
};

/* Tests read `port`; the rest belongs to the server. */
struct fake_http {
	int port; /* the port listened on, at 127.0.0.1 */
	int lfd;  /* the listening socket; -1 once stopped */
	pthread_t thread;
	pthread_mutex_t lock; /* guards the script and the records while the server runs */
	volatile int stop;
	struct fake_http_step steps[FAKE_HTTP_MAX_STEPS];
	char *owned[FAKE_HTTP_MAX_STEPS]; /* what steps[i] sends, when the server made it */
	int nsteps, next;
	char reqs[FAKE_HTTP_MAX_REQS][FAKE_HTTP_REQ_MAX];
	int nreq;
};

/* Starts a server whose script is the n steps (copied; what they point to is borrowed and
 * must outlive the server). steps may be NULL when n is 0. Aborts when it cannot listen. */
void fake_http_start(struct fake_http *f, const struct fake_http_step *steps, int n);

/* Adds a step to the end of the script (copied, its strings borrowed). Aborts past
 * FAKE_HTTP_MAX_STEPS. */
void fake_http_add(struct fake_http *f, const struct fake_http_step *step);

/* Adds the answer "HTTP/1.1 <status>" ("200 OK") with Content-Length and Connection: close,
 * the extra header lines `headers` (NULL or lines each ending in \r\n), then `body`; the
 * connection is closed after it. The server keeps its own copy. */
void fake_http_answer(struct fake_http *f, const char *status, const char *headers,
                      const char *body);

/* Adds len raw bytes, sent as they are (no Content-Length added), then closes the
 * connection. The server keeps its own copy. */
void fake_http_answer_raw(struct fake_http *f, const char *raw, size_t len);

/* The number of requests read so far (recorded or not). */
int fake_http_nreq(struct fake_http *f);

/* The record of the i-th request (from 0), or "(no such request)". */
const char *fake_http_req(struct fake_http *f, int i);

/* Stops the server and closes its port; see above. */
void fake_http_stop(struct fake_http *f);

/* A listening TCP socket on a free port of 127.0.0.1 (*port); aborts on failure. */
int fake_http_listen(int *port);

/* Sends n bytes, giving up silently when the peer is gone (no SIGPIPE). */
void fake_http_send_all(int fd, const void *p, size_t n);

#endif

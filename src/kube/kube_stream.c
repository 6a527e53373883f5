/* kube_stream.c — see kube_stream.h and docs/internals/attach-framing.md.
 *
 * One lws_context per stream, client only, with the TLS material handed over in memory.
 * The main thread runs lws_service(); a 50 ms timer (lws_sul) wakes it so cancellation and
 * deadlines are noticed even when the connection is idle. stdin is read by a small thread
 * into a single-slot buffer (so at most one chunk of LIMIT_STDIN_CHUNK is held) that the
 * service loop sends when the socket is writable; lws_cancel_service() wakes the loop when
 * a chunk is ready.
 */
#include "kube/kube_stream.h"

#include <errno.h>
#include <libwebsockets.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/fdio.h"
#include "base/log.h"
#include "base/signals.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "kube/kube_api.h"
#include "kube/kube_http.h"
#include "kube/ws_frame.h"

#define PROTOCOL "v5.channel.k8s.io"
#define TICK_US  (50 * LWS_US_PER_MS)
/* Longest wait for GET /version after a refused upgrade (within the stream's deadline). */
#define VERSION_READ_MS 5000

struct kube_stream {
	struct kube_config *cfg;
	struct kube_stream_opts o;
	struct lws_context *ctx;
	struct lws *wsi;
	lws_sorted_usec_list_t tick;
	char *token;
	/* The client key, NUL-terminated twice: lws hands mbedTLS key_mem_len - 1 bytes, and
	 * mbedTLS's PEM parser needs the terminating NUL inside the length it is given. */
	char *key_copy;
	size_t key_copy_len;
	char *full_path; /* the server's path prefix + o.path */

	/* connection state (service thread only) */
	bool established, failed, closed, peer_closed;
	int close_code; /* of the server's Close frame (peer_closed) */
	int http_status;
	char fail_reason[256];
	struct ws_demux demux;
	struct err *io_err; /* a failure inside a callback */
	/* stdin could not be sent: the server may have ended the stream already (a Status on
	 * channel 3, then its Close, racing our write), so this decides only when no Status
	 * arrives. */
	struct err *send_err;

	/* stdin: single slot filled by the reader thread */
	pthread_t reader;
	bool reader_started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned char *slot; /* LWS_PRE + 1 + LIMIT_STDIN_CHUNK */
	size_t slot_len;     /* payload bytes in the slot; 0 = empty */
	bool slot_full;
	bool in_eof; /* reader saw EOF (after the slot was taken) */
	bool in_error;
	int in_errno;
	bool close_sent;
	atomic_bool stop_reader;

	struct kube_stream_result res;
};

static void emit_log(int level, const char *line)
{
	(void)level;
	log_debug("lws: %.*s", (int)strcspn(line, "\n"), line);
}

static void on_tick(lws_sorted_usec_list_t *sul)
{
	struct kube_stream *s = lws_container_of(sul, struct kube_stream, tick);
	lws_sul_schedule(s->ctx, 0, &s->tick, on_tick, TICK_US);
}

static int sink(void *ud, int channel, const char *data, size_t len, struct err **err)
{
	struct kube_stream *s = ud;
	if (s->o.capture_prefix && s->res.prefix_len < s->o.capture_prefix) {
		size_t take = s->o.capture_prefix - s->res.prefix_len;
		if (take > len)
			take = len;
		if (s->res.prefix == NULL)
			s->res.prefix = xmalloc(s->o.capture_prefix);
		memcpy(s->res.prefix + s->res.prefix_len, data, take);
		s->res.prefix_len += take;
	}
	if (channel == WS_CH_STDOUT) {
		if (s->o.out_limit && s->res.bytes_out + len > s->o.out_limit)
			return err_set(err, ERR_IO,
			               "the function's stdout passed %s (%llu bytes): raise it, or "
			               "make the function's output smaller",
			               s->o.out_limit_name ? s->o.out_limit_name : "its limit",
			               (unsigned long long)s->o.out_limit);
		s->res.bytes_out += len;
		if (len > 0)
			s->res.out_last = (unsigned char)data[len - 1];
		return s->o.out_fd >= 0 ? fd_write_all(s->o.out_fd, data, len, "stdout", err) : 0;
	}
	s->res.bytes_err += len;
	if (s->o.err_sink)
		return s->o.err_sink(s->o.err_sink_ud, data, len, err);
	return s->o.err_fd >= 0 ? fd_write_all(s->o.err_fd, data, len, "stderr", err) : 0;
}

/* Hands n bytes to the service thread through the slot; false when the stream stops. */
static bool put_slot(struct kube_stream *s, const void *data, size_t n)
{
	pthread_mutex_lock(&s->lock);
	while (s->slot_full && !s->stop_reader)
		pthread_cond_wait(&s->cond, &s->lock);
	bool stop = s->stop_reader;
	if (!stop) {
		memcpy(s->slot + LWS_PRE + 1, data, n);
		s->slot_len = n;
		s->slot_full = true;
	}
	pthread_mutex_unlock(&s->lock);
	lws_cancel_service(s->ctx);
	return !stop;
}

static void *reader_main(void *arg)
{
	struct kube_stream *s = arg;
	/* The prefix first (an exec-mode call's header), then in_fd. */
	for (size_t off = 0; off < s->o.in_prefix_len;) {
		size_t n = s->o.in_prefix_len - off;
		if (n > LIMIT_STDIN_CHUNK)
			n = LIMIT_STDIN_CHUNK;
		if (!put_slot(s, s->o.in_prefix + off, n))
			return NULL;
		off += n;
	}
	unsigned char *chunk = xmalloc(LIMIT_STDIN_CHUNK);
	for (;;) {
		struct pollfd p = {.fd = s->o.in_fd, .events = POLLIN};
		int pr = poll(&p, 1, 100);
		if (s->stop_reader)
			break;
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr == 0)
			continue;
		ssize_t n = read(s->o.in_fd, chunk, LIMIT_STDIN_CHUNK);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n > 0) {
			if (!put_slot(s, chunk, (size_t)n))
				break;
			continue;
		}
		int e = errno;
		pthread_mutex_lock(&s->lock);
		while (s->slot_full && !s->stop_reader)
			pthread_cond_wait(&s->cond, &s->lock);
		if (n < 0) {
			s->in_error = true;
			s->in_errno = e;
		} else {
			s->in_eof = true;
		}
		pthread_mutex_unlock(&s->lock);
		lws_cancel_service(s->ctx);
		break;
	}
	free(chunk);
	return NULL;
}

/* Sends the next stdin message if there is one; called when the socket is writable. */
static int send_stdin(struct kube_stream *s)
{
	if (s->o.in_fd < 0 || s->close_sent)
		return 0;
	pthread_mutex_lock(&s->lock);
	bool full = s->slot_full, eof = s->in_eof, bad = s->in_error;
	int e = s->in_errno;
	size_t n = s->slot_len;
	pthread_mutex_unlock(&s->lock);
	if (bad) {
		err_set(&s->io_err, ERR_IO, "read stdin: %s", strerror(e));
		return -1;
	}
	if (full) {
		size_t len = ws_frame_stdin(s->slot + LWS_PRE, s->slot + LWS_PRE + 1, n);
		if (lws_write(s->wsi, s->slot + LWS_PRE, len, LWS_WRITE_BINARY) < (int)len) {
			err_set(&s->send_err, ERR_NET, "send stdin: the connection failed");
			s->close_sent =
			        true; /* nothing more is sent; what the server said decides */
			return 0;
		}
		s->res.bytes_in += n;
		pthread_mutex_lock(&s->lock);
		s->slot_full = false;
		s->slot_len = 0;
		pthread_cond_signal(&s->cond);
		pthread_mutex_unlock(&s->lock);
	} else if (eof) {
		unsigned char msg[LWS_PRE + 2];
		size_t len = ws_frame_stdin_close(msg + LWS_PRE);
		if (lws_write(s->wsi, msg + LWS_PRE, len, LWS_WRITE_BINARY) < (int)len) {
			err_set(&s->send_err, ERR_NET, "send stdin close: the connection failed");
			s->close_sent = true;
			return 0;
		}
		s->close_sent = true;
		log_debug("stdin: %llu bytes sent, then FF 00",
		          (unsigned long long)s->res.bytes_in);
	}
	return 0;
}

/* The bearer token, into the upgrade request's headers. */
static int add_token_header(const struct kube_stream *s, struct lws *wsi, void *in, size_t len)
{
	if (s->token == NULL)
		return 0;
	unsigned char **p = (unsigned char **)in, *end = (*p) + len;
	cleanup_free char *v = xasprintf("Bearer %s", s->token);
	if (lws_add_http_header_by_name(wsi, (const unsigned char *)"authorization:",
	                                (const unsigned char *)v, (int)strlen(v), p, end))
		return -1;
	return 0;
}

/* The protocol the server chose must be PROTOCOL. The response headers are only readable
 * here, before lws frees them. */
static int check_protocol(struct kube_stream *s, struct lws *wsi)
{
	char proto[64] = "";
	lws_hdr_copy(wsi, proto, sizeof(proto), WSI_TOKEN_PROTOCOL);
	if (strcmp(proto, PROTOCOL) == 0)
		return 0;
	s->failed = true;
	snprintf(s->fail_reason, sizeof(s->fail_reason),
	         "the server chose stream protocol \"%s\"; krmpod needs %s (Kubernetes 1.30 or "
	         "newer), because older protocols cannot close stdin",
	         proto, PROTOCOL);
	return -1;
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len)
{
	(void)user;
	struct kube_stream *s = lws_context_user(lws_get_context(wsi));
	if (s == NULL)
		return 0;
	switch (reason) {
	case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER:
		return add_token_header(s, wsi, in, len);
	case LWS_CALLBACK_CLIENT_FILTER_PRE_ESTABLISH:
		return check_protocol(s, wsi);
	case LWS_CALLBACK_CLIENT_ESTABLISHED:
		s->established = true;
		if (s->o.in_fd >= 0)
			lws_callback_on_writable(wsi);
		break;
	case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
		s->failed = true;
		s->http_status = (int)lws_http_client_http_response(wsi);
		snprintf(s->fail_reason, sizeof(s->fail_reason), "%s",
		         in ? (const char *)in : "connection failed");
		s->wsi = NULL;
		break;
	case LWS_CALLBACK_CLIENT_RECEIVE: {
		bool last = lws_is_final_fragment(wsi) && lws_remaining_packet_payload(wsi) == 0;
		if (ws_demux_feed(&s->demux, in, len, last, sink, s, &s->io_err) < 0)
			return -1;
		break;
	}
	case LWS_CALLBACK_CLIENT_WRITEABLE:
		if (send_stdin(s) < 0)
			return -1;
		break;
	case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
		s->peer_closed = true;
		/* The close code, when the frame has one (RFC 6455 5.5.1; 1005: none). */
		s->close_code = len >= 2 ? ((const unsigned char *)in)[0] << 8 |
		                                   ((const unsigned char *)in)[1]
		                         : 1005;
		break;
	case LWS_CALLBACK_CLIENT_CLOSED:
		s->closed = true;
		s->wsi = NULL;
		break;
	case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
		if (s->wsi && s->established)
			lws_callback_on_writable(s->wsi);
		break;
	default:
		break;
	}
	return 0;
}

static const struct lws_protocols protocols[] = {
        {PROTOCOL, callback, 0, 64 * 1024, 0, NULL, 0},
        LWS_PROTOCOL_LIST_TERM,
};

char *kube_stream_refusal_text(const char *path, const struct kube_version *v, const char *why)
{
	cleanup_free char *ns = NULL, *sub = NULL;
	kube_api_stream_path_parts(path, &ns, &sub);
	cleanup_free char *rbac = xasprintf("RBAC: the credentials need pods/%s create and get in "
	                                    "namespace %s (`krmpod doctor` checks them)",
	                                    sub, ns);
	struct buf b;
	buf_init(&b, 0);
	buf_puts(&b, "the API server refused the stream upgrade; ");
	if (v && !kube_version_supported(v))
		buf_printf(
		        &b,
		        "likely cause: the server runs Kubernetes %s, older than %d.%d, the first "
		        "release with the %s stream protocol krmpod needs (it can close a "
		        "function's stdin): upgrade the cluster to %d.%d or newer; other possible "
		        "cause: %s",
		        v->text, KUBE_VERSION_MIN_MAJOR, KUBE_VERSION_MIN_MINOR, PROTOCOL,
		        KUBE_VERSION_MIN_MAJOR, KUBE_VERSION_MIN_MINOR, rbac);
	else if (v)
		buf_printf(&b,
		           "likely cause: %s; not the server's version: it runs Kubernetes %s, and "
		           "krmpod needs %d.%d or newer (for the %s stream protocol)",
		           rbac, v->text, KUBE_VERSION_MIN_MAJOR, KUBE_VERSION_MIN_MINOR, PROTOCOL);
	else
		buf_printf(&b,
		           "possible causes: %s; or a server older than Kubernetes %d.%d, which "
		           "does not speak the %s stream protocol krmpod needs (its version could "
		           "not be read%s%s)",
		           rbac, KUBE_VERSION_MIN_MAJOR, KUBE_VERSION_MIN_MINOR, PROTOCOL,
		           why ? ": " : "", why ? why : "");
	return buf_steal(&b, NULL);
}

/* Fails for an upgrade refused with 403, after reading the server's version (the only
 * request that reads it on the attach path) to tell the two causes apart. */
static int refused(struct kube_config *cfg, const struct kube_stream_opts *o, struct err **err)
{
	struct kube_version v;
	bool known = false;
	cleanup_err struct err *verr = NULL;
	cleanup_kube_client struct kube_client *c = NULL;
	if (kube_client_new(cfg, &c, &verr) == 0) {
		int64_t until = now_ms() + VERSION_READ_MS;
		if (o->deadline_ms && o->deadline_ms < until)
			until = o->deadline_ms;
		kube_client_set_cancel(c, o->cancel);
		kube_client_set_deadline(c, until);
		known = kube_api_version_get(c, &v, &verr) == 0;
	}
	if (known)
		log_debug("stream upgrade refused (403); the server runs Kubernetes %s", v.text);
	cleanup_free char *text =
	        kube_stream_refusal_text(o->path, known ? &v : NULL, verr ? verr->msg : NULL);
	err_set(err, ERR_API, "GET %s: 403 Forbidden: %s", o->path, text);
	if (err) {
		(*err)->http_status = 403;
		snprintf((*err)->reason, sizeof((*err)->reason), "Forbidden");
	}
	return -1;
}

/* Checks cancellation and the deadline; returns -1 with *err when the stream must stop. */
static int check_stop(struct kube_stream *s, struct err **err)
{
	if (s->o.cancel && *s->o.cancel) {
		err_set(err, ERR_SIGNAL, "stream: interrupted by signal %d", (int)*s->o.cancel);
		(*err)->signo = *s->o.cancel;
		return -1;
	}
	if (s->o.deadline_ms && now_ms() >= s->o.deadline_ms)
		return err_set(err, ERR_TIMEOUT, "stream: deadline reached");
	return 0;
}

/* The WebSocket context: TLS as kube_http sets it (kube_config_ca: the configuration's CA
 * or the system bundle, none when insecure), and the client certificate and key. */
static int create_context(struct kube_stream *s, struct err **err)
{
	const struct kube_config *cfg = s->cfg;
	struct lws_context_creation_info info;
	memset(&info, 0, sizeof(info));
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.protocols = protocols;
	info.options = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
	info.fd_limit_per_thread = 64;
	info.user = s;
	info.gid = (gid_t)-1;
	info.uid = (uid_t)-1;
	const char *ca_pem, *ca_file;
	size_t ca_len;
	kube_config_ca(cfg, &ca_pem, &ca_len, &ca_file);
	if (ca_pem) {
		info.client_ssl_ca_mem = ca_pem;
		info.client_ssl_ca_mem_len = (unsigned)ca_len + 1; /* PEM parsers want the NUL */
	} else if (ca_file) {
		info.client_ssl_ca_filepath = ca_file;
	} else if (cfg->cert_pem) {
		/* libwebsockets 4.3 with mbedTLS loads the client certificate only when a CA is
		 * given too (lws_tls_client_create_vhost_context returns before it otherwise).
		 * Without a CA (insecure-skip-tls-verify) the client certificate stands in for
		 * one: nothing is verified against it, and the server gets the certificate. */
		info.client_ssl_ca_mem = cfg->cert_pem;
		info.client_ssl_ca_mem_len = (unsigned)cfg->cert_len + 1;
	}
	if (cfg->cert_pem) {
		info.client_ssl_cert_mem = cfg->cert_pem;
		info.client_ssl_cert_mem_len = (unsigned)cfg->cert_len + 1;
		s->key_copy_len = cfg->key_len + 2;
		s->key_copy = xmalloc(s->key_copy_len);
		memcpy(s->key_copy, cfg->key_pem, cfg->key_len);
		s->key_copy[cfg->key_len] = s->key_copy[cfg->key_len + 1] = '\0';
		info.client_ssl_key_mem = s->key_copy;
		info.client_ssl_key_mem_len = (unsigned)s->key_copy_len;
	}
	s->ctx = lws_create_context(&info);
	if (s->ctx == NULL)
		return err_set(err, ERR_NET,
		               "stream: cannot create the WebSocket context (TLS setup)");
	lws_sul_schedule(s->ctx, 0, &s->tick, on_tick, TICK_US);
	return 0;
}

/* Starts the connection to the server of the configuration, at its path prefix + path. */
static int connect_server(struct kube_stream *s, struct err **err)
{
	const struct kube_config *cfg = s->cfg;
	s->full_path = xasprintf("%s%s", cfg->srv.prefix ? cfg->srv.prefix : "", s->o.path);
	struct lws_client_connect_info ci;
	memset(&ci, 0, sizeof(ci));
	ci.context = s->ctx;
	ci.address = cfg->srv.host;
	ci.port = cfg->srv.port;
	ci.path = s->full_path;
	ci.host = cfg->tls_server_name ? cfg->tls_server_name : cfg->srv.host;
	ci.origin = ci.host;
	ci.protocol = PROTOCOL;
	ci.ssl_connection = strcmp(cfg->srv.scheme, "http") == 0 ? 0 : LCCSCF_USE_SSL;
	if (cfg->insecure)
		ci.ssl_connection |= LCCSCF_ALLOW_SELFSIGNED |
		                     LCCSCF_SKIP_SERVER_CERT_HOSTNAME_CHECK | LCCSCF_ALLOW_EXPIRED |
		                     LCCSCF_ALLOW_INSECURE;
	ci.pwsi = &s->wsi;
	if (lws_client_connect_via_info(&ci) == NULL && !s->failed)
		return err_set(err, ERR_NET, "stream: cannot connect to %s", cfg->server);
	return 0;
}

/* Why the upgrade did not complete. */
static int upgrade_failed(struct kube_stream *s, struct err **err)
{
	const char *path = s->o.path;
	if (s->http_status == 403)
		refused(s->cfg, &s->o, err);
	else if (s->http_status >= 400)
		err_set(err, ERR_API, "GET %s: %d %s: the server refused the stream upgrade (%s)",
		        path, s->http_status,
		        *kube_status_reason(s->http_status) ? kube_status_reason(s->http_status)
		                                            : "Error",
		        s->fail_reason);
	else
		err_set(err, ERR_NET, "GET %s: %s", path,
		        s->fail_reason[0] ? s->fail_reason : "the connection closed");
	if (s->http_status && err && *err)
		(*err)->http_status = s->http_status;
	return -1;
}

static int open_stream(struct kube_stream *s, struct err **err)
{
	if (kube_config_token(s->cfg, false, &s->token, err) < 0)
		return -1;
	lws_set_log_level(log_get_level() >= LOG_DEBUG ? LLL_ERR | LLL_WARN | LLL_NOTICE : 0,
	                  emit_log);
	if (create_context(s, err) < 0 || connect_server(s, err) < 0)
		return -1;
	while (!s->established && !s->failed && !s->closed) {
		if (check_stop(s, err) < 0)
			return -1;
		lws_service(s->ctx, 0);
	}
	if (!s->established)
		return upgrade_failed(s, err);
	if (s->o.in_fd >= 0) {
		if (signals_thread_start(&s->reader, reader_main, s) != 0)
			return err_set(err, ERR_INTERNAL, "stream: cannot start the stdin thread");
		s->reader_started = true;
	}
	return 0;
}

int kube_stream_open(struct kube_config *cfg, const struct kube_stream_opts *opts,
                     struct kube_stream **out, struct err **err)
{
	struct kube_stream *s = xcalloc(1, sizeof(*s));
	s->cfg = cfg;
	s->o = *opts;
	s->res.exit_code = -1;
	ws_demux_init(&s->demux);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->slot = xmalloc(LWS_PRE + 1 + LIMIT_STDIN_CHUNK);
	if (open_stream(s, err) < 0) {
		kube_stream_free(s);
		return -1;
	}
	*out = s;
	return 0;
}

/* The stream ended without a Status: it ended well only with a normal Close (1000, or no
 * code), after all of stdin was sent. */
static int check_end_without_status(const struct kube_stream *s, struct err **err)
{
	/* a dropped connection or a Close that reports an error (1011...) cut it short */
	bool clean_close = s->peer_closed && (s->close_code == 1000 || s->close_code == 1005);
	if (!clean_close) {
		char how[64] = "";
		if (s->peer_closed)
			snprintf(how, sizeof(how), " (the server closed it with code %d)",
			         s->close_code);
		return err_set(err, ERR_NET,
		               "stream: the connection was lost after %llu bytes of stdin, %llu of "
		               "stdout and %llu of stderr%s",
		               (unsigned long long)s->res.bytes_in,
		               (unsigned long long)s->res.bytes_out,
		               (unsigned long long)s->res.bytes_err, how);
	}
	/* A normal Close while stdin was still being sent: the function may have read only
	 * part of its input, and nothing says how it ended. Never a success. */
	if (s->o.in_fd >= 0 && !s->close_sent)
		return err_set(err, ERR_NET,
		               "stream: the server closed the connection (code %d) with no exit "
		               "status before all of stdin was sent (%llu bytes were): the "
		               "function may have read only part of its input, so its output is "
		               "incomplete",
		               s->close_code, (unsigned long long)s->res.bytes_in);
	return 0;
}

int kube_stream_run(struct kube_stream *s, struct kube_stream_result *res, struct err **err)
{
	int rc = 0;
	while (!s->closed && !s->failed) {
		if (s->io_err)
			break;
		if (check_stop(s, err) < 0) {
			rc = -1;
			break;
		}
		lws_service(s->ctx, 0);
	}
	if (rc == 0 && s->io_err) {
		*err = s->io_err;
		s->io_err = NULL;
		rc = -1;
	}
	if (rc == 0 && s->send_err && !s->demux.st.got) {
		*err = s->send_err;
		s->send_err = NULL;
		rc = -1;
	} else if (s->send_err) {
		log_debug("stream: %s, after the server's Status: it decides", s->send_err->msg);
	}
	/* Without a Status the stream ended well only with a normal Close (1000, or no code):
	 * a dropped connection or a Close that reports an error (1011...) cut it short. */
	if (rc == 0 && !s->demux.st.got)
		rc = check_end_without_status(s, err);
	if (s->demux.st.got) {
		s->res.got_status = true;
		s->res.status_success = s->demux.st.success;
		snprintf(s->res.status_reason, sizeof(s->res.status_reason), "%s",
		         s->demux.st.reason);
		snprintf(s->res.status_message, sizeof(s->res.status_message), "%s",
		         s->demux.st.message);
		s->res.status_no_container = s->demux.st.no_container;
		s->res.exit_code = s->demux.st.exit_code;
	}
	*res = s->res;
	s->res.prefix = NULL; /* moved to *res */
	return rc;
}

void kube_stream_free(struct kube_stream *s)
{
	if (s == NULL)
		return;
	if (s->reader_started) {
		pthread_mutex_lock(&s->lock);
		s->stop_reader = true;
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->reader, NULL);
	}
	if (s->ctx) {
		lws_sul_cancel(&s->tick);
		lws_context_destroy(s->ctx);
	}
	ws_demux_free(&s->demux);
	err_free(s->io_err);
	err_free(s->send_err);
	free(s->res.prefix);
	if (s->token) {
		explicit_bzero(s->token, strlen(s->token));
		free(s->token);
	}
	if (s->key_copy) {
		explicit_bzero(s->key_copy, s->key_copy_len);
		free(s->key_copy);
	}
	free(s->full_path);
	free(s->slot);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}

void kube_stream_result_clear(struct kube_stream_result *res)
{
	free(res->prefix);
	res->prefix = NULL;
	res->prefix_len = 0;
}

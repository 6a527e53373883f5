/* kube_stream.h — pods/attach and pods/exec over WebSocket (subprotocol v5.channel.k8s.io)
 * with libwebsockets. Framing details: docs/internals/attach-framing.md and ws_frame.h.
 *
 * The connection offers only v5.channel.k8s.io. If the server picks anything else (or
 * none), opening fails with ERR_NET explaining that Kubernetes 1.30+ is required (v4 cannot
 * half-close stdin). A refused upgrade (HTTP 4xx/5xx) fails with ERR_API carrying the
 * status. A 403 has two possible causes that look the same (an API server older than 1.30
 * refuses v5.channel.k8s.io with 403 and an empty body; RBAC refuses with 403 too): only
 * then, the server's version is read (GET /version) and the message names both causes,
 * the likely one first (kube_stream_refusal_text).
 *
 * Streaming is bounded in memory: stdin is read from in_fd in chunks of at most
 * LIMIT_STDIN_CHUNK and only when the socket can take more; stdout/stderr payloads are
 * written to out_fd/err_fd as they arrive (blocking writes give natural back-pressure);
 * nothing holds a whole ResourceList. stdin EOF is sent as the 2-byte message FF 00 (never a
 * WebSocket close frame). Outgoing messages are never fragmented.
 */
#ifndef KRMPOD_KUBE_STREAM_H
#define KRMPOD_KUBE_STREAM_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "config/kubeconfig.h"
#include "kube/kube_version.h"

struct kube_stream_opts {
	/* Request path with query, from kube_api.h (the server's path prefix goes before it). */
	const char *path;
	int in_fd; /* stdin source, or -1 for no stdin */
	/* Sent as stdin before in_fd's bytes (with in_fd >= 0); borrowed, may be NULL. */
	const char *in_prefix;
	size_t in_prefix_len;
	int out_fd; /* where channel 1 goes, or -1 to drop */
	int err_fd; /* where channel 2 goes, or -1 to drop */
	/* When set, channel 2 goes here instead of err_fd (exec mode strips the call's
	 * trailer); a failure stops the stream with that error. */
	int (*err_sink)(void *ud, const char *data, size_t len, struct err **err);
	void *err_sink_ud;
	/* Keep a copy of the first `capture_prefix` bytes of output (stdout and stderr merged in
	 * arrival order) in the result, for de-duplicating against the pod log. 0 = none. */
	size_t capture_prefix;
	/* The most channel-1 bytes taken (0: no limit); past it the stream stops with ERR_IO
	 * naming out_limit_name, the setting. */
	uint64_t out_limit;
	const char *out_limit_name;
	atomic_int *cancel;  /* stop with ERR_SIGNAL when *cancel != 0; may be NULL */
	int64_t deadline_ms; /* monotonic; 0 = none; ERR_TIMEOUT when passed */
};

struct kube_stream_result {
	uint64_t bytes_in, bytes_out, bytes_err; /* payload bytes on channels 0, 1, 2 */
	unsigned char out_last;                  /* the last stdout byte (bytes_out > 0) */
	bool got_status;                         /* a channel-3 Status arrived */
	bool status_success;                     /* its status was "Success" */
	char status_reason[64];
	char status_message[1024];
	bool status_no_container; /* the Status says no such container runs (ws_frame.h) */
	int exit_code; /* exec only: from a NonZeroExitCode Status (0 on Success; -1 unknown) */
	char *prefix;  /* captured output prefix (owned; free with kube_stream_result_clear) */
	size_t prefix_len;
};

struct kube_stream;

/* Connects and completes the WebSocket handshake (blocking until established, refused,
 * cancelled or past the deadline). cfg is borrowed and must outlive the stream. Output that
 * arrives while opening is already written to the fds and counted. It connects to the
 * server of cfg at its path prefix, with the same TLS settings as kube_http. */
int kube_stream_open(struct kube_config *cfg, const struct kube_stream_opts *opts,
                     struct kube_stream **out, struct err **err);

/* Pumps stdin/stdout/stderr until the server closes the stream (after the channel-3 Status
 * or a normal close). Without a Status, an abrupt disconnect or a Close with an error code
 * (anything but 1000 or none) is ERR_NET ("the connection was lost after N bytes"). Fills
 * *res in every case (partial counts on errors). */
int kube_stream_run(struct kube_stream *s, struct kube_stream_result *res, struct err **err);

/* Closes the connection and frees everything. NULL is fine. */
void kube_stream_free(struct kube_stream *s);

void kube_stream_result_clear(struct kube_stream_result *res);

/* The explanation of a stream upgrade refused with 403 for `path` (an attach or exec path as
 * built above, which names the namespace and the subresource): the server's version v is
 * too old (first, when it is), or RBAC (`pods/attach` create and get in the namespace). v
 * is NULL when the version could not be read, `why` then says why (may be NULL). Returns a
 * new string, without the "GET path: 403 Forbidden: " prefix. */
char *kube_stream_refusal_text(const char *path, const struct kube_version *v, const char *why);

#endif

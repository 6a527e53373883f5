/* err.h — the one error pattern of krmpod.
 *
 * A function that can fail takes `struct err **err` as its last argument. On failure it
 * returns -1 (or NULL) and fills *err through err_set(); each caller that passes the
 * failure up adds its own context with err_wrap(), so the final message reads from the
 * outside in: "run function example.com/fn: create pod: POST /api/v1/...: 403 Forbidden: ...".
 * Only the front-end (main.c) prints an error and maps err->code to an exit code.
 *
 * Ownership: *err is heap-allocated by err_set(); the caller that handles the error frees it
 * with err_free() (or declares it `cleanup_err`). Passing err == NULL is allowed: the error
 * is then dropped (use only where a failure is explicitly ignorable, e.g. best-effort logs).
 */
#ifndef KRMPOD_ERR_H
#define KRMPOD_ERR_H

#include <stddef.h>

/* Error classes. main.c maps them to documented exit codes (see docs/exit-codes.md). */
enum err_code {
	ERR_OK = 0,
	ERR_USAGE,  /* bad flag or argument: docker's 125 in the shim, 2 otherwise */
	ERR_CONFIG, /* bad environment variable, kubeconfig, credentials */
	ERR_IO,     /* local I/O: files, pipes, stdin/stdout */
	ERR_NET,    /* connection, TLS, protocol errors talking to the API server */
	ERR_API,    /* the API server answered with an error Status */
	ERR_POD,    /* the function pod failed to start or was killed (image pull, OOM, deadline) */
	ERR_TIMEOUT,  /* a krmpod timeout expired (start timeout, overall timeout) */
	ERR_SIGNAL,   /* interrupted by a signal; err->signo says which */
	ERR_INTERNAL, /* a bug */
};

#define ERR_MSG_MAX 4096

/* A finer cause than the code, decoded where the peer's answer is read (the one place that
 * reads its words), for callers to branch on instead of the message text. */
enum err_cause {
	ERR_CAUSE_NONE = 0,
	ERR_CAUSE_QUOTA, /* ERR_API: a ResourceQuota refused a create (kube_http.c) */
};

struct err {
	enum err_code code;
	int http_status; /* for ERR_API: the HTTP status (0 otherwise) */
	char reason
	        [64]; /* for ERR_API: the Status reason (NotFound, Forbidden...); for ERR_POD: the
	                    cluster's reason (ErrImagePull, OOMKilled...) */
	enum err_cause cause;
	int signo;     /* for ERR_SIGNAL */
	int sys_errno; /* for a failed system call (err_set_sys): its errno (0 otherwise) */
	char msg[ERR_MSG_MAX];
};

/* Sets *err (allocating it if needed; an existing error is replaced) to code + formatted
 * message. Always returns -1 so callers can `return err_set(err, ...)`. */
int err_set(struct err **err, enum err_code code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* err_set() for a failed system call: the message is the formatted text, ": " and
 * strerror(errnum); err->sys_errno is errnum, for callers that branch on it (never on the
 * text). Always returns -1. */
int err_set_sys(struct err **err, enum err_code code, int errnum, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* Prefixes the existing message with formatted context and ": ". Keeps code and fields.
 * If *err is NULL (a callee forgot to set it), records an ERR_INTERNAL error naming the
 * context. Always returns -1. */
int err_wrap(struct err **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Frees an error; NULL is fine. */
void err_free(struct err *e);

/* Returns the code of *err or ERR_OK when err or *err is NULL. */
enum err_code err_code_of(struct err *const *err);

#endif

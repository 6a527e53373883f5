/* signals.h — turning SIGTERM, SIGINT and SIGHUP into a cancellation flag, and threads that
 * take no signal.
 *
 * The handler only stores the signal number in signals_cancel (the first one wins); the core
 * polls that flag (at most every 50 ms in its waits and streams), deletes its pod and fails
 * with ERR_SIGNAL; main exits with 128 + signo. SIGPIPE is ignored so a closed stdout is an
 * EPIPE error, not a silent death.
 *
 * Every flag one thread sets and another reads (this one, the cancel and stop flags handed to
 * the clients, streams and watches) is a C11 atomic_int: lock-free, so a signal handler may
 * store into it, and a store on one thread is seen by the loads of every other. */
#ifndef KRMPOD_SIGNALS_H
#define KRMPOD_SIGNALS_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

extern atomic_int signals_cancel;

/* pthread_create for every thread krmpod starts: the thread is created with every signal
 * blocked, so it takes none from its first instruction (SIGTERM and friends land on the
 * thread that installed the handlers, docs/architecture.md "Threads"). Returns
 * pthread_create's result. */
int signals_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);

/* Installs the handlers (without SA_RESTART, so blocking calls return EINTR). */
int signals_install(void);

#endif

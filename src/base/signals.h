/* signals.h — turning SIGTERM, SIGINT and SIGHUP into a cancellation flag.
 *
 * The handler only stores the signal number in signals_cancel (the first one wins); the core
 * polls that flag (at most every 50 ms in its waits and streams), deletes its pod and fails
 * with ERR_SIGNAL; main exits with 128 + signo. SIGPIPE is ignored so a closed stdout is an
 * EPIPE error, not a silent death. */
#ifndef KRMPOD_SIGNALS_H
#define KRMPOD_SIGNALS_H

#include <signal.h>

extern volatile sig_atomic_t signals_cancel;

/* Installs the handlers (without SA_RESTART, so blocking calls return EINTR). */
int signals_install(void);

#endif

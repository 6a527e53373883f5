/* signals.c — see signals.h. */
#include "base/signals.h"

#include <stdatomic.h>
#include <string.h>

atomic_int signals_cancel;

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the handler stores into a lock-free atomic_int");

static void on_signal(int signo)
{
	int none = 0; /* the first signal wins */
	atomic_compare_exchange_strong(&signals_cancel, &none, signo);
}

int signals_thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

int signals_install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigaction(sigs[i], &sa, NULL) < 0)
			return -1;
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

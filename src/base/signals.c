/* signals.c — see signals.h. */
#include "base/signals.h"

#include <string.h>

volatile sig_atomic_t signals_cancel;

static void on_signal(int signo)
{
	if (signals_cancel == 0)
		signals_cancel = signo;
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

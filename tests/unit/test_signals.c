/* Unit tests: signals.h — the first signal wins the cancellation flag, and a thread started
 * by signals_thread_start() takes no signal (its mask blocks every one from its start),
 * while the starting thread's own mask is left as it was. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "base/signals.h"
#include "check.h"

static void *read_mask(void *arg)
{
	sigset_t *cur = arg;
	pthread_sigmask(SIG_BLOCK, NULL, cur);
	return NULL;
}

TEST(a_started_thread_blocks_every_signal)
{
	sigset_t before, in_thread, after;
	pthread_sigmask(SIG_BLOCK, NULL, &before);
	CHECK(!sigismember(&before, SIGTERM));
	memset(&in_thread, 0, sizeof(in_thread));
	pthread_t t;
	CHECK_INT(signals_thread_start(&t, read_mask, &in_thread), 0);
	pthread_join(t, NULL);
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD, SIGUSR1, SIGALRM};
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		CHECK(sigismember(&in_thread, sigs[i]) == 1);
	pthread_sigmask(SIG_BLOCK, NULL, &after);
	CHECK(!sigismember(&after, SIGTERM) && !sigismember(&after, SIGINT));
}

TEST(the_first_signal_wins)
{
	CHECK_INT(signals_install(), 0);
	atomic_store(&signals_cancel, 0);
	raise(SIGTERM);
	CHECK_INT(atomic_load(&signals_cancel), SIGTERM);
	raise(SIGINT);
	CHECK_INT(atomic_load(&signals_cancel), SIGTERM);
	atomic_store(&signals_cancel, 0);
	raise(SIGHUP);
	CHECK_INT(atomic_load(&signals_cancel), SIGHUP);
}

int main(void)
{
	RUN(a_started_thread_blocks_every_signal);
	RUN(the_first_signal_wins);
	return check_summary();
}

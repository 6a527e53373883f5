/* test_fn_offer.c — the two file protocols between generate and its shims:
 * handoff/offers.h (offers, pending markers naming the janitor) and handoff/markers.h
 * (the marker a shim keeps while it runs). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include "check.h"
#include "handoff/markers.h"
#include "handoff/offers.h"

static char *make_dir(void)
{
	char *dir = xstrdup("/tmp/krmpod-unit-offer-XXXXXX");
	if (mkdtemp(dir) == NULL)
		abort();
	cleanup_free char *claimed = prestart_offer_claimed_dir(dir);
	mkdir(claimed, 0700);
	return dir;
}

static void remove_dir(char *dir)
{
	cleanup_free char *claimed = prestart_offer_claimed_dir(dir);
	shim_markers_remove_dir(claimed);
	shim_markers_remove_dir(dir);
	free(dir);
}

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
}

/* A pid that is certainly not running: a child that has exited and been reaped. */
static pid_t dead_pid(void)
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	return pid;
}

TEST(an_offer_is_claimed_once)
{
	char *dir = make_dir();
	cleanup_free char *offer = prestart_offer_path(dir, 0x1234, "krmpod-cat-abcde");
	touch(offer);
	cleanup_free char *pod = prestart_offer_claim(dir, 0x1234, now_ms() + 1000, NULL);
	CHECK_STR(pod, "krmpod-cat-abcde");
	CHECK(access(offer, F_OK) < 0);
	cleanup_free char *again = prestart_offer_claim(dir, 0x1234, now_ms() + 1000, NULL);
	CHECK(again == NULL);
	cleanup_free char *other = prestart_offer_claim(dir, 0x9999, now_ms() + 1000, NULL);
	CHECK(other == NULL);
	remove_dir(dir);
}

TEST(a_pending_offer_of_a_live_janitor_is_waited_for_until_the_deadline)
{
	char *dir = make_dir();
	cleanup_free char *pending = prestart_offer_pending_path(dir, 0x1234, 0);
	prestart_offer_mark_pending(pending); /* our own pid: alive */
	int64_t t0 = now_ms();
	cleanup_free char *pod = prestart_offer_claim(dir, 0x1234, t0 + 400, NULL);
	CHECK(pod == NULL);
	CHECK(now_ms() - t0 >= 400);
	remove_dir(dir);
}

TEST(a_pending_offer_of_a_dead_janitor_is_not_waited_for)
{
	char *dir = make_dir();
	cleanup_free char *pending = prestart_offer_pending_path(dir, 0x1234, 0);
	cleanup_free char *text = xasprintf("%d\n", (int)dead_pid());
	int fd = open(pending, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
	int64_t t0 = now_ms();
	cleanup_free char *pod = prestart_offer_claim(dir, 0x1234, t0 + 5000, NULL);
	CHECK(pod == NULL);
	CHECK(now_ms() - t0 < 1000);
	remove_dir(dir);
}

TEST(the_pending_marker_names_the_janitor)
{
	char *dir = make_dir();
	cleanup_free char *pending = prestart_offer_pending_path(dir, 0x1234, 2);
	prestart_offer_mark_pending(pending);
	char buf[32] = "";
	int fd = open(pending, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0 && read(fd, buf, sizeof(buf) - 1) > 0);
	close(fd);
	CHECK_INT(strtol(buf, NULL, 10), getpid());
	remove_dir(dir);
}

TEST(shim_markers_name_dead_shims_only)
{
	char *dir = make_dir();
	/* ours (alive): written, rewritten with the pod, not collected */
	shim_marker_write(dir, "example.com/fns/cat:v1", NULL, NULL);
	shim_marker_write(dir, "example.com/fns/cat:v1", "default", "krmpod-cat-abcde");
	/* a dead shim's, with its pod; one that died before its pod had a name */
	pid_t dead = dead_pid();
	cleanup_free char *p1 = xasprintf("%s/%d", dir, (int)dead);
	cleanup_free char *t1 = xstrdup("example.com/fns/add-label:v1\ndefault\nkrmpod-add-xyz\n");
	int fd = open(p1, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	CHECK(fd >= 0 && write(fd, t1, strlen(t1)) == (ssize_t)strlen(t1));
	close(fd);
	struct shim_marker *m = NULL;
	size_t n = 0;
	shim_markers_collect(dir, &m, &n);
	CHECK_INT(n, 1);
	if (n == 1) {
		CHECK_INT(m[0].pid, dead);
		CHECK_STR(m[0].image, "example.com/fns/add-label:v1");
		CHECK_STR(m[0].ns, "default");
		CHECK_STR(m[0].pod, "krmpod-add-xyz");
	}
	shim_markers_free(m, n);
	CHECK(access(p1, F_OK) < 0); /* collected: gone */
	/* the image alone */
	fd = open(p1, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0 && write(fd, "example.com/x:v1\n\n\n", 19) == 19);
	close(fd);
	shim_markers_collect(dir, &m, &n);
	CHECK_INT(n, 1);
	if (n == 1) {
		CHECK_STR(m[0].image, "example.com/x:v1");
		CHECK(m[0].ns == NULL && m[0].pod == NULL);
	}
	shim_markers_free(m, n);
	/* ours goes when the run ends */
	shim_marker_remove(dir);
	cleanup_free char *mine = xasprintf("%s/%d", dir, (int)getpid());
	CHECK(access(mine, F_OK) < 0);
	remove_dir(dir);
}

/* The offer note's codec: what the janitor writes the shim reads back, field by field; a
 * shim's give-back marks it used for the janitor; a text it did not write is refused. */
TEST(the_offer_note_round_trips_and_refuses_what_it_did_not_write)
{
	char *dir = make_dir();
	struct prestart_offer_note notes[] = {
	        {.kind = OFFER_PLAIN},
	        {.kind = OFFER_POOL,
	         .holder = "argocd-repo-server-7f9c/1234/0badf00d",
	         .warm = true},
	        {.kind = OFFER_POOL, .holder = "h", .opener = 4242},
	        {.kind = OFFER_RENDER, .opener = 77},
	};
	for (size_t i = 0; i < sizeof(notes) / sizeof(notes[0]); i++) {
		char pod[32];
		snprintf(pod, sizeof(pod), "krmpod-fn-%zu", i);
		cleanup_free char *offer = prestart_offer_path(dir, 0x42, pod);
		prestart_offer_write(offer, &notes[i]);
		CHECK(!prestart_offer_was_used(offer));
		cleanup_free char *got = prestart_offer_claim(dir, 0x42, now_ms() + 1000, NULL);
		CHECK_STR(got, pod);
		struct prestart_offer_note n;
		CHECK_INT(prestart_offer_note(dir, 0x42, pod, &n), 0);
		CHECK(n.kind == notes[i].kind && n.warm == notes[i].warm &&
		      n.opener == notes[i].opener && !n.used);
		CHECK_STR(n.holder, notes[i].holder);
		CHECK_INT(prestart_offer_give_back(dir, 0x42, pod), 0);
		CHECK(prestart_offer_was_used(offer));
		free(prestart_offer_claim(dir, 0x42, now_ms() + 1000, NULL));
		CHECK_INT(prestart_offer_note(dir, 0x42, pod, &n), 0);
		CHECK(n.used && n.kind == notes[i].kind);
	}
	struct prestart_offer_note n;
	CHECK_INT(prestart_offer_note_parse("", &n), 0); /* an empty offer is plain */
	CHECK(n.kind == OFFER_PLAIN && !n.used);
	static const char *const bad[] = {
	        "pool h warm\n",                         /* the old free-form note */
	        "krmpod-offer pool holder=a b\n",        /* an unknown word */
	        "krmpod-offer pool holder=a\tb\n",       /* not a holder name */
	        "krmpod-offer render opener=12x\n",      /* not a pid */
	        "krmpod-offer render opener=0\n",        /* no pid */
	        "krmpod-offer shared\n",                 /* no such kind */
	        "krmpod-offer plain\nused\nsomething\n", /* a line it did not write */
	        "krmpod-offer plain",                    /* cut */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(prestart_offer_note_parse(bad[i], &n) == -1);
	remove_dir(dir);
}

int main(void)
{
	RUN(the_offer_note_round_trips_and_refuses_what_it_did_not_write);
	RUN(an_offer_is_claimed_once);
	RUN(a_pending_offer_of_a_live_janitor_is_waited_for_until_the_deadline);
	RUN(a_pending_offer_of_a_dead_janitor_is_not_waited_for);
	RUN(the_pending_marker_names_the_janitor);
	RUN(shim_markers_name_dead_shims_only);
	return check_summary();
}

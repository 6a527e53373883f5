/* prestart_offer.c — see prestart_offer.h. */
#include "fn/prestart_offer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/fdio.h"
#include "base/proc.h"
#include "base/xalloc.h"

#define KEY_HEX 16

char *prestart_offer_path(const char *dir, uint64_t key, const char *pod)
{
	return xasprintf("%s/%016llx.%s", dir, (unsigned long long)key, pod);
}

char *prestart_offer_pending_path(const char *dir, uint64_t key, size_t n)
{
	return xasprintf("%s/pending.%016llx.%zu", dir, (unsigned long long)key, n);
}

char *prestart_offer_claimed_dir(const char *dir)
{
	return xasprintf("%s/claimed", dir);
}

char *prestart_offer_session_path(const char *dir, uint64_t key, const char *pod)
{
	return xasprintf("%s/sessions/%016llx.%s", dir, (unsigned long long)key, pod);
}

void prestart_offer_write(const char *path, const char *note)
{
	/* not named like an offer or a marker while it is written: ".new." first */
	cleanup_free char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	if (slash == NULL)
		return;
	*slash = '\0';
	cleanup_free char *tmp = xasprintf("%s/.new.%s", dir, slash + 1);
	cleanup_close int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || fd_write_all(fd, note, strlen(note), tmp, NULL) < 0 || rename(tmp, path) < 0)
		unlink(tmp);
}

void prestart_offer_mark_pending(const char *path)
{
	char text[32];
	snprintf(text, sizeof(text), "%d\n", (int)getpid());
	prestart_offer_write(path, text);
}

char *prestart_offer_note(const char *dir, uint64_t key, const char *pod)
{
	cleanup_free char *path =
	        xasprintf("%s/claimed/%016llx.%s", dir, (unsigned long long)key, pod);
	char *text = NULL;
	size_t len = 0;
	if (buf_read_file(path, 4096, "offer", ERR_IO, &text, &len, NULL) < 0)
		return NULL;
	return text;
}

int prestart_offer_give_back(const char *dir, uint64_t key, const char *pod)
{
	cleanup_free char *from =
	        xasprintf("%s/claimed/%016llx.%s", dir, (unsigned long long)key, pod);
	cleanup_free char *to = prestart_offer_path(dir, key, pod);
	cleanup_close int fd = open(from, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd >= 0) /* for the janitor: the offer served a call (best effort) */
		fd_write_all(fd, PRESTART_OFFER_USED "\n", strlen(PRESTART_OFFER_USED "\n"), from,
		             NULL);
	return rename(from, to);
}

bool prestart_offer_was_used(const char *path)
{
	cleanup_free char *text = NULL;
	size_t len = 0;
	if (buf_read_file(path, 4096, "offer", ERR_IO, &text, &len, NULL) < 0)
		return false;
	return strstr(text, "\n" PRESTART_OFFER_USED "\n") != NULL;
}

/* Whether the janitor that wrote pending marker `path` still lives (and so will end the
 * marker: an offer, or nothing when the create failed). An unreadable marker counts as
 * live: it may be gone this very moment. */
static bool maker_alive(const char *path)
{
	char text[32] = "";
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	ssize_t n = read(fd, text, sizeof(text) - 1);
	if (n <= 0)
		return true;
	text[n] = '\0';
	char *end = NULL;
	long pid = strtol(text, &end, 10);
	if (pid <= 0 || end == text)
		return true;
	return proc_running((pid_t)pid);
}

/* Takes an offer for key, or returns NULL; *pending says whether an offer for key is still
 * being made by a live janitor. */
static char *claim_once(const char *dir, uint64_t key, bool *pending)
{
	char prefix[KEY_HEX + 2], marker[KEY_HEX + 10];
	snprintf(prefix, sizeof(prefix), "%016llx.", (unsigned long long)key);
	snprintf(marker, sizeof(marker), "pending.%016llx.", (unsigned long long)key);
	*pending = false;
	DIR *d = opendir(dir);
	if (d == NULL)
		return NULL;
	char *pod = NULL;
	struct dirent *e;
	while (pod == NULL && (e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, marker, strlen(marker)) == 0 && !*pending) {
			cleanup_free char *m = xasprintf("%s/%s", dir, e->d_name);
			*pending = maker_alive(m);
		}
		if (strncmp(e->d_name, prefix, KEY_HEX + 1) != 0)
			continue;
		cleanup_free char *from = xasprintf("%s/%s", dir, e->d_name);
		cleanup_free char *to = xasprintf("%s/claimed/%s", dir, e->d_name);
		if (rename(from, to) == 0)
			pod = xstrdup(e->d_name + KEY_HEX + 1);
		/* ENOENT: another shim was faster; look on */
	}
	closedir(d);
	return pod;
}

char *prestart_offer_claim(const char *dir, uint64_t key, int64_t until, atomic_int *cancel)
{
	/* An offer for this key still being created is worth the wait: it was started earlier
	 * than any pod this shim could create now. */
	for (;;) {
		bool pending;
		char *pod = claim_once(dir, key, &pending);
		if (pod || !pending || now_ms() >= until || (cancel && *cancel))
			return pod;
		usleep(10 * 1000);
	}
}

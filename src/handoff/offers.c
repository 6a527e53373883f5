/* offers.c — see offers.h. */
#include "handoff/offers.h"

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

/* The note's line: "krmpod-offer KIND[ holder=H][ warm][ opener=PID]", then "used" on a line
 * of its own once a shim gave the offer back. */
#define NOTE_HEAD "krmpod-offer "
#define NOTE_USED "used"

static const char *const KIND_NAMES[] = {
        [OFFER_PLAIN] = "plain", [OFFER_POOL] = "pool", [OFFER_RENDER] = "render"};

void prestart_offer_note_format(const struct prestart_offer_note *n, struct buf *out)
{
	buf_printf(out, NOTE_HEAD "%s", KIND_NAMES[n->kind]);
	if (n->holder[0])
		buf_printf(out, " holder=%s", n->holder);
	if (n->warm)
		buf_puts(out, " warm");
	if (n->opener > 0)
		buf_printf(out, " opener=%ld", (long)n->opener);
	buf_putc(out, '\n');
	if (n->used)
		buf_puts(out, NOTE_USED "\n");
}

/* A holder (fn_pool_holder: "HOST/PID/RANDOM") is printable ASCII without spaces. */
static bool holder_char(char c)
{
	return c > ' ' && c <= '~';
}

/* One "name" or "name=value" word of the note's line into n; -1 for one it does not know. */
static int note_word(const char *w, size_t len, struct prestart_offer_note *n)
{
	if (len == 4 && memcmp(w, "warm", 4) == 0) {
		n->warm = true;
		return 0;
	}
	if (len > 7 && memcmp(w, "holder=", 7) == 0 && len - 7 < sizeof(n->holder)) {
		for (size_t i = 7; i < len; i++)
			if (!holder_char(w[i]))
				return -1;
		memcpy(n->holder, w + 7, len - 7);
		n->holder[len - 7] = '\0';
		return 0;
	}
	if (len > 7 && len < 7 + 12 && memcmp(w, "opener=", 7) == 0) {
		long pid = 0;
		for (size_t i = 7; i < len; i++) {
			if (w[i] < '0' || w[i] > '9')
				return -1;
			pid = pid * 10 + (w[i] - '0');
		}
		if (pid <= 0 || pid > 0x3fffffff)
			return -1;
		n->opener = (pid_t)pid;
		return 0;
	}
	return -1;
}

int prestart_offer_note_parse(const char *text, struct prestart_offer_note *out)
{
	memset(out, 0, sizeof(*out));
	if (*text == '\0')
		return 0; /* an empty offer: plain */
	if (strncmp(text, NOTE_HEAD, strlen(NOTE_HEAD)) != 0)
		return -1;
	const char *p = text + strlen(NOTE_HEAD), *eol = strchr(p, '\n');
	if (eol == NULL)
		return -1;
	size_t klen = strcspn(p, " \n");
	bool known = false;
	for (size_t k = 0; k < sizeof(KIND_NAMES) / sizeof(KIND_NAMES[0]); k++)
		if (strlen(KIND_NAMES[k]) == klen && memcmp(p, KIND_NAMES[k], klen) == 0) {
			out->kind = (enum prestart_offer_kind)k;
			known = true;
		}
	if (!known)
		return -1;
	for (p += klen; p < eol;) {
		if (*p++ != ' ')
			return -1;
		size_t len = strcspn(p, " \n");
		if (note_word(p, len, out) < 0)
			return -1;
		p += len;
	}
	for (p = eol + 1; *p; p += strcspn(p, "\n") + 1) {
		if (strncmp(p, NOTE_USED "\n", strlen(NOTE_USED) + 1) != 0)
			return -1;
		out->used = true;
	}
	return 0;
}

/* Writes text to path atomically: under a name that is neither an offer nor a marker while
 * it is written, then renamed. Best effort. */
static void write_atomic(const char *path, const char *text)
{
	/* not named like an offer or a marker while it is written: ".new." first */
	cleanup_free char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	if (slash == NULL)
		return;
	*slash = '\0';
	cleanup_free char *tmp = xasprintf("%s/.new.%s", dir, slash + 1);
	(void)fd_write_atomic(path, tmp, text, strlen(text), 0600, "an offer", NULL);
}

void prestart_offer_write(const char *path, const struct prestart_offer_note *note)
{
	cleanup_buf struct buf b;
	buf_init(&b, 0);
	prestart_offer_note_format(note, &b);
	write_atomic(path, b.data);
}

void prestart_offer_mark_pending(const char *path)
{
	char text[32];
	snprintf(text, sizeof(text), "%d\n", (int)getpid());
	write_atomic(path, text);
}

/* The note of the offer file at path. */
static int read_note(const char *path, struct prestart_offer_note *out)
{
	cleanup_free char *text = NULL;
	size_t len = 0;
	if (buf_read_file(path, 4096, "offer", ERR_IO, &text, &len, NULL) < 0 ||
	    strlen(text) != len)
		return -1;
	return prestart_offer_note_parse(text, out);
}

int prestart_offer_note(const char *dir, uint64_t key, const char *pod,
                        struct prestart_offer_note *out)
{
	cleanup_free char *path =
	        xasprintf("%s/claimed/%016llx.%s", dir, (unsigned long long)key, pod);
	return read_note(path, out);
}

int prestart_offer_give_back(const char *dir, uint64_t key, const char *pod)
{
	cleanup_free char *from =
	        xasprintf("%s/claimed/%016llx.%s", dir, (unsigned long long)key, pod);
	cleanup_free char *to = prestart_offer_path(dir, key, pod);
	cleanup_close int fd = open(from, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd >= 0) /* for the janitor: the offer served a call (best effort) */
		fd_write_all(fd, NOTE_USED "\n", strlen(NOTE_USED "\n"), from, NULL);
	return rename(from, to);
}

bool prestart_offer_was_used(const char *path)
{
	struct prestart_offer_note n;
	return read_note(path, &n) == 0 && n.used;
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

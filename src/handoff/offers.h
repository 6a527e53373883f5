/* offers.h — the directory through which `krmpod generate` offers pods it started
 * ahead (cmp/prestart.h) and the shims claim them (fn_pod.c). It holds:
 *
 *   KEY.POD          pod POD, offered for requests whose key is KEY (fn_config_key, 16 hex
 *                    digits): the whole pod spec but activeDeadlineSeconds;
 *   pending.KEY.N    offer N for KEY is still being created by the janitor whose pid the
 *                    file holds: a shim with that key waits for it (while that janitor
 *                    lives, up to the shim's start deadline) rather than create a pod of
 *                    its own: the janitor's create was sent first, so under a slow API
 *                    server a new one would only come later, and leave the offer unused;
 *   claimed/KEY.POD  an offer a shim took: rename(2) into claimed/ is atomic, so one pod
 *                    goes to one shim, and the pod is then that shim's to delete
 *                    (but for the render's pods below);
 *   sessions/KEY.POD the unix socket of the render's call session with a leased warm pool
 *                    pod (pool_session.h), made before the offer.
 *
 * An offer file holds its note (struct prestart_offer_note, written and read only by the
 * codec below): what kind of pod it is and who ends it.
 *
 *   plain     a pod started ahead for one shim, which deletes it after its call (an empty
 *             file is a plain offer);
 *   pool      a warm-pool pod (pool.h) the janitor leased for the render: the shim that
 *             takes it does not delete it but, after a clean call, gives the offer back
 *             (renames it out of claimed/ again) for the next function of the same key;
 *             the janitor gives the lease back when the render is done. "warm": it runs
 *             and its session is open; else the janitor opens the session once it started;
 *   render    an exec-mode pod started ahead, the render's in the same way: one per key,
 *             given back after each clean call, deleted by the janitor when the render is
 *             done, taken or not; the janitor opens its session once it started.
 *
 * A shim that gives an offer back marks it used, for the janitor.
 */
#ifndef KRMPOD_OFFERS_H
#define KRMPOD_OFFERS_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/buf.h"

/* Shim side: claims an offered pod for key in dir; returns its name (to free) or NULL. While
 * an offer for key is still being created by a live janitor it waits, until `until`
 * (now_ms() clock) or *cancel. */
char *prestart_offer_claim(const char *dir, uint64_t key, int64_t until, atomic_int *cancel);

/* Janitor side: writes the pending marker `path` holding this process's pid (atomically:
 * a shim never reads it half written). Best effort. */
void prestart_offer_mark_pending(const char *path);

enum prestart_offer_kind { OFFER_PLAIN, OFFER_POOL, OFFER_RENDER };

/* What an offer says of its pod. */
struct prestart_offer_note {
	enum prestart_offer_kind kind;
	char holder[160]; /* pool: the render's lease holder (pool.h) */
	bool warm;        /* pool: it runs, and its session is open */
	/* pool when not warm, and render: the janitor that opens its session once it started
	 * (fn_session_await); 0 for none */
	pid_t opener;
	bool used; /* a shim gave it back after a call */
};

/* The note as the offer file holds it (appended to out), and back: -1 for a text this codec
 * did not write (the offer is then not taken as anything but plain by its caller). A holder
 * is at most 159 bytes of printable ASCII without spaces. */
void prestart_offer_note_format(const struct prestart_offer_note *n, struct buf *out);
int prestart_offer_note_parse(const char *text, struct prestart_offer_note *out);

/* Janitor side: writes an offer with its note atomically. Best effort. */
void prestart_offer_write(const char *path, const struct prestart_offer_note *note);

/* Shim side: the note of the offer it claimed (-1 when it cannot be read or parsed), and the
 * offer given back, marked used (renamed out of claimed/ again; -1 when it is not there). */
int prestart_offer_note(const char *dir, uint64_t key, const char *pod,
                        struct prestart_offer_note *out);
int prestart_offer_give_back(const char *dir, uint64_t key, const char *pod);

/* Janitor side: whether the offer at path (not claimed now) was given back by a shim. */
bool prestart_offer_was_used(const char *path);

/* The paths of the files above (new strings). */
char *prestart_offer_path(const char *dir, uint64_t key, const char *pod);
char *prestart_offer_pending_path(const char *dir, uint64_t key, size_t n);
char *prestart_offer_claimed_dir(const char *dir);
/* The socket of the render's call session with a leased pool pod (pool_session.h), in the
 * subdirectory sessions/ (never taken for an offer). */
char *prestart_offer_session_path(const char *dir, uint64_t key, const char *pod);

#endif

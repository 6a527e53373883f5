/* prestart_offer.h — the directory through which `krmpod generate` offers pods it started
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
 *                    pod (fn_session.h), made before the offer.
 *
 * A warm-pool pod (fn_pool.h) the janitor leased for the render is offered the same way,
 * the file holding "pool HOLDER warm|cold": the shim that takes it does not delete it but,
 * after a clean call, gives the offer back (renames it out of claimed/ again) for the next
 * function of the same key; the janitor gives the lease back when the render is done.
 * An exec-mode pod started ahead ("session PID render": the janitor PID opens its session
 * once it started) is the render's in the same way: one per key, given back after each
 * clean call, and deleted by the janitor when the render is done, taken or not.
 */
#ifndef KRMPOD_PRESTART_OFFER_H
#define KRMPOD_PRESTART_OFFER_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Shim side: claims an offered pod for key in dir; returns its name (to free) or NULL. While
 * an offer for key is still being created by a live janitor it waits, until `until`
 * (now_ms() clock) or *cancel. */
char *prestart_offer_claim(const char *dir, uint64_t key, int64_t until, atomic_int *cancel);

/* Janitor side: writes the pending marker `path` holding this process's pid (atomically:
 * a shim never reads it half written). Best effort. */
void prestart_offer_mark_pending(const char *path);

/* Janitor side: writes an offer (note: its content, may be "") atomically. Best effort. */
void prestart_offer_write(const char *path, const char *note);

/* Shim side: the note of the offer it claimed (a new string, "" when none; NULL when it
 * cannot be read), and the offer given back (renamed out of claimed/ again; -1 when it is
 * not there). */
char *prestart_offer_note(const char *dir, uint64_t key, const char *pod);
int prestart_offer_give_back(const char *dir, uint64_t key, const char *pod);

/* The line a shim adds to an offer's note when it gives the offer back. */
#define PRESTART_OFFER_USED "given back"

/* Janitor side: whether the offer at path (not claimed now) was given back by a shim. */
bool prestart_offer_was_used(const char *path);

/* The paths of the files above (new strings). */
char *prestart_offer_path(const char *dir, uint64_t key, const char *pod);
char *prestart_offer_pending_path(const char *dir, uint64_t key, size_t n);
char *prestart_offer_claimed_dir(const char *dir);
/* The socket of the render's call session with a leased pool pod (fn_session.h), in the
 * subdirectory sessions/ (never taken for an offer). */
char *prestart_offer_session_path(const char *dir, uint64_t key, const char *pod);

#endif

/* prestart_offer.h — the directory through which `krmpod generate` offers pods it started
 * ahead (cmp/prestart.h) and the shims claim them (fn_pod.c). It holds:
 *
 *   KEY.POD          pod POD, offered for requests whose key is KEY (fn_config_key, 16 hex
 *                    digits): the whole pod spec but activeDeadlineSeconds;
 *   pending.KEY.N    offer N for KEY is still being created: a shim with that key waits
 *                    for it (PRESTART_WAIT_MS) rather than create a pod of its own;
 *   claimed/KEY.POD  an offer a shim took: rename(2) into claimed/ is atomic, so one pod
 *                    goes to one shim, and the pod is then that shim's to delete.
 */
#ifndef KRMPOD_PRESTART_OFFER_H
#define KRMPOD_PRESTART_OFFER_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* How long a shim waits for an offer for its key that is still being created. */
#define PRESTART_WAIT_MS 3000

/* Shim side: claims an offered pod for key in dir; returns its name (to free) or NULL. Waits
 * up to PRESTART_WAIT_MS while an offer for key is still being created, unless *cancel. */
char *prestart_offer_claim(const char *dir, uint64_t key, volatile sig_atomic_t *cancel);

/* The paths of the files above (new strings). */
char *prestart_offer_path(const char *dir, uint64_t key, const char *pod);
char *prestart_offer_pending_path(const char *dir, uint64_t key, size_t n);
char *prestart_offer_claimed_dir(const char *dir);

#endif

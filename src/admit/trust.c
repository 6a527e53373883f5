/* trust.c — see trust.h. */
#include "admit/trust.h"

#include <stdlib.h>
#include <string.h>

#include "admit/entrypoint.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/signals.h"
#include "base/xalloc.h"
#include "catalog/catalog_store.h"
#include "catalog/image_policy.h"
#include "registry/registry.h"
#include "sign/sig_policy.h"
#include "sign/sig_verify.h"

#define MAX_RULES 16

/* The requirements that cover image (at most MAX_RULES: more is ERR_CONFIG) into rules:
 * catalogs names every admin catalog that lists it. */
static int covering(const struct sig_policy *sp, const char *image, const char *const *catalogs,
                    size_t n_catalogs, const struct sig_rule *rules[MAX_RULES], size_t *n,
                    struct err **err)
{
	if (n_catalogs > FN_TRUST_MAX_CATALOGS)
		return err_set(
		        err, ERR_CONFIG,
		        "%zu admin catalogs list %s; krmpod checks the requirements of at most "
		        "%d (FN_TRUST_MAX_CATALOGS): list it in fewer",
		        n_catalogs, image, FN_TRUST_MAX_CATALOGS);
	*n = sig_policy_rules_for(sp, image, catalogs, n_catalogs, rules, MAX_RULES);
	if (*n > MAX_RULES)
		return err_set(err, ERR_CONFIG,
		               "%s: %zu requirements cover %s; krmpod checks at most %d for one "
		               "image: merge them",
		               sp->what, *n, image, MAX_RULES);
	return 0;
}

/* The requirements of sp that cover image: by pattern, and by every admin catalog that
 * lists it (loaded only when a requirement names catalogs). */
static int rules_of(const struct settings *s, const struct sig_policy *sp, const char *image,
                    atomic_int *cancel, const struct sig_rule *rules[MAX_RULES], size_t *n,
                    struct err **err)
{
	if (!sig_policy_has_catalogs(sp))
		return covering(sp, image, NULL, 0, rules, n, err);
	struct policy p = {0};
	if (catalog_store_policy(s, cancel, true, &p, err) < 0) {
		policy_clear(&p);
		return err_wrap(err, "the signature policy's catalogs");
	}
	const char *catalogs[FN_TRUST_MAX_CATALOGS];
	size_t n_catalogs = policy_catalogs_of(&p, image, catalogs, FN_TRUST_MAX_CATALOGS);
	int rc = covering(sp, image, catalogs, n_catalogs, rules, n, err);
	policy_clear(&p); /* rules point into sp, not p */
	return rc;
}

static int check(const struct settings *s, const struct sig_policy *sp, struct fn_request *req,
                 atomic_int *cancel, int64_t deadline_ms, struct err **err)
{
	const struct sig_rule *rules[MAX_RULES];
	size_t n = 0;
	if (rules_of(s, sp, req->image, cancel, rules, &n, err) < 0)
		return -1;
	if (n == 0) {
		log_debug("%s: no requirement of %s covers it", req->image, sp->what);
		return 0;
	}
	struct registry_opts o;
	registry_opts_init(&o, s, cancel, deadline_ms);
	o.tag_ttl_ms = FN_IMAGE_TAG_TTL_MS;
	struct sig_verdict v;
	if (sig_verify(sp, rules, n, &o, req->image, &v, err) < 0)
		return -1;
	log_msg(v.cached ? LOG_DEBUG : LOG_INFO, "%s: signature verified, running %s: %s",
	        req->image, v.digest, v.how);
	free(req->pinned_image);
	req->pinned_image = v.pinned;
	v.pinned = NULL;
	sig_verdict_clear(&v);
	return 0;
}

int fn_trust_check(const struct settings *s, struct fn_request *req, atomic_int *cancel,
                   int64_t deadline_ms, struct err **err)
{
	if (s->signature_policy == NULL)
		return 0;
	struct sig_policy sp;
	if (sig_policy_load(s->signature_policy, "KRMPOD_SIGNATURE_POLICY", &sp, err) < 0)
		return -1;
	int rc = check(s, &sp, req, cancel, deadline_ms, err);
	sig_policy_clear(&sp);
	return rc;
}

void fn_trust_view(const struct settings *s, const struct sig_policy *sp, const char *image,
                   const char *const *catalogs, size_t n_catalogs, struct fn_trust_view *out)
{
	memset(out, 0, sizeof(*out));
	const struct sig_rule *rules[MAX_RULES];
	size_t n = 0;
	cleanup_err struct err *e = NULL;
	int rc = covering(sp, image, catalogs, n_catalogs, rules, &n, &e);
	if (n == 0)
		return;
	out->required = true;
	cleanup_buf struct buf keys;
	buf_init(&keys, 0);
	for (size_t i = 0; i < n && i < MAX_RULES; i++) {
		buf_puts(&keys, i ? "; " : "");
		sig_rule_key_names(sp, rules[i], " or ", &keys);
	}
	out->keys = buf_steal(&keys, NULL);
	struct registry_opts o;
	registry_opts_init(&o, s, &signals_cancel, now_ms() + FN_TRUST_VIEW_TIMEOUT_MS);
	o.tag_ttl_ms = FN_IMAGE_TAG_TTL_MS;
	struct sig_verdict v;
	if (rc < 0) {
		out->detail = xstrdup(e->msg);
	} else if (sig_verify(sp, rules, n, &o, image, &v, &e) == 0) {
		out->valid = true;
		out->detail = xasprintf("%s: %s", v.digest, v.how);
		sig_verdict_clear(&v);
	} else {
		out->detail = xstrdup(e ? e->msg : "no reason");
	}
}

void fn_trust_view_clear(struct fn_trust_view *v)
{
	free(v->keys);
	free(v->detail);
	memset(v, 0, sizeof(*v));
}

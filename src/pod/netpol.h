/* netpol.h — what the NetworkPolicies of a namespace do to a pod with given labels
 * (`krmpod doctor`; Kubernetes NetworkPolicy semantics, networking.k8s.io/v1):
 *
 *   - a policy selects a pod when its podSelector (matchLabels AND matchExpressions with In,
 *     NotIn, Exists, DoesNotExist; {} selects all) matches the pod's labels;
 *   - a selected pod is isolated for a direction when the policy's policyTypes names it
 *     (without policyTypes: Ingress always, Egress when the policy has egress rules);
 *   - allowed traffic is the union of the rules of every policy that selects the pod: an
 *     isolated pod with no rule in that direction gets nothing. */
#ifndef KRMPOD_NETPOL_H
#define KRMPOD_NETPOL_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/json.h"
#include "config/settings.h"

struct netpol_verdict {
	bool ingress_isolated;
	bool egress_isolated;
	size_t ingress_rules; /* rules of the selecting policies, by direction */
	size_t egress_rules;
	struct buf selecting; /* names of the selecting policies, comma-separated */
};

/* Evaluates the items of a NetworkPolicyList for a pod with these labels. An invalid
 * selector (an unknown operator) makes the policy count as not selecting, as a reader of
 * this report should then look at it: its name is added to *invalid when not NULL. */
void netpol_evaluate(const struct json *list, const struct label *labels, size_t n_labels,
                     struct netpol_verdict *v, struct buf *invalid);
void netpol_verdict_clear(struct netpol_verdict *v);

/* Whether a LabelSelector matches; *ok is set false for an unknown operator. */
bool netpol_selector_matches(const struct json *sel, const struct label *labels, size_t n_labels,
                             bool *ok);

#endif

/* netpol.c — see netpol.h. */
#include "pod/netpol.h"

#include <string.h>

static const char *label_value(const struct label *labels, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(labels[i].key, key) == 0)
			return labels[i].value;
	return NULL;
}

static bool in_values(const struct json *values, const char *v)
{
	for (size_t i = 0; i < json_len(values); i++) {
		const char *s = json_scalar(json_at(values, i));
		if (s && strcmp(s, v) == 0)
			return true;
	}
	return false;
}

bool netpol_selector_matches(const struct json *sel, const struct label *labels, size_t n_labels,
                             bool *ok)
{
	*ok = true;
	const struct json *ml = json_get(sel, "matchLabels");
	for (size_t i = 0; i < json_len(ml); i++) {
		const char *want = json_scalar(json_at(ml, i));
		const char *have = label_value(labels, n_labels, json_key_at(ml, i));
		if (want == NULL || have == NULL || strcmp(want, have) != 0)
			return false;
	}
	const struct json *me = json_get(sel, "matchExpressions");
	for (size_t i = 0; i < json_len(me); i++) {
		const struct json *e = json_at(me, i);
		const char *key = json_str(json_get(e, "key"));
		const char *op = json_str(json_get(e, "operator"));
		if (key == NULL || op == NULL) {
			*ok = false;
			return false;
		}
		const char *have = label_value(labels, n_labels, key);
		const struct json *values = json_get(e, "values");
		bool match;
		if (strcmp(op, "In") == 0)
			match = have && in_values(values, have);
		else if (strcmp(op, "NotIn") == 0)
			match = !have || !in_values(values, have);
		else if (strcmp(op, "Exists") == 0)
			match = have != NULL;
		else if (strcmp(op, "DoesNotExist") == 0)
			match = have == NULL;
		else {
			*ok = false;
			return false;
		}
		if (!match)
			return false;
	}
	return true;
}

static bool has_type(const struct json *types, const char *t)
{
	return in_values(types, t);
}

void netpol_evaluate(const struct json *list, const struct label *labels, size_t n_labels,
                     struct netpol_verdict *v, struct buf *invalid)
{
	memset(v, 0, sizeof(*v));
	buf_init(&v->selecting, 0);
	const struct json *items = json_get(list, "items");
	for (size_t i = 0; i < json_len(items); i++) {
		const struct json *p = json_at(items, i);
		const char *name = json_str(json_path(p, "metadata.name"));
		const struct json *spec = json_get(p, "spec");
		bool ok;
		bool sel = netpol_selector_matches(json_get(spec, "podSelector"), labels, n_labels,
		                                   &ok);
		if (!ok && invalid) {
			buf_printf(invalid, "%s%s", invalid->len ? ", " : "", name ? name : "?");
			continue;
		}
		if (!sel)
			continue;
		buf_printf(&v->selecting, "%s%s", v->selecting.len ? ", " : "", name ? name : "?");
		const struct json *types = json_get(spec, "policyTypes");
		size_t in_rules = json_len(json_get(spec, "ingress"));
		size_t eg_rules = json_len(json_get(spec, "egress"));
		bool ingress = types ? has_type(types, "Ingress") : true;
		bool egress = types ? has_type(types, "Egress") : eg_rules > 0;
		if (ingress) {
			v->ingress_isolated = true;
			v->ingress_rules += in_rules;
		}
		if (egress) {
			v->egress_isolated = true;
			v->egress_rules += eg_rules;
		}
	}
}

void netpol_verdict_clear(struct netpol_verdict *v)
{
	buf_free(&v->selecting);
}

/* fuzz_yaml_edit.c — event-level YAML rewriting (src/base/yaml_edit.h), as cmp_catalogs.c
 * and cmp_view.c use it.
 *
 * The input is a YAML stream, edited three ways:
 *   1. no edit: the output must hold the same nodes as the input (yaml_edit.h: "every value
 *      a reader sees is the same"): per node its kind, tag and anchor, and for a scalar the
 *      type a reader gives it (null, bool, number, string as json.c types them; a tag) and
 *      its text (a null may be spelled otherwise);
 *   2. `block` only: the first document must read (json_parse) to the same values;
 *   3. catalog_apply's edits: drop `catalogs`, annotate every document with
 *      config.kubernetes.io/function, replace the items of transformers/generators/
 *      validators (multi-line values, so literal blocks): the first document then has no
 *      `catalogs` (when it had one), the annotation and the replaced items.
 * Invariants: whenever the input is YAML libyaml reads to its end, yaml_edit() succeeds and
 * its output is YAML libyaml reads to its end; a failure sets its error. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/yaml_edit.h"
#include "fuzz_json_same.h"
#include "fuzz_util.h"

#define KEY "config.kubernetes.io/function"

/* One node event, as a reader sees it. */
struct node {
	yaml_event_type_t type;
	char *value; /* scalar text, alias anchor */
	size_t len;
	char *tag, *anchor;
	bool plain;
	bool key; /* a mapping key: a reader takes its text */
};

struct nodes {
	struct node *v;
	size_t n;
};

static char *dup_or_null(const yaml_char_t *s)
{
	return s ? strdup((const char *)s) : NULL;
}

static void nodes_free(struct nodes *ns)
{
	for (size_t i = 0; i < ns->n; i++) {
		free(ns->v[i].value);
		free(ns->v[i].tag);
		free(ns->v[i].anchor);
	}
	free(ns->v);
	ns->v = NULL;
	ns->n = 0;
}

/* Reads the whole stream; false when libyaml cannot. With nodes NULL, only checks. */
static bool read_stream(const char *text, size_t len, struct nodes *ns)
{
	yaml_parser_t p;
	if (!yaml_parser_initialize(&p))
		abort();
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	bool ok = true;
	/* per open collection: a mapping whose next node is a key (bit set), from the top */
	unsigned char stack[4096];
	size_t depth = 0;
	for (;;) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&p, &ev)) {
			ok = false;
			break;
		}
		yaml_event_type_t t = ev.type;
		bool key = depth > 0 && depth <= sizeof(stack) && stack[depth - 1] == 1;
		if (t == YAML_SCALAR_EVENT || t == YAML_ALIAS_EVENT ||
		    t == YAML_MAPPING_END_EVENT || t == YAML_SEQUENCE_END_EVENT) {
			if (t == YAML_MAPPING_END_EVENT || t == YAML_SEQUENCE_END_EVENT)
				depth--;
			if (depth > 0 && depth <= sizeof(stack) && stack[depth - 1] != 0)
				stack[depth - 1] = stack[depth - 1] == 1 ? 2 : 1;
		} else if (t == YAML_MAPPING_START_EVENT || t == YAML_SEQUENCE_START_EVENT) {
			if (depth < sizeof(stack))
				stack[depth] = t == YAML_MAPPING_START_EVENT ? 1 : 0;
			depth++;
		}
		if (ns && t != YAML_STREAM_START_EVENT && t != YAML_STREAM_END_EVENT &&
		    t != YAML_DOCUMENT_END_EVENT) {
			struct node nd = {.type = t, .key = key};
			if (t == YAML_SCALAR_EVENT) {
				nd.len = ev.data.scalar.length;
				nd.value = malloc(nd.len + 1);
				memcpy(nd.value, ev.data.scalar.value, nd.len + 1);
				nd.tag = dup_or_null(ev.data.scalar.tag);
				nd.anchor = dup_or_null(ev.data.scalar.anchor);
				/* as json.c types it: libyaml reads a plain scalar with the tag
				 * "!" as implicit too (and its emitter drops that tag) */
				nd.plain = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
				           ev.data.scalar.plain_implicit;
			} else if (t == YAML_ALIAS_EVENT) {
				nd.value = dup_or_null(ev.data.alias.anchor);
			} else if (t == YAML_SEQUENCE_START_EVENT) {
				nd.tag = dup_or_null(ev.data.sequence_start.tag);
				nd.anchor = dup_or_null(ev.data.sequence_start.anchor);
			} else if (t == YAML_MAPPING_START_EVENT) {
				nd.tag = dup_or_null(ev.data.mapping_start.tag);
				nd.anchor = dup_or_null(ev.data.mapping_start.anchor);
			}
			ns->v = realloc(ns->v, (ns->n + 1) * sizeof(*ns->v));
			if (ns->v == NULL)
				abort();
			ns->v[ns->n++] = nd;
		}
		yaml_event_delete(&ev);
		if (t == YAML_STREAM_END_EVENT)
			break;
	}
	yaml_parser_delete(&p);
	return ok;
}

/* The type a reader gives a scalar: 'n'ull, 'b'ool, 'd'igits, 's'tring, or 't'agged. An
 * implicit plain scalar (untagged, or with the non-specific tag "!") is typed by its text,
 * a quoted one is a string (json.c; go-yaml v3 reads them so too). */
static char kind_of(const struct node *x)
{
	if (x->tag && strcmp(x->tag, "!") != 0)
		return 't';
	if (!x->plain)
		return 's';
	static const char *const nulls[] = {"", "null", "~", "Null", "NULL"};
	static const char *const bools[] = {"true", "false", "True", "False", "TRUE", "FALSE"};
	for (size_t i = 0; i < 5; i++)
		if (strcmp(x->value, nulls[i]) == 0)
			return 'n';
	for (size_t i = 0; i < 6; i++)
		if (strcmp(x->value, bools[i]) == 0)
			return 'b';
	return json_plain_is_number(x->value) ? 'd' : 's';
}

static bool same_str(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

static void same_nodes(const struct nodes *a, const struct nodes *b, const char *out)
{
	if (a->n != b->n)
		fuzz_fail("the edit without edits has %zu node events, the input %zu:\n%s", b->n,
		          a->n, out);
	for (size_t i = 0; i < a->n; i++) {
		const struct node *x = &a->v[i], *y = &b->v[i];
		bool scalar = x->type == YAML_SCALAR_EVENT && y->type == YAML_SCALAR_EVENT;
		/* a key is read as its text (json.c), whatever its type */
		bool keys = x->key && y->key;
		char kx = scalar && !keys ? kind_of(x) : 0, ky = scalar && !keys ? kind_of(y) : 0;
		/* a null may be spelled otherwise; anything else keeps its text and type */
		bool text_same = (kx == 'n' && ky == 'n') ||
		                 (x->len == y->len &&
		                  (x->len == 0 || memcmp(x->value, y->value, x->len) == 0));
		if (x->type != y->type || kx != ky || !text_same ||
		    (x->type == YAML_ALIAS_EVENT && !same_str(x->value, y->value)) ||
		    (kx == 't' && !same_str(x->tag, y->tag)) || x->key != y->key ||
		    (!scalar && !same_str(x->tag, y->tag)) || !same_str(x->anchor, y->anchor))
			fuzz_fail("node event %zu changed without an edit (type %d/%d, text \"%s\"/"
			          "\"%s\", tag %s/%s, read as %c/%c):\n%s",
			          i, x->type, y->type, x->value ? x->value : "",
			          y->value ? y->value : "", x->tag ? x->tag : "-",
			          y->tag ? y->tag : "-", kx ? kx : '-', ky ? ky : '-', out);
	}
}

/* --- The edits of cmp_catalogs.c ------------------------------------------------------- */

struct made {
	char *annotation; /* what annotate returned for document 0 */
	char *items[8];   /* what replace returned for the items of document 0's lists */
	const char *lists[8];
	size_t index[8];
	size_t n;
	size_t cur; /* the document being edited (annotate comes first) */
};

static char *annotate(void *ud, size_t doc, const char *api, const char *kind)
{
	struct made *m = ud;
	m->cur = doc;
	if (kind && strcmp(kind, "Skip") == 0)
		return NULL;
	char *v = NULL;
	if (asprintf(&v, "container:\n  image: %s/%s@sha256:00\n", api ? api : "-",
	             kind ? kind : "-") < 0)
		abort();
	if (doc == 0) {
		free(m->annotation);
		m->annotation = strdup(v);
	}
	return v;
}

static char *replace(void *ud, const char *list, size_t index, const char *value)
{
	struct made *m = ud;
	if (index % 2)
		return NULL;
	char *v = NULL;
	if (asprintf(&v, "apiVersion: example.com/v1\nkind: %s\nmetadata: {name: n%zu}\n", value,
	             index) < 0)
		abort();
	if (m->cur == 0 && m->n < 8) {
		m->lists[m->n] = list;
		m->index[m->n] = index;
		m->items[m->n++] = strdup(v);
	}
	return v;
}

static size_t count_key(const struct json *obj, const char *key)
{
	size_t n = 0;
	for (size_t i = 0; json_type(obj) == JSON_OBJECT && i < json_len(obj); i++)
		n += strcmp(json_key_at(obj, i), key) == 0;
	return n;
}

/* What the edits promise for the first document, when it is a mapping krmpod reads. */
static void check_edits(const struct json *in, const struct json *out, const struct made *m,
                        const char *text)
{
	if (json_type(in) != JSON_OBJECT || json_type(out) != JSON_OBJECT)
		return;
	if (count_key(in, "catalogs") == 1 && count_key(out, "catalogs") != 0)
		fuzz_fail("catalogs was not dropped:\n%s", text);
	const struct json *meta = json_get(in, "metadata");
	bool unique = count_key(in, "metadata") <= 1 && count_key(meta, "annotations") <= 1 &&
	              count_key(json_get(meta, "annotations"), KEY) <= 1;
	if (m->annotation && unique) {
		const char *got = json_str(json_get(json_path(out, "metadata.annotations"), KEY));
		if (got == NULL || strcmp(got, m->annotation) != 0)
			fuzz_fail("the annotation reads \"%s\", not \"%s\":\n%s",
			          got ? got : "(none)", m->annotation, text);
	}
	for (size_t i = 0; i < m->n; i++) {
		if (count_key(in, m->lists[i]) != 1)
			continue;
		const char *got = json_str(json_at(json_get(out, m->lists[i]), m->index[i]));
		if (got == NULL || strcmp(got, m->items[i]) != 0)
			fuzz_fail("%s[%zu] reads \"%s\", not \"%s\":\n%s", m->lists[i], m->index[i],
			          got ? got : "(none)", m->items[i], text);
	}
}

/* --- The three runs ----------------------------------------------------------------------- */

static bool run(const char *text, size_t len, const struct yaml_edit *e, bool readable,
                struct buf *out)
{
	buf_init(out, 0);
	struct err *er = NULL;
	int rc = yaml_edit(text, len, "fuzz input", e, out, &er);
	fuzz_check_err(rc, er, "yaml_edit");
	if (rc < 0 && readable)
		fuzz_fail("yaml_edit fails on YAML libyaml reads: %s", er->msg);
	err_free(er);
	if (rc == 0 && !read_stream(out->data ? out->data : "", out->len, NULL))
		fuzz_fail("yaml_edit wrote YAML that libyaml cannot read:\n%s", out->data);
	return rc == 0;
}

FUZZ_QUIET_LOG

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct nodes in = {0};
	bool readable = read_stream(text, size, &in);

	struct buf out;
	struct yaml_edit none = {0};
	if (run(text, size, &none, readable, &out) && readable) {
		struct nodes got = {0};
		read_stream(out.data ? out.data : "", out.len, &got);
		same_nodes(&in, &got, out.data ? out.data : "");
		nodes_free(&got);
	}
	buf_free(&out);
	nodes_free(&in);

	struct json *first = NULL;
	if (json_parse(text, size, "input", &first, NULL) < 0)
		first = NULL;
	bool first_ok = first != NULL;

	struct yaml_edit block = {.block = true};
	if (run(text, size, &block, readable, &out) && first_ok) {
		struct json *again = NULL;
		struct err *e = NULL;
		if (json_parse(out.data ? out.data : "", out.len, "block output", &again, &e) < 0)
			fuzz_fail("the block output does not read: %s\n%s", e->msg, out.data);
		if (!fuzz_json_same(first, again))
			fuzz_fail("the block output reads to other values:\n%s", out.data);
		json_free(again);
	}
	buf_free(&out);

	static const char *const lists[] = {"transformers", "generators", "validators", NULL};
	struct made m = {0};
	struct yaml_edit edits = {
	        .drop_key = "catalogs",
	        .annotation_key = KEY,
	        .annotate = annotate,
	        .lists = lists,
	        .replace = replace,
	        .ud = &m,
	};
	if (run(text, size, &edits, readable, &out) && first_ok) {
		struct json *edited = NULL;
		struct err *e = NULL;
		if (json_parse(out.data ? out.data : "", out.len, "edited", &edited, &e) < 0)
			fuzz_fail("the edited output does not read: %s\n%s", e->msg, out.data);
		check_edits(first, edited, &m, out.data);
		json_free(edited);
	}
	buf_free(&out);
	free(m.annotation);
	for (size_t i = 0; i < m.n; i++)
		free(m.items[i]);
	json_free(first);
	return 0;
}

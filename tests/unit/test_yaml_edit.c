/* Unit tests: yaml_edit, the event-level YAML rewriter behind function catalogs: a dropped
 * top-level key, an added or replaced annotation in every place it can land, inline list
 * items replaced, and everything else read back exactly as before (scalar styles, tags,
 * anchors). */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/xalloc.h"
#include "base/yaml_edit.h"
#include "check.h"

#define KEY     "config.kubernetes.io/function"
#define RUNTIME "container:\n  image: r.example/fn@sha256:00\n"
/* The same, as a double-quoted YAML string. */
#define RUNTIME_Q "container:\\n  image: r.example/fn@sha256:00\\n"

static char *edit(const char *in, const struct yaml_edit *e)
{
	struct buf out;
	buf_init(&out, 0);
	struct err *er = NULL;
	CHECK_INT(yaml_edit(in, strlen(in), "test", e, &out, &er), 0);
	if (er) {
		fprintf(stderr, "  %s\n", er->msg);
		err_free(er);
	}
	return buf_steal(&out, NULL);
}

/* The JSON of the n-th document of text, for comparing values. */
static char *doc_json(const char *text, int n)
{
	const char *p = text;
	for (int i = 0; i < n; i++) {
		p = strstr(p + 1, "\n---");
		if (p == NULL)
			return xstrdup("(no such document)");
	}
	/* this document only: json_parse refuses a second one */
	const char *end = strstr(p + 1, "\n---");
	size_t len = end ? (size_t)(end - p) + 1 : strlen(p);
	struct json *j = NULL;
	struct err *e = NULL;
	if (json_parse(p, len, "doc", &j, &e) < 0) {
		err_free(e);
		return xstrdup("(unparseable)");
	}
	struct buf b;
	buf_init(&b, 0);
	struct jw w;
	jw_init(&w, &b);
	json_write(&w, j);
	json_free(j);
	return buf_steal(&b, NULL);
}

static void same_values(const char *got, const char *want)
{
	char *g = doc_json(got, 0), *w = doc_json(want, 0);
	CHECK_STR(g, w);
	free(g);
	free(w);
}

TEST(drops_a_top_level_key_in_any_style)
{
	struct yaml_edit e = {.drop_key = "catalogs"};
	static const char *const in[] = {
	        "# mine\ncatalogs:\n- a.yaml\n- https://x/c.yaml\ntransformers:\n- fn.yaml\n",
	        "catalogs: [a.yaml, b.yaml]\ntransformers:\n  - fn.yaml\n",
	        "transformers: [fn.yaml]\ncatalogs:\n  - a.yaml\n",
	};
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		char *out = edit(in[i], &e);
		CHECK(strstr(out, "catalogs") == NULL);
		same_values(out, "transformers: [fn.yaml]\n");
		free(out);
	}
}

static char *annotate_all(void *ud, size_t doc, const char *api, const char *kind)
{
	(void)ud;
	(void)doc;
	(void)api;
	return kind && strcmp(kind, "SetNamespace") == 0 ? xstrdup(RUNTIME) : NULL;
}

TEST(annotation_lands_wherever_the_document_leaves_room)
{
	struct yaml_edit e = {.annotation_key = KEY, .annotate = annotate_all};
	static const struct {
		const char *in, *want;
	} cases[] = {
	        {"apiVersion: example.com/v1\nkind: SetNamespace\nspec: {ns: x}\n",
	         "{apiVersion: example.com/v1, kind: SetNamespace, spec: {ns: x}, metadata: "
	         "{annotations: {" KEY ": \"" RUNTIME_Q "\"}}}"},
	        {"apiVersion: example.com/v1\nkind: SetNamespace\nmetadata:\n  name: fn\n",
	         "{apiVersion: example.com/v1, kind: SetNamespace, metadata: {name: fn, "
	         "annotations: {" KEY ": \"" RUNTIME_Q "\"}}}"},
	        {"kind: SetNamespace\nmetadata:\n  annotations:\n    a: b\n",
	         "{kind: SetNamespace, metadata: {annotations: {a: b, " KEY ": \"" RUNTIME_Q
	         "\"}}}"},
	        {"kind: SetNamespace\nmetadata:\n  annotations:\n    " KEY ": |\n      old\n    "
	         "z: '1'\n",
	         "{kind: SetNamespace, metadata: {annotations: {" KEY ": \"" RUNTIME_Q
	         "\", z: '1'}}}"},
	        {"kind: SetNamespace\nmetadata:\napiVersion: v\n",
	         "{kind: SetNamespace, apiVersion: v, metadata: {annotations: {" KEY
	         ": \"" RUNTIME_Q "\"}}}"},
	        {"kind: SetNamespace\nmetadata:\n  annotations:\n  name: n\n",
	         "{kind: SetNamespace, metadata: {name: n, annotations: {" KEY ": \"" RUNTIME_Q
	         "\"}}}"},
	        {"kind: Other\nmetadata: {name: n}\n", "{kind: Other, metadata: {name: n}}"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out = edit(cases[i].in, &e);
		same_values(out, cases[i].want);
		free(out);
	}
}

TEST(values_styles_tags_and_anchors_are_kept)
{
	struct yaml_edit e = {.annotation_key = KEY, .annotate = annotate_all};
	const char *in = "kind: SetNamespace\nspec:\n  mode: 0755\n  quoted: '0755'\n"
	                 "  yes_: yes\n  tagged: !!str 12\n  big: 123456789012345678901234567890\n"
	                 "  folded: >\n    a\n    b\n  base: &b {x: 1}\n  copy: *b\n"
	                 "  empty: ''\n  nul: ~\n";
	char *out = edit(in, &e);
	/* plain stays plain, quoted stays quoted, the tag stays, the alias stays an alias */
	CHECK_CONTAINS(out, "mode: 0755");
	CHECK_CONTAINS(out, "quoted: '0755'");
	CHECK_CONTAINS(out, "yes_: yes");
	CHECK_CONTAINS(out, "tagged: !!str 12");
	CHECK_CONTAINS(out, "big: 123456789012345678901234567890");
	CHECK_CONTAINS(out, "&b");
	CHECK_CONTAINS(out, "copy: *b");
	CHECK_CONTAINS(out, "folded: >");
	CHECK_CONTAINS(out, "empty: ''");
	CHECK_CONTAINS(out, "nul: ~");
	free(out);
}

static char *annotate_second(void *ud, size_t doc, const char *api, const char *kind)
{
	(void)api;
	(void)kind;
	(*(int *)ud)++;
	return doc == 1 ? xstrdup("x") : NULL;
}

TEST(every_document_of_a_stream)
{
	int calls = 0;
	struct yaml_edit e = {.annotation_key = "k", .annotate = annotate_second, .ud = &calls};
	char *out = edit("kind: A\n---\nkind: B\n---\n- not a mapping\n---\nkind: C\n", &e);
	CHECK_INT(calls, 3); /* the list document is copied, not asked about */
	char *d0 = doc_json(out, 0), *d1 = doc_json(out, 1), *d2 = doc_json(out, 2),
	     *d3 = doc_json(out, 3);
	CHECK_STR(d0, "{\"kind\":\"A\"}");
	CHECK_STR(d1, "{\"kind\":\"B\",\"metadata\":{\"annotations\":{\"k\":\"x\"}}}");
	CHECK_STR(d2, "[\"not a mapping\"]");
	CHECK_STR(d3, "{\"kind\":\"C\"}");
	free(d0);
	free(d1);
	free(d2);
	free(d3);
	free(out);
}

static char *replace_inline(void *ud, const char *list, size_t index, const char *value)
{
	(void)ud;
	if (strcmp(list, "transformers") == 0 && index == 1 && strchr(value, '\n'))
		return xasprintf("%smetadata: {annotations: {k: v}}\n", value);
	return NULL;
}

TEST(inline_list_items_are_replaced)
{
	static const char *const lists[] = {"generators", "transformers", "validators", NULL};
	struct yaml_edit e = {.drop_key = "catalogs", .lists = lists, .replace = replace_inline};
	char *out = edit("catalogs: [c.yaml]\ntransformers:\n- fn.yaml\n- |\n  kind: X\n  spec: 1\n"
	                 "resources:\n- |\n  kind: Y\n",
	                 &e);
	same_values(out, "{transformers: [fn.yaml, \"kind: X\\nspec: 1\\nmetadata: {annotations: "
	                 "{k: v}}\\n\"], resources: [\"kind: Y\\n\"]}");
	free(out);
}

/* An empty null in a flow collection stays a null: libyaml's emitter would write it `! ''`,
 * the empty string (tests/fuzz/crashes/yaml_edit/flow-nulls). An empty key keeps its text. */
TEST(flow_nulls_stay_null)
{
	struct yaml_edit none = {0};
	char *out = edit("{a: , b: [x, {c: }], d: }\n", &none);
	CHECK_CONTAINS(out, "{a: null, b: [x, {c: null}], d: null}");
	same_values(out, "{a: null, b: [x, {c: null}], d: null}\n");
	free(out);
	out = edit("k: {? : v}\n", &none);
	char *j = doc_json(out, 0);
	CHECK_STR(j, "{\"k\":{\"\":\"v\"}}");
	free(j);
	free(out);
	struct yaml_edit block = {.block = true};
	out = edit("{a: , b: [~]}\n", &block);
	same_values(out, "{a: null, b: [null]}\n");
	free(out);
}

TEST(malformed_yaml_names_the_place)
{
	struct yaml_edit e = {.drop_key = "catalogs"};
	struct buf out;
	buf_init(&out, 0);
	struct err *er = NULL;
	const char *in = "a: [1, 2\nb: c\n";
	CHECK_INT(yaml_edit(in, strlen(in), "kustomization.yaml", &e, &out, &er), -1);
	CHECK(er && er->code == ERR_IO);
	CHECK_CONTAINS(er ? er->msg : NULL, "kustomization.yaml: ");
	CHECK_CONTAINS(er ? er->msg : NULL, "line ");
	err_free(er);
	buf_free(&out);
}

/* A document of YAML_EDIT_MAX_EVENTS events (document start and end, the list's start and
 * end, its items) is edited; one more event is refused naming the limit. */
static int edit_list(size_t items, struct err **er)
{
	struct buf in, out;
	buf_init(&in, 0);
	buf_init(&out, 0);
	buf_putc(&in, '[');
	for (size_t i = 0; i < items; i++)
		buf_append(&in, i ? ",a" : "a", i ? 2 : 1, "test", NULL);
	buf_puts(&in, "]\n");
	struct yaml_edit e = {.drop_key = "catalogs"};
	int rc = yaml_edit(in.data, in.len, "big.yaml", &e, &out, er);
	buf_free(&in);
	buf_free(&out);
	return rc;
}

TEST(events_past_the_limit_are_refused)
{
	struct err *er = NULL;
	CHECK_INT(edit_list(YAML_EDIT_MAX_EVENTS - 4, &er), 0);
	CHECK_INT(edit_list(YAML_EDIT_MAX_EVENTS - 3, &er), -1);
	CHECK(er && er->code == ERR_IO);
	CHECK_CONTAINS(er ? er->msg : NULL, "big.yaml: document 1 has more than 2000000 YAML "
	                                    "events (YAML_EDIT_MAX_EVENTS");
	err_free(er);
}

int main(void)
{
	RUN(drops_a_top_level_key_in_any_style);
	RUN(annotation_lands_wherever_the_document_leaves_room);
	RUN(values_styles_tags_and_anchors_are_kept);
	RUN(every_document_of_a_stream);
	RUN(inline_list_items_are_replaced);
	RUN(flow_nulls_stay_null);
	RUN(malformed_yaml_names_the_place);
	RUN(events_past_the_limit_are_refused);
	return check_summary();
}

/* Unit tests: the JSON writer writes what the reader (libyaml) reads back to the same
 * document (tests/fuzz/fuzz_json.c checks it on any input; these are the cases it found). */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "check.h"

/* Parses text, writes it, parses that: returns the written JSON (or NULL) and the string at
 * path in the document read back in *back (a copy). */
static char *round_trip(const char *text, const char *path, char **back)
{
	struct json *j = NULL;
	struct err *e = NULL;
	*back = NULL;
	CHECK_INT(json_parse(text, strlen(text), "in", &j, &e), 0);
	err_free(e);
	if (j == NULL)
		return NULL;
	struct buf b;
	buf_init(&b, 0);
	struct jw w;
	jw_init(&w, &b);
	json_write(&w, j);
	json_free(j);
	j = NULL;
	e = NULL;
	CHECK_INT(json_parse(b.data, b.len, "written", &j, &e), 0);
	if (e)
		fprintf(stderr, "  %s\n  %s\n", e->msg, b.data);
	err_free(e);
	const char *s = json_str(json_path(j, path));
	*back = s ? strdup(s) : NULL;
	json_free(j);
	return buf_steal(&b, NULL);
}

/* DEL, the C1 controls (NEL among them), LS, PS, U+FFFE and U+FFFF are written as \u
 * escapes: raw, libyaml refuses some and folds the others as line breaks
 * (tests/fuzz/crashes/json/nel-in-string, yaml-unsafe-chars). */
TEST(characters_yaml_reads_otherwise_are_escaped)
{
	char *back = NULL;
	char *out = round_trip("{\"k\": \"a\\Nb\\x7f\\x80\\x9f\\L\\P\\uFFFE\\uFFFF\\u00a0é\"}", "k",
	                       &back);
	CHECK_STR(out, "{\"k\":\"a\\u0085b\\u007f\\u0080\\u009f\\u2028\\u2029\\ufffe\\uffff"
	               "\xc2\xa0\xc3\xa9\"}");
	CHECK_STR(back, "a\xc2\x85"
	                "b\x7f\xc2\x80\xc2\x9f\xe2\x80\xa8\xe2\x80\xa9\xef\xbf\xbe\xef\xbf\xbf"
	                "\xc2\xa0\xc3\xa9");
	free(out);
	free(back);
}

/* A key longer than libyaml reads in JSON (1022 characters as written) is refused when
 * read, rather than written where nothing reads it back (tests/fuzz/crashes/json/long-key). */
TEST(keys_libyaml_could_not_read_back_are_refused)
{
	char text[2100];
	for (int n = 1022; n <= 1023; n++) {
		snprintf(text, sizeof(text), "{\"%0*d\"}", n, 7);
		struct json *j = NULL;
		struct err *e = NULL;
		int rc = json_parse(text, strlen(text), "in", &j, &e);
		CHECK_INT(rc, n == 1022 ? 0 : -1);
		if (n == 1023)
			CHECK_CONTAINS(e ? e->msg : NULL, "a key longer than 1022 characters");
		err_free(e);
		json_free(j);
	}
	/* escapes count: 200 control characters are 800 characters of YAML ("\x01"), which
	 * libyaml reads, but 1200 of JSON ("\u0001"), which it would not */
	struct buf b;
	buf_init(&b, 0);
	buf_puts(&b, "{\"");
	for (int i = 0; i < 200; i++)
		buf_puts(&b, "\\x01");
	buf_puts(&b, "\": 1}");
	struct json *j = NULL;
	struct err *e = NULL;
	CHECK_INT(json_parse(b.data, b.len, "in", &j, &e), -1);
	CHECK_CONTAINS(e ? e->msg : NULL, "a key longer than 1022 characters");
	err_free(e);
	buf_free(&b);
}

/* Any document the reader takes can be written, also inside a few levels of the writer's
 * own (it aborted past 63: tests/fuzz/crashes/json/deep-nesting). */
TEST(deep_documents_are_written)
{
	char text[2 * JSON_MAX_DEPTH + 8];
	size_t n = JSON_MAX_DEPTH + 1;
	memset(text, '[', n);
	memset(text + n, ']', n);
	text[2 * n] = '\0';
	struct json *j = NULL;
	CHECK_INT(json_parse(text, strlen(text), "in", &j, NULL), 0);
	struct buf b;
	buf_init(&b, 0);
	struct jw w;
	jw_init(&w, &b);
	for (int i = 0; i < 10; i++) {
		jw_obj_begin(&w);
		jw_key(&w, "k");
	}
	json_write(&w, j);
	for (int i = 0; i < 10; i++)
		jw_obj_end(&w);
	CHECK_INT(b.len, 2 * n + 10 * 6);
	json_free(j);
	buf_free(&b);
	memset(text, '[', n + 1);
	memset(text + n + 1, ']', n + 1);
	text[2 * n + 2] = '\0';
	struct err *e = NULL;
	CHECK_INT(json_parse(text, strlen(text), "in", &j, &e), -1);
	CHECK_CONTAINS(e ? e->msg : NULL, "nested deeper than");
	err_free(e);
}

/* The plain scalars read as numbers are YAML's core-schema ones; strtod's other forms stay
 * strings (the fuzz target for yaml_edit predicts types with the same function). */
TEST(plain_numbers_are_the_core_schema_ones)
{
	static const char *const numbers[] = {"0", "-1", "+2", "3.5", "1e9", "-2.5E-3"};
	static const char *const strings[] = {"", "-", "inf", "nan", "0x1f", "1_000", "1.2.3x"};
	for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++)
		CHECK(json_plain_is_number(numbers[i]));
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
		CHECK(!json_plain_is_number(strings[i]));
	struct json *j = NULL;
	CHECK_INT(json_parse("{a: 1e9, b: inf}", 16, "t", &j, NULL), 0);
	CHECK(json_type(json_get(j, "a")) == JSON_NUMBER);
	CHECK(json_type(json_get(j, "b")) == JSON_STRING);
	json_free(j);
}

/* A flow list of JSON_MAX_NODES - 1 values (the list itself is one) is read; one more is
 * refused naming the limit, without building the rest. */
TEST(values_past_the_node_limit_are_refused)
{
	struct buf b;
	buf_init(&b, 0);
	buf_putc(&b, '[');
	for (int i = 0; i < JSON_MAX_NODES - 1; i++)
		buf_append(&b, i ? ",a" : "a", i ? 2 : 1, "test", NULL);
	struct json *j = NULL;
	struct err *e = NULL;
	buf_putc(&b, ']');
	CHECK_INT(json_parse(b.data, b.len, "big", &j, &e), 0);
	CHECK_INT(json_len(j), JSON_MAX_NODES - 1);
	json_free(j);
	j = NULL;
	b.len--; /* one more value */
	buf_append(&b, ",a]", 3, "test", NULL);
	CHECK_INT(json_parse(b.data, b.len, "big", &j, &e), -1);
	CHECK(j == NULL);
	CHECK(e && strstr(e->msg, "big: more than 1000000 values (JSON_MAX_NODES") != NULL);
	err_free(e);
	buf_free(&b);
}

/* Strict reading: a key twice in one mapping, at any depth, is refused naming both lines;
 * a second document is refused naming its line; one document, with or without its
 * markers, is read. */
TEST(repeated_keys_and_second_documents_are_refused)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
	        {"keys: []\nrequirements: []\nkeys:\n- name: a\n",
	         "pol: the key 'keys' appears twice, at lines 1 and 3"},
	        {"a:\n  b: 1\n  c: 2\n  b: 3\n", "appears twice, at lines 2 and 4"},
	        {"{x: 1, y: 2, x: 1}", "the key 'x' appears twice"},
	        {"- {k: 1}\n- {k: 1, k: 2}\n", "the key 'k' appears twice, at lines 2 and 2"},
	        {"keys: []\n---\nrequirements:\n- images: ['*']\n",
	         "pol: a second YAML document at line 2"},
	        {"a: 1\n...\n---\n", "a second YAML document at line 3"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct json *j = NULL;
		struct err *e = NULL;
		CHECK_INT(json_parse(bad[i].text, strlen(bad[i].text), "pol", &j, &e), -1);
		CHECK(j == NULL);
		CHECK_CONTAINS(e ? e->msg : NULL, bad[i].want);
		err_free(e);
	}
	static const char *const good[] = {"a: 1\nb: 2\n", "---\na: 1\n...\n",
	                                   "{a: {k: 1}, b: {k: 1}}", "- k: 1\n- k: 2\n", ""};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct json *j = NULL;
		CHECK_INT(json_parse(good[i], strlen(good[i]), "ok", &j, NULL), 0);
		json_free(j);
	}
	/* a large mapping (sorted check) still finds its one repeat */
	struct buf b;
	buf_init(&b, 0);
	for (int i = 0; i < 5000; i++)
		buf_printf(&b, "k%d: %d\n", i, i);
	struct json *j = NULL;
	CHECK_INT(json_parse(b.data, b.len, "big", &j, NULL), 0);
	CHECK_INT(json_len(j), 5000);
	json_free(j);
	buf_printf(&b, "k4321: again\n");
	struct err *e = NULL;
	CHECK_INT(json_parse(b.data, b.len, "big", &j, &e), -1);
	CHECK_CONTAINS(e ? e->msg : NULL, "the key 'k4321' appears twice, at lines 4322 and 5001");
	err_free(e);
	buf_free(&b);
}

int main(void)
{
	RUN(repeated_keys_and_second_documents_are_refused);
	RUN(values_past_the_node_limit_are_refused);
	RUN(characters_yaml_reads_otherwise_are_escaped);
	RUN(keys_libyaml_could_not_read_back_are_refused);
	RUN(deep_documents_are_written);
	RUN(plain_numbers_are_the_core_schema_ones);
	return check_summary();
}

/* fuzz_json.c — the JSON/YAML reader and the JSON writer (src/base/json.h).
 *
 * Invariant (round trip): what json_write() writes from a parsed document, json_parse()
 * reads back to an equal document, and writing that again gives identical bytes. The
 * lookups run over every node too. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "fuzz_json_same.h"
#include "fuzz_util.h"

/* Every lookup on every node: none may fail or read out of bounds. */
static void walk(const struct json *j, int depth)
{
	long long n = 0;
	bool b = false;
	json_int(j, &n);
	json_bool(j, &b);
	const char *s = json_scalar(j);
	if (s)
		(void)strlen(s);
	if (json_type(j) == JSON_STRING && json_str(j) == NULL)
		fuzz_fail("a string node without its text");
	json_get(j, "metadata");
	json_path(j, "metadata.annotations[0].x");
	json_path(j, "[0][1]");
	json_path(j, "a.[99999999999999999999]");
	for (size_t i = 0; i < json_len(j); i++) {
		if (json_type(j) == JSON_OBJECT && json_get(j, json_key_at(j, i)) == NULL)
			fuzz_fail("member %zu's own key does not find a member", i);
		walk(json_at(j, i), depth + 1);
	}
}

static void write_json(const struct json *j, struct buf *out)
{
	struct jw w;
	jw_init(&w, out);
	json_write(&w, j);
	if (w.depth != 0)
		fuzz_fail("the writer ended at depth %d", w.depth);
}

FUZZ_QUIET_LOG

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json *doc = NULL;
	struct err *e = NULL;
	int rc = json_parse((const char *)data, size, "fuzz input", &doc, &e);
	fuzz_check_err(rc, e, "json_parse");
	err_free(e);
	if (rc < 0)
		return 0;
	walk(doc, 0);

	struct buf first, second;
	buf_init(&first, 0);
	buf_init(&second, 0);
	write_json(doc, &first);
	struct json *again = NULL;
	e = NULL;
	if (json_parse(first.data, first.len, "written JSON", &again, &e) < 0)
		fuzz_fail("the reader refuses what the writer wrote: %s\n%s", e->msg, first.data);
	if (!fuzz_json_same(doc, again))
		fuzz_fail("the document read back differs from the one written:\n%s", first.data);
	write_json(again, &second);
	if (first.len != second.len || memcmp(first.data, second.data, first.len) != 0)
		fuzz_fail("writing the document read back gives other bytes:\n%s\n%s", first.data,
		          second.data);
	buf_free(&first);
	buf_free(&second);
	json_free(again);
	json_free(doc);
	return 0;
}

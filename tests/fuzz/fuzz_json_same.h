/* fuzz_json_same.h — whether two parsed documents (base/json.h) hold the same values, for
 * the targets whose invariant is a round trip. */
#ifndef KRMPOD_FUZZ_JSON_SAME_H
#define KRMPOD_FUZZ_JSON_SAME_H

#include <stdbool.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"

/* Types, member order and keys, scalar text; a null reads as null whatever its spelling
 * ("~", "null" or nothing); strings may hold NUL bytes, so they are compared as written. */
static bool fuzz_json_same(const struct json *a, const struct json *b)
{
	enum json_type t = json_type(a);
	if (t != json_type(b))
		return false;
	switch (t) {
	case JSON_NULL:
		return true;
	case JSON_BOOL: {
		bool x = false, y = false;
		return json_bool(a, &x) && json_bool(b, &y) && x == y;
	}
	case JSON_NUMBER:
		return strcmp(json_scalar(a), json_scalar(b)) == 0;
	case JSON_STRING: {
		struct buf x, y;
		buf_init(&x, 0);
		buf_init(&y, 0);
		struct jw wa, wb;
		jw_init(&wa, &x);
		jw_init(&wb, &y);
		json_write(&wa, a);
		json_write(&wb, b);
		bool eq = x.len == y.len && memcmp(x.data, y.data, x.len) == 0;
		buf_free(&x);
		buf_free(&y);
		return eq;
	}
	case JSON_ARRAY:
	case JSON_OBJECT:
		if (json_len(a) != json_len(b))
			return false;
		for (size_t i = 0; i < json_len(a); i++) {
			if (t == JSON_OBJECT && strcmp(json_key_at(a, i), json_key_at(b, i)) != 0)
				return false;
			if (!fuzz_json_same(json_at(a, i), json_at(b, i)))
				return false;
		}
		return true;
	}
	return false;
}

#endif

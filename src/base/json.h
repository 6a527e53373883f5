/* json.h — reading JSON/YAML documents into a small immutable tree, and writing JSON.
 *
 * Reading goes through libyaml (JSON is YAML), so the same code reads API responses and
 * kubeconfig files. Only the first document of a stream is read. Anchors/aliases are
 * rejected (ERR_IO) — neither kubeconfigs nor API responses use them, and they are a
 * memory-amplification risk — and so are documents nested deeper than JSON_MAX_DEPTH and
 * keys longer than 1022 characters as JSON (libyaml could not read them back from JSON).
 * Plain YAML scalars are typed like YAML 1.2's core schema: true/false → JSON_BOOL,
 * null/~/empty → JSON_NULL, integers/floats → JSON_NUMBER, else JSON_STRING; quoted scalars
 * are always strings.
 *
 * Lookups never fail: a missing key, a wrong type or a NULL node gives NULL/false, so
 * chains like json_str(json_path(pod, "status.phase")) are safe.
 */
#ifndef KRMPOD_JSON_H
#define KRMPOD_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/err.h"

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

struct json;

/* Parses text (len bytes, need not be NUL-terminated). `what` names the document for
 * errors ("kubeconfig /root/.kube/config", "API response"); messages include line/column.
 * Strict, as Kubernetes' strict YAML: a key repeated in one mapping and a second document
 * are errors (ERR_IO, naming both lines), never silently dropped. On success *out owns the
 * tree (free with json_free). */
int json_parse(const char *text, size_t len, const char *what, struct json **out, struct err **err);
void json_free(struct json *j);
DEFINE_CLEANUP_FUNC(json, struct json, json_free)
#define cleanup_json __attribute__((cleanup(cleanup_jsonp)))

enum json_type json_type(const struct json *j); /* JSON_NULL for NULL */

/* Object member by key (first match), or NULL. */
const struct json *json_get(const struct json *obj, const char *key);
/* Array element / object member value by index, or NULL. */
const struct json *json_at(const struct json *j, size_t i);
/* Object member key by index, or NULL. */
const char *json_key_at(const struct json *obj, size_t i);
/* Number of array elements or object members (0 for scalars and NULL). */
size_t json_len(const struct json *j);
/* Dotted path with [i] indexes: "status.containerStatuses[0].state.terminated.exitCode".
 * Keys containing dots cannot be addressed this way (use json_get). */
const struct json *json_path(const struct json *root, const char *path);

/* String value of a JSON_STRING node, else NULL. */
const char *json_str(const struct json *j);
/* Text of any scalar (string, number, bool, null), else NULL. */
const char *json_scalar(const struct json *j);
/* Integer value of a JSON_NUMBER node that is an integer in range; false otherwise. */
bool json_int(const struct json *j, long long *out);
/* Boolean value of a JSON_BOOL node; false otherwise (and *out untouched). */
bool json_bool(const struct json *j, bool *out);
/* An array of strings as a new NULL-terminated vector (base/strv.h frees it); *out NULL for null or
 * absent, or an empty vector then when `always`. -1 when it is something else. */
int json_strv(const struct json *a, bool always, char ***out);
/* Whether the reader types the untagged plain scalar s as a number (YAML's core schema:
 * decimal and exponent forms only, not inf, nan or hex). */
bool json_plain_is_number(const char *s);

/* --- Writing -------------------------------------------------------------------------
 * A streaming JSON writer into a struct buf. Commas are inserted automatically; keys are
 * given with jw_key() before each value inside an object. Strings are escaped per RFC 8259
 * (control characters as \u00XX; invalid UTF-8 is passed through unchanged), and so are the
 * characters a YAML reader would not read back as themselves (DEL, the C1 controls, U+2028,
 * U+2029, U+FFFE, U+FFFF): json_parse() reads what json_write() wrote to an equal tree. */
/* How deep json_parse() lets a document nest (deeper is ERR_IO), and how deep the writer
 * goes (deeper is a programming error: abort): any parsed document can be written inside up
 * to 60 levels of the writer's own. */
#define JSON_MAX_DEPTH   256
#define JSON_WRITE_DEPTH (JSON_MAX_DEPTH + 64)

/* How many values (scalars, mappings and sequences) json_parse() reads from one document:
 * more is ERR_IO naming this limit. A tree node costs ~100 bytes, so 1,000,000 is ~100 MB at
 * worst, well below the sidecar's memory; what krmpod reads (API bodies, kustomizations,
 * catalogs, function configs) holds a few thousand. A 16 MiB `resources: [a,a,...]` is
 * 8 million values (786 MB and 23 s before this limit). */
#define JSON_MAX_NODES 1000000

struct jw {
	struct buf *out;
	int depth;
	unsigned char first[JSON_WRITE_DEPTH]; /* per depth: no element written yet */
	bool after_key;                        /* a key was written; the value needs no comma */
};

void jw_init(struct jw *w, struct buf *out);
void jw_obj_begin(struct jw *w);
void jw_obj_end(struct jw *w);
void jw_arr_begin(struct jw *w);
void jw_arr_end(struct jw *w);
void jw_key(struct jw *w, const char *key);
void jw_str(struct jw *w, const char *s);
/* A NULL-terminated vector of strings (base/strv.h) as an array; NULL as []. */
void jw_strv(struct jw *w, char *const *v);
void jw_strn(struct jw *w, const char *s, size_t n);
void jw_int(struct jw *w, long long v);
void jw_bool(struct jw *w, bool v);
void jw_null(struct jw *w);
/* Writes an already-serialised JSON value (e.g. a subtree from json_write). */
void jw_raw(struct jw *w, const char *json);
/* Shorthands for "key": value inside an object. */
void jw_kv_str(struct jw *w, const char *key, const char *s);
void jw_kv_int(struct jw *w, const char *key, long long v);
void jw_kv_bool(struct jw *w, const char *key, bool v);

/* Serialises a parsed tree back as compact JSON (used to copy PodTemplate fragments). */
void json_write(struct jw *w, const struct json *j);

/* Escapes s as the body of a JSON string (no quotes) into out. */
void json_escape(struct buf *out, const char *s, size_t n);

#endif

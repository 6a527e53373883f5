/* json.c — see json.h. Reading uses libyaml's event parser into a tree of nodes; objects
 * keep member order and are searched linearly (Kubernetes objects are small). */
#include "base/json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

/* The longest key, in characters as json_escape() writes it, that the reader accepts:
 * libyaml reads an implicit key (every key of a JSON object) only when its ':' comes within
 * 1024 characters of its start, so a longer key could not be read back from JSON. */
#define JSON_KEY_MAX 1022

struct json {
	enum json_type type;
	char *text;          /* scalars */
	size_t len;          /* scalar length (strings may hold NUL bytes) */
	char **keys;         /* objects */
	struct json **items; /* arrays and object values */
	size_t n, cap;
};

static struct json *node_new(enum json_type t)
{
	struct json *j = xcalloc(1, sizeof(*j));
	j->type = t;
	return j;
}

void json_free(struct json *j)
{
	if (j == NULL)
		return;
	free(j->text);
	for (size_t i = 0; i < j->n; i++) {
		if (j->keys)
			free(j->keys[i]);
		json_free(j->items[i]);
	}
	free(j->keys);
	free(j->items);
	free(j);
}

static void add_child(struct json *parent, char *key, struct json *child)
{
	if (parent->n == parent->cap) {
		parent->cap = parent->cap ? parent->cap * 2 : 4;
		parent->items = xrealloc(parent->items, parent->cap * sizeof(*parent->items));
		if (parent->type == JSON_OBJECT)
			parent->keys = xrealloc(parent->keys, parent->cap * sizeof(*parent->keys));
	}
	if (parent->type == JSON_OBJECT)
		parent->keys[parent->n] = key;
	parent->items[parent->n++] = child;
}

bool json_plain_is_number(const char *s)
{
	const char *p = s;
	if (*p == '-' || *p == '+')
		p++;
	if (*p == '\0')
		return false;
	char *end = NULL;
	errno = 0;
	strtod(p, &end);
	if (end == p || *end != '\0')
		return false;
	/* reject things strtod accepts but YAML's core schema does not: inf, nan, hex */
	for (const char *q = p; *q; q++)
		if (!((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' ||
		      *q == '-' || *q == '+'))
			return false;
	return true;
}

static struct json *scalar_node(const yaml_event_t *ev)
{
	const char *v = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	enum json_type t = JSON_STRING;
	if (ev->data.scalar.plain_implicit && ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
		if (len == 0 || strcmp(v, "null") == 0 || strcmp(v, "~") == 0 ||
		    strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0)
			t = JSON_NULL;
		else if (strcmp(v, "true") == 0 || strcmp(v, "false") == 0 ||
		         strcmp(v, "True") == 0 || strcmp(v, "False") == 0 ||
		         strcmp(v, "TRUE") == 0 || strcmp(v, "FALSE") == 0)
			t = JSON_BOOL;
		else if (json_plain_is_number(v))
			t = JSON_NUMBER;
	}
	struct json *j = node_new(t);
	j->text = xmalloc(len + 1);
	memcpy(j->text, v, len);
	j->text[len] = '\0';
	j->len = len;
	return j;
}

/* The characters (not bytes) of s as json_escape() writes it. */
static size_t escaped_width(const char *s, size_t n)
{
	struct buf b;
	buf_init(&b, 0);
	json_escape(&b, s, n);
	size_t width = 0;
	for (size_t i = 0; i < b.len; i++)
		width += ((unsigned char)b.data[i] & 0xc0) != 0x80;
	buf_free(&b);
	return width;
}

struct parser {
	yaml_parser_t p;
	const char *what;
	size_t nodes; /* values read so far (JSON_MAX_NODES) */
};

static int parse_error(struct parser *ps, const char *problem, struct err **err)
{
	return err_set(err, ERR_IO, "%s: %s at line %zu, column %zu", ps->what,
	               problem ? problem : "parse error", ps->p.problem_mark.line + 1,
	               ps->p.problem_mark.column + 1);
}

static int next_event(struct parser *ps, yaml_event_t *ev, struct err **err)
{
	if (!yaml_parser_parse(&ps->p, ev))
		return parse_error(ps, ps->p.problem, err);
	return 0;
}

/* Parses the node that starts with *ev (consumed). */
static int parse_node(struct parser *ps, yaml_event_t *ev, int depth, struct json **out,
                      struct err **err);

struct key_line {
	const char *key;
	size_t line;
};

static int key_line_cmp(const void *a, const void *b)
{
	const struct key_line *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	if (c)
		return c;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* Refuses a mapping that holds a key twice, as Kubernetes' strict YAML does: a repeated
 * field would silently replace the first (an admin's requirements below a shipped
 * `requirements: []`). lines[i] is the line of node's key i. */
static int check_unique_keys(const struct parser *ps, const struct json *node, const size_t *lines,
                             struct err **err)
{
	if (node->n < 2)
		return 0;
	cleanup_free struct key_line *kl = xcalloc(node->n, sizeof(*kl));
	for (size_t i = 0; i < node->n; i++)
		kl[i] = (struct key_line){node->keys[i], lines[i]};
	qsort(kl, node->n, sizeof(*kl), key_line_cmp);
	for (size_t i = 1; i < node->n; i++)
		if (strcmp(kl[i - 1].key, kl[i].key) == 0)
			return err_set(
			        err, ERR_IO,
			        "%s: the key '%.80s' appears twice, at lines %zu and %zu: krmpod "
			        "reads YAML strictly (a repeated field would hide the first); "
			        "keep one",
			        ps->what, kl[i].key, kl[i - 1].line, kl[i].line);
	return 0;
}

/* The children of a mapping or sequence, up to its end event, into node. */
static int parse_children(struct parser *ps, struct json *node, bool is_map, int depth,
                          struct err **err)
{
	cleanup_free size_t *lines = NULL; /* maps: the line of each key */
	size_t lines_cap = 0;
	for (;;) {
		cleanup_yaml_event yaml_event_t child;
		if (next_event(ps, &child, err) < 0)
			return -1;
		if (child.type == YAML_SEQUENCE_END_EVENT || child.type == YAML_MAPPING_END_EVENT)
			return is_map ? check_unique_keys(ps, node, lines, err) : 0;
		if (!is_map) {
			struct json *v = NULL;
			if (parse_node(ps, &child, depth + 1, &v, err) < 0)
				return -1;
			add_child(node, NULL, v);
			continue;
		}
		if (child.type != YAML_SCALAR_EVENT)
			return err_set(err, ERR_IO, "%s: only scalar keys are supported (line %zu)",
			               ps->what, child.start_mark.line + 1);
		cleanup_free char *key =
		        xstrndup((const char *)child.data.scalar.value, child.data.scalar.length);
		size_t key_len = strlen(key);
		/* an escape is at most 6 characters: a shorter key always fits */
		if (key_len > JSON_KEY_MAX / 6 && escaped_width(key, key_len) > JSON_KEY_MAX)
			return err_set(err, ERR_IO,
			               "%s: a key longer than %d characters as JSON (line %zu)",
			               ps->what, JSON_KEY_MAX, child.start_mark.line + 1);
		cleanup_yaml_event yaml_event_t val;
		struct json *v = NULL;
		if (next_event(ps, &val, err) < 0 || parse_node(ps, &val, depth + 1, &v, err) < 0)
			return -1;
		if (node->n == lines_cap) {
			lines_cap = lines_cap ? lines_cap * 2 : 8;
			lines = xrealloc(lines, lines_cap * sizeof(*lines));
		}
		lines[node->n] = child.start_mark.line + 1;
		add_child(node, key, v);
		key = NULL; /* add_child took it */
	}
}

static int parse_node(struct parser *ps, yaml_event_t *ev, int depth, struct json **out,
                      struct err **err)
{
	if (depth > JSON_MAX_DEPTH)
		return err_set(err, ERR_IO, "%s: nested deeper than %d levels", ps->what,
		               JSON_MAX_DEPTH);
	if (++ps->nodes > JSON_MAX_NODES)
		return err_set(err, ERR_IO,
		               "%s: more than %d values (JSON_MAX_NODES, krmpod's limit on one "
		               "document) at line %zu",
		               ps->what, JSON_MAX_NODES, ev->start_mark.line + 1);
	switch (ev->type) {
	case YAML_ALIAS_EVENT:
		return err_set(err, ERR_IO, "%s: YAML aliases are not supported (line %zu)",
		               ps->what, ev->start_mark.line + 1);
	case YAML_SCALAR_EVENT:
		if (ev->data.scalar.anchor)
			return err_set(err, ERR_IO, "%s: YAML anchors are not supported (line %zu)",
			               ps->what, ev->start_mark.line + 1);
		*out = scalar_node(ev);
		return 0;
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT: {
		bool is_map = ev->type == YAML_MAPPING_START_EVENT;
		if ((is_map && ev->data.mapping_start.anchor) ||
		    (!is_map && ev->data.sequence_start.anchor))
			return err_set(err, ERR_IO, "%s: YAML anchors are not supported (line %zu)",
			               ps->what, ev->start_mark.line + 1);
		struct json *node = node_new(is_map ? JSON_OBJECT : JSON_ARRAY);
		if (parse_children(ps, node, is_map, depth, err) < 0) {
			json_free(node);
			return -1;
		}
		*out = node;
		return 0;
	}
	default:
		return err_set(err, ERR_IO, "%s: unexpected YAML event %d", ps->what, ev->type);
	}
}

/* After the first document's root: the stream must end there. A second document would be
 * ignored, and what is ignored can be the admin's (a policy below a `---`). */
static int only_document(struct parser *ps, struct err **err)
{
	for (;;) {
		cleanup_yaml_event yaml_event_t ev;
		if (next_event(ps, &ev, err) < 0)
			return -1;
		if (ev.type == YAML_STREAM_END_EVENT)
			return 0;
		if (ev.type == YAML_DOCUMENT_START_EVENT)
			return err_set(err, ERR_IO,
			               "%s: a second YAML document at line %zu: krmpod reads one "
			               "document here and refuses more (remove the '---' and what "
			               "follows, or merge it into the first)",
			               ps->what, ev.start_mark.line + 1);
		if (ev.type != YAML_DOCUMENT_END_EVENT)
			return err_set(err, ERR_IO, "%s: unexpected YAML event %d at line %zu",
			               ps->what, ev.type, ev.start_mark.line + 1);
	}
}

int json_parse(const char *text, size_t len, const char *what, struct json **out, struct err **err)
{
	struct parser ps = {.what = what};
	if (!yaml_parser_initialize(&ps.p))
		return err_set(err, ERR_INTERNAL, "%s: cannot initialise the YAML parser", what);
	yaml_parser_set_input_string(&ps.p, (const unsigned char *)text, len);
	struct json *root = NULL;
	int rc = -1;
	for (;;) {
		cleanup_yaml_event yaml_event_t ev;
		if (next_event(&ps, &ev, err) < 0)
			break;
		if (ev.type == YAML_STREAM_START_EVENT || ev.type == YAML_DOCUMENT_START_EVENT)
			continue;
		if (ev.type == YAML_STREAM_END_EVENT) { /* empty input */
			rc = 0;
			break;
		}
		if (parse_node(&ps, &ev, 0, &root, err) < 0 || only_document(&ps, err) < 0)
			break;
		rc = 0;
		break;
	}
	yaml_parser_delete(&ps.p);
	if (rc < 0) {
		json_free(root);
		return -1;
	}
	*out = root;
	return 0;
}

enum json_type json_type(const struct json *j)
{
	return j ? j->type : JSON_NULL;
}

const struct json *json_get(const struct json *obj, const char *key)
{
	if (obj == NULL || obj->type != JSON_OBJECT)
		return NULL;
	for (size_t i = 0; i < obj->n; i++)
		if (strcmp(obj->keys[i], key) == 0)
			return obj->items[i];
	return NULL;
}

const struct json *json_at(const struct json *j, size_t i)
{
	if (j == NULL || (j->type != JSON_ARRAY && j->type != JSON_OBJECT) || i >= j->n)
		return NULL;
	return j->items[i];
}

const char *json_key_at(const struct json *obj, size_t i)
{
	if (obj == NULL || obj->type != JSON_OBJECT || i >= obj->n)
		return NULL;
	return obj->keys[i];
}

size_t json_len(const struct json *j)
{
	if (j == NULL || (j->type != JSON_ARRAY && j->type != JSON_OBJECT))
		return 0;
	return j->n;
}

const struct json *json_path(const struct json *root, const char *path)
{
	const struct json *cur = root;
	const char *p = path;
	char key[256];
	while (cur && *p) {
		if (*p == '.') {
			p++;
			continue;
		}
		if (*p == '[') {
			char *end = NULL;
			errno = 0;
			unsigned long idx = strtoul(p + 1, &end, 10);
			if (errno || end == p + 1 || *end != ']')
				return NULL;
			cur = json_at(cur, idx);
			p = end + 1;
			continue;
		}
		size_t n = strcspn(p, ".[");
		if (n >= sizeof(key))
			return NULL;
		memcpy(key, p, n);
		key[n] = '\0';
		cur = json_get(cur, key);
		p += n;
	}
	return cur;
}

const char *json_str(const struct json *j)
{
	return j && j->type == JSON_STRING ? j->text : NULL;
}

const char *json_scalar(const struct json *j)
{
	if (j == NULL || j->type == JSON_ARRAY || j->type == JSON_OBJECT)
		return NULL;
	return j->text;
}

bool json_int(const struct json *j, long long *out)
{
	if (j == NULL || j->type != JSON_NUMBER)
		return false;
	char *end = NULL;
	errno = 0;
	long long v = strtoll(j->text, &end, 10);
	if (errno || end == j->text || *end != '\0')
		return false;
	*out = v;
	return true;
}

bool json_bool(const struct json *j, bool *out)
{
	if (j == NULL || j->type != JSON_BOOL)
		return false;
	*out = j->text[0] == 't' || j->text[0] == 'T';
	return true;
}

/* --- writer ----------------------------------------------------------------------------- */

/* The length of the UTF-8 sequence at s[i] that a YAML reader does not read back as itself
 * inside a double-quoted string (0 for any other), its code point in *cp: DEL and the C1
 * controls (refused as input), NEL, LS and PS (line breaks, folded), U+FFFE and U+FFFF
 * (refused). The reader is libyaml, ours: JSON is read as YAML. */
static size_t yaml_unsafe(const unsigned char *s, size_t i, size_t n, unsigned *cp)
{
	if (s[i] == 0x7f) {
		*cp = 0x7f;
		return 1;
	}
	if (s[i] == 0xc2 && i + 1 < n && s[i + 1] >= 0x80 && s[i + 1] <= 0x9f) {
		*cp = s[i + 1];
		return 2;
	}
	if (i + 2 >= n)
		return 0;
	if (s[i] == 0xe2 && s[i + 1] == 0x80 && (s[i + 2] == 0xa8 || s[i + 2] == 0xa9)) {
		*cp = 0x2000u | (s[i + 2] - 0x80u);
		return 3;
	}
	if (s[i] == 0xef && s[i + 1] == 0xbf && (s[i + 2] == 0xbe || s[i + 2] == 0xbf)) {
		*cp = 0xffc0u | (s[i + 2] - 0x80u);
		return 3;
	}
	return 0;
}

void json_escape(struct buf *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		unsigned cp = 0;
		size_t unsafe = c >= 0x7f ? yaml_unsafe((const unsigned char *)s, i, n, &cp) : 0;
		if (unsafe) {
			buf_printf(out, "\\u%04x", cp);
			i += unsafe - 1;
			continue;
		}
		switch (c) {
		case '"':
			buf_puts(out, "\\\"");
			break;
		case '\\':
			buf_puts(out, "\\\\");
			break;
		case '\n':
			buf_puts(out, "\\n");
			break;
		case '\r':
			buf_puts(out, "\\r");
			break;
		case '\t':
			buf_puts(out, "\\t");
			break;
		case '\b':
			buf_puts(out, "\\b");
			break;
		case '\f':
			buf_puts(out, "\\f");
			break;
		default:
			if (c < 0x20)
				buf_printf(out, "\\u%04x", c);
			else
				buf_putc(out, (char)c);
		}
	}
}

void jw_init(struct jw *w, struct buf *out)
{
	memset(w, 0, sizeof(*w));
	w->out = out;
	w->first[0] = 1;
}

static void sep(struct jw *w)
{
	if (w->depth > 0 && !w->first[w->depth])
		buf_putc(w->out, ',');
	w->first[w->depth] = 0;
}

/* A value right after jw_key() needs no separator: jw_key wrote it. */
static void value_sep(struct jw *w)
{
	if (w->after_key)
		w->after_key = false;
	else
		sep(w);
}

static void open_(struct jw *w, char c)
{
	value_sep(w);
	buf_putc(w->out, c);
	if (++w->depth >= (int)sizeof(w->first))
		abort(); /* programming error: documented depth limit */
	w->first[w->depth] = 1;
}

void jw_obj_begin(struct jw *w)
{
	open_(w, '{');
}

void jw_arr_begin(struct jw *w)
{
	open_(w, '[');
}

void jw_obj_end(struct jw *w)
{
	w->depth--;
	buf_putc(w->out, '}');
}

void jw_arr_end(struct jw *w)
{
	w->depth--;
	buf_putc(w->out, ']');
}

void jw_key(struct jw *w, const char *key)
{
	sep(w);
	buf_putc(w->out, '"');
	json_escape(w->out, key, strlen(key));
	buf_puts(w->out, "\":");
	w->after_key = true;
}

void jw_strn(struct jw *w, const char *s, size_t n)
{
	value_sep(w);
	buf_putc(w->out, '"');
	json_escape(w->out, s, n);
	buf_putc(w->out, '"');
}

void jw_str(struct jw *w, const char *s)
{
	jw_strn(w, s, strlen(s));
}

void jw_strv(struct jw *w, char *const *v)
{
	jw_arr_begin(w);
	for (size_t i = 0; v && v[i]; i++)
		jw_str(w, v[i]);
	jw_arr_end(w);
}

void jw_int(struct jw *w, long long v)
{
	value_sep(w);
	buf_printf(w->out, "%lld", v);
}

void jw_bool(struct jw *w, bool v)
{
	value_sep(w);
	buf_puts(w->out, v ? "true" : "false");
}

void jw_null(struct jw *w)
{
	value_sep(w);
	buf_puts(w->out, "null");
}

void jw_raw(struct jw *w, const char *json)
{
	value_sep(w);
	buf_puts(w->out, json);
}

void jw_kv_str(struct jw *w, const char *key, const char *s)
{
	jw_key(w, key);
	jw_str(w, s);
}

void jw_kv_int(struct jw *w, const char *key, long long v)
{
	jw_key(w, key);
	jw_int(w, v);
}

void jw_kv_bool(struct jw *w, const char *key, bool v)
{
	jw_key(w, key);
	jw_bool(w, v);
}

void json_write(struct jw *w, const struct json *j)
{
	switch (json_type(j)) {
	case JSON_NULL:
		jw_null(w);
		break;
	case JSON_BOOL:
	case JSON_NUMBER:
		jw_raw(w, j->text);
		break;
	case JSON_STRING:
		jw_strn(w, j->text, j->len);
		break;
	case JSON_ARRAY:
		jw_arr_begin(w);
		for (size_t i = 0; i < j->n; i++)
			json_write(w, j->items[i]);
		jw_arr_end(w);
		break;
	case JSON_OBJECT:
		jw_obj_begin(w);
		for (size_t i = 0; i < j->n; i++) {
			jw_key(w, j->keys[i]);
			json_write(w, j->items[i]);
		}
		jw_obj_end(w);
		break;
	}
}

int json_strv(const struct json *a, bool always, char ***out)
{
	*out = NULL;
	if (json_type(a) == JSON_NULL && !always)
		return 0;
	if (json_type(a) != JSON_ARRAY && json_type(a) != JSON_NULL)
		return -1;
	size_t n = json_len(a);
	char **v = xcalloc(n + 1, sizeof(*v));
	for (size_t i = 0; i < n; i++) {
		const char *s = json_str(json_at(a, i));
		if (s == NULL) {
			for (size_t k = 0; k < i; k++)
				free(v[k]);
			free(v);
			return -1;
		}
		v[i] = xstrdup(s);
	}
	*out = v;
	return 0;
}

/* yaml_edit.c — see yaml_edit.h.
 *
 * Each document's events are read into an array first (the root's apiVersion and kind may
 * come after metadata), its spans are located, and the events are then handed to the
 * emitter in order, with the edits made at their indexes. yaml_emitter_emit() takes over
 * each event it is given; the events an edit drops are deleted here. */
#include "base/yaml_edit.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "base/cleanup.h"
#include "base/xalloc.h"

/* The events of one document. */
struct doc {
	yaml_event_t *ev;
	size_t n, cap;
};

/* Where the edits go in a document (indexes into doc.ev; SIZE_MAX: none). */
struct spans {
	const char *api_version, *kind;
	/* Pairs dropped, [key, end of value): drop_key, and a metadata or annotations that is
	 * not a mapping (null), which the annotation replaces. */
	size_t drop_from[3], drop_to[3];
	size_t n_drop;
	size_t meta_end;                 /* metadata's MAPPING_END */
	size_t ann_end;                  /* metadata.annotations' MAPPING_END */
	size_t ann_value, ann_value_end; /* the value of annotations[annotation_key] */
	size_t root_end;                 /* the root's MAPPING_END */
};

struct writer {
	yaml_emitter_t em;
	struct buf *out;
	const char *what;
};

static int write_handler(void *data, unsigned char *buffer, size_t size)
{
	struct writer *w = data;
	buf_append(w->out, buffer, size, "edited YAML", NULL);
	return 1;
}

static int emit(struct writer *w, yaml_event_t *ev, struct err **err)
{
	if (!yaml_emitter_emit(&w->em, ev))
		return err_set(err, ERR_IO, "%s: cannot write the edited YAML: %s", w->what,
		               w->em.problem ? w->em.problem : "emitter error");
	return 0;
}

static int emit_scalar(struct writer *w, const char *value, struct err **err)
{
	yaml_event_t ev;
	bool block = strchr(value, '\n') != NULL;
	yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)value, (int)strlen(value), 1,
	                             1, block ? YAML_LITERAL_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE);
	return emit(w, &ev, err);
}

static int emit_mapping(struct writer *w, bool start, struct err **err)
{
	yaml_event_t ev;
	if (start)
		yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE);
	else
		yaml_mapping_end_event_initialize(&ev);
	return emit(w, &ev, err);
}

/* The index after the node that starts at i. */
static size_t skip(const struct doc *d, size_t i)
{
	if (d->ev[i].type != YAML_MAPPING_START_EVENT && d->ev[i].type != YAML_SEQUENCE_START_EVENT)
		return i + 1;
	int depth = 0;
	do {
		yaml_event_type_t t = d->ev[i].type;
		if (t == YAML_MAPPING_START_EVENT || t == YAML_SEQUENCE_START_EVENT)
			depth++;
		else if (t == YAML_MAPPING_END_EVENT || t == YAML_SEQUENCE_END_EVENT)
			depth--;
		i++;
	} while (depth > 0 && i < d->n);
	return i;
}

static const char *scalar(const struct doc *d, size_t i)
{
	return d->ev[i].type == YAML_SCALAR_EVENT ? (const char *)d->ev[i].data.scalar.value : NULL;
}

/* In the mapping that starts at m: the value index of key (SIZE_MAX when absent), and the
 * mapping's end index in *end. */
static size_t find_key(const struct doc *d, size_t m, const char *key, size_t *key_at, size_t *end)
{
	size_t found = SIZE_MAX;
	size_t k = m + 1;
	while (k < d->n && d->ev[k].type != YAML_MAPPING_END_EVENT) {
		size_t v = skip(d, k);
		const char *name = scalar(d, k);
		if (found == SIZE_MAX && name && strcmp(name, key) == 0) {
			found = v;
			if (key_at)
				*key_at = k;
		}
		k = skip(d, v);
	}
	*end = k;
	return found;
}

/* Drops the pair whose key is at k and value at v. */
static void drop_pair(const struct doc *d, struct spans *s, size_t k, size_t v)
{
	s->drop_from[s->n_drop] = k;
	s->drop_to[s->n_drop++] = skip(d, v);
}

static void locate(const struct doc *d, const struct yaml_edit *e, struct spans *s)
{
	memset(s, 0, sizeof(*s));
	s->meta_end = s->ann_end = s->ann_value = SIZE_MAX;
	size_t root = 1, k, key;
	size_t v = find_key(d, root, "apiVersion", NULL, &s->root_end);
	s->api_version = v != SIZE_MAX ? scalar(d, v) : NULL;
	v = find_key(d, root, "kind", NULL, &k);
	s->kind = v != SIZE_MAX ? scalar(d, v) : NULL;
	if (e->drop_key && (v = find_key(d, root, e->drop_key, &key, &k)) != SIZE_MAX)
		drop_pair(d, s, key, v);
	if (!e->annotate || !e->annotation_key)
		return;
	size_t meta = find_key(d, root, "metadata", &key, &k);
	if (meta != SIZE_MAX && d->ev[meta].type != YAML_MAPPING_START_EVENT)
		drop_pair(d, s, key, meta); /* metadata: null */
	if (meta == SIZE_MAX || d->ev[meta].type != YAML_MAPPING_START_EVENT)
		return;
	size_t ann = find_key(d, meta, "annotations", &key, &s->meta_end);
	if (ann != SIZE_MAX && d->ev[ann].type != YAML_MAPPING_START_EVENT)
		drop_pair(d, s, key, ann); /* annotations: null */
	if (ann == SIZE_MAX || d->ev[ann].type != YAML_MAPPING_START_EVENT)
		return;
	s->ann_value = find_key(d, ann, e->annotation_key, NULL, &s->ann_end);
	if (s->ann_value != SIZE_MAX)
		s->ann_value_end = skip(d, s->ann_value);
}

/* Emits the annotation where the document has no place for it yet: before the end of
 * annotations, of metadata, or of the root. */
static int insert_annotation(struct writer *w, const struct yaml_edit *e, const struct spans *s,
                             size_t i, const char *value, struct err **err)
{
	if (i == s->ann_end && s->ann_value == SIZE_MAX)
		return emit_scalar(w, e->annotation_key, err) < 0 ? -1 : emit_scalar(w, value, err);
	bool in_meta = i == s->meta_end && s->ann_end == SIZE_MAX;
	bool in_root = i == s->root_end && s->meta_end == SIZE_MAX;
	if (!in_meta && !in_root)
		return 0;
	if ((in_root && (emit_scalar(w, "metadata", err) < 0 || emit_mapping(w, true, err) < 0)) ||
	    emit_scalar(w, "annotations", err) < 0 || emit_mapping(w, true, err) < 0 ||
	    emit_scalar(w, e->annotation_key, err) < 0 || emit_scalar(w, value, err) < 0 ||
	    emit_mapping(w, false, err) < 0 || (in_root && emit_mapping(w, false, err) < 0))
		return -1;
	return 0;
}

/* Whether the top-level key at index k names one of e->lists. */
static const char *is_list(const struct doc *d, const struct yaml_edit *e, size_t k)
{
	const char *name = scalar(d, k);
	for (const char *const *l = e->lists; name && l && *l; l++)
		if (strcmp(*l, name) == 0)
			return *l;
	return NULL;
}

/* Marks the string items of the top-level lists for replacement: repl[i] is the new text
 * of the item at i (or NULL). */
static void plan_replacements(const struct doc *d, const struct yaml_edit *e, char **repl)
{
	if (!e->replace || d->ev[1].type != YAML_MAPPING_START_EVENT)
		return;
	size_t k = 2;
	while (k < d->n && d->ev[k].type != YAML_MAPPING_END_EVENT) {
		size_t v = skip(d, k);
		const char *list = is_list(d, e, k);
		if (list && d->ev[v].type == YAML_SEQUENCE_START_EVENT) {
			size_t item = v + 1, idx = 0;
			while (item < d->n && d->ev[item].type != YAML_SEQUENCE_END_EVENT) {
				if (scalar(d, item))
					repl[item] = e->replace(e->ud, list, idx, scalar(d, item));
				item = skip(d, item);
				idx++;
			}
		}
		k = skip(d, v);
	}
}

/* Whether a plain scalar with this text would be read back as the same string (not a
 * number, boolean or null, nothing YAML would take as syntax). */
static bool plain_safe(const char *t, size_t len)
{
	static const char *const special[] = {"true", "false", "True", "False", "TRUE", "FALSE",
	                                      "null", "Null",  "NULL", "~",     "yes",  "no",
	                                      "Yes",  "No",    "on",   "off",   "y",    "n"};
	if (len == 0 || strchr("-?:,[]{}#&*!|>'\"%@` \t0123456789.+", t[0]) || t[len - 1] == ' ' ||
	    strstr(t, ": ") || strstr(t, " #") || strchr(t, '\n'))
		return false;
	for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++)
		if (strcmp(t, special[i]) == 0)
			return false;
	return true;
}

/* For e->block: block collections, plain strings where safe. */
static void to_block(yaml_event_t *ev)
{
	if (ev->type == YAML_MAPPING_START_EVENT)
		ev->data.mapping_start.style = YAML_BLOCK_MAPPING_STYLE;
	else if (ev->type == YAML_SEQUENCE_START_EVENT)
		ev->data.sequence_start.style = YAML_BLOCK_SEQUENCE_STYLE;
	else if (ev->type == YAML_SCALAR_EVENT && ev->data.scalar.quoted_implicit &&
	         ev->data.scalar.tag == NULL &&
	         plain_safe((const char *)ev->data.scalar.value, ev->data.scalar.length)) {
		ev->data.scalar.plain_implicit = 1;
		ev->data.scalar.style = YAML_ANY_SCALAR_STYLE;
	}
}

/* Marks in null_in_flow[] the scalars libyaml's emitter would turn from a null into a
 * string: it writes no empty plain scalar (YAML's null) inside a flow collection, but `! ''`,
 * which reads as "". Keys are left alone: a reader takes a key's text, which stays empty. */
static void mark_flow_nulls(const struct doc *d, bool block, bool *null_in_flow)
{
	struct level {
		bool flow, map, key; /* key: the next node of the mapping is a key */
	} *st = NULL;
	size_t depth = 0;
	for (size_t i = 0; i < d->n; i++) {
		const yaml_event_t *ev = &d->ev[i];
		struct level *top = depth ? &st[depth - 1] : NULL;
		if (ev->type == YAML_MAPPING_END_EVENT || ev->type == YAML_SEQUENCE_END_EVENT) {
			if (--depth > 0 && st[depth - 1].map)
				st[depth - 1].key = !st[depth - 1].key;
			continue;
		}
		if (ev->type == YAML_MAPPING_START_EVENT || ev->type == YAML_SEQUENCE_START_EVENT) {
			bool map = ev->type == YAML_MAPPING_START_EVENT;
			bool flow = map ? ev->data.mapping_start.style == YAML_FLOW_MAPPING_STYLE
			                : ev->data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE;
			flow = !block && (flow || (top && top->flow));
			st = xrealloc(st, (depth + 1) * sizeof(*st));
			st[depth++] = (struct level){flow, map, true};
			continue; /* the parent's key/value turn passes at the end */
		}
		if (ev->type == YAML_SCALAR_EVENT)
			null_in_flow[i] = top && top->flow && !(top->map && top->key) &&
			                  ev->data.scalar.length == 0 &&
			                  ev->data.scalar.tag == NULL &&
			                  ev->data.scalar.plain_implicit &&
			                  ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
		if (top && top->map &&
		    (ev->type == YAML_SCALAR_EVENT || ev->type == YAML_ALIAS_EVENT))
			top->key = !top->key;
	}
	free(st);
}

/* Makes the empty null scalar at *ev the plain scalar "null" (same anchor). */
static void spell_null(yaml_event_t *ev)
{
	yaml_event_t null_ev;
	if (!yaml_scalar_event_initialize(&null_ev, ev->data.scalar.anchor, NULL,
	                                  (yaml_char_t *)"null", 4, 1, 0, YAML_PLAIN_SCALAR_STYLE))
		return; /* out of memory: `! ''` is written */
	yaml_event_delete(ev);
	*ev = null_ev;
}

/* Emits one document's events with the edits; every event is emitted or deleted. */
static int write_doc(struct writer *w, struct doc *d, const struct yaml_edit *e, size_t index,
                     struct err **err)
{
	bool edit = d->n > 2 && d->ev[1].type == YAML_MAPPING_START_EVENT;
	struct spans s = {0};
	cleanup_free char *value = NULL;
	cleanup_free char **repl = xcalloc(d->n, sizeof(char *));
	cleanup_free bool *null_in_flow = xcalloc(d->n, sizeof(bool));
	mark_flow_nulls(d, e->block, null_in_flow);
	if (edit) {
		locate(d, e, &s);
		if (e->annotate && e->annotation_key)
			value = e->annotate(e->ud, index, s.api_version, s.kind);
		plan_replacements(d, e, repl);
	}
	int rc = 0;
	for (size_t i = 0; i < d->n; i++) {
		bool drop = false;
		for (size_t r = 0; edit && r < s.n_drop; r++)
			drop = drop || (i >= s.drop_from[r] && i < s.drop_to[r]);
		bool old_value =
		        value && s.ann_value != SIZE_MAX && i >= s.ann_value && i < s.ann_value_end;
		if (rc == 0 && value && !old_value &&
		    insert_annotation(w, e, &s, i, value, err) < 0)
			rc = -1;
		if (rc == 0 && value && i == s.ann_value)
			rc = emit_scalar(w, value, err);
		if (rc == 0 && repl[i] && !drop)
			rc = emit_scalar(w, repl[i], err);
		if (null_in_flow[i])
			spell_null(&d->ev[i]);
		if (e->block)
			to_block(&d->ev[i]);
		if (rc == 0 && !drop && !old_value && !repl[i])
			rc = emit(w, &d->ev[i], err);
		else
			yaml_event_delete(&d->ev[i]);
		free(repl[i]);
	}
	d->n = 0;
	return rc;
}

static int parse_error(yaml_parser_t *p, const char *what, struct err **err)
{
	return err_set(err, ERR_IO, "%s: %s at line %zu, column %zu", what,
	               p->problem ? p->problem : "parse error", p->problem_mark.line + 1,
	               p->problem_mark.column + 1);
}

static void doc_free(struct doc *d)
{
	for (size_t i = 0; i < d->n; i++)
		yaml_event_delete(&d->ev[i]);
	free(d->ev);
}

/* Reads events until the end of the stream, writing each document with the edits. */
static int pump(yaml_parser_t *p, struct writer *w, const struct yaml_edit *e, const char *what,
                struct err **err)
{
	struct doc d = {0};
	size_t index = 0;
	int rc = 0;
	for (bool done = false; !done && rc == 0;) {
		if (d.n == YAML_EDIT_MAX_EVENTS) {
			rc = err_set(
			        err, ERR_IO,
			        "%s: document %zu has more than %d YAML events "
			        "(YAML_EDIT_MAX_EVENTS, krmpod's limit on one document), at line "
			        "%zu",
			        what, index + 1, YAML_EDIT_MAX_EVENTS, p->mark.line + 1);
			break;
		}
		if (d.n == d.cap) {
			d.cap = d.cap ? d.cap * 2 : 64;
			d.ev = xrealloc(d.ev, d.cap * sizeof(*d.ev));
		}
		yaml_event_t *ev = &d.ev[d.n];
		if (!yaml_parser_parse(p, ev)) {
			rc = parse_error(p, what, err);
			break;
		}
		d.n++;
		yaml_event_type_t t = ev->type;
		done = t == YAML_STREAM_END_EVENT;
		if (t == YAML_DOCUMENT_END_EVENT)
			rc = write_doc(w, &d, e, index++, err);
		else if (t == YAML_STREAM_START_EVENT || t == YAML_STREAM_END_EVENT) {
			d.n--;
			rc = emit(w, ev, err);
		}
	}
	doc_free(&d);
	return rc;
}

int yaml_edit(const char *text, size_t len, const char *what, const struct yaml_edit *e,
              struct buf *out, struct err **err)
{
	yaml_parser_t p;
	struct writer w = {.out = out, .what = what};
	if (!yaml_parser_initialize(&p))
		return err_set(err, ERR_INTERNAL, "%s: cannot initialise the YAML parser", what);
	if (!yaml_emitter_initialize(&w.em)) {
		yaml_parser_delete(&p);
		return err_set(err, ERR_INTERNAL, "%s: cannot initialise the YAML emitter", what);
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	yaml_emitter_set_output(&w.em, write_handler, &w);
	yaml_emitter_set_unicode(&w.em, 1);
	yaml_emitter_set_width(&w.em, -1);
	int rc = pump(&p, &w, e, what, err);
	yaml_emitter_delete(&w.em);
	yaml_parser_delete(&p);
	return rc;
}

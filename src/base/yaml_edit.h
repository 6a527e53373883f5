/* yaml_edit.h — changing a YAML stream without changing anything else in it: the events
 * libyaml reads are written back by libyaml's emitter, each scalar with its own style, tag
 * and implicit flags, so every value a reader sees is the same (layout and comments are
 * not kept). Used to rewrite a per-request copy of a kustomization for function catalogs
 * (cmp/cmp_catalogs.c): drop a top-level key kustomize does not know, give a function
 * config its runtime annotation, replace an inline function config.
 *
 * Every document is edited; a document whose root is not a mapping is copied as it is.
 * Anchors and aliases are copied too. An empty null inside a flow collection (`{a: }`) is
 * written `null`: libyaml's emitter has no empty form there and would write the string ''. */
#ifndef KRMPOD_YAML_EDIT_H
#define KRMPOD_YAML_EDIT_H

#include <stddef.h>

#include "base/buf.h"
#include "base/err.h"

struct yaml_edit {
	/* A top-level key to drop, with its value, from every document; or NULL. */
	const char *drop_key;
	/* When annotate is set, it is called for every document with a mapping root, with the
	 * document's index and its top-level apiVersion and kind (NULL when absent or not
	 * strings). A non-NULL result (a new string, freed here) becomes the value of
	 * metadata.annotations[annotation_key], replacing one that is there and creating the
	 * annotations and metadata mappings when missing. */
	const char *annotation_key;
	char *(*annotate)(void *ud, size_t doc, const char *api_version, const char *kind);
	/* When replace is set, it is called for every string item of the top-level sequences
	 * whose key is one of `lists` (NULL-terminated): a non-NULL result (freed here)
	 * replaces the item (written as a literal block when it has several lines). */
	const char *const *lists;
	char *(*replace)(void *ud, const char *list, size_t index, const char *value);
	void *ud;
	/* Writes every mapping and sequence in block style, and a quoted string plain where
	 * YAML reads it back as the same string (JSON in, readable YAML out). */
	bool block;
};

/* How many events (scalars, collection starts and ends, aliases) yaml_edit() holds for one
 * document: more is ERR_IO naming this limit. An event costs ~100 bytes; a document of
 * JSON_MAX_NODES values (json.h) is at most twice as many events. */
#define YAML_EDIT_MAX_EVENTS 2000000

/* Applies e to the stream text (len bytes) and appends the result to out. `what` names the
 * text in errors (ERR_IO with the line and column libyaml reports). */
int yaml_edit(const char *text, size_t len, const char *what, const struct yaml_edit *e,
              struct buf *out, struct err **err);

#endif

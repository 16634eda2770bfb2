/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The table-driven walker shared by the policy and the site file: a tree
 * (YAML, or JSON for a forwarded policy) walked against a key table,
 * unknown and missing keys said with a suggestion.  One value by its key's
 * type is schema_value.c's.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "core_base.h"
#include "schema.h"

void gpumem_walk_error(struct gpumem_walk *w, const struct gpumem_ynode *n,
		       const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gpumem_diag_add(w->d, GPUMEM_SEV_ERROR, w->file, n ? n->line : 0, n ? n->col : 0,
			"%s", msg);
}

void gpumem_walk_map(struct gpumem_walk *w, const struct gpumem_key *keys,
		     const struct gpumem_ynode *map, const char *path)
{
	for (size_t i = 0; i + 1 < map->n; i += 2) {
		const struct gpumem_ynode *kn = map->items[i], *vn = map->items[i + 1];
		const struct gpumem_key *k = NULL;
		char full[256];

		if (kn->kind != GPUMEM_Y_SCALAR) {
			gpumem_walk_error(w, kn, "%s%skeys must be plain words", path ? path : "",
					  path ? ": " : "");
			continue;
		}
		snprintf(full, sizeof(full), "%s%s%s", path ? path : "", path ? "." : "", kn->str);
		/* Duplicate keys: YAML forbids them, libyaml does not notice. */
		for (size_t j = 0; j < i; j += 2)
			if (map->items[j]->kind == GPUMEM_Y_SCALAR &&
			    strcmp(map->items[j]->str, kn->str) == 0) {
				gpumem_walk_error(w, kn, "duplicate key '%s' (first at line %d)",
						  full, map->items[j]->line);
				goto next;
			}
		for (const struct gpumem_key *c = keys; c->name; c++)
			if (strcmp(c->name, kn->str) == 0) {
				k = c;
				break;
			}
		if (k == NULL) {
			const char *near = gpumem_walk_closest(kn->str, &keys[0].name, sizeof(*keys));

			gpumem_walk_error(w, kn, "unknown key '%s'%s%s%s", full,
					  near ? " (did you mean '" : "", near ? near : "",
					  near ? "'?)" : "");
			continue;
		}
		if (gpumem_walk_value(w, k, vn, full) == 0) {
			if (k->pos_off) {
				int *pos = (int *)(w->base + k->pos_off);

				pos[0] = vn->line;
				pos[1] = vn->col;
			}
			if (w->set && k->type != GPUMEM_KT_SECTION)
				*w->set |= k->bit;
			if (w->sections && k->type == GPUMEM_KT_SECTION)
				*w->sections |= k->bit;
		}
next:
		;
	}
	for (const struct gpumem_key *c = keys; c->name; c++) {
		int found = 0;

		if (!c->required)
			continue;
		for (size_t i = 0; i + 1 < map->n; i += 2)
			if (map->items[i]->kind == GPUMEM_Y_SCALAR &&
			    strcmp(map->items[i]->str, c->name) == 0)
				found = 1;
		if (!found)
			gpumem_walk_error(w, map, "missing required key '%s%s%s'", path ? path : "",
					  path ? "." : "", c->name);
	}
}

/* Walk a parsed tree (NULL: an empty stream), then free it. */
static int walk_tree(struct gpumem_ynode *root, const char *name, const struct gpumem_key *top,
		     struct gpumem_walk *w, const char *what)
{
	int before = w->d->nerrors;

	if (root == NULL || (root->kind == GPUMEM_Y_SCALAR && root->str[0] == '\0' &&
			     root->plain)) {
		gpumem_diag_add(w->d, GPUMEM_SEV_ERROR, name, 1, 1,
				"empty %s: it must at least say 'version: 1'", what);
		gpumem_ynode_free(root);
		return -1;
	}
	if (root->kind != GPUMEM_Y_MAP) {
		gpumem_walk_error(w, root, "a %s is a mapping of keys, not %s", what,
				  gpumem_walk_kind(root));
		gpumem_ynode_free(root);
		return -1;
	}
	gpumem_walk_map(w, top, root, NULL);
	gpumem_ynode_free(root);
	return w->d->nerrors > before ? -1 : 0;
}

int gpumem_walk_buffer(const char *buf, size_t len, const char *name,
		       const struct gpumem_key *top, struct gpumem_walk *w, const char *what)
{
	struct gpumem_ynode *root = NULL;

	if (gpumem_yaml_parse(buf, len, name, &root, w->d) < 0)
		return -1;
	return walk_tree(root, name, top, w, what);
}

/*
 * A JSON value as the tree the walker reads: objects are mappings, arrays
 * lists, strings quoted scalars, the rest plain scalars in their JSON text.
 * No positions: json-c keeps none.  NULL with an error in w on failure.
 */
static struct gpumem_ynode *from_json(struct gpumem_walk *w, struct json_object *v)
{
	struct gpumem_ynode *n = calloc(1, sizeof(*n));
	enum json_type t = json_object_get_type(v);
	size_t cap = 0, i = 0;

	if (n == NULL)
		goto oom;
	if (t == json_type_object || t == json_type_array) {
		n->kind = t == json_type_object ? GPUMEM_Y_MAP : GPUMEM_Y_SEQ;
		cap = t == json_type_object ? 2 * (size_t)json_object_object_length(v) :
			json_object_array_length(v);
		n->items = calloc(cap ? cap : 1, sizeof(*n->items));
		if (n->items == NULL)
			goto oom;
		if (t == json_type_object) {
			json_object_object_foreach(v, k, item) {
				struct gpumem_ynode *kn = calloc(1, sizeof(*kn));

				if (kn == NULL || (kn->str = strdup(k)) == NULL) {
					free(kn);
					goto oom;
				}
				n->items[n->n++] = kn;
				if ((n->items[n->n++] = from_json(w, item)) == NULL)
					goto fail;
			}
		}
		for (i = 0; t == json_type_array && i < cap; i++)
			if ((n->items[n->n++] = from_json(w, json_object_array_get_idx(v, i))) == NULL)
				goto fail;
		return n;
	}
	n->plain = t != json_type_string;
	n->str = strdup(t == json_type_null ? "null" : json_object_get_string(v));
	if (n->str == NULL)
		goto oom;
	if (strlen(n->str) > GPUMEM_MAX_SCALAR) {
		gpumem_walk_error(w, NULL, "a value longer than %d bytes", GPUMEM_MAX_SCALAR);
		goto fail;
	}
	return n;
oom:
	gpumem_walk_error(w, NULL, "out of memory");
fail:
	gpumem_ynode_free(n);
	return NULL;
}

int gpumem_walk_json_buffer(const char *buf, size_t len, const char *name,
			    const struct gpumem_key *top, struct gpumem_walk *w, const char *what)
{
	static const struct gpumem_json_caps caps = {
		GPUMEM_MAX_FILE_BYTES, GPUMEM_MAX_DEPTH, GPUMEM_MAX_NODES, "a policy"
	};
	struct json_object *v;
	struct gpumem_ynode *root;
	char err[300];

	if (gpumem_json_parse(buf, len, &caps, &v, err, sizeof(err)) < 0) {
		gpumem_walk_error(w, NULL, "not valid JSON: %s", err);
		return -1;
	}
	root = v ? from_json(w, v) : NULL;
	json_object_put(v);
	if (v && root == NULL)
		return -1;
	return walk_tree(root, name, top, w, what);
}

int gpumem_walk_version(struct gpumem_walk *w, const struct gpumem_ynode *n)
{
	double v;

	if (gpumem_walk_number(w, n, "version", -1e9, 1e9, &v) < 0)
		return -1;
	if (v != 1) {
		gpumem_walk_error(w, n, "unsupported version %s: this gpumem reads version 1",
				  n->str);
		return -1;
	}
	return 0;
}

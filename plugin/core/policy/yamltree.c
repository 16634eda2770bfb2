/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * YAML to a bounded tree.  We use libyaml's event parser, not its document
 * loader, because the loader expands aliases and has no depth or size
 * limits: here every limit is checked as the events arrive, so a hostile
 * file costs at most GPUMEM_MAX_FILE_BYTES of scanning.
 */
#include <stdlib.h>
#include <string.h>
#include <yaml.h>
#include "yamltree.h"

#define E(d, name, line, col, ...) \
	gpumem_diag_add(d, GPUMEM_SEV_ERROR, name, line, col, __VA_ARGS__)

/* Byte-level checks libyaml does not report clearly (or at all). */
static int prescan(const unsigned char *s, size_t len, const char *name,
		   struct gpumem_diags *d)
{
	int line = 1, col = 1, at_indent = 1;

	for (size_t i = 0; i < len;) {
		unsigned char c = s[i];
		size_t need = 0;

		if (c == '\0') {
			E(d, name, line, col, "NUL byte in file");
			return -1;
		}
		if (c == '\t' && at_indent) {
			E(d, name, line, col, "tab character in indentation: YAML indents with spaces");
			return -1;
		}
		if (c >= 0x80) {
			need = gpumem_utf8_len(s + i, len - i);
			if (need == 0)
				goto bad_utf8;
			need--;
		}
		if (c == '\n') {
			line++;
			col = 1;
			at_indent = 1;
		} else {
			col++;
			if (c != ' ' && c != '\t')
				at_indent = 0;
		}
		i += need + 1;
		continue;
bad_utf8:
		E(d, name, line, col, "invalid UTF-8 byte 0x%02x", c);
		return -1;
	}
	return 0;
}

static struct gpumem_ynode *node_new(enum gpumem_ykind kind, const yaml_mark_t *m)
{
	struct gpumem_ynode *n = calloc(1, sizeof(*n));

	if (n) {
		n->kind = kind;
		n->line = (int)m->line + 1;
		n->col = (int)m->column + 1;
	}
	return n;
}

static int node_append(struct gpumem_ynode *parent, struct gpumem_ynode *child)
{
	struct gpumem_ynode **items;

	/* Capacity doubles at powers of two: no quadratic copying. */
	if ((parent->n & (parent->n - 1)) == 0) {
		size_t cap = parent->n ? parent->n * 2 : 1;

		items = realloc(parent->items, cap * sizeof(*items));
		if (items == NULL)
			return -1;
		parent->items = items;
	}
	parent->items[parent->n++] = child;
	return 0;
}

void gpumem_ynode_free(struct gpumem_ynode *n)
{
	if (n == NULL)
		return;
	for (size_t i = 0; i < n->n; i++)
		gpumem_ynode_free(n->items[i]);
	free(n->items);
	free(n->str);
	free(n);
}

/* A scalar, mapping or sequence event: checked against the caps, as a node in *out. */
static int node_event(const yaml_event_t *ev, const char *name, int depth, int *nodes,
		      struct gpumem_ynode **out, struct gpumem_diags *d)
{
	const yaml_mark_t *m = &ev->start_mark;
	const yaml_char_t *anchor = ev->type == YAML_SCALAR_EVENT ? ev->data.scalar.anchor :
		ev->type == YAML_MAPPING_START_EVENT ? ev->data.mapping_start.anchor :
		ev->data.sequence_start.anchor;
	const yaml_char_t *tag = ev->type == YAML_SCALAR_EVENT ? ev->data.scalar.tag :
		ev->type == YAML_MAPPING_START_EVENT ? ev->data.mapping_start.tag :
		ev->data.sequence_start.tag;
	int line = (int)m->line + 1, col = (int)m->column + 1;
	struct gpumem_ynode *n;

	if (anchor)
		return E(d, name, line, col, "YAML anchors (&%s) are not allowed in a policy",
			 (const char *)anchor), -1;
	if (tag)
		return E(d, name, line, col, "YAML tags (%s) are not allowed in a policy",
			 (const char *)tag), -1;
	if (++*nodes > GPUMEM_MAX_NODES)
		return E(d, name, line, col, "more than %d YAML nodes: not a policy",
			 GPUMEM_MAX_NODES), -1;
	if (ev->type == YAML_SCALAR_EVENT) {
		if (ev->data.scalar.length > GPUMEM_MAX_SCALAR)
			return E(d, name, line, col, "value of %zu bytes is longer than the %d-byte "
				 "limit", ev->data.scalar.length, GPUMEM_MAX_SCALAR), -1;
		if (memchr(ev->data.scalar.value, 0, ev->data.scalar.length))
			return E(d, name, line, col, "NUL character in value"), -1;
		n = node_new(GPUMEM_Y_SCALAR, m);
		if (n) {
			n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
			n->str = strndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
			if (n->str == NULL) {
				free(n);
				n = NULL;
			}
		}
	} else {
		if (depth >= GPUMEM_MAX_DEPTH)
			return E(d, name, line, col, "nesting deeper than %d levels",
				 GPUMEM_MAX_DEPTH), -1;
		n = node_new(ev->type == YAML_MAPPING_START_EVENT ? GPUMEM_Y_MAP : GPUMEM_Y_SEQ, m);
	}
	if (n == NULL)
		return E(d, name, 0, 0, "out of memory"), -1;
	*out = n;
	return 0;
}

/* One event into the tree: 1 at the stream's end, 0, -1 (said). */
static int event(const yaml_event_t *ev, const char *name, struct gpumem_ynode **stack,
		 int *depth, int *nodes, int *docs, struct gpumem_ynode **root,
		 struct gpumem_diags *d)
{
	const yaml_mark_t *m = &ev->start_mark;
	struct gpumem_ynode *n = NULL;

	switch (ev->type) {
	case YAML_STREAM_END_EVENT:
		return 1;
	case YAML_DOCUMENT_START_EVENT:
		if (++*docs > 1)
			return E(d, name, (int)m->line + 1, (int)m->column + 1,
				 "more than one YAML document: a policy is a single document"), -1;
		return 0;
	case YAML_ALIAS_EVENT:
		return E(d, name, (int)m->line + 1, (int)m->column + 1,
			 "YAML aliases (*%s) are not allowed in a policy",
			 (const char *)ev->data.alias.anchor), -1;
	case YAML_SCALAR_EVENT:
	case YAML_MAPPING_START_EVENT:
	case YAML_SEQUENCE_START_EVENT:
		if (node_event(ev, name, *depth, nodes, &n, d) < 0)
			return -1;
		if (*depth == 0) {
			*root = n;
		} else if (node_append(stack[*depth - 1], n) < 0) {
			gpumem_ynode_free(n);
			return E(d, name, 0, 0, "out of memory"), -1;
		}
		if (n->kind != GPUMEM_Y_SCALAR)
			stack[(*depth)++] = n;
		return 0;
	case YAML_MAPPING_END_EVENT:
	case YAML_SEQUENCE_END_EVENT:
		(*depth)--;
		return 0;
	default:
		return 0;
	}
}

int gpumem_yaml_parse(const char *buf, size_t len, const char *name,
		      struct gpumem_ynode **rootp, struct gpumem_diags *d)
{
	struct gpumem_ynode *stack[GPUMEM_MAX_DEPTH + 1];
	struct gpumem_ynode *root = NULL;
	yaml_parser_t parser;
	yaml_event_t ev;
	int depth = 0, nodes = 0, docs = 0, r = 0;
	int rv = -1;

	*rootp = NULL;
	if (len > GPUMEM_MAX_FILE_BYTES) {
		E(d, name, 0, 0, "larger than the %d-byte limit", GPUMEM_MAX_FILE_BYTES);
		return -1;
	}
	if (prescan((const unsigned char *)buf, len, name, d) < 0)
		return -1;
	if (!yaml_parser_initialize(&parser)) {
		E(d, name, 0, 0, "out of memory");
		return -1;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
	while (r == 0) {
		if (!yaml_parser_parse(&parser, &ev)) {
			E(d, name, (int)parser.problem_mark.line + 1,
			  (int)parser.problem_mark.column + 1, "YAML syntax error: %s%s%s",
			  parser.problem ? parser.problem : "malformed document",
			  parser.context ? " " : "", parser.context ? parser.context : "");
			goto fail;
		}
		r = event(&ev, name, stack, &depth, &nodes, &docs, &root, d);
		yaml_event_delete(&ev);
		if (r < 0)
			goto fail;
	}
	*rootp = root;
	root = NULL;
	rv = 0;
fail:
	gpumem_ynode_free(root);
	yaml_parser_delete(&parser);
	return rv;
}

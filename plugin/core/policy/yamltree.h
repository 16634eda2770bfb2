/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A small, bounded YAML document tree built from libyaml events. */
#ifndef GPUMEM_YAMLTREE_H
#define GPUMEM_YAMLTREE_H
#include <stddef.h>
#include "policy.h"

enum gpumem_ykind { GPUMEM_Y_SCALAR, GPUMEM_Y_MAP, GPUMEM_Y_SEQ };

struct gpumem_ynode {
	enum gpumem_ykind kind;
	int line, col;          /* 1-based */
	int plain;              /* an unquoted scalar */
	char *str;              /* scalar text */
	struct gpumem_ynode **items; /* map: key, value, key, value...; seq: items */
	size_t n;
};

/*
 * Parse one YAML document.  Rejects, with file:line:col, what a policy has
 * no use for and what could hurt the reader: NUL bytes, invalid UTF-8, tab
 * indentation, several documents, anchors, aliases, tags, nesting deeper
 * than GPUMEM_MAX_DEPTH, more than GPUMEM_MAX_NODES nodes, scalars longer
 * than GPUMEM_MAX_SCALAR.  *root is NULL for an empty stream.
 */
int gpumem_yaml_parse(const char *buf, size_t len, const char *name,
		      struct gpumem_ynode **root, struct gpumem_diags *d);
void gpumem_ynode_free(struct gpumem_ynode *n);
#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A table-driven walk of a YAML tree: each key names its type, range and
 * where its value goes.  One walker serves the policy and the site file, so
 * every key of both gets the same checks and the same messages.
 */
#ifndef GPUMEM_SCHEMA_H
#define GPUMEM_SCHEMA_H
#include <stddef.h>
#include "policy.h"
#include "yamltree.h"

enum gpumem_ktype {
	GPUMEM_KT_SECTION,      /* mapping; 'sub' describes it */
	GPUMEM_KT_POLICY,       /* mapping holding policy sections (site defaults) */
	GPUMEM_KT_BOOL,         /* int */
	GPUMEM_KT_INT,          /* int in [min, max] */
	GPUMEM_KT_SIZE,         /* uint64_t bytes */
	GPUMEM_KT_L2LIMIT,      /* N% or a size, into the policy's l2 fields */
	GPUMEM_KT_PERCENT,      /* double in [min, max], "N%" or N */
	GPUMEM_KT_FRACTION,     /* double in [min, max] */
	GPUMEM_KT_ENUM,         /* int: index in 'names' */
	GPUMEM_KT_ENUM_LIST,    /* unsigned: bit per index in 'names' */
	GPUMEM_KT_STRING,       /* char *, malloc'd */
	GPUMEM_KT_PATH,         /* char *, absolute path */
	GPUMEM_KT_FRACTION_AUTO,/* double in [min, max], or "auto" (GPUMEM_FRACTION_AUTO) */
	GPUMEM_KT_POW2SIZE,     /* uint64_t bytes, a power of two in [min, max] */
	GPUMEM_KT_CUSTOM,       /* 'custom' handles the node */
};

struct gpumem_walk;
struct gpumem_key {
	const char *name;
	enum gpumem_ktype type;
	size_t off;                     /* in the walk's base */
	unsigned bit;                   /* GPUMEM_K_* or GPUMEM_S_* to set */
	double min, max;
	const char *const *names;       /* enum names, NULL-terminated */
	const struct gpumem_key *sub;   /* section keys, {NULL} ended */
	int (*custom)(struct gpumem_walk *w, const struct gpumem_ynode *n);
	int required;
	size_t pos_off;                 /* if set: int[2] in the base for line, col */
	const char *unset;              /* format.c: a policy key not set is written
					 * "null  # not set: UNSET"; a section the
					 * policy lacks, "# no SECTION section: UNSET" */
};

struct gpumem_walk {
	const char *file;
	struct gpumem_diags *d;
	char *base;
	unsigned *set;                  /* policy key bits, or NULL */
	unsigned *sections;             /* policy section bits, or NULL */
};

/* The key tables: a policy's sections (and its "version"), the site file's top level. */
extern const struct gpumem_key *const gpumem_policy_sections;
extern const struct gpumem_key gpumem_site_keys[];
/* The keys of one rule of the site's advice: list (advise_site.c; list_keys: advice.KEY). */
extern const struct gpumem_key gpumem_advice_rule_keys[];
/* NAMES[V], or NAMES[0] when V is past the list. */
const char *gpumem_enum_name(const char *const *names, unsigned v);
/* Every key bit of policy section I (GPUMEM_S_* order), from the table. */
unsigned gpumem_section_key_bits(unsigned i);
/* FN for each key under KEYS that is no section, with its dotted name under PREFIX. */
void gpumem_keys_each(const struct gpumem_key *keys, const char *prefix,
		      void (*fn)(const char *name, const struct gpumem_key *k, void *arg), void *arg);

/* Walk mapping 'map' against 'keys'; 'path' prefixes key names in messages. */
void gpumem_walk_map(struct gpumem_walk *w, const struct gpumem_key *keys,
		     const struct gpumem_ynode *map, const char *path);
/* Helpers for custom handlers. */
void gpumem_walk_error(struct gpumem_walk *w, const struct gpumem_ynode *n,
		       const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int gpumem_walk_number(struct gpumem_walk *w, const struct gpumem_ynode *n,
		       const char *key, double min, double max, double *out);
/* Between schema.c (the walk) and schema_value.c (one value by its type). */
int gpumem_walk_value(struct gpumem_walk *w, const struct gpumem_key *k,
		      const struct gpumem_ynode *v, const char *key);
/* "a mapping", "a list", "a value" (for messages). */
const char *gpumem_walk_kind(const struct gpumem_ynode *n);
/* The candidate nearest to word (every stride bytes from cands, NULL-ended), or NULL. */
const char *gpumem_walk_closest(const char *word, const char *const *cands, size_t stride);
/* The required top-level "version: 1". */
int gpumem_walk_version(struct gpumem_walk *w, const struct gpumem_ynode *n);
/* Parse buf into a tree and walk it; shared by policy and site loading. */
int gpumem_walk_buffer(const char *buf, size_t len, const char *name,
		       const struct gpumem_key *top, struct gpumem_walk *w,
		       const char *what);
/* The same for JSON (a forwarded policy), read with the JSON module (json.h). */
int gpumem_walk_json_buffer(const char *buf, size_t len, const char *name,
			    const struct gpumem_key *top, struct gpumem_walk *w,
			    const char *what);
#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One value of the walk by its key's type (schema.h's gpumem_ktype): the
 * checks, ranges and messages of booleans, integers, sizes, percentages,
 * fractions, enums, strings and paths, and the suggestion ("did you mean")
 * for a misspelt word.  schema.c walks the tree and calls
 * gpumem_walk_value for each key it knows.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "schema.h"

const char *gpumem_walk_kind(const struct gpumem_ynode *n)
{
	return n->kind == GPUMEM_Y_MAP ? "a mapping" : n->kind == GPUMEM_Y_SEQ ?
		"a list" : "a value";
}

/* Edit distance, for "did you mean": keys are short, so O(n*m) is fine. */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), prev[64], cur[64];

	if (la >= 63 || lb >= 63)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;

			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
		memcpy(prev, cur, (lb + 1) * sizeof(size_t));
	}
	return prev[lb];
}

const char *gpumem_walk_closest(const char *word, const char *const *cands, size_t stride)
{
	const char *best = NULL;
	size_t bestd = 3;

	for (const char *const *c = cands; *c; c = (const char *const *)((const char *)c + stride)) {
		size_t dd = distance(word, *c);
		size_t limit = strlen(*c) / 3 + 1;

		if (dd < bestd && dd <= limit) {
			bestd = dd;
			best = *c;
		}
		/* A prefix ("reset" for "reset_at_exit") is a likely slip too. */
		if (best == NULL && strlen(word) >= 4 && strncmp(*c, word, strlen(word)) == 0)
			best = *c;
	}
	return best;
}

static void join_names(const char *const *names, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; names[i] && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "", names[i]);
}

int gpumem_walk_number(struct gpumem_walk *w, const struct gpumem_ynode *n,
		       const char *key, double min, double max, double *out)
{
	char *end;
	double v;

	if (n->kind != GPUMEM_Y_SCALAR) {
		gpumem_walk_error(w, n, "%s: expected a number, got %s", key, gpumem_walk_kind(n));
		return -1;
	}
	errno = 0;
	v = strtod(n->str, &end);
	if (end == n->str || *end != '\0' || errno == ERANGE || !isfinite(v) ||
	    isspace((unsigned char)n->str[0])) {
		gpumem_walk_error(w, n, "%s: '%s' is not a number", key, n->str);
		return -1;
	}
	if (v < min || v > max) {
		gpumem_walk_error(w, n, "%s: %s is out of range [%g, %g]", key, n->str, min, max);
		return -1;
	}
	/* -0 is 0: written as "-0" it would read back as the integer 0, another text. */
	*out = v == 0 ? 0.0 : v;
	return 0;
}

static int parse_int(struct gpumem_walk *w, const struct gpumem_ynode *n, const char *key,
		     long min, long max, int *out)
{
	const char *p;
	char *end;
	long v;

	if (n->kind != GPUMEM_Y_SCALAR) {
		gpumem_walk_error(w, n, "%s: expected an integer, got %s", key, gpumem_walk_kind(n));
		return -1;
	}
	p = n->str;
	errno = 0;
	v = strtol(p, &end, 10);
	if (end == p || *end != '\0' || isspace((unsigned char)*p)) {
		gpumem_walk_error(w, n, "%s: '%s' is not an integer", key, n->str);
		return -1;
	}
	if (errno == ERANGE || v < min || v > max) {
		gpumem_walk_error(w, n, "%s: %s is out of range [%ld, %ld]", key, n->str, min, max);
		return -1;
	}
	*out = (int)v;
	return 0;
}

static int parse_enum(struct gpumem_walk *w, const struct gpumem_ynode *n, const char *key,
		      const char *const *names, int *out)
{
	char list[256];
	const char *near;

	if (n->kind != GPUMEM_Y_SCALAR) {
		gpumem_walk_error(w, n, "%s: expected one word, got %s", key, gpumem_walk_kind(n));
		return -1;
	}
	for (int i = 0; names[i]; i++)
		if (strcmp(n->str, names[i]) == 0) {
			*out = i;
			return 0;
		}
	join_names(names, list, sizeof(list));
	near = gpumem_walk_closest(n->str, names, sizeof(char *));
	gpumem_walk_error(w, n, "%s: '%s' is not one of: %s%s%s%s", key, n->str, list,
			  near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
	return -1;
}

/* Percent: "62.5%" or a bare number, both meaning percent. */
static int parse_percent(struct gpumem_walk *w, const struct gpumem_ynode *n, const char *key,
			 double min, double max, double *out)
{
	struct gpumem_ynode tmp;
	char buf[GPUMEM_MAX_SCALAR + 1];
	size_t len;

	if (n->kind != GPUMEM_Y_SCALAR)
		return gpumem_walk_number(w, n, key, min, max, out);
	len = strlen(n->str);
	if (len == 0 || n->str[len - 1] != '%')
		return gpumem_walk_number(w, n, key, min, max, out);
	memcpy(buf, n->str, len - 1);
	buf[len - 1] = '\0';
	tmp = *n;
	tmp.str = buf;
	return gpumem_walk_number(w, &tmp, key, min, max, out);
}

static int parse_size(struct gpumem_walk *w, const struct gpumem_ynode *n, const char *key,
		      uint64_t *out)
{
	const char *why;

	if (n->kind != GPUMEM_Y_SCALAR) {
		gpumem_walk_error(w, n, "%s: expected a size, got %s", key, gpumem_walk_kind(n));
		return -1;
	}
	if (gpumem_parse_size(n->str, out, &why) < 0) {
		gpumem_walk_error(w, n, "%s: '%s': %s", key, n->str, why);
		return -1;
	}
	return 0;
}

static int kt_section(struct gpumem_walk *w, const struct gpumem_key *k,
		      const struct gpumem_ynode *v, const char *key)
{
	if (v->kind != GPUMEM_Y_MAP) {
		gpumem_walk_error(w, v, "%s: expected a mapping of keys, got %s%s", key,
				  gpumem_walk_kind(v), v->kind == GPUMEM_Y_SCALAR &&
				  !v->str[0] ? " (write {} for an empty section)" : "");
		return -1;
	}
	gpumem_walk_map(w, k->sub, v, key);
	return 0;
}

static int kt_policy(struct gpumem_walk *w, const struct gpumem_ynode *v, const char *key,
		     void *dst)
{
	struct gpumem_policy *p = dst;
	struct gpumem_walk sub = { w->file, w->d, dst, &p->set, &p->sections };

	if (v->kind != GPUMEM_Y_MAP) {
		gpumem_walk_error(w, v, "%s: expected a mapping of policy sections, got %s",
				  key, gpumem_walk_kind(v));
		return -1;
	}
	gpumem_walk_map(&sub, gpumem_policy_sections, v, key);
	return 0;
}

static int kt_bool(struct gpumem_walk *w, const struct gpumem_ynode *v, const char *key,
		   void *dst)
{
	if (v->kind != GPUMEM_Y_SCALAR || (strcmp(v->str, "true") && strcmp(v->str, "false"))) {
		gpumem_walk_error(w, v, "%s: expected true or false, got %s%s%s%s", key,
				  v->kind == GPUMEM_Y_SCALAR ? "'" : gpumem_walk_kind(v),
				  v->kind == GPUMEM_Y_SCALAR ? v->str : "",
				  v->kind == GPUMEM_Y_SCALAR ? "'" : "", "");
		return -1;
	}
	*(int *)dst = v->str[0] == 't';
	return 0;
}

/* A size with a maximum (0: none). */
static int kt_size(struct gpumem_walk *w, const struct gpumem_key *k,
		   const struct gpumem_ynode *v, const char *key, void *dst)
{
	uint64_t uv;

	if (parse_size(w, v, key, &uv) < 0)
		return -1;
	if (k->max > 0 && (double)uv > k->max) {
		gpumem_walk_error(w, v, "%s: %s is larger than the %.0f-byte maximum",
				  key, v->str, k->max);
		return -1;
	}
	*(uint64_t *)dst = uv;
	return 0;
}

/* l2.persisting_limit: a percentage of the L2, or a size. */
static int kt_l2limit(struct gpumem_walk *w, const struct gpumem_key *k,
		      const struct gpumem_ynode *v, const char *key)
{
	struct gpumem_policy *p = (struct gpumem_policy *)w->base;
	uint64_t uv;
	double dv;

	if (v->kind == GPUMEM_Y_SCALAR && strchr(v->str, '%')) {
		if (parse_percent(w, v, key, 0, 100, &dv) < 0)
			return -1;
		p->l2.limit_is_percent = 1;
		p->l2.limit_percent = dv;
		p->l2.limit_bytes = 0;
		return 0;
	}
	if (kt_size(w, k, v, key, &uv) < 0)
		return -1;
	p->l2.limit_is_percent = 0;
	p->l2.limit_percent = 0;
	p->l2.limit_bytes = uv;
	return 0;
}

static int kt_fraction_auto(struct gpumem_walk *w, const struct gpumem_key *k,
			    const struct gpumem_ynode *v, const char *key, void *dst)
{
	double dv;

	if (v->kind == GPUMEM_Y_SCALAR && strcmp(v->str, "auto") == 0) {
		*(double *)dst = GPUMEM_FRACTION_AUTO;
		return 0;
	}
	if (v->kind == GPUMEM_Y_SCALAR && isalpha((unsigned char)v->str[0])) {
		static const char *const autos[] = { "auto", NULL };
		const char *near = gpumem_walk_closest(v->str, autos, sizeof(char *));

		gpumem_walk_error(w, v, "%s: '%s' is neither auto nor a number in [%g, %g]%s",
				  key, v->str, k->min, k->max,
				  near ? " (did you mean 'auto'?)" : "");
		return -1;
	}
	if (gpumem_walk_number(w, v, key, k->min, k->max, &dv) < 0)
		return -1;
	*(double *)dst = dv;
	return 0;
}

static int kt_pow2size(struct gpumem_walk *w, const struct gpumem_key *k,
		       const struct gpumem_ynode *v, const char *key, void *dst)
{
	uint64_t uv;

	if (parse_size(w, v, key, &uv) < 0)
		return -1;
	if ((double)uv < k->min || (double)uv > k->max || (uv & (uv - 1)) != 0) {
		char lo[32], hi[32];

		gpumem_format_size((uint64_t)k->min, lo, sizeof(lo));
		gpumem_format_size((uint64_t)k->max, hi, sizeof(hi));
		gpumem_walk_error(w, v, "%s: %s is not a power of two from %s to %s", key,
				  v->str, lo, hi);
		return -1;
	}
	*(uint64_t *)dst = uv;
	return 0;
}

/* A list of names (a single word is a one-item list), as bits. */
static int kt_enum_list(struct gpumem_walk *w, const struct gpumem_key *k,
			const struct gpumem_ynode *v, const char *key, void *dst)
{
	unsigned bits = 0;
	int bad = 0, iv;

	if (v->kind == GPUMEM_Y_SCALAR) {
		if (parse_enum(w, v, key, k->names, &iv) < 0)
			return -1;
		bits = 1u << iv;
	} else if (v->kind == GPUMEM_Y_SEQ) {
		for (size_t i = 0; i < v->n; i++) {
			if (parse_enum(w, v->items[i], key, k->names, &iv) < 0) {
				bad = 1;
				continue;
			}
			if (bits & (1u << iv)) {
				gpumem_walk_error(w, v->items[i], "%s: '%s' is listed twice",
						  key, v->items[i]->str);
				bad = 1;
			}
			bits |= 1u << iv;
		}
	} else {
		gpumem_walk_error(w, v, "%s: expected a list, got a mapping", key);
		return -1;
	}
	if (bad)
		return -1;
	*(unsigned *)dst = bits;
	return 0;
}

static int kt_string(struct gpumem_walk *w, const struct gpumem_key *k,
		     const struct gpumem_ynode *v, const char *key, void *dst)
{
	char **sp = dst;

	if (v->kind != GPUMEM_Y_SCALAR) {
		gpumem_walk_error(w, v, "%s: expected a string, got %s", key, gpumem_walk_kind(v));
		return -1;
	}
	if (k->type == GPUMEM_KT_PATH && v->str[0] != '/') {
		gpumem_walk_error(w, v, "%s: '%s' must be an absolute path", key, v->str);
		return -1;
	}
	for (const char *c = v->str; *c; c++)
		if ((unsigned char)*c < 0x20) {
			gpumem_walk_error(w, v, "%s: control character in value", key);
			return -1;
		}
	free(*sp);
	*sp = strdup(v->str);
	return *sp ? 0 : -1;
}

/* One key's value into its place, by the key's type; -1 with an error said. */
int gpumem_walk_value(struct gpumem_walk *w, const struct gpumem_key *k,
		  const struct gpumem_ynode *v, const char *key)
{
	void *dst = w->base + k->off;
	int iv;
	double dv;

	switch (k->type) {
	case GPUMEM_KT_SECTION: return kt_section(w, k, v, key);
	case GPUMEM_KT_POLICY: return kt_policy(w, v, key, dst);
	case GPUMEM_KT_BOOL: return kt_bool(w, v, key, dst);
	case GPUMEM_KT_INT:
		if (parse_int(w, v, key, (long)k->min, (long)k->max, &iv) < 0)
			return -1;
		*(int *)dst = iv;
		return 0;
	case GPUMEM_KT_SIZE: return kt_size(w, k, v, key, dst);
	case GPUMEM_KT_L2LIMIT: return kt_l2limit(w, k, v, key);
	case GPUMEM_KT_PERCENT:
		if (parse_percent(w, v, key, k->min, k->max, &dv) < 0)
			return -1;
		*(double *)dst = dv;
		return 0;
	case GPUMEM_KT_FRACTION:
		if (gpumem_walk_number(w, v, key, k->min, k->max, &dv) < 0)
			return -1;
		*(double *)dst = dv;
		return 0;
	case GPUMEM_KT_FRACTION_AUTO: return kt_fraction_auto(w, k, v, key, dst);
	case GPUMEM_KT_POW2SIZE: return kt_pow2size(w, k, v, key, dst);
	case GPUMEM_KT_ENUM:
		if (parse_enum(w, v, key, k->names, &iv) < 0)
			return -1;
		*(int *)dst = iv;
		return 0;
	case GPUMEM_KT_ENUM_LIST: return kt_enum_list(w, k, v, key, dst);
	case GPUMEM_KT_STRING:
	case GPUMEM_KT_PATH: return kt_string(w, k, v, key, dst);
	case GPUMEM_KT_CUSTOM: return k->custom(w, v);
	}
	return -1;
}


/* The table-driven walker shared by the policy and the site file. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "json.h"
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

static const char *kind_name(const struct gpumem_ynode *n)
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

static const char *closest(const char *word, const char *const *cands, size_t stride)
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
		gpumem_walk_error(w, n, "%s: expected a number, got %s", key, kind_name(n));
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
	*out = v;
	return 0;
}

static int parse_int(struct gpumem_walk *w, const struct gpumem_ynode *n, const char *key,
		     long min, long max, int *out)
{
	const char *p;
	char *end;
	long v;

	if (n->kind != GPUMEM_Y_SCALAR) {
		gpumem_walk_error(w, n, "%s: expected an integer, got %s", key, kind_name(n));
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
		gpumem_walk_error(w, n, "%s: expected one word, got %s", key, kind_name(n));
		return -1;
	}
	for (int i = 0; names[i]; i++)
		if (strcmp(n->str, names[i]) == 0) {
			*out = i;
			return 0;
		}
	join_names(names, list, sizeof(list));
	near = closest(n->str, names, sizeof(char *));
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
		gpumem_walk_error(w, n, "%s: expected a size, got %s", key, kind_name(n));
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
				  kind_name(v), v->kind == GPUMEM_Y_SCALAR &&
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
				  key, kind_name(v));
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
				  v->kind == GPUMEM_Y_SCALAR ? "'" : kind_name(v),
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
		const char *near = closest(v->str, autos, sizeof(char *));

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
		gpumem_walk_error(w, v, "%s: expected a string, got %s", key, kind_name(v));
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
static int handle(struct gpumem_walk *w, const struct gpumem_key *k,
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
			const char *near = closest(kn->str, &keys[0].name, sizeof(*keys));

			gpumem_walk_error(w, kn, "unknown key '%s'%s%s%s", full,
					  near ? " (did you mean '" : "", near ? near : "",
					  near ? "'?)" : "");
			continue;
		}
		if (handle(w, k, vn, full) == 0) {
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
				  kind_name(root));
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

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The per-job GPU memory profile (profile.h): the check of a
 * gpumem-profile/1 document before the plugin embeds it in a report (the
 * document comes from gpumem-sample, which runs as nobody: it is read as a
 * hostile file would be), its compact summary for the accounting record
 * ("prof"), and the check of that summary when a record is read back.
 * Every refusal names the member it refused, so a broken sampler is found
 * from the report alone.  JSON through the JSON module (json.h).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "profile.h"

#define MAX_SECONDS 1e9
#define MAX_SAMPLES 1e12
#define MAX_INDEX 4095
#define MAX_ABOVE 8
#define MAX_MEMBERS 32
#define TOKEN_CHARS 32
/* Figures of a compact row: anything larger is not a figure. */
#define MAX_FIGURE 1e7

enum kind { PCT, GBPS, GIB };

static const struct {
	const char *unit;
	double max;
} kinds[] = {
	[PCT] = { "%", GPUMEM_PROFILE_MAX_PCT },
	[GBPS] = { "GB/s", GPUMEM_PROFILE_MAX_GBPS },
	[GIB] = { "GiB", GPUMEM_PROFILE_MAX_GIB },
};

static const struct {
	const char *name;
	enum kind kind;
} metrics[] = {
	{ "dram_bw_util", PCT }, { "sm_util", PCT }, { "sm_occupancy", PCT },
	{ "pcie_rx", GBPS }, { "pcie_tx", GBPS }, { "nvlink_rx", GBPS }, { "nvlink_tx", GBPS },
	{ "mem_used", GIB },
};

__attribute__((format(printf, 4, 5)))
static int bad(char *err, size_t len, const char *path, const char *fmt, ...)
{
	char msg[192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(err, len, "%s%s%s", path, path[0] ? ": " : "", msg);
	return -1;
}

/* Characters (UTF-8 code points) of S. */
static size_t chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static int is_number(struct json_object *v)
{
	return gpumem_json_is(v, json_type_int) || gpumem_json_is(v, json_type_double);
}

/* Member KEY of OBJ: a number in LO..HI (INTEGRAL: a whole one), or (NULLABLE) null/absent. */
static int num_member(struct json_object *obj, const char *key, const char *at, int nullable,
		      double lo, double hi, int integral, char *err, size_t len)
{
	struct json_object *v = gpumem_json_get(obj, key);
	char path[160];
	double x;

	snprintf(path, sizeof(path), "%.100s%s%.40s", at, at[0] ? "." : "", key);
	if (v == NULL)
		return nullable ? 0 : bad(err, len, path, "missing or null, a number is needed");
	if (!is_number(v))
		return bad(err, len, path, "not a number");
	x = json_object_get_double(v);
	if (!isfinite(x))
		return bad(err, len, path, "not a finite number");
	if (x < lo || x > hi)
		return bad(err, len, path, "%.6g is out of range (%g..%g)", x, lo, hi);
	if (integral && floor(x) != x)
		return bad(err, len, path, "%.6g is not a whole number", x);
	return 0;
}

/* Member KEY of OBJ: a string of at most MAX characters (TOKEN: [a-z0-9-]), or null/absent. */
static int str_member(struct json_object *obj, const char *key, const char *at, int token,
		      size_t max, char *err, size_t len)
{
	struct json_object *v = gpumem_json_get(obj, key);
	char path[160];
	const char *s;

	snprintf(path, sizeof(path), "%.100s%s%.40s", at, at[0] ? "." : "", key);
	if (v == NULL)
		return 0;
	if (!gpumem_json_is(v, json_type_string))
		return bad(err, len, path, "not a string or null");
	s = json_object_get_string(v);
	if (chars(s) > max)
		return bad(err, len, path, "longer than %zu characters", max);
	if (token && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(s))
		return bad(err, len, path, "not a name of lower-case letters, digits and '-'");
	return 0;
}

static int check_above(struct json_object *above, const char *at, char *err, size_t len)
{
	char path[160];

	snprintf(path, sizeof(path), "%.100s.above", at);
	if (above == NULL)
		return 0;
	if (!gpumem_json_is(above, json_type_object))
		return bad(err, len, path, "not an object or null");
	if (json_object_object_length(above) > MAX_ABOVE)
		return bad(err, len, path, "more than %d levels", MAX_ABOVE);
	json_object_object_foreach(above, key, v) {
		(void)v;
		if (strlen(key) == 0 || strlen(key) > 8 || strspn(key, "0123456789.") != strlen(key))
			return bad(err, len, path, "a level that is not a number");
		if (num_member(above, key, path, 0, 0, 1, 0, err, len) < 0)
			return -1;
	}
	return 0;
}

static int check_metric(struct json_object *m, enum kind k, const char *at, char *err,
			size_t len)
{
	static const char *const figs[] = { "mean", "max", "median", "p95" };
	struct json_object *tl = gpumem_json_get(m, "timeline");
	const char *unit = gpumem_json_str(m, "unit");
	char path[160];

	if (m == NULL)
		return 0;
	if (!gpumem_json_is(m, json_type_object))
		return bad(err, len, at, "not an object or null");
	snprintf(path, sizeof(path), "%.100s.unit", at);
	if (unit == NULL || strcmp(unit, kinds[k].unit) != 0)
		return bad(err, len, path, "not \"%s\"", kinds[k].unit);
	if (str_member(m, "source", at, 1, TOKEN_CHARS, err, len) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(figs) / sizeof(figs[0]); i++)
		if (num_member(m, figs[i], at, i >= 2, 0, kinds[k].max, 0, err, len) < 0)
			return -1;
	if (check_above(gpumem_json_get(m, "above"), at, err, len) < 0)
		return -1;
	snprintf(path, sizeof(path), "%.100s.timeline", at);
	if (tl == NULL)
		return 0;
	if (!gpumem_json_is(tl, json_type_array))
		return bad(err, len, path, "not an array or null");
	if (gpumem_json_len(tl) > GPUMEM_PROFILE_MAX_TIMELINE)
		return bad(err, len, path, "more than %d points", GPUMEM_PROFILE_MAX_TIMELINE);
	for (size_t i = 0; i < gpumem_json_len(tl); i++) {
		struct json_object *v = gpumem_json_at(tl, i);
		double x;

		if (v == NULL)
			continue;
		x = is_number(v) ? json_object_get_double(v) : NAN;
		if (!isfinite(x) || x < 0 || x > kinds[k].max) {
			snprintf(path, sizeof(path), "%.100s.timeline[%zu]", at, i);
			return bad(err, len, path, "not null or a number in 0..%g", kinds[k].max);
		}
	}
	return 0;
}

static int check_gpu(struct json_object *g, size_t i, char *err, size_t len)
{
	struct json_object *ms = gpumem_json_get(g, "metrics");
	char at[64], path[160];

	snprintf(at, sizeof(at), "gpus[%zu]", i);
	if (!gpumem_json_is(g, json_type_object))
		return bad(err, len, at, "not an object");
	if (num_member(g, "index", at, 0, 0, MAX_INDEX, 1, err, len) < 0 ||
	    str_member(g, "uuid", at, 0, GPUMEM_PROFILE_MAX_STRING, err, len) < 0 ||
	    str_member(g, "name", at, 0, GPUMEM_PROFILE_MAX_STRING, err, len) < 0 ||
	    str_member(g, "source", at, 1, TOKEN_CHARS, err, len) < 0 ||
	    str_member(g, "note", at, 0, GPUMEM_PROFILE_MAX_STRING, err, len) < 0 ||
	    num_member(g, "samples", at, 0, 0, MAX_SAMPLES, 1, err, len) < 0 ||
	    num_member(g, "timeline_step_s", at, 1, 0, MAX_SECONDS, 0, err, len) < 0)
		return -1;
	snprintf(path, sizeof(path), "%.60s.metrics", at);
	if (ms == NULL)
		return 0;
	if (!gpumem_json_is(ms, json_type_object))
		return bad(err, len, path, "not an object or null");
	if (json_object_object_length(ms) > MAX_MEMBERS)
		return bad(err, len, path, "more than %d members", MAX_MEMBERS);
	for (size_t k = 0; k < sizeof(metrics) / sizeof(metrics[0]); k++) {
		char mat[160];

		snprintf(mat, sizeof(mat), "%.80s.%.20s", path, metrics[k].name);
		if (check_metric(gpumem_json_get(ms, metrics[k].name), metrics[k].kind, mat, err,
				 len) < 0)
			return -1;
	}
	return 0;
}

int gpumem_profile_check(struct json_object *doc, char *err, size_t len)
{
	const char *schema = gpumem_json_str(doc, "schema");
	const char *state = gpumem_json_str(doc, "state");
	struct json_object *gpus = gpumem_json_get(doc, "gpus");
	int ran;

	if (!gpumem_json_is(doc, json_type_object))
		return bad(err, len, "", "not a JSON object");
	if (schema == NULL || strcmp(schema, GPUMEM_PROFILE_SCHEMA) != 0)
		return bad(err, len, "schema", "not \"%s\"", GPUMEM_PROFILE_SCHEMA);
	if (state == NULL || (strcmp(state, "ran") != 0 && strcmp(state, "skipped") != 0))
		return bad(err, len, "state", "not \"ran\" or \"skipped\"");
	ran = strcmp(state, "ran") == 0;
	if (str_member(doc, "reason", "", 0, GPUMEM_PROFILE_MAX_STRING, err, len) < 0 ||
	    str_member(doc, "started", "", 0, GPUMEM_PROFILE_MAX_STRING, err, len) < 0 ||
	    num_member(doc, "interval_ms", "", !ran, 100, 3600000, 0, err, len) < 0 ||
	    num_member(doc, "seconds", "", !ran, 0, MAX_SECONDS, 0, err, len) < 0 ||
	    num_member(doc, "cpu_s", "", 1, 0, MAX_SECONDS, 0, err, len) < 0)
		return -1;
	if (gpus == NULL && !ran)
		return 0;
	if (!gpumem_json_is(gpus, json_type_array))
		return bad(err, len, "gpus", "not an array");
	if (gpumem_json_len(gpus) > GPUMEM_PROFILE_MAX_GPUS)
		return bad(err, len, "gpus", "more than %d GPUs", GPUMEM_PROFILE_MAX_GPUS);
	for (size_t i = 0; i < gpumem_json_len(gpus); i++)
		if (check_gpu(gpumem_json_at(gpus, i), i, err, len) < 0)
			return -1;
	return 0;
}

int gpumem_profile_parse(const char *buf, size_t len, struct json_object **out, char *err,
			 size_t errlen)
{
	static const struct gpumem_json_caps caps = {
		GPUMEM_PROFILE_MAX_BYTES, GPUMEM_PROFILE_MAX_DEPTH, GPUMEM_PROFILE_MAX_VALUES,
		"a profile"
	};
	char why[256] = "";
	int rv = -1;

	*out = NULL;
	if (gpumem_json_parse(buf, len, &caps, out, why, sizeof(why)) < 0 ||
	    gpumem_profile_check(*out, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s", why);
		goto fail;
	}
	rv = 0;
fail:
	if (rv < 0) {
		json_object_put(*out);
		*out = NULL;
	}
	return rv;
}

/* ------------------------------------------------------------ compact summary */
/* Add V to array ARR (V may be NULL: null); json-c takes it. */
static void push(struct json_object *arr, struct json_object *v)
{
	if (json_object_array_add(arr, v) < 0)
		json_object_put(v);
}


static int is_state(const char *s)
{
	return s && (!strcmp(s, "ran") || !strcmp(s, "skipped") || !strcmp(s, "refused") ||
		     !strcmp(s, "none"));
}

struct json_object *gpumem_profile_compact(struct json_object *doc)
{
	struct json_object *o = json_object_new_object(), *g = json_object_new_array();
	struct json_object *gpus = gpumem_json_get(doc, "gpus");
	const char *state = gpumem_json_str(doc, "state"), *src = NULL;
	char err[256];
	double s;
	int mixed = 0;

	if (o == NULL || g == NULL) {
		json_object_put(o);
		json_object_put(g);
		return NULL;
	}
	if (gpumem_json_get(doc, "schema") == NULL && is_state(state) && strcmp(state, "ran") &&
	    (gpumem_json_get(doc, "reason") == NULL ||
	     gpumem_json_is(gpumem_json_get(doc, "reason"), json_type_string))) {
		/* What the plugin writes where there is no document. */
		gpumem_json_add(o, "st", gpumem_json_string(state));
		gpumem_json_add(o, "why", gpumem_json_string_cut(gpumem_json_str(doc, "reason"),
							       GPUMEM_PROF_WHY_CHARS));
		gpumem_json_add(o, "s", NULL);
		gpumem_json_add(o, "src", NULL);
		gpumem_json_add(o, "g", g);
		return o;
	}
	if (gpumem_profile_check(doc, err, sizeof(err)) < 0) {
		gpumem_json_add(o, "st", gpumem_json_string("refused"));
		gpumem_json_add(o, "why", gpumem_json_string_cut(err, GPUMEM_PROF_WHY_CHARS));
		gpumem_json_add(o, "s", NULL);
		gpumem_json_add(o, "src", NULL);
		gpumem_json_add(o, "g", g);
		return o;
	}
	for (size_t i = 0; i < gpumem_json_len(gpus); i++) {
		const char *gs = gpumem_json_str(gpumem_json_at(gpus, i), "source");

		push(g, gpumem_prof_row_build(gpumem_json_at(gpus, i)));
		if (gs && src && strcmp(gs, src) != 0)
			mixed = 1;
		else if (gs)
			src = gs;
	}
	gpumem_json_add(o, "st", gpumem_json_string(state));
	gpumem_json_add(o, "why", gpumem_json_string_cut(gpumem_json_str(doc, "reason"),
							       GPUMEM_PROF_WHY_CHARS));
	gpumem_json_add(o, "s", gpumem_json_num(doc, "seconds", &s) == 0 ?
			gpumem_json_fmt(round(s), "%.0f") : NULL);
	gpumem_json_add(o, "src", gpumem_json_string(mixed ? "mixed" : src));
	gpumem_json_add(o, "g", g);
	return o;
}

/* ------------------------------------------------------------ reading it back */
int gpumem_profile_compact_check(struct json_object *v, char *err, size_t len)
{
	struct json_object *g = gpumem_json_get(v, "g"), *s = gpumem_json_get(v, "s");
	struct json_object *src = gpumem_json_get(v, "src"), *why = gpumem_json_get(v, "why");

	if (!gpumem_json_is(v, json_type_object))
		return bad(err, len, "prof", "not an object");
	if (!is_state(gpumem_json_str(v, "st")))
		return bad(err, len, "prof.st", "not ran, skipped, refused or none");
	if (why && (!gpumem_json_is(why, json_type_string) ||
		    chars(json_object_get_string(why)) > GPUMEM_PROF_WHY_CHARS))
		return bad(err, len, "prof.why", "not a reason or null");
	if (s && (!is_number(s) || json_object_get_double(s) < 0 ||
		  json_object_get_double(s) > MAX_SECONDS))
		return bad(err, len, "prof.s", "not seconds or null");
	if (src && (!gpumem_json_is(src, json_type_string) ||
		    chars(json_object_get_string(src)) > TOKEN_CHARS))
		return bad(err, len, "prof.src", "not a source name or null");
	if (g == NULL)
		return 0;
	if (!gpumem_json_is(g, json_type_array) || gpumem_json_len(g) > GPUMEM_PROFILE_MAX_GPUS)
		return bad(err, len, "prof.g", "not an array of at most %d GPUs",
			   GPUMEM_PROFILE_MAX_GPUS);
	for (size_t i = 0; i < gpumem_json_len(g); i++) {
		char at[32];

		snprintf(at, sizeof(at), "prof.g[%zu]", i);
		if (gpumem_prof_row_check(gpumem_json_at(g, i), err, len, at) < 0)
			return -1;
	}
	return 0;
}

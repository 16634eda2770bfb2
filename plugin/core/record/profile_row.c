/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The compact profile's GPU row (profile_row.h): built named, read named
 * or positional.  One table (FIGS) says each figure's name in a named row,
 * its place in a positional one, its field and its rounding, so the two
 * forms cannot drift apart and no reader counts columns.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "profile.h"
#include "profile_row.h"

#define MAX_INDEX 4095
#define MAX_SAMPLES 1e12
#define MAX_FIGURE 1e7          /* figures of a row: anything larger is not a figure */
#define TOKEN_CHARS 32

static const struct {
	const char *key;                /* in a named row */
	enum gpumem_prof_col col;       /* in a positional row */
	const char *metric, *stat;      /* in the gpumem-profile/1 document */
	int decimals;
	size_t off;                     /* in struct gpumem_prof_gpu */
} FIGS[] = {
#define F(k, c, m, s, d, f) { k, c, m, s, d, offsetof(struct gpumem_prof_gpu, f) }
	F("dram", GPUMEM_PROF_DRAM_MEAN, "dram_bw_util", "mean", 0, dram_mean),
	F("dram95", GPUMEM_PROF_DRAM_P95, "dram_bw_util", "p95", 0, dram_p95),
	F("sm", GPUMEM_PROF_SM_MEAN, "sm_util", "mean", 0, sm_mean),
	F("sm95", GPUMEM_PROF_SM_P95, "sm_util", "p95", 0, sm_p95),
	F("occ", GPUMEM_PROF_OCC_MEAN, "sm_occupancy", "mean", 0, occ_mean),
	F("rx", GPUMEM_PROF_RX_MEAN, "pcie_rx", "mean", 1, rx_mean),
	F("rx95", GPUMEM_PROF_RX_P95, "pcie_rx", "p95", 1, rx_p95),
	F("tx", GPUMEM_PROF_TX_MEAN, "pcie_tx", "mean", 1, tx_mean),
	F("nvrx", GPUMEM_PROF_NVRX_MEAN, "nvlink_rx", "mean", 1, nvrx_mean),
	F("nvtx", GPUMEM_PROF_NVTX_MEAN, "nvlink_tx", "mean", 1, nvtx_mean),
	F("mem", GPUMEM_PROF_MEM_MAX, "mem_used", "max", 1, mem_max),
#undef F
};
#define NFIGS (sizeof(FIGS) / sizeof(FIGS[0]))
/* The named row's other members, besides FIGS' keys. */
static const char *const OTHER[] = { "gpu", "n", "src", "model", "note" };

static int is_number(struct json_object *v)
{
	return gpumem_json_is(v, json_type_int) || gpumem_json_is(v, json_type_double);
}

static size_t chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static int bad(char *err, size_t len, const char *at, const char *what, const char *msg)
{
	snprintf(err, len, "%s%s%s: %s", at, what[0] == '[' || !what[0] ? "" : ".", what, msg);
	return -1;
}

/* Figure FIG of metric NAME of metrics MS, an integer or (DECIMALS) one decimal, or null. */
static struct json_object *figure(struct json_object *ms, const char *name, const char *fig,
				  int decimals)
{
	double v;

	if (gpumem_json_num(gpumem_json_get(ms, name), fig, &v) < 0 || !isfinite(v))
		return NULL;
	/* The value rounded too, not only its text: the summary reads the same in memory. */
	return decimals ? gpumem_json_fixed(round(v * 10) / 10, 1) :
		gpumem_json_fmt(round(v), "%.0f");
}

struct json_object *gpumem_prof_row_build(struct json_object *g)
{
	struct json_object *row = json_object_new_object(), *ms = gpumem_json_get(g, "metrics");
	const char *note = gpumem_json_str(g, "note"), *model = gpumem_json_str(g, "name");
	double idx = 0, n = 0;

	if (row == NULL)
		return NULL;
	gpumem_json_num(g, "index", &idx);
	gpumem_json_num(g, "samples", &n);
	gpumem_json_add(row, "gpu", gpumem_json_int((long long)idx));
	gpumem_json_add(row, "n", gpumem_json_int((long long)n));
	gpumem_json_add(row, "src", gpumem_json_string(gpumem_json_str(g, "source")));
	for (size_t k = 0; k < NFIGS; k++)
		gpumem_json_add(row, FIGS[k].key, figure(ms, FIGS[k].metric, FIGS[k].stat,
							 FIGS[k].decimals));
	if (model && *model)
		gpumem_json_add(row, "model", gpumem_json_string_cut(model, GPUMEM_PROF_MODEL_CHARS));
	if (note)
		gpumem_json_add(row, "note", gpumem_json_string_cut(note, GPUMEM_PROF_NOTE_CHARS));
	return row;
}

/* Member V (WHAT) of a row, by its kind: 0, or -1 with why. */
static int value_ok(struct json_object *v, const char *what, int col, char *err, size_t len,
		    const char *at)
{
	double x = is_number(v) ? json_object_get_double(v) : NAN;
	int text = col == GPUMEM_PROF_SOURCE || col == GPUMEM_PROF_NCOLS || col < 0;
	size_t cap = col == GPUMEM_PROF_SOURCE ? TOKEN_CHARS : col == GPUMEM_PROF_NCOLS ?
		GPUMEM_PROF_NOTE_CHARS : GPUMEM_PROF_MODEL_CHARS;

	if (col == GPUMEM_PROF_INDEX)
		return isfinite(x) && x >= 0 && x <= MAX_INDEX ? 0 :
			bad(err, len, at, what, "not a GPU index");
	if (text)
		return v == NULL && col == GPUMEM_PROF_SOURCE ? 0 :
			gpumem_json_is(v, json_type_string) &&
			chars(json_object_get_string(v)) <= cap ? 0 :
			bad(err, len, at, what, col == GPUMEM_PROF_SOURCE ?
			    "not a source name or null" : col < 0 ? "not a GPU model" : "not a note");
	if (v && (!isfinite(x) || x < 0 ||
		  x > (col == GPUMEM_PROF_SAMPLES ? MAX_SAMPLES : MAX_FIGURE)))
		return bad(err, len, at, what, "not null or a figure");
	return 0;
}

static int positional_ok(struct json_object *row, char *err, size_t len, const char *at)
{
	size_t n = gpumem_json_len(row);
	char what[16];

	if (n < GPUMEM_PROF_NCOLS || n > GPUMEM_PROF_NCOLS + 1)
		return bad(err, len, at, "", "not [index, samples, source, 11 figures(, note)]");
	for (size_t k = 0; k < n; k++) {
		snprintf(what, sizeof(what), "[%zu]", k);
		if (value_ok(gpumem_json_at(row, k), what, (int)k, err, len, at) < 0)
			return -1;
	}
	return 0;
}

static int known_key(const char *key)
{
	for (size_t k = 0; k < NFIGS; k++)
		if (!strcmp(key, FIGS[k].key))
			return 1;
	for (size_t k = 0; k < sizeof(OTHER) / sizeof(OTHER[0]); k++)
		if (!strcmp(key, OTHER[k]))
			return 1;
	return 0;
}

static int named_ok(struct json_object *row, char *err, size_t len, const char *at)
{
	json_object_object_foreach(row, key, val) {
		(void)val;
		if (!known_key(key))
			return bad(err, len, at, key, "not a member of a profile row");
	}
	if (value_ok(gpumem_json_get(row, "gpu"), "gpu", GPUMEM_PROF_INDEX, err, len, at) < 0 ||
	    value_ok(gpumem_json_get(row, "n"), "n", GPUMEM_PROF_SAMPLES, err, len, at) < 0 ||
	    value_ok(gpumem_json_get(row, "src"), "src", GPUMEM_PROF_SOURCE, err, len, at) < 0)
		return -1;
	if (!json_object_object_get_ex(row, "n", NULL))
		return bad(err, len, at, "n", "missing");
	for (size_t k = 0; k < NFIGS; k++)
		if (value_ok(gpumem_json_get(row, FIGS[k].key), FIGS[k].key, FIGS[k].col, err, len,
			     at) < 0)
			return -1;
	if (json_object_object_get_ex(row, "model", NULL) &&
	    value_ok(gpumem_json_get(row, "model"), "model", -1, err, len, at) < 0)
		return -1;
	if (json_object_object_get_ex(row, "note", NULL) &&
	    value_ok(gpumem_json_get(row, "note"), "note", GPUMEM_PROF_NCOLS, err, len, at) < 0)
		return -1;
	return 0;
}

int gpumem_prof_row_check(struct json_object *row, char *err, size_t len, const char *at)
{
	if (gpumem_json_is(row, json_type_array))
		return positional_ok(row, err, len, at);
	if (gpumem_json_is(row, json_type_object))
		return named_ok(row, err, len, at);
	return bad(err, len, at, "", "not a profile row");
}

static double number_of(struct json_object *v)
{
	return is_number(v) ? json_object_get_double(v) : NAN;
}

static void text_of(struct json_object *v, char *out, size_t len)
{
	if (gpumem_json_is(v, json_type_string))
		snprintf(out, len, "%s", json_object_get_string(v));
}

int gpumem_prof_gpu_of(struct json_object *row, struct gpumem_prof_gpu *g)
{
	int named = gpumem_json_is(row, json_type_object);
	struct json_object *idx = named ? gpumem_json_get(row, "gpu") :
		gpumem_json_at(row, GPUMEM_PROF_INDEX);

	memset(g, 0, sizeof(*g));
	if ((!named && (!gpumem_json_is(row, json_type_array) ||
			gpumem_json_len(row) < GPUMEM_PROF_NCOLS)) || !is_number(idx))
		return -1;
	g->index = (long)number_of(idx);
	g->samples = number_of(named ? gpumem_json_get(row, "n") :
			       gpumem_json_at(row, GPUMEM_PROF_SAMPLES));
	text_of(named ? gpumem_json_get(row, "src") : gpumem_json_at(row, GPUMEM_PROF_SOURCE),
		g->source, sizeof(g->source));
	for (size_t k = 0; k < NFIGS; k++)
		*(double *)((char *)g + FIGS[k].off) =
			number_of(named ? gpumem_json_get(row, FIGS[k].key) :
				  gpumem_json_at(row, FIGS[k].col));
	text_of(named ? gpumem_json_get(row, "note") : gpumem_json_at(row, GPUMEM_PROF_NCOLS),
		g->note, sizeof(g->note));
	if (named)
		text_of(gpumem_json_get(row, "model"), g->model, sizeof(g->model));
	return 0;
}

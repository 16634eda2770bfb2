/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Building the gpumem-profile/1 document (sample_doc.h) with plugin/core's
 * JSON module: every figure rounded to two decimals, a metric without data
 * null, a GPU in MIG mode with a note and null metrics.  Called at each
 * flush and at the end, never per sample.
 */
#include <math.h>
#include "sample_doc.h"

#define SAMPLE_MIG_NOTE "MIG: per-instance sampling not supported"

/* V rounded to two decimals, written as such; null when not finite. */
static struct json_object *num2(double v)
{
	return isfinite(v) ? gpumem_json_number(round(v * 100) / 100) : NULL;
}

static struct json_object *timeline(const struct sample_stat *s)
{
	struct json_object *a = json_object_new_array();
	size_t n = sample_stat_slots(s);

	for (size_t i = 0; a && i < n; i++)
		json_object_array_add(a, num2(sample_stat_slot(s, i)));
	return a;
}

/* {"25":0.9,"50":0.7,"80":0.3}: the shares at or above the unit's levels. */
static struct json_object *above(const struct sample_stat *s)
{
	const double *lv = sample_stat_levels(s->unit);
	struct json_object *o = json_object_new_object();
	char key[16];

	for (int i = 0; o && i < SAMPLE_LEVELS; i++) {
		snprintf(key, sizeof(key), "%g", lv[i]);
		gpumem_json_add(o, key, num2(sample_stat_above(s, i)));
	}
	return o;
}

static struct json_object *metric(const struct sample_gpu *g, enum sample_metric m)
{
	const struct sample_stat *s = &g->stat[m];
	struct json_object *o;

	if (s->n == 0 || g->how[m] == SAMPLE_NONE || (o = json_object_new_object()) == NULL)
		return NULL;
	gpumem_json_add(o, "unit", gpumem_json_string(sample_stat_unit_name(s->unit)));
	gpumem_json_add(o, "source", gpumem_json_string(sample_how_name(g->how[m])));
	gpumem_json_add(o, "mean", num2(sample_stat_mean(s)));
	if (s->unit != SAMPLE_GIB) {
		gpumem_json_add(o, "median", num2(sample_stat_quantile(s, 0.5)));
		gpumem_json_add(o, "p95", num2(sample_stat_quantile(s, 0.95)));
	}
	gpumem_json_add(o, "max", num2(s->max));
	if (s->unit != SAMPLE_GIB)
		gpumem_json_add(o, "above", above(s));
	gpumem_json_add(o, "timeline", timeline(s));
	return o;
}

static struct json_object *gpu(const struct sample_gpu *g, long interval_ms)
{
	struct json_object *o = json_object_new_object(), *ms;
	double step = (double)g->stat[0].per_slot * (double)interval_ms / 1000;

	if (o == NULL)
		return NULL;
	gpumem_json_add(o, "index", gpumem_json_int(g->index));
	gpumem_json_add(o, "uuid", g->uuid[0] ? gpumem_json_string(g->uuid) : NULL);
	gpumem_json_add(o, "name", g->name[0] ? gpumem_json_string(g->name) : NULL);
	gpumem_json_add(o, "source", gpumem_json_string(sample_gpu_source(g)));
	gpumem_json_add(o, "note", g->mig ? gpumem_json_string(SAMPLE_MIG_NOTE) : NULL);
	gpumem_json_add(o, "samples", gpumem_json_int((long long)g->rounds));
	gpumem_json_add(o, "timeline_step_s", num2(step));
	ms = json_object_new_object();
	for (int m = 0; ms && m < SAMPLE_NMETRICS; m++)
		gpumem_json_add(ms, sample_metric_name(m), metric(g, m));
	gpumem_json_add(o, "metrics", ms);
	return o;
}

struct json_object *sample_doc(const struct sample_run *r)
{
	struct json_object *d = json_object_new_object(), *a;

	if (d == NULL)
		return NULL;
	gpumem_json_add(d, "schema", gpumem_json_string(SAMPLE_SCHEMA));
	gpumem_json_add(d, "state", gpumem_json_string(r->reason ? "skipped" : "ran"));
	gpumem_json_add(d, "reason", gpumem_json_string(r->reason));
	gpumem_json_add(d, "interval_ms", gpumem_json_int(r->interval_ms));
	gpumem_json_add(d, "started", gpumem_json_string(r->started));
	gpumem_json_add(d, "seconds", num2(r->seconds));
	gpumem_json_add(d, "cpu_s", num2(r->cpu_s));
	a = json_object_new_array();
	for (size_t i = 0; a && i < r->ngpus; i++)
		json_object_array_add(a, gpu(&r->gpus[i], r->interval_ms));
	gpumem_json_add(d, "gpus", a);
	return d;
}

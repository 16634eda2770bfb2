/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The summary `gpumem report` prints before the rows, so a fleet of
 * thousands of GPUs reads in one screen: rows by verdict, GPUs by model
 * and newest verdict, each model's figures as a fraction of the site's
 * reference (quantiles, and how many GPUs are under the check's own
 * threshold), the nodes gpumem drained, and the N worst GPUs.  Text for
 * people; with --json one object (REPORT-JSON.md, "summary").  Every name
 * that comes from a report file is cleaned before it reaches a terminal.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core_base.h"
#include "report_cli.h"

static const double quantiles[] = { 0, 0.01, 0.10, 0.50, 0.90, 1 };
static const char *const quantile_names[] = { "min", "p1", "p10", "median", "p90", "max" };
#define NQ (sizeof(quantiles) / sizeof(quantiles[0]))

/* A name from a file, cleaned and cut for a column. */
static const char *clean(const char *s, char *buf, size_t len, size_t max)
{
	gpumem_term_clean(s ? s : "?", buf, len, max);
	return buf;
}

static void print_counts(FILE *out, const size_t count[GPUMEM_REPORT_NV])
{
	const char *sep = "";

	for (int v = 0; v < GPUMEM_REPORT_NV; v++) {
		if (!count[v])
			continue;
		fprintf(out, "%s%s %zu", sep, gpumem_report_vclass_name(v), count[v]);
		sep = ", ";
	}
	fputs(*sep ? "\n" : "none\n", out);
}

static void print_models(FILE *out, const struct gpumem_fleet *fl)
{
	const char *metric = gpumem_report_metric_names[fl->metric];
	char name[128];

	fprintf(out, "GPUs by model, newest check of each:\n");
	for (size_t i = 0; i < fl->nmodels; i++) {
		fprintf(out, "  %-24s %6zu GPUs: ", clean(gpumem_report_short_model(fl->models[i].name), name,
							 sizeof(name), 24), fl->models[i].ngpus);
		print_counts(out, fl->models[i].count);
	}
	fprintf(out, "%s of each GPU's newest check / the site's reference:\n", metric);
	fprintf(out, "  %-24s %9s", "MODEL", "REFERENCE");
	for (size_t q = 0; q < NQ; q++)
		fprintf(out, " %6s", quantile_names[q]);
	fprintf(out, "  UNDER THRESHOLD\n");
	for (size_t i = 0; i < fl->nmodels; i++) {
		const struct gpumem_fleet_model *m = &fl->models[i];

		if (m->nfracs == 0)
			continue;
		fprintf(out, "  %-24s %9.1f", clean(gpumem_report_short_model(m->name), name, sizeof(name), 24),
			m->reference);
		for (size_t q = 0; q < NQ; q++)
			fprintf(out, " %6.3f", gpumem_fleet_quantile(m->fracs, m->nfracs, quantiles[q]));
		fprintf(out, "  %zu of %zu\n", m->below, m->nfracs);
	}
}

static void print_drained(FILE *out, const struct gpumem_fleet *fl)
{
	char when[32], node[128], step[64];

	if (fl->ndrained == 0) {
		fprintf(out, "drained by gpumem: none\n");
		return;
	}
	fprintf(out, "drained by gpumem (newest drain of each node):\n");
	for (size_t i = 0; i < fl->ndrained; i++) {
		const struct gpumem_report_file *f = fl->drained[i];

		gpumem_report_utc(f->time, when, sizeof(when));
		fprintf(out, "  %s  %s  job %lld.%s %s\n", clean(f->node, node, sizeof(node), 40),
			when, f->job, clean(f->step, step, sizeof(step), 20), f->phase);
	}
}

static void print_worst(FILE *out, const struct gpumem_fleet *fl, size_t worst)
{
	const char *metric = gpumem_report_metric_names[fl->metric];
	size_t n = worst < fl->ngpus ? worst : fl->ngpus;
	char when[32], node[128], model[64], uuid[260], frac[16], best[16], bad[48];

	if (n == 0)
		return;
	fprintf(out, "the %zu worst GPU%s (newest verdict, then %s / reference):\n", n,
		n == 1 ? "" : "s", metric);
	fprintf(out, "  %-16s %4s  %-16s %-16s  %-8s %7s %6s  %-12s %s\n", "NODE", "GPU", "MODEL",
		"NEWEST (UTC)", "VERDICT", "GB/S", "OF REF", "NOT PASSED", "UUID");
	for (size_t i = 0; i < n; i++) {
		const struct gpumem_fleet_gpu *g = fl->worst[i];
		const struct gpumem_report_row *r = g->last;

		gpumem_report_utc(r->rep->time, when, sizeof(when));
		snprintf(best, sizeof(best), isfinite(r->m[fl->metric].best) ? "%.0f" : "-",
			 r->m[fl->metric].best);
		snprintf(frac, sizeof(frac), isfinite(g->frac) ? "%.3f" : "-", g->frac);
		snprintf(bad, sizeof(bad), "%zu of %zu", g->nbad, g->nrows);
		fprintf(out, "  %-16s %4d  %-16s %-16s  %-8s %7s %6s  %-12s %s\n",
			clean(r->rep->node, node, sizeof(node), 16), gpumem_report_gpu_index(r),
			clean(gpumem_report_short_model(r->gpu_name), model, sizeof(model), 16), when,
			gpumem_report_vclass_name(r->vclass), best, frac, bad,
			clean(r->gpu_uuid, uuid, sizeof(uuid), 64));
	}
}

/* The GPUs slow against their peers, slowest first (fl->worst's order). */
static void print_slow(FILE *out, const struct gpumem_fleet *fl, size_t worst)
{
	size_t n = gpumem_fleet_nslow(fl), shown = 0;
	char node[128], model[64], uuid[260], text[160];

	fprintf(out, "slow against their peers (under %.2fx of their median for HBM, %.2fx for "
		"host links): ", GPUMEM_PEER_MARGIN_HBM, GPUMEM_PEER_MARGIN_HOST);
	if (n == 0) {
		fputs("none\n", out);
		return;
	}
	fprintf(out, "%zu GPU%s\n", n, n == 1 ? "" : "s");
	for (size_t i = 0; i < fl->ngpus && shown < worst; i++) {
		const struct gpumem_report_row *r = fl->worst[i]->last;

		if (!r->vs.slow)
			continue;
		gpumem_report_vs_text(r, text, sizeof(text));
		fprintf(out, "  %-16s %4d  %-16s %s  %s\n", clean(r->rep->node, node, sizeof(node), 16),
			gpumem_report_gpu_index(r),
			clean(gpumem_report_short_model(r->gpu_name), model, sizeof(model), 16), text,
			clean(r->gpu_uuid, uuid, sizeof(uuid), 64));
		shown++;
	}
	if (shown < n)
		fprintf(out, "  (%zu more; --worst N)\n", n - shown);
}

void gpumem_report_print_summary(FILE *out, const struct gpumem_fleet *fl, const char *dir,
				 size_t worst)
{
	char first[32], last[32], d[512];

	gpumem_report_utc(fl->first, first, sizeof(first));
	gpumem_report_utc(fl->last, last, sizeof(last));
	fprintf(out, "%s: %zu row%s, %zu node%s, %zu GPU%s, %s to %s UTC\n",
		clean(dir, d, sizeof(d), 200), fl->nrows, fl->nrows == 1 ? "" : "s", fl->nnodes,
		fl->nnodes == 1 ? "" : "s", fl->ngpus, fl->ngpus == 1 ? "" : "s", first, last);
	fprintf(out, "rows by verdict: ");
	print_counts(out, fl->count);
	if (fl->nmodels)
		print_models(out, fl);
	print_drained(out, fl);
	print_slow(out, fl, worst);
	print_worst(out, fl, worst);
}

/* ------------------------------------------------------------ JSON */
static struct json_object *json_counts(const size_t count[GPUMEM_REPORT_NV])
{
	struct json_object *o = json_object_new_object();

	for (int v = 0; o && v < GPUMEM_REPORT_NV; v++)
		gpumem_json_add(o, gpumem_report_vclass_name(v), gpumem_json_int((long long)count[v]));
	return o;
}

static struct json_object *json_time(time_t t)
{
	char buf[32];
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return gpumem_json_string(buf);
}

static struct json_object *json_model(const struct gpumem_fleet_model *m)
{
	struct json_object *o = json_object_new_object(), *q = json_object_new_object();

	for (size_t i = 0; q && i < NQ; i++)
		gpumem_json_add(q, quantile_names[i],
				gpumem_json_number(gpumem_fleet_quantile(m->fracs, m->nfracs,
									 quantiles[i])));
	gpumem_json_add(o, "name", gpumem_json_string(m->name));
	gpumem_json_add(o, "gpus", gpumem_json_int((long long)m->ngpus));
	gpumem_json_add(o, "by_verdict", json_counts(m->count));
	gpumem_json_add(o, "reference_gbps", gpumem_json_number(m->reference));
	gpumem_json_add(o, "fraction", q);
	gpumem_json_add(o, "below_threshold", gpumem_json_int((long long)m->below));
	return o;
}

static struct json_object *json_gpu(const struct gpumem_fleet_gpu *g, int metric)
{
	const struct gpumem_report_row *r = g->last;
	struct json_object *o = json_object_new_object();

	gpumem_json_add(o, "node", gpumem_json_string(r->rep->node));
	gpumem_json_add(o, "gpu_index", gpumem_json_int(gpumem_report_gpu_index(r)));
	gpumem_json_add(o, "gpu_name", gpumem_json_string(r->gpu_name));
	gpumem_json_add(o, "gpu_uuid", gpumem_json_string(r->gpu_uuid));
	gpumem_json_add(o, "time", gpumem_json_string(r->rep->time_text));
	gpumem_json_add(o, "verdict", gpumem_json_string(gpumem_report_vclass_name(r->vclass)));
	gpumem_json_add(o, "best_gbps", gpumem_json_number(r->m[metric].best));
	gpumem_json_add(o, "fraction", gpumem_json_number(g->frac));
	gpumem_json_add(o, "rows", gpumem_json_int((long long)g->nrows));
	gpumem_json_add(o, "not_pass", gpumem_json_int((long long)g->nbad));
	gpumem_json_add(o, "file", gpumem_json_string(r->rep->name));
	gpumem_json_add(o, "slow", gpumem_json_bool(r->vs.slow));
	if (r->vs.slow) {
		char text[160];

		gpumem_report_vs_text(r, text, sizeof(text));
		gpumem_json_add(o, "slow_metric",
				gpumem_json_string(gpumem_report_metric_names[r->vs.metric]));
		gpumem_json_add(o, "slow_against", gpumem_json_string(r->vs.node ? "node" : "fleet"));
		gpumem_json_add(o, "slow_ratio", gpumem_json_number(round(r->vs.ratio * 1e4) / 1e4));
		gpumem_json_add(o, "slow_peers", gpumem_json_int((long long)r->vs.peers));
		gpumem_json_add(o, "slow_text", gpumem_json_string(text));
	}
	return o;
}

static struct json_object *json_drained(const struct gpumem_report_file *f)
{
	struct json_object *o = json_object_new_object();

	gpumem_json_add(o, "node", gpumem_json_string(f->node));
	gpumem_json_add(o, "time", gpumem_json_string(f->time_text));
	gpumem_json_add(o, "job", gpumem_json_int(f->job));
	gpumem_json_add(o, "step", gpumem_json_string(f->step));
	gpumem_json_add(o, "phase", gpumem_json_string(f->phase));
	gpumem_json_add(o, "file", gpumem_json_string(f->name));
	return o;
}

void gpumem_report_print_summary_json(FILE *out, const struct gpumem_fleet *fl, size_t worst)
{
	struct json_object *o = json_object_new_object(), *a;

	gpumem_json_add(o, "rows", gpumem_json_int((long long)fl->nrows));
	gpumem_json_add(o, "nodes", gpumem_json_int((long long)fl->nnodes));
	gpumem_json_add(o, "gpus", gpumem_json_int((long long)fl->ngpus));
	gpumem_json_add(o, "first", fl->nrows ? json_time(fl->first) : NULL);
	gpumem_json_add(o, "last", fl->nrows ? json_time(fl->last) : NULL);
	gpumem_json_add(o, "rows_by_verdict", json_counts(fl->count));
	gpumem_json_add(o, "metric", gpumem_json_string(gpumem_report_metric_names[fl->metric]));
	a = json_object_new_array();
	for (size_t i = 0; a && i < fl->nmodels; i++)
		json_object_array_add(a, json_model(&fl->models[i]));
	gpumem_json_add(o, "models", a);
	a = json_object_new_array();
	for (size_t i = 0; a && i < fl->ndrained; i++)
		json_object_array_add(a, json_drained(fl->drained[i]));
	gpumem_json_add(o, "drained", a);
	a = json_object_new_array();
	for (size_t i = 0; a && i < worst && i < fl->ngpus; i++)
		json_object_array_add(a, json_gpu(fl->worst[i], fl->metric));
	gpumem_json_add(o, "worst", a);
	a = json_object_new_array();
	for (size_t i = 0; a && i < fl->ngpus; i++)
		if (fl->worst[i]->last->vs.slow)
			json_object_array_add(a, json_gpu(fl->worst[i], fl->metric));
	gpumem_json_add(o, "slow", a);
	a = json_object_new_object();
	gpumem_json_add(a, "hbm", gpumem_json_number(GPUMEM_PEER_MARGIN_HBM));
	gpumem_json_add(a, "host", gpumem_json_number(GPUMEM_PEER_MARGIN_HOST));
	gpumem_json_add(o, "peer_margins", a);
	gpumem_json_write(out, o, GPUMEM_JSON_SPACED);
	fputc('\n', out);
	json_object_put(o);
}

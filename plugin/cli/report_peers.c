/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Each GPU against its peers, so a site finds its slow GPU even where it
 * names no reference and every check says "pass (no reference)": the
 * peers of a GPU are the other GPUs of its model across the reports read
 * (the fleet), and the other GPUs of its model on its node.  A peer counts
 * by its newest figure of each metric; a row's figure over the median of
 * its peers' is its ratio, and a ratio under the metric's margin marks the
 * row slow ("slow vs fleet: triad 0.80x of 511 peers").  The margins sit
 * far outside the check's run-to-run spread (admin/reports.md says which
 * spread), so a healthy GPU is never marked.  The rows carry the result
 * (row->vs): the table, the JSON, the summary, the picture and the
 * Prometheus text all read it, and the rows sort by it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report_cli.h"

#define MIN_PEERS 2             /* fewer peers give no median worth judging by */

/* The margin of each metric, 0: not compared (write and d2d: no such figure in the list). */
static const double margins[GPUMEM_REPORT_NMETRICS] = {
	[GPUMEM_REPORT_M_READ] = GPUMEM_PEER_MARGIN_HBM,
	[GPUMEM_REPORT_M_COPY] = GPUMEM_PEER_MARGIN_HBM,
	[GPUMEM_REPORT_M_TRIAD] = GPUMEM_PEER_MARGIN_HBM,
	[GPUMEM_REPORT_M_H2D] = GPUMEM_PEER_MARGIN_HOST,
	[GPUMEM_REPORT_M_D2H] = GPUMEM_PEER_MARGIN_HOST,
};

double gpumem_report_peer_margin(int metric)
{
	return metric >= 0 && metric < GPUMEM_REPORT_NMETRICS ? margins[metric] : 0;
}

enum { FLEET, NODE, NSCOPES };

struct pgpu {
	struct gpumem_report_row **rows;        /* its rows, newest first */
	size_t n;
	const char *model, *node;
	double fig[GPUMEM_REPORT_NMETRICS];     /* its newest figure; NaN: none */
	double med[GPUMEM_REPORT_NMETRICS][NSCOPES];   /* its peers' median; NaN */
	size_t peers[GPUMEM_REPORT_NMETRICS][NSCOPES];
};

static double figure(const struct gpumem_report_row *r, int k)
{
	const struct gpumem_report_metric *m = &r->m[k];

	return m->present && isfinite(m->best) && m->best > 0 ? m->best : NAN;
}

static int cmp_double(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;

	return a < b ? -1 : a > b;
}

/* The median of sorted a[0..n) without one element equal to self (NaN: keep all). */
static double median_without(const double *a, size_t n, double self)
{
	size_t pos = n, m = n;

	if (isfinite(self)) {
		const double *p = bsearch(&self, a, n, sizeof(*a), cmp_double);

		if (p) {
			pos = (size_t)(p - a);
			m = n - 1;
		}
	}
	if (m == 0)
		return NAN;
#define AT(i) ((i) < pos ? a[(i)] : a[(i) + 1])
	return m % 2 ? AT(m / 2) : (AT(m / 2 - 1) + AT(m / 2)) / 2;
#undef AT
}

static const char *str0(const char *s)
{
	return s ? s : "";
}

/* Groups of the fleet scope: by model; of the node scope: by node, then model. */
static int cmp_fleet(const void *pa, const void *pb)
{
	const struct pgpu *a = *(const struct pgpu *const *)pa, *b = *(const struct pgpu *const *)pb;

	return strcmp(str0(a->model), str0(b->model));
}

static int cmp_node(const void *pa, const void *pb)
{
	const struct pgpu *a = *(const struct pgpu *const *)pa, *b = *(const struct pgpu *const *)pb;
	int c = strcmp(a->node, b->node);

	return c ? c : cmp_fleet(pa, pb);
}

/* The peers' medians of one group g[0..n) in one scope; buf holds n. */
static void group_medians(struct pgpu **g, size_t n, int scope, double *buf)
{
	for (int k = 0; k < GPUMEM_REPORT_NMETRICS; k++) {
		size_t nf = 0;

		if (margins[k] == 0)
			continue;
		for (size_t i = 0; i < n; i++)
			if (isfinite(g[i]->fig[k]))
				buf[nf++] = g[i]->fig[k];
		qsort(buf, nf, sizeof(*buf), cmp_double);
		for (size_t i = 0; i < n; i++) {
			g[i]->peers[k][scope] = nf - (isfinite(g[i]->fig[k]) ? 1 : 0);
			g[i]->med[k][scope] = median_without(buf, nf, g[i]->fig[k]);
		}
	}
}

static void scope_medians(struct pgpu **order, size_t ng, int scope, double *buf)
{
	int (*cmp)(const void *, const void *) = scope == FLEET ? cmp_fleet : cmp_node;

	qsort(order, ng, sizeof(*order), cmp);
	for (size_t i = 0; i < ng;) {
		size_t j = i + 1;

		while (j < ng && cmp(&order[i], &order[j]) == 0)
			j++;
		group_medians(order + i, j - i, scope, buf);
		i = j;
	}
}

/* A row's lowest ratio, each against its metric's margin; slow when under it. */
static void judge_row(struct gpumem_report_row *r, const struct pgpu *g)
{
	double worst = HUGE_VAL;

	memset(&r->vs, 0, sizeof(r->vs));
	for (int k = 0; k < GPUMEM_REPORT_NMETRICS; k++) {
		double v = figure(r, k);

		if (margins[k] == 0 || !isfinite(v))
			continue;
		for (int s = 0; s < NSCOPES; s++) {
			double ratio = v / g->med[k][s];

			if (g->peers[k][s] < MIN_PEERS || !isfinite(ratio) ||
			    !(ratio / margins[k] < worst))
				continue;
			worst = ratio / margins[k];
			r->vs = (struct gpumem_report_vs){ .metric = k, .node = s == NODE,
				.ratio = ratio, .median = g->med[k][s], .peers = g->peers[k][s],
				.slow = ratio < margins[k] };
		}
	}
}

/* The GPUs of byg (sorted by GPU, newest first within one). */
static size_t make_gpus(struct gpumem_report_row **byg, size_t n, struct pgpu *gs)
{
	size_t ng = 0;

	for (size_t i = 0; i < n;) {
		struct pgpu *g = &gs[ng++];
		size_t j = i + 1;

		while (j < n && gpumem_fleet_same_gpu(byg[i], byg[j]))
			j++;
		g->rows = byg + i;
		g->n = j - i;
		g->model = byg[i]->gpu_name;
		g->node = byg[i]->rep->node;
		for (int k = 0; k < GPUMEM_REPORT_NMETRICS; k++) {
			g->fig[k] = NAN;
			for (size_t x = i; x < j && !isfinite(g->fig[k]); x++)
				g->fig[k] = figure(byg[x], k);
		}
		i = j;
	}
	return ng;
}

int gpumem_report_peers(struct gpumem_report_row *const *rows, size_t n)
{
	struct gpumem_report_row **byg = malloc((n ? n : 1) * sizeof(*byg));
	struct pgpu *gs = calloc(n ? n : 1, sizeof(*gs));
	struct pgpu **order = malloc((n ? n : 1) * sizeof(*order));
	double *buf = malloc((n ? n : 1) * sizeof(*buf));
	size_t nb = 0, ng;
	int rv = -1;

	if (byg == NULL || gs == NULL || order == NULL || buf == NULL)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		memset(&rows[i]->vs, 0, sizeof(rows[i]->vs));
		if (rows[i]->has_gpu)
			byg[nb++] = rows[i];
	}
	qsort(byg, nb, sizeof(*byg), gpumem_fleet_cmp_by_gpu);
	ng = make_gpus(byg, nb, gs);
	for (size_t i = 0; i < ng; i++)
		order[i] = &gs[i];
	scope_medians(order, ng, FLEET, buf);
	scope_medians(order, ng, NODE, buf);
	for (size_t i = 0; i < ng; i++)
		for (size_t j = 0; j < gs[i].n; j++)
			judge_row(gs[i].rows[j], &gs[i]);
	rv = 0;
fail:
	free(byg);
	free(gs);
	free(order);
	free(buf);
	return rv;
}

int gpumem_report_vs_text(const struct gpumem_report_row *r, char *buf, size_t len)
{
	const struct gpumem_report_vs *v = &r->vs;

	if (!v->slow)
		return snprintf(buf, len, "%s", "");
	return snprintf(buf, len, "slow vs %s: %s %.2fx of %zu peer%s", v->node ? "node" : "fleet",
			gpumem_report_metric_names[v->metric], v->ratio, v->peers,
			v->peers == 1 ? "" : "s");
}

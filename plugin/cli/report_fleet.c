/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The fleet as GPUs, not rows: each GPU (by UUID; node and index where a
 * report names none) with its newest row, how many of its checks were not
 * a pass, and its newest figure of one metric as a fraction of the site's
 * reference; the models with their GPUs sorted by that fraction; the
 * nodes gpumem drained.  The summary (report_summary.c) prints it, the
 * picture's overview (report_svg_fleet.c) draws it.  Rows are sorted once,
 * so 100,000 of them cost a qsort and a pass.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report_cli.h"

/* A GPU's key: its UUID, else node and index. */
static int cmp_gpu_key(const struct gpumem_report_row *a, const struct gpumem_report_row *b)
{
	int c;

	if (a->gpu_uuid && b->gpu_uuid)
		return strcmp(a->gpu_uuid, b->gpu_uuid);
	if (!a->gpu_uuid != !b->gpu_uuid)
		return a->gpu_uuid ? -1 : 1;
	if ((c = strcmp(a->rep->node, b->rep->node)) != 0)
		return c;
	return gpumem_report_gpu_index(a) - gpumem_report_gpu_index(b);
}

int gpumem_fleet_same_gpu(const struct gpumem_report_row *a, const struct gpumem_report_row *b)
{
	return cmp_gpu_key(a, b) == 0;
}

/* By GPU, newest first within a GPU. */
int gpumem_fleet_cmp_by_gpu(const void *pa, const void *pb)
{
	const struct gpumem_report_row *a = *(const struct gpumem_report_row *const *)pa;
	const struct gpumem_report_row *b = *(const struct gpumem_report_row *const *)pb;
	int c = cmp_gpu_key(a, b);

	if (c)
		return c;
	if (a->rep->time != b->rep->time)
		return a->rep->time > b->rep->time ? -1 : 1;
	return strcmp(a->rep->name, b->rep->name);
}

static double fraction(const struct gpumem_report_row *r, int metric)
{
	const struct gpumem_report_metric *m = &r->m[metric];

	if (!m->present || !isfinite(m->best) || !(m->reference > 0))
		return NAN;
	return m->best / m->reference;
}

static int is_bad(enum gpumem_report_vclass v)
{
	return v == GPUMEM_REPORT_V_FAIL || v == GPUMEM_REPORT_V_UNUSABLE ||
	       v == GPUMEM_REPORT_V_WARN || v == GPUMEM_REPORT_V_ERROR;
}

/*
 * Worst first: newest verdict (a GPU slow against its peers right after
 * the warnings, the slowest first), then the lowest fraction, then the
 * most bad checks.
 */
static int cmp_worst(const void *pa, const void *pb)
{
	const struct gpumem_fleet_gpu *a = *(const struct gpumem_fleet_gpu *const *)pa;
	const struct gpumem_fleet_gpu *b = *(const struct gpumem_fleet_gpu *const *)pb;
	int ra = gpumem_report_row_rank(a->last), rb = gpumem_report_row_rank(b->last);

	if (ra != rb)
		return ra < rb ? -1 : 1;
	if (a->last->vs.slow && b->last->vs.slow && a->last->vs.ratio != b->last->vs.ratio)
		return a->last->vs.ratio < b->last->vs.ratio ? -1 : 1;
	if (isfinite(a->frac) != isfinite(b->frac))
		return isfinite(a->frac) ? -1 : 1;
	if (isfinite(a->frac) && a->frac != b->frac)
		return a->frac < b->frac ? -1 : 1;
	if (a->nbad != b->nbad)
		return a->nbad > b->nbad ? -1 : 1;
	return gpumem_report_natcmp(a->last->rep->node, b->last->rep->node);
}

static int cmp_frac(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;

	return a < b ? -1 : a > b;
}

static struct gpumem_fleet_model *model_of(struct gpumem_fleet *fl, const char *name)
{
	struct gpumem_fleet_model *m;

	if (name == NULL)
		name = "unknown model";
	for (size_t i = 0; i < fl->nmodels; i++)
		if (!strcmp(fl->models[i].name, name))
			return &fl->models[i];
	m = realloc(fl->models, (fl->nmodels + 1) * sizeof(*m));
	if (m == NULL)
		return NULL;
	fl->models = m;
	m = &fl->models[fl->nmodels++];
	memset(m, 0, sizeof(*m));
	m->name = name;
	m->reference = m->threshold_frac = NAN;
	return m;
}

/* The GPUs: one pass over the rows sorted by GPU. */
static int build_gpus(struct gpumem_fleet *fl, struct gpumem_report_row **byg, size_t n)
{
	for (size_t i = 0; i < n;) {
		struct gpumem_fleet_gpu *g = &fl->gpus[fl->ngpus++];
		size_t j = i;

		memset(g, 0, sizeof(*g));
		g->last = byg[i];
		g->frac = fraction(byg[i], fl->metric);
		g->threshold_frac = isfinite(g->frac) && byg[i]->m[fl->metric].threshold > 0 ?
			byg[i]->m[fl->metric].threshold / byg[i]->m[fl->metric].reference : NAN;
		for (; j < n && cmp_gpu_key(byg[i], byg[j]) == 0; j++) {
			g->nrows++;
			g->nbad += is_bad(byg[j]->vclass);
		}
		i = j;
	}
	return 0;
}

int gpumem_fleet_below(const struct gpumem_fleet_gpu *g)
{
	return isfinite(g->threshold_frac) && g->frac < g->threshold_frac;
}

static int push(double **a, size_t *n, double v)
{
	if (*n % 256 == 0) {
		double *b = realloc(*a, (*n + 256) * sizeof(*b));

		if (b == NULL)
			return -1;
		*a = b;
	}
	(*a)[(*n)++] = v;
	return 0;
}

/*
 * The models: GPU counts by newest verdict, fractions sorted, and the
 * threshold most of their GPUs were held to (the median of theirs).
 */
static int build_models(struct gpumem_fleet *fl)
{
	for (size_t i = 0; i < fl->ngpus; i++) {
		struct gpumem_fleet_gpu *g = &fl->gpus[i];
		struct gpumem_fleet_model *m = model_of(fl, g->last->gpu_name);

		if (m == NULL)
			return -1;
		m->ngpus++;
		m->count[g->last->vclass]++;
		if (!isfinite(g->frac))
			continue;
		if (push(&m->fracs, &m->nfracs, g->frac) < 0 ||
		    (isfinite(g->threshold_frac) && push(&m->thrs, &m->nthrs, g->threshold_frac) < 0))
			return -1;
		if (!isfinite(m->reference))
			m->reference = g->last->m[fl->metric].reference;
		m->below += gpumem_fleet_below(g);
	}
	for (size_t i = 0; i < fl->nmodels; i++) {
		struct gpumem_fleet_model *m = &fl->models[i];

		qsort(m->fracs, m->nfracs, sizeof(double), cmp_frac);
		qsort(m->thrs, m->nthrs, sizeof(double), cmp_frac);
		m->threshold_frac = m->nthrs ? m->thrs[m->nthrs / 2] : NAN;
	}
	return 0;
}

/* Nodes with a drained report: the newest such report of each. */
static int build_drained(struct gpumem_fleet *fl, struct gpumem_report_row *const *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct gpumem_report_file *f = rows[i]->rep;
		size_t k;

		if (!f->drained)
			continue;
		for (k = 0; k < fl->ndrained; k++)
			if (!strcmp(fl->drained[k]->node, f->node))
				break;
		if (k < fl->ndrained) {
			if (f->time > fl->drained[k]->time)
				fl->drained[k] = f;
			continue;
		}
		if (fl->ndrained % 16 == 0) {
			const struct gpumem_report_file **d =
				realloc(fl->drained, (fl->ndrained + 16) * sizeof(*d));

			if (d == NULL)
				return -1;
			fl->drained = d;
		}
		fl->drained[fl->ndrained++] = f;
	}
	return 0;
}

int gpumem_fleet_build(struct gpumem_report_row *const *rows, size_t n, int metric,
		       struct gpumem_fleet *fl)
{
	struct gpumem_report_row **byg = NULL;
	size_t ng = 0;
	int rv = -1;

	memset(fl, 0, sizeof(*fl));
	fl->metric = metric;
	fl->nrows = n;
	byg = malloc((n ? n : 1) * sizeof(*byg));
	fl->gpus = malloc((n ? n : 1) * sizeof(*fl->gpus));
	if (byg == NULL || fl->gpus == NULL)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		fl->count[rows[i]->vclass]++;
		if (rows[i]->has_gpu)
			byg[ng++] = rows[i];
		if (i == 0 || rows[i]->rep->time < fl->first)
			fl->first = rows[i]->rep->time;
		if (i == 0 || rows[i]->rep->time > fl->last)
			fl->last = rows[i]->rep->time;
	}
	qsort(byg, ng, sizeof(*byg), gpumem_fleet_cmp_by_gpu);
	if (build_gpus(fl, byg, ng) < 0 || build_models(fl) < 0 || build_drained(fl, rows, n) < 0)
		goto fail;
	fl->worst = malloc((fl->ngpus ? fl->ngpus : 1) * sizeof(*fl->worst));
	if (fl->worst == NULL)
		goto fail;
	for (size_t i = 0; i < fl->ngpus; i++)
		fl->worst[i] = &fl->gpus[i];
	qsort(fl->worst, fl->ngpus, sizeof(*fl->worst), cmp_worst);
	fl->nnodes = gpumem_fleet_count_nodes(rows, n);
	rv = 0;
fail:
	free(byg);
	if (rv < 0)
		gpumem_fleet_free(fl);
	return rv;
}

size_t gpumem_fleet_nslow(const struct gpumem_fleet *fl)
{
	size_t k = 0;

	for (size_t i = 0; i < fl->ngpus; i++)
		k += fl->gpus[i].last->vs.slow;
	return k;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t gpumem_fleet_count_nodes(struct gpumem_report_row *const *rows, size_t n)
{
	const char **names = malloc((n ? n : 1) * sizeof(*names));
	size_t k = 0;

	if (names == NULL)
		return 0;
	for (size_t i = 0; i < n; i++)
		names[i] = rows[i]->rep->node;
	qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++)
		k += i == 0 || strcmp(names[i], names[i - 1]) != 0;
	free(names);
	return k;
}

/* The q-quantile (0..1) of a sorted array, nearest rank. */
double gpumem_fleet_quantile(const double *v, size_t n, double q)
{
	size_t i;

	if (n == 0)
		return NAN;
	i = (size_t)ceil(q * (double)n);
	return v[i ? i - 1 : 0];
}

void gpumem_fleet_free(struct gpumem_fleet *fl)
{
	for (size_t i = 0; i < fl->nmodels; i++) {
		free(fl->models[i].fracs);
		free(fl->models[i].thrs);
	}
	free(fl->models);
	free(fl->gpus);
	free(fl->worst);
	free(fl->drained);
	memset(fl, 0, sizeof(*fl));
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The bounded statistics of one metric (sample_stats.h): histograms with a
 * fixed layout per unit, level counters, and the timeline that merges
 * neighbouring slots when a tick falls past its end.  Pure arithmetic, no
 * NVML and no JSON, so tests/unit/test_sample_stats.c checks it alone.
 */
#include <math.h>
#include <string.h>
#include "sample_stats.h"

_Static_assert(SAMPLE_PCT_BINS >= SAMPLE_GBPS_BINS, "bin[] holds either layout");

static const double pct_levels[SAMPLE_LEVELS] = { 25, 50, 80 };
static const double gbps_levels[SAMPLE_LEVELS] = { 1, 10, 25 };

void sample_stat_init(struct sample_stat *s, enum sample_unit u)
{
	memset(s, 0, sizeof(*s));
	s->unit = u;
	s->per_slot = 1;
}

const double *sample_stat_levels(enum sample_unit u)
{
	return u == SAMPLE_PERCENT ? pct_levels : u == SAMPLE_GBPS ? gbps_levels : NULL;
}

const char *sample_stat_unit_name(enum sample_unit u)
{
	return u == SAMPLE_PERCENT ? "%" : u == SAMPLE_GBPS ? "GB/s" : "GiB";
}

/* The histogram bin of V (V >= 0). */
static size_t bin_of(enum sample_unit u, double v)
{
	double j;

	if (u == SAMPLE_PERCENT)
		return (size_t)lround(v * 2);   /* 0 <= v <= 100 */
	if (v == 0)
		return 0;
	if (v < SAMPLE_LOG_LOW)
		return 1;
	j = floor(log(v / SAMPLE_LOG_LOW) / log(SAMPLE_LOG_RATIO));
	return j >= SAMPLE_LOG_BINS ? SAMPLE_GBPS_BINS - 1 : 2 + (size_t)j;
}

/*
 * The figure bin B stands for (the caller keeps it within [min, max]): a
 * bin's centre (geometric for GB/s), infinity for the open bin at the top
 * of GB/s, which thus reads as the max.
 */
static double bin_value(enum sample_unit u, size_t b)
{
	if (u == SAMPLE_PERCENT)
		return b / 2.0;
	if (b == 0)
		return 0;
	if (b == 1)
		return SAMPLE_LOG_LOW / 2;
	if (b == SAMPLE_GBPS_BINS - 1)
		return INFINITY;
	return SAMPLE_LOG_LOW * pow(SAMPLE_LOG_RATIO, (double)(b - 2) + 0.5);
}

/* Halve the timeline's resolution: slot i becomes slots 2i and 2i + 1. */
static void merge(struct sample_stat *s)
{
	for (size_t i = 0; i < SAMPLE_SLOTS / 2; i++) {
		s->slot_sum[i] = s->slot_sum[2 * i] + s->slot_sum[2 * i + 1];
		s->slot_n[i] = s->slot_n[2 * i] + s->slot_n[2 * i + 1];
	}
	for (size_t i = SAMPLE_SLOTS / 2; i < SAMPLE_SLOTS; i++) {
		s->slot_sum[i] = 0;
		s->slot_n[i] = 0;
	}
	s->per_slot *= 2;
}

static void count(struct sample_stat *s, double v)
{
	const double *lv = sample_stat_levels(s->unit);

	if (s->n == 0 || v < s->min)
		s->min = v;
	if (s->n == 0 || v > s->max)
		s->max = v;
	s->n++;
	s->sum += v;
	if (lv == NULL)
		return;
	for (int i = 0; i < SAMPLE_LEVELS; i++)
		if (v >= lv[i])
			s->above[i]++;
	s->bin[bin_of(s->unit, v)]++;
}

void sample_stat_add(struct sample_stat *s, unsigned long long t, double v)
{
	size_t slot;

	while (t / s->per_slot >= SAMPLE_SLOTS)
		merge(s);
	if (t + 1 > s->ticks)
		s->ticks = t + 1;
	if (!isfinite(v) || (s->unit == SAMPLE_GBPS && v > SAMPLE_GBPS_MAX) ||
	    (s->unit == SAMPLE_GIB && v > SAMPLE_GIB_MAX))
		return;
	if (v < 0)
		v = 0;
	if (s->unit == SAMPLE_PERCENT && v > 100)
		v = 100;
	count(s, v);
	slot = (size_t)(t / s->per_slot);
	s->slot_sum[slot] += v;
	s->slot_n[slot]++;
}

double sample_stat_mean(const struct sample_stat *s)
{
	return s->n ? s->sum / (double)s->n : NAN;
}

double sample_stat_quantile(const struct sample_stat *s, double q)
{
	size_t nbins = s->unit == SAMPLE_PERCENT ? SAMPLE_PCT_BINS : SAMPLE_GBPS_BINS;
	unsigned long long rank, seen = 0;
	double v;

	if (s->n == 0 || s->unit == SAMPLE_GIB)
		return NAN;
	/* The nearest rank; 1e-9 keeps 0.95 x 20 from reading as 19.000...01. */
	rank = (unsigned long long)ceil(q * (double)s->n - 1e-9);
	if (rank < 1)
		rank = 1;
	for (size_t b = 0; b < nbins; b++) {
		seen += s->bin[b];
		if (seen >= rank) {
			v = bin_value(s->unit, b);
			return v < s->min ? s->min : v > s->max ? s->max : v;
		}
	}
	return s->max;
}

double sample_stat_above(const struct sample_stat *s, int i)
{
	if (s->n == 0 || i < 0 || i >= SAMPLE_LEVELS || s->unit == SAMPLE_GIB)
		return NAN;
	return (double)s->above[i] / (double)s->n;
}

size_t sample_stat_slots(const struct sample_stat *s)
{
	return s->ticks ? (size_t)((s->ticks - 1) / s->per_slot) + 1 : 0;
}

double sample_stat_slot(const struct sample_stat *s, size_t i)
{
	if (i >= SAMPLE_SLOTS || s->slot_n[i] == 0)
		return NAN;
	return s->slot_sum[i] / s->slot_n[i];
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One metric's figures over a job of any length, in a fixed size: count,
 * sum, min and max, a histogram for the median and p95, the shares at or
 * above a few levels, and a timeline of at most SAMPLE_SLOTS means whose
 * step doubles (neighbours merged) when the job outlasts it.  Nothing here
 * allocates or grows with the number of samples: a sampler that runs for
 * weeks uses the memory it used in its first second.
 */
#ifndef GPUMEM_SAMPLE_STATS_H
#define GPUMEM_SAMPLE_STATS_H
#include <stddef.h>

enum sample_unit { SAMPLE_PERCENT, SAMPLE_GBPS, SAMPLE_GIB };

#define SAMPLE_SLOTS  120               /* timeline entries at most */
#define SAMPLE_LEVELS 3                 /* "above" levels per unit */
/*
 * What a figure may be: a percent past 100 (counter noise) counts as 100;
 * GB/s or GiB past these no link or GPU has are not counted (a bad
 * reading), so the document stays within what its reader accepts.
 */
#define SAMPLE_GBPS_MAX 100000.0
#define SAMPLE_GIB_MAX  65536.0
/*
 * Percent: bins centred on 0, 0.5, ... 100 (half a percent wide, so a
 * figure is within 0.25 of the truth and whole or half percents come back
 * exactly).
 */
#define SAMPLE_PCT_BINS 201
/*
 * GB/s: exact 0; (0, 0.01); log-spaced bins 10 % wide from 0.01 to 10000
 * GB/s (a bin's geometric centre is within 5 % of anything in it); 10000
 * and more.
 */
#define SAMPLE_LOG_LOW   0.01
#define SAMPLE_LOG_RATIO 1.1
#define SAMPLE_LOG_BINS  145            /* 1.1^145 > 1e6 = 10000 / 0.01 */
#define SAMPLE_GBPS_BINS (SAMPLE_LOG_BINS + 3)

struct sample_stat {
	enum sample_unit unit;
	unsigned long long n;                   /* values seen */
	double sum, min, max;
	unsigned long long above[SAMPLE_LEVELS];
	unsigned int bin[SAMPLE_PCT_BINS];      /* the larger of the two layouts */
	double slot_sum[SAMPLE_SLOTS];
	unsigned int slot_n[SAMPLE_SLOTS];
	unsigned long long per_slot;            /* ticks per timeline slot: 1, 2, 4, ... */
	unsigned long long ticks;               /* last tick + 1 */
};

void sample_stat_init(struct sample_stat *s, enum sample_unit u);
/*
 * Tick T (the sampling round, 0, 1, ... in time order) with value V, or a
 * NaN where that round has none (a negative V counts as 0, see above for
 * the top).  A GPU gives every tick to each of its
 * metrics, so their timelines keep one step.
 */
void sample_stat_add(struct sample_stat *s, unsigned long long t, double v);
/* The levels of U ({25, 50, 80} %, {1, 10, 25} GB/s); NULL for GiB. */
const double *sample_stat_levels(enum sample_unit u);
/* "%", "GB/s", "GiB". */
const char *sample_stat_unit_name(enum sample_unit u);
/* Mean; NaN without values. */
double sample_stat_mean(const struct sample_stat *s);
/*
 * The nearest-rank Q-quantile (0 < Q <= 1: the smallest value with at
 * least Q of the values at or below it) from the histogram, kept within
 * [min, max]; NaN without values or for GiB (no histogram).
 */
double sample_stat_quantile(const struct sample_stat *s, double q);
/* Share (0..1) of the values at or above level I; NaN without values. */
double sample_stat_above(const struct sample_stat *s, int i);
/* Timeline: entries in use, and entry I's mean (NaN: no value in that slot). */
size_t sample_stat_slots(const struct sample_stat *s);
double sample_stat_slot(const struct sample_stat *s, size_t i);
#endif

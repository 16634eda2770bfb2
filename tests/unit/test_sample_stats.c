/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-sample's bounded statistics (plugin/sample/sample_stats.c): mean,
 * nearest-rank median and p95 from the histograms (exact on half percents,
 * within 5 % on GB/s), the "above" shares, and the timeline that keeps at
 * most 120 slots by doubling its step, over a run of any length.
 */
#include <math.h>
#include "sample_stats.h"
#include "tap.h"

#define near(got, want, tol, ...) do { \
	double g_ = (got), w_ = (want); \
	ok(fabs(g_ - w_) <= (tol), __VA_ARGS__); \
	if (!(fabs(g_ - w_) <= (tol))) printf("#   got %.6g, want %.6g\n", g_, w_); \
} while (0)

static struct sample_stat s;

static void percent(void)
{
	sample_stat_init(&s, SAMPLE_PERCENT);
	ok(isnan(sample_stat_mean(&s)) && isnan(sample_stat_quantile(&s, 0.5)),
	   "no values: mean and median are NaN");
	/* 1..100 %: nearest rank gives 50 and 95. */
	for (int i = 1; i <= 100; i++)
		sample_stat_add(&s, (unsigned long long)(i - 1), i);
	near(sample_stat_mean(&s), 50.5, 1e-9, "mean of 1..100");
	near(sample_stat_quantile(&s, 0.5), 50, 0, "median of 1..100 is 50 (nearest rank)");
	near(sample_stat_quantile(&s, 0.95), 95, 0, "p95 of 1..100 is 95");
	near(sample_stat_quantile(&s, 1), 100, 0, "quantile 1 is the max");
	near(sample_stat_above(&s, 0), 0.76, 1e-9, "76 %% of the values at or above 25");
	near(sample_stat_above(&s, 1), 0.51, 1e-9, "51 %% at or above 50");
	near(sample_stat_above(&s, 2), 0.21, 1e-9, "21 %% at or above 80");
	is_int(sample_stat_slots(&s), 100, "100 ticks: 100 slots");

	sample_stat_init(&s, SAMPLE_PERCENT);
	for (int i = 0; i < 10; i++)
		sample_stat_add(&s, (unsigned long long)i, 33.3);
	near(sample_stat_quantile(&s, 0.5), 33.3, 1e-9, "a constant 33.3: median kept within [min, max]");
	sample_stat_init(&s, SAMPLE_PERCENT);
	sample_stat_add(&s, 0, 12.3);
	sample_stat_add(&s, 1, 101.7);
	near(sample_stat_quantile(&s, 0.5), 12.5, 0, "12.3 falls in the 12.5 bin (0.25 at most off)");
	near(sample_stat_quantile(&s, 0.95), 100, 0, "a percent past 100 counts as 100");
	near(s.max, 100, 0, "  also as the max");
	sample_stat_add(&s, 2, -3);
	near(s.min, 0, 0, "a negative figure counts as 0");
	sample_stat_init(&s, SAMPLE_GBPS);
	sample_stat_add(&s, 0, 2e5);
	sample_stat_add(&s, 1, 1e300);
	sample_stat_add(&s, 2, 12);
	ok(s.n == 1 && s.max == 12, "GB/s past 100000: not counted (a bad reading)");
	sample_stat_init(&s, SAMPLE_GIB);
	sample_stat_add(&s, 0, 1e6);
	ok(s.n == 0, "GiB past 65536: not counted");
}

static void gbps(void)
{
	double v[] = { 0, 0, 0.004, 0.02, 0.5, 1, 7.25, 12.5, 30, 55.5, 250, 20000 };
	int n = (int)(sizeof(v) / sizeof(v[0]));

	sample_stat_init(&s, SAMPLE_GBPS);
	for (int i = 0; i < n; i++)
		sample_stat_add(&s, (unsigned long long)i, v[i]);
	/* rank ceil(0.5 * 12) = 6: the sixth smallest, 1 GB/s. */
	near(sample_stat_quantile(&s, 0.5), 1, 0.05, "median within 5 %%");
	near(sample_stat_quantile(&s, 0.95), 20000, 0, "p95 past 10000 GB/s (the open bin): the max");
	near(sample_stat_quantile(&s, 1.0 / 12), 0, 0, "zero is kept exactly");
	near(sample_stat_quantile(&s, 3.0 / 12), 0.005, 0.001, "below 0.01 GB/s: one bin");
	for (int i = 0; i < 200; i++) {
		double x = 0.01 * pow(10000 / 0.01, i / 199.0), q;

		sample_stat_init(&s, SAMPLE_GBPS);
		sample_stat_add(&s, 0, x);
		sample_stat_add(&s, 1, x * 1.5);         /* the bin alone decides, not min/max */
		sample_stat_add(&s, 2, 0);
		q = sample_stat_quantile(&s, 0.5);
		if (fabs(q - x) > 0.05 * x) {
			near(q, x, 0.05 * x, "log bins: %g GB/s within 5 %%", x);
			return;
		}
	}
	ok(1, "log bins: 0.01..10000 GB/s each within 5 %%");
	near(sample_stat_above(&s, 0), 2.0 / 3, 1e-9, "GB/s levels: 1, 10, 25");
}

static void timeline(void)
{
	unsigned long long t;

	sample_stat_init(&s, SAMPLE_GBPS);
	for (t = 0; t < 120; t++)
		sample_stat_add(&s, t, (double)t);
	is_int(s.per_slot, 1, "120 ticks: step 1");
	is_int(sample_stat_slots(&s), 120, "120 slots");
	sample_stat_add(&s, 120, 120);
	is_int(s.per_slot, 2, "tick 121: the step doubles");
	is_int(sample_stat_slots(&s), 61, "61 slots");
	near(sample_stat_slot(&s, 0), 0.5, 1e-9, "slot 0 is the mean of ticks 0 and 1");
	near(sample_stat_slot(&s, 59), 118.5, 1e-9, "slot 59 of ticks 118 and 119");
	near(sample_stat_slot(&s, 60), 120, 1e-9, "slot 60 holds tick 120 alone");
	/* Ticks without a value (NaN) leave empty slots, and still move time on. */
	for (t = 121; t < 200; t++)
		sample_stat_add(&s, t, NAN);
	ok(isnan(sample_stat_slot(&s, 99)), "no values in ticks 198-199: an empty slot");
	is_int(sample_stat_slots(&s), 100, "200 ticks at step 2: 100 slots");
	/* A week at 1 s: bounded, step a power of two, every slot means what it says. */
	sample_stat_init(&s, SAMPLE_PERCENT);
	for (t = 0; t < 7ULL * 86400; t++)
		sample_stat_add(&s, t, t % 2 ? 100 : 0);
	ok(sample_stat_slots(&s) <= 120 && sample_stat_slots(&s) > 60, "a week: %zu slots",
	   sample_stat_slots(&s));
	is_int(s.per_slot, 8192, "a week at 1 s: 8192 s a slot");
	near(sample_stat_slot(&s, 3), 50, 1e-9, "a slot's mean over its ticks");
	near(sample_stat_mean(&s), 50, 1e-9, "the mean over the week");
	near(sample_stat_quantile(&s, 0.5), 0, 0, "median of half 0, half 100 (nearest rank)");
	near(sample_stat_quantile(&s, 0.95), 100, 0, "p95 100");
	/* A tick far ahead (missed rounds): several merges at once. */
	sample_stat_init(&s, SAMPLE_GBPS);
	sample_stat_add(&s, 0, 1);
	sample_stat_add(&s, 1000, 3);
	is_int(s.per_slot, 16, "tick 1000 at once: step 16");
	near(sample_stat_slot(&s, 0), 1, 1e-9, "the first value kept");
	near(sample_stat_slot(&s, 62), 3, 1e-9, "the new one in slot 1000 / 16");
	sample_stat_init(&s, SAMPLE_GIB);
	sample_stat_add(&s, 0, 7.5);
	ok(isnan(sample_stat_quantile(&s, 0.5)) && isnan(sample_stat_above(&s, 0)) &&
	   sample_stat_levels(SAMPLE_GIB) == NULL, "GiB: no histogram, no levels");
	is_str(sample_stat_unit_name(SAMPLE_GIB), "GiB", "unit names");
}

int main(void)
{
	percent();
	gbps();
	timeline();
	return tap_done();
}

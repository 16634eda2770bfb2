/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A GPU against its own history (history_rules.c; the hooks' side is
 * history.c): the figures of its recent measured passes, as root keeps
 * them in state_dir/gpus/hist.NODE.UUID, and whether a figure measured now
 * falls more than its margin below their median.  No Slurm, no state:
 * tests/unit/test_history_rules.c tests them whole.
 * doc/admin/checks.md ("The GPU against its own history") gives the
 * margins and the measurements behind them.
 */
#ifndef GPUMEM_HISTORY_RULES_H
#define GPUMEM_HISTORY_RULES_H
#include <stddef.h>

/* The figures kept, in the check's order: read write copy triad d2d h2d d2h. */
#define GPUMEM_HIST_NFIG 7
/* Passes kept per GPU, and the fewest a figure is judged against. */
#define GPUMEM_HIST_KEEP 9
#define GPUMEM_HIST_MIN 3
/* How far below its median a figure may fall: memory figures, host link figures. */
#define GPUMEM_HIST_MARGIN_MEM 0.05
#define GPUMEM_HIST_MARGIN_HOST 0.15

/* One measured pass: when, and each figure in GB/s (0: not measured). */
struct gpumem_hist_pass {
	long long sec;
	double fig[GPUMEM_HIST_NFIG];
};

struct gpumem_hist {
	int n;                          /* oldest first */
	struct gpumem_hist_pass pass[GPUMEM_HIST_KEEP];
};

/* Figure I's name ("triad"), and its margin. */
const char *gpumem_hist_name(int i);
double gpumem_hist_margin(int i);
/*
 * TEXT (a history file's: a line "SEC F F F F F F F" per pass, "-" for a
 * figure not measured) into *H: 0, or -1 with why (line N) when a line is
 * not one.  NULL or "": no pass.
 */
int gpumem_hist_parse(const char *text, struct gpumem_hist *h, char *why, size_t len);
/* *H as its file's text into BUF: 0, or -1 when it does not fit. */
int gpumem_hist_format(const struct gpumem_hist *h, char *buf, size_t len);
/* Keep pass P, the oldest dropped beyond GPUMEM_HIST_KEEP. */
void gpumem_hist_add(struct gpumem_hist *h, const struct gpumem_hist_pass *p);
/*
 * The figures of NOW more than their margin below the median of the same
 * figure over H's passes (with at least GPUMEM_HIST_MIN of them), said in
 * WHY ("triad 3280.0 GB/s is 20% below its median 4100.0 of 5 passes
 * (margin 5%)", "; " between): their count, 0 none.
 */
int gpumem_hist_below(const struct gpumem_hist *h, const struct gpumem_hist_pass *now, char *why,
		      size_t len);
#endif

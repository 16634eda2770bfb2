/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem job --report FILE --svg OUT: the picture of one job's GPU memory
 * profile, per node and GPU (job_svg.c: the reports and the page;
 * job_svg_plot.c: one GPU's caption and its three plots over time).  The
 * primitives (escaping, text widths, wrapping, round steps) are the fleet
 * picture's (report_svg_draw.c): there is one SVG writer.
 */
#ifndef GPUMEM_JOB_SVG_H
#define GPUMEM_JOB_SVG_H
#include <stdio.h>
#include "core_advice.h"
#include "core_base.h"

#define JSVG_PLOT_W 300         /* one plot, labels included */
#define JSVG_PLOT_H 150
#define JSVG_GAP 14
#define JSVG_MARGIN 20
#define JSVG_PAGE_W (2 * JSVG_MARGIN + 3 * JSVG_PLOT_W + 2 * JSVG_GAP)

/* One GPU of a profile document (checked: gpumem_profile_check), and its advice. */
struct gpumem_jsvg_gpu {
	const char *node;
	struct json_object *gpu;        /* the document's gpus[i] */
	struct gpumem_advice adv;
	int advised;                    /* adv holds advice (the compact row was read) */
};

/*
 * Draw GPU G's block at y (caption, then the three plots) when DRAW;
 * returns its height.
 */
double gpumem_jsvg_gpu(FILE *f, const struct gpumem_jsvg_gpu *g, double y, int draw);

/*
 * gpumem job --report FILE --svg OUT (OUT "-": stdout), or with REPORT
 * NULL, gpumem job ID --svg OUT from the reports in DIR; the exit code.
 */
int gpumem_job_svg(const char *report, const char *dir, double id, const char *out);
#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The picture of `gpumem report --svg`, shared among its files:
 * report_svg.c lays out the page, report_svg_panel.c builds and draws one
 * panel per GPU (a metric over time), report_svg_fleet.c the overview of
 * every GPU above them, report_svg_draw.c the primitives (text widths,
 * escaping, markers, scales).  SVG 1.1 written by hand: it opens in any
 * browser and renders with rsvg-convert, and the CLI gains no dependency.
 */
#ifndef GPUMEM_REPORT_SVG_H
#define GPUMEM_REPORT_SVG_H

#include <stdio.h>
#include <time.h>
#include "report_cli.h"

#define PW      360     /* a panel */
#define PH      200
#define GAP     14
#define MARGIN  20
#define PL      50      /* its plot area: left, right, top, bottom */
#define PR      42
#define PT      38
#define PB      34
#define MIN_PAGE_W 640
#define MAX_TICKS 12
#define FONT "DejaVu Sans, Verdana, Helvetica, Arial, sans-serif"

struct pt {
	time_t t;
	double v, thr, floor;                   /* NaN: not measured, not known */
	enum gpumem_report_vclass mclass;       /* the metric's verdict (the marker) */
	enum gpumem_report_vclass rclass;       /* the GPU's (or report's) verdict */
	const struct gpumem_report_row *row;
};

struct panel {
	const char *node, *uuid, *model;
	int index;                              /* the node's GPU index, -1 */
	int nogpu;                              /* a node whose reports had no GPU */
	struct pt *pts;
	size_t n, cap;
	int worst;                              /* best sort rank among its points */
	double low;                             /* its lowest figure / reference; HUGE_VAL */
	double slow;                            /* its lowest ratio of a slow row; HUGE_VAL */
};

struct tick {
	time_t t;
	char l1[16], l2[16];
};

struct xscale {
	time_t t0, t1;
	struct tick ticks[MAX_TICKS + 1];
	int nticks;
};


extern const char *const gpumem_svg_colours[GPUMEM_REPORT_NV];

size_t gpumem_svg_nchars(const char *s);
/* Estimated width of s at a font size (no font metrics here: generous). */
double gpumem_svg_text_w(const char *s, double size);
/* XML text: markup escaped, what XML 1.0 cannot hold replaced. */
void gpumem_svg_xml(FILE *f, const char *s);
/*
 * Text wrapped at spaces to a width, in lines 1.35 x SIZE apart, drawn when
 * DRAW; returns the number of lines.
 */
int gpumem_svg_wrapped(FILE *f, double x, double y, double size, double width, const char *fill,
		       const char *text, int draw);
/* s cut to at most max characters, ending in an ellipsis. */
void gpumem_svg_cut(const char *s, size_t max, char *out, size_t outlen);
void gpumem_svg_gbps(double v, char *buf, size_t len);
double gpumem_svg_nice_step(double range, int n);
void gpumem_svg_utc(time_t t, struct tm *tm);
void gpumem_svg_ticks(struct xscale *xs, double plot_w);
double gpumem_svg_xpos(const struct xscale *xs, time_t t);
/* The marker of a verdict: circle pass, diamond warn, square fail... */
void gpumem_svg_marker(FILE *f, double x, double y, enum gpumem_report_vclass c);

/* One panel per GPU (and per node with reports but no GPU), worst first. */
int gpumem_svg_build_panels(struct gpumem_report_row *const *rows, size_t n, int metric,
			    struct panel **psp, size_t *npp);
void gpumem_svg_draw_panel(FILE *f, const struct panel *p, double x0, double y0,
			   const struct xscale *xs, int metric);

/*
 * The overview of every GPU (fl) in a box at x, y of the given width:
 * drawn when draw, else only measured; returns its height (0: no GPU).
 */
double gpumem_svg_fleet(FILE *f, const struct gpumem_fleet *fl, double x, double y, double width,
			int draw);

#endif

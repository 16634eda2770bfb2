/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem report --svg: the page.  Small multiples, one panel per GPU, of
 * one bandwidth metric over time against the pass threshold the check
 * applied, worst first, under one time axis; above them, the overview of
 * every GPU of the fleet (report_svg_fleet.c).  Text widths are estimated,
 * generously, so labels are placed or dropped, never overlapped.  Last, the
 * page into the file --svg names.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core_base.h"
#include "report_svg.h"

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(const void *const *)a, y = (uintptr_t)*(const void *const *)b;

	return x < y ? -1 : x > y;
}

/* Reports, not rows: a report of a 4-GPU step is 4 rows. */
static size_t count_reports(struct gpumem_report_row *const *rows, size_t n)
{
	const void **reps = malloc((n ? n : 1) * sizeof(*reps));
	size_t count = 0;

	if (reps == NULL)
		return n;
	for (size_t i = 0; i < n; i++)
		reps[i] = rows[i]->rep;
	qsort(reps, n, sizeof(*reps), cmp_ptr);
	for (size_t i = 0; i < n; i++)
		count += i == 0 || reps[i] != reps[i - 1];
	free(reps);
	return count;
}

/* One legend entry; returns its width. */
static double legend_item(FILE *f, double x, double y, int kind, const char *label, int draw)
{
	double w = 22 + gpumem_svg_text_w(label, 10.5) + 14;

	if (!draw)
		return w;
	switch (kind) {
	case 100:
		fprintf(f, "<path d=\"M%.1f %.1fh18\" stroke=\"#455a64\" stroke-width=\"1.3\" "
			"stroke-dasharray=\"6,4\"/>", x, y - 3.5);
		break;
	case 101:
		fprintf(f, "<path d=\"M%.1f %.1fh18\" stroke=\"#d32f2f\" stroke-dasharray=\"1.5,3\"/>",
			x, y - 3.5);
		break;
	case 102:
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6.8\" fill=\"none\" stroke=\"%s\" "
			"stroke-width=\"1.6\"/>", x + 9, y - 3.5, gpumem_svg_colours[GPUMEM_REPORT_V_FAIL]);
		gpumem_svg_marker(f, x + 9, y - 3.5, GPUMEM_REPORT_V_PASS);
		break;
	default:
		gpumem_svg_marker(f, x + 9, y - 3.5, (enum gpumem_report_vclass)kind);
		break;
	}
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10.5\" fill=\"#37474f\">", x + 22, y);
	gpumem_svg_xml(f, label);
	fputs("</text>\n", f);
	return w;
}

/* The legend, wrapped to the page width; returns its height. */
static double legend(FILE *f, double y, double width, int draw)
{
	static const struct { int kind; const char *label; } items[] = {
		{ GPUMEM_REPORT_V_PASS, "pass" },
		{ GPUMEM_REPORT_V_WARN, "warn" },
		{ GPUMEM_REPORT_V_FAIL, "fail" },
		{ GPUMEM_REPORT_V_UNUSABLE, "unusable" },
		{ GPUMEM_REPORT_V_ERROR, "error, timed out" },
		{ GPUMEM_REPORT_V_SKIPPED, "skipped, not run (no figure)" },
		{ 102, "GPU verdict worse than this metric" },
		{ 100, "pass threshold" },
		{ 101, "fail below" },
	};
	double x = MARGIN, h = 16;

	for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++) {
		double w = legend_item(f, 0, 0, items[i].kind, items[i].label, 0);

		if (x + w > width - MARGIN && x > MARGIN) {
			x = MARGIN;
			y += 18;
			h += 18;
		}
		legend_item(f, x, y, items[i].kind, items[i].label, draw);
		x += w;
	}
	return h;
}

/*
 * One time axis for every panel shown, so panels compare at a glance; a
 * lone point (or a burst) still gets an hour-wide axis.  Sets the span's
 * ends as text and counts the nodes.
 */
static void time_axis(const struct panel *ps, size_t shown, struct xscale *xs, char *from,
		      char *to, size_t len, size_t *nodes)
{
	double span, pad;

	*nodes = 0;
	for (size_t i = 0, k; i < shown; i++) {
		for (k = 0; k < ps[i].n; k++) {
			time_t t = ps[i].pts[k].t;

			if ((i == 0 && k == 0) || t < xs->t0) xs->t0 = t;
			if ((i == 0 && k == 0) || t > xs->t1) xs->t1 = t;
		}
		for (k = 0; k < i && strcmp(ps[k].node, ps[i].node); k++)
			;
		*nodes += k == i;
	}
	gpumem_report_utc(xs->t0, from, len);
	gpumem_report_utc(xs->t1, to, len);
	span = difftime(xs->t1, xs->t0);
	if (span < 3600) {
		xs->t0 -= (time_t)((3600 - span) / 2);
		xs->t1 = xs->t0 + 3600;
		span = 3600;
	}
	pad = span * 0.04;
	xs->t0 -= (time_t)pad;
	xs->t1 += (time_t)pad;
	gpumem_svg_ticks(xs, PW - PL - PR);
}

/* The page's head: the document, its style, the title and the subtitle. */
static void head(FILE *f, double page_w, double page_h, const char *mname, const char *sub)
{
	char s2[512];

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
		"height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"%s\">\n", page_w, page_h,
		page_w, page_h, FONT);
	fputs("<style>.tick{font-size:9px;fill:#607d8b}"
	      ".lbl{font-size:9px;fill:#37474f}"
	      ".note{font-size:9px;fill:#37474f;paint-order:stroke;stroke:#fff;stroke-width:3px;"
	      "stroke-linejoin:round}</style>\n", f);
	fprintf(f, "<rect width=\"%.0f\" height=\"%.0f\" fill=\"#f5f7f8\"/>\n", page_w, page_h);
	fprintf(f, "<text x=\"%d\" y=\"30\" font-size=\"17\" font-weight=\"bold\" fill=\"#263238\">"
		"GPU memory bandwidth: %s, GB/s (best of each check)</text>\n", MARGIN, mname);
	fprintf(f, "<text x=\"%d\" y=\"50\" font-size=\"11.5\" fill=\"#546e7a\">", MARGIN);
	gpumem_svg_cut(sub, (size_t)((page_w - 2 * MARGIN) / (11.5 * 0.6)), s2, sizeof(s2));
	gpumem_svg_xml(f, s2);
	fputs("</text>\n", f);
}

static void free_panels(struct panel *ps, size_t np)
{
	for (size_t i = 0; i < np; i++)
		free(ps[i].pts);
	free(ps);
}

int gpumem_report_svg(FILE *f, struct gpumem_report_row *const *rows, size_t n,
		      const struct gpumem_report_svg_opts *o, size_t *total)
{
	const char *mname = gpumem_report_metric_names[o->metric];
	struct gpumem_fleet fl;
	struct panel *ps = NULL;
	size_t np = 0, shown, nodes = 0, reports;
	struct xscale xs = { 0 };
	double page_w, page_h, fleet_y, grid_y, grid_h, fleet_h;
	char sub[512], from[32], to[32], src[160], foot[400];
	int cols, nrows;

	*total = 0;
	if (gpumem_svg_build_panels(rows, n, o->metric, &ps, &np) < 0)
		return -1;
	if (gpumem_fleet_build(rows, n, o->metric, &fl) < 0) {
		free_panels(ps, np);
		return -1;
	}
	*total = np;
	shown = o->max_panels && o->max_panels < np ? o->max_panels : np;
	cols = shown <= 3 ? (int)(shown ? shown : 1) : shown <= 4 ? 2 : shown <= 9 ? 3 : 4;
	nrows = shown ? (int)((shown + (size_t)cols - 1) / (size_t)cols) : 0;
	page_w = 2 * MARGIN + cols * PW + (cols - 1) * GAP;
	if (page_w < MIN_PAGE_W)
		page_w = MIN_PAGE_W;
	time_axis(ps, shown, &xs, from, to, sizeof(from), &nodes);
	reports = count_reports(rows, n);
	gpumem_svg_cut(o->source ? o->source : "", 60, src, sizeof(src));
	if (shown)
		snprintf(sub, sizeof(sub), "%zu GPU panel%s on %zu node%s, %zu report%s, %s to %s UTC, "
			 "from %s", shown, shown == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s",
			 reports, reports == 1 ? "" : "s", from, to, src);
	else
		snprintf(sub, sizeof(sub), "no reports match, from %s", src);
	fleet_y = 78 + legend(f, 0, page_w, 0);
	fleet_h = gpumem_svg_fleet(NULL, &fl, MARGIN, fleet_y, page_w - 2 * MARGIN, 0);
	grid_y = fleet_y + (fleet_h > 0 ? fleet_h + GAP : 0);
	grid_h = nrows ? nrows * PH + (nrows - 1) * GAP : 40;
	snprintf(foot, sizeof(foot), "Times in UTC. One point per check of a GPU (a job step's "
		 "before or after check); marker: the %s verdict; hover a point for its job.", mname);
	if (shown < np)
		snprintf(foot + strlen(foot), sizeof(foot) - strlen(foot),
			 " Showing the %zu worst of %zu GPUs (--limit).", shown, np);
	page_h = grid_y + grid_h + 16 +
		 14 * gpumem_svg_wrapped(f, 0, 0, 10, page_w - 2 * MARGIN, "#78909c", foot, 0);

	head(f, page_w, page_h, mname, sub);
	legend(f, 72, page_w, 1);
	gpumem_svg_fleet(f, &fl, MARGIN, fleet_y, page_w - 2 * MARGIN, 1);
	for (size_t i = 0; i < shown; i++)
		gpumem_svg_draw_panel(f, &ps[i], MARGIN + (double)(i % (size_t)cols) * (PW + GAP),
				      grid_y + (double)(i / (size_t)cols) * (PH + GAP), &xs, o->metric);
	if (!shown)
		fprintf(f, "<text x=\"%d\" y=\"%.0f\" font-size=\"13\" fill=\"#78909c\">No report "
			"matches: nothing to draw.</text>\n", MARGIN, grid_y + 20);
	gpumem_svg_wrapped(f, MARGIN, grid_y + grid_h + 20, 10, page_w - 2 * MARGIN, "#78909c",
			   foot, 1);
	fputs("</svg>\n", f);
	free_panels(ps, np);
	gpumem_fleet_free(&fl);
	return (int)shown;
}

int gpumem_report_write_svg(const char *path, struct gpumem_report_row *const *rows, size_t n,
			    const struct gpumem_report_svg_opts *o)
{
	struct gpumem_out out;
	char why[600];
	size_t total = 0;
	int panels;

	if (gpumem_out_open(&out, path, why, sizeof(why)) < 0) {
		fprintf(stderr, "gpumem: report: --svg %s: %s\n", path, why);
		return -1;
	}
	panels = gpumem_report_svg(out.f, rows, n, o, &total);
	if (gpumem_out_commit(&out, panels >= 0, why, sizeof(why)) < 0) {
		fprintf(stderr, "gpumem: report: --svg: writing %s failed: %s\n", path,
			panels < 0 ? "out of memory" : why);
		return -1;
	}
	fprintf(stderr, "gpumem: report: wrote %s: %s of %d GPU panel%s", path,
		gpumem_report_metric_names[o->metric], panels, panels == 1 ? "" : "s");
	if ((size_t)panels < total)
		fprintf(stderr, " (the %d worst of %zu; --limit N for more)", panels, total);
	fputc('\n', stderr);
	return 0;
}

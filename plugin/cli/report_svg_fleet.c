/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The picture's overview, above the panels: every GPU of the fleet as one
 * mark, a band per model, placed by its newest figure as a fraction of the
 * site's reference (so H100s and H200s share one scale), coloured by its
 * newest verdict; the pass threshold as a dashed line; the GPUs that are
 * not a pass, under their threshold or slow against their peers named
 * below the band, worst first.
 * 8,000 GPUs are 8,000 small circles: a passing fleet is one dense cloud,
 * and whatever sits apart from it is an outlier by eye and by name.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "report_svg.h"

#define LABEL_W 150             /* the model column */
#define BAND_H 52               /* the marks of one model */
#define ROW_H 13                /* a row of outlier names */
#define MAX_NAMED 12            /* names per model */
#define MAX_ROWS 4

struct scale {
	double lo, hi, x0, x1;
};

static double fx(const struct scale *s, double frac)
{
	if (frac < s->lo)
		frac = s->lo;
	if (frac > s->hi)
		frac = s->hi;
	return s->x0 + (frac - s->lo) / (s->hi - s->lo) * (s->x1 - s->x0);
}

/* A steady jitter from the UUID, so a GPU sits at the same height every time. */
static double jitter(const struct gpumem_fleet_gpu *g)
{
	const char *s = g->last->gpu_uuid ? g->last->gpu_uuid : g->last->rep->node;
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return (double)(h % 1000) / 999.0;
}

static int named(const struct gpumem_fleet_gpu *g)
{
	return g->last->vclass != GPUMEM_REPORT_V_PASS || gpumem_fleet_below(g) || g->last->vs.slow;
}

/*
 * The model's GPUs slow against their peers, slowest first, in one line
 * under its band (drawn when draw); returns 1 when there is one.  A model
 * without a reference has no marks to place: this line still names them.
 */
static int draw_slow(FILE *f, double x, double y, const struct gpumem_fleet_gpu **g, size_t n,
		     int draw)
{
	char line[400], one[200], text[160], cut[200];
	size_t k = 0, len = 0;

	line[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		const struct gpumem_report_row *r = g[i]->last;

		if (!r->vs.slow)
			continue;
		if (k++ < 3) {
			gpumem_report_vs_text(r, text, sizeof(text));
			snprintf(one, sizeof(one), "%s%s GPU %d: %s", len ? "; " : "", r->rep->node,
				 gpumem_report_gpu_index(r), text);
			len += (size_t)snprintf(line + len, sizeof(line) - len, "%s", one);
			if (len >= sizeof(line))
				len = sizeof(line) - 1;
		}
	}
	if (k == 0)
		return 0;
	if (k > 3)
		snprintf(line + len, sizeof(line) - len, "; %zu more", k - 3);
	if (draw) {
		gpumem_svg_cut(line, 150, cut, sizeof(cut));
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9.5\" fill=\"#37474f\" "
			"class=\"slow-peers\">", x, y + 10);
		gpumem_svg_xml(f, cut);
		fputs("</text>\n", f);
	}
	return 1;
}

/* The fractions' range, in steps of 0.05, with the reference (1.0) in it. */
static void make_scale(const struct gpumem_fleet *fl, double x0, double x1, struct scale *s)
{
	double lo = 0.9, hi = 1.05;

	for (size_t i = 0; i < fl->nmodels; i++) {
		const struct gpumem_fleet_model *m = &fl->models[i];

		if (m->nfracs == 0)
			continue;
		lo = m->fracs[0] < lo ? m->fracs[0] : lo;
		hi = m->fracs[m->nfracs - 1] > hi ? m->fracs[m->nfracs - 1] : hi;
	}
	s->lo = floor((lo - 0.02) * 20) / 20;
	s->hi = ceil((hi + 0.02) * 20) / 20;
	if (s->lo < 0)
		s->lo = 0;
	s->x0 = x0;
	s->x1 = x1;
}

static void draw_axis(FILE *f, const struct scale *s, double y)
{
	double step = s->hi - s->lo > 0.6 ? 0.1 : 0.05;

	for (double v = ceil(s->lo / step - 1e-9) * step; v <= s->hi + 1e-9; v += step) {
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#90a4ae\"/>",
			fx(s, v), y, fx(s, v), y + 3);
		fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" class=\"tick\" text-anchor=\"middle\">%.2f"
			"</text>\n", fx(s, v), y + 13, v);
	}
	fprintf(f, "<path d=\"M%.1f %.0fH%.1f\" stroke=\"#90a4ae\"/>\n", s->x0, y, s->x1);
	fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" class=\"tick\" text-anchor=\"end\">of the "
		"reference</text>\n", s->x0 - 18, y + 13);
}

/* This model's GPUs in fl->worst order (worst first); returns how many. */
static size_t model_gpus(const struct gpumem_fleet *fl, const struct gpumem_fleet_model *m,
			 const struct gpumem_fleet_gpu **out)
{
	size_t n = 0;

	for (size_t i = 0; i < fl->ngpus; i++) {
		const struct gpumem_fleet_gpu *g = fl->worst[i];
		const char *name = g->last->gpu_name ? g->last->gpu_name : "unknown model";

		if (!strcmp(name, m->name))
			out[n++] = g;
	}
	return n;
}

/* The marks: passing ones first, faint, so the others show on top. */
static void draw_marks(FILE *f, const struct scale *s, double y,
		       const struct gpumem_fleet_gpu **g, size_t n)
{
	/* Faint when many, so a dense cloud still shows where most GPUs are. */
	fprintf(f, "<g fill-opacity=\"%s\">", n > 200 ? "0.3" : "0.75");
	for (size_t i = n; i-- > 0;) {
		if (!isfinite(g[i]->frac) || named(g[i]))
			continue;
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.3\" fill=\"%s\"/>", fx(s, g[i]->frac),
			y + 4 + jitter(g[i]) * (BAND_H - 8), gpumem_svg_colours[g[i]->last->vclass]);
	}
	fputs("</g>\n", f);
	for (size_t i = n; i-- > 0;) {
		const struct gpumem_report_row *r = g[i]->last;
		char t[300];

		if (!isfinite(g[i]->frac) || !named(g[i]))
			continue;
		snprintf(t, sizeof(t), "%s GPU %d %s: %s, %.3f of the reference (%s)", r->rep->node,
			 gpumem_report_gpu_index(r), r->gpu_uuid ? r->gpu_uuid : "",
			 gpumem_report_vclass_name(r->vclass), g[i]->frac, r->rep->time_text);
		fputs("<g class=\"outlier\"><title>", f);
		gpumem_svg_xml(f, t);
		fputs("</title>", f);
		gpumem_svg_marker(f, fx(s, g[i]->frac), y + 4 + jitter(g[i]) * (BAND_H - 8),
				  r->vclass);
		fputs("</g>\n", f);
	}
}

/*
 * The names of the outliers, worst first, each in the first row where it
 * fits at its mark's x, with a leader from the mark; returns the rows used.
 */
static int draw_names(FILE *f, const struct scale *s, double y, const struct gpumem_fleet_gpu **g,
		      size_t n, int draw)
{
	double end[MAX_ROWS];
	size_t shown = 0;
	int rows = 0;

	for (int r = 0; r < MAX_ROWS; r++)
		end[r] = -1e9;
	for (size_t i = 0; i < n && shown < MAX_NAMED; i++) {
		char name[96], cutname[64];
		double x, w;
		int r;

		if (!isfinite(g[i]->frac) || !named(g[i]))
			continue;
		snprintf(name, sizeof(name), "%s GPU %d", g[i]->last->rep->node,
			 gpumem_report_gpu_index(g[i]->last));
		gpumem_svg_cut(name, 28, cutname, sizeof(cutname));
		x = fx(s, g[i]->frac);
		w = gpumem_svg_text_w(cutname, 9.5);
		for (r = 0; r < MAX_ROWS && end[r] > x - 4; r++)
			;
		if (r == MAX_ROWS)
			continue;
		end[r] = x + w;
		rows = r + 1 > rows ? r + 1 : rows;
		shown++;
		if (!draw)
			continue;
		fprintf(f, "<path d=\"M%.1f %.1fV%.1f\" stroke=\"#b0bec5\"/>", x,
			y + 4 + jitter(g[i]) * (BAND_H - 8) + 4, y + BAND_H + r * ROW_H + 3);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9.5\" fill=\"%s\">", x + 2,
			y + BAND_H + r * ROW_H + 12, gpumem_svg_colours[g[i]->last->vclass]);
		gpumem_svg_xml(f, cutname);
		fputs("</text>\n", f);
	}
	return rows;
}

/* One model's band; returns its height. */
static double draw_model(FILE *f, const struct gpumem_fleet *fl, const struct gpumem_fleet_model *m,
			 const struct scale *s, double y, const struct gpumem_fleet_gpu **buf, int draw)
{
	size_t n = model_gpus(fl, m, buf);
	int rows = draw_names(f, s, y, buf, n, 0);
	int slow = draw_slow(f, s->x0, y + BAND_H + rows * ROW_H + 4, buf, n, 0);
	double h = BAND_H + (rows + slow) * ROW_H + 8, thr;
	char name[64], count[96];

	if (!draw)
		return h;
	gpumem_svg_cut(gpumem_report_short_model(m->name), 22, name, sizeof(name));
	snprintf(count, sizeof(count), "%zu GPU%s", m->ngpus, m->ngpus == 1 ? "" : "s");
	if (m->nfracs < m->ngpus)
		snprintf(count + strlen(count), sizeof(count) - strlen(count), ", %zu without a figure",
			 m->ngpus - m->nfracs);
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11.5\" font-weight=\"bold\" "
		"fill=\"#263238\">", s->x0 - LABEL_W + 10, y + 20);
	gpumem_svg_xml(f, name);
	fprintf(f, "</text><text x=\"%.0f\" y=\"%.0f\" font-size=\"9.5\" fill=\"#546e7a\">%s</text>\n",
		s->x0 - LABEL_W + 10, y + 34, count);
	fprintf(f, "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%d\" fill=\"#fafbfc\"/>\n",
		s->x0, y, s->x1 - s->x0, BAND_H);
	thr = m->threshold_frac;
	if (isfinite(thr))
		fprintf(f, "<path d=\"M%.1f %.0fV%.0f\" stroke=\"#455a64\" stroke-width=\"1.3\" "
			"stroke-dasharray=\"6,4\" class=\"fleet-threshold\"/>"
			"<text x=\"%.1f\" y=\"%.0f\" class=\"lbl\">\xe2\x89\xa5%.2f</text>\n", fx(s, thr), y,
			y + BAND_H, fx(s, thr) + 3, y + 10, thr);
	draw_marks(f, s, y, buf, n);
	draw_names(f, s, y, buf, n, 1);
	draw_slow(f, s->x0, y + BAND_H + rows * ROW_H + 4, buf, n, 1);
	return h;
}

double gpumem_svg_fleet(FILE *f, const struct gpumem_fleet *fl, double x, double y, double width,
			int draw)
{
	const struct gpumem_fleet_gpu **buf;
	struct scale s;
	double h = 22;
	char title[200];

	if (fl->ngpus == 0)
		return 0;
	buf = malloc(fl->ngpus * sizeof(*buf));
	if (buf == NULL)
		return 0;
	make_scale(fl, x + LABEL_W, x + width - 10, &s);
	if (draw) {
		snprintf(title, sizeof(title), "Every GPU, by its newest check: %s / the site's "
			 "reference (%zu GPUs; named: not a pass, or under the threshold)",
			 gpumem_report_metric_names[fl->metric], fl->ngpus);
		fprintf(f, "<g class=\"fleet\">\n<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" "
			"height=\"%.0f\" rx=\"4\" fill=\"#fff\" stroke=\"#cfd8dc\"/>\n", x, y,
			width, gpumem_svg_fleet(NULL, fl, x, y, width, 0));
		fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\" fill=\"#263238\">", x + 10,
			y + 16);
		gpumem_svg_xml(f, title);
		fputs("</text>\n", f);
	}
	for (size_t i = 0; i < fl->nmodels; i++)
		h += draw_model(f, fl, &fl->models[i], &s, y + h, buf, draw);
	if (draw) {
		draw_axis(f, &s, y + h);
		fputs("</g>\n", f);
	}
	free(buf);
	return h + 24;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One GPU of `gpumem job --svg`: a caption (node, GPU, samples, source,
 * then the advice: rule, policy, reason, in words) and three plots of the
 * profile's timelines side by side under it: HBM bandwidth and SM busy in
 * percent, the host link's rx and tx in GB/s, the memory used in GiB.
 * Each line is labelled at its right end with its name and mean, so no
 * legend is needed.  A slot without a sample (null) is a break in the
 * line; a figure the GPU's source lacks, a GPU with no source (MIG) or
 * no samples gets an empty plot with a note saying so.  Every string is
 * escaped (gpumem_svg_xml); the document was checked (gpumem_profile_check),
 * so every figure is a finite number in its unit's range.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "job_svg.h"
#include "core_record.h"
#include "report_svg.h"

#define IL 34           /* a plot's inner area: left, right (line labels), top, bottom */
#define IR 96
#define IT 20
#define IB 22
#define LABEL_GAP 22    /* two lines of a label */

struct series {
	const char *key, *label, *colour;
};

struct plot {
	const char *title, *unit;
	struct series s[2];
	size_t ns;
	double ymax;            /* 0: from the figures */
};

static const struct plot plots[3] = {
	{ "HBM bandwidth and SM busy, % of peak", "%",
	  { { "dram_bw_util", "HBM", "#1565c0" }, { "sm_util", "SM", "#ef6c00" } }, 2, 100 },
	{ "Host link (PCIe), GB/s", "GB/s",
	  { { "pcie_rx", "rx, to GPU", "#00838f" }, { "pcie_tx", "tx, to host", "#6a1b9a" } }, 2, 0 },
	{ "Memory used, GiB", "GiB", { { "mem_used", "used", "#455a64" } }, 1, 0 },
};

/* The axis: the profile's slots, STEP seconds each. */
struct axis {
	double x0, x1, y0, y1, ymax, step;
	size_t slots;
};

static double xat(const struct axis *a, size_t i)
{
	return a->x0 + ((double)i + 0.5) / (double)a->slots * (a->x1 - a->x0);
}

static double yat(const struct axis *a, double v)
{
	double y = a->y1 - v / a->ymax * (a->y1 - a->y0);

	return y < a->y0 ? a->y0 : y;
}

/* A duration for a tick: "30 s", "5 min", "1.5 h". */
static void dur(double s, char *buf, size_t len)
{
	if (s < 60)
		snprintf(buf, len, "%g s", s);
	else if (s < 3600)
		snprintf(buf, len, "%g min", s / 60);
	else
		snprintf(buf, len, "%g h", s / 3600);
}

static double time_step(double span)
{
	static const double steps[] = { 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800,
					3600, 7200, 10800, 21600, 43200, 86400 };

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (span / steps[i] <= 4)
			return steps[i];
	return ceil(span / 4 / 86400) * 86400;
}

static struct json_object *timeline(struct json_object *metrics, const char *key)
{
	return gpumem_json_get(gpumem_json_get(metrics, key), "timeline");
}

/* The plot's top figure: fixed, else the largest figure rounded up to a round step. */
static double top_of(const struct plot *p, struct json_object *metrics)
{
	double max = 0, v;

	if (p->ymax > 0)
		return p->ymax;
	for (size_t k = 0; k < p->ns; k++) {
		struct json_object *tl = timeline(metrics, p->s[k].key);

		for (size_t i = 0; i < gpumem_json_len(tl); i++)
			if ((v = json_object_get_double(gpumem_json_at(tl, i))) > max &&
			    !gpumem_json_is(gpumem_json_at(tl, i), json_type_null))
				max = v;
	}
	if (max <= 0)
		return 1;
	max *= 1.08;            /* a flat line clear of the frame */
	v = gpumem_svg_nice_step(max, 4);
	return ceil(max / v - 1e-9) * v;
}

/* The plot's title, area and grid; the ticks only where there are figures (DATA). */
static void frame(FILE *f, const struct plot *p, const struct axis *a, double x, double y,
		  int data)
{
	double ys = gpumem_svg_nice_step(a->ymax, 4), span = a->step * (double)a->slots;
	double ts = time_step(span);
	char b[32];

	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" fill=\"#263238\">", x, y + 12);
	gpumem_svg_xml(f, p->title);
	fprintf(f, "</text>\n<rect class=\"plot-area\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
		"height=\"%.1f\" fill=\"#fff\" stroke=\"#cfd8dc\"/>\n", a->x0, a->y0, a->x1 - a->x0,
		a->y1 - a->y0);
	for (double v = 0; data && v <= a->ymax + 1e-9; v += ys) {
		fprintf(f, "<path d=\"M%.1f %.1fH%.1f\" stroke=\"#eceff1\"/>", a->x0, yat(a, v), a->x1);
		fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
			a->x0 - 3, yat(a, v) + 3, v);
	}
	for (double t = 0; data && span > 0 && t <= span + 1e-9; t += ts) {
		double tx = a->x0 + t / span * (a->x1 - a->x0);

		dur(t, b, sizeof(b));
		fprintf(f, "<path d=\"M%.1f %.1fv3\" stroke=\"#90a4ae\"/><text class=\"tick\" "
			"x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", tx, a->y1, tx,
			a->y1 + 12, t == 0 ? "0" : b);
	}
}

/* One series: its line, broken where a slot has no sample; returns the
 * y of its last point (NAN: none); *gaps: the most slots without a sample
 * within any of the plot's lines. */
static double line(FILE *f, const struct axis *a, struct json_object *tl, const char *colour,
		   size_t *gaps)
{
	size_t n = gpumem_json_len(tl), first = n, last = 0;
	double lasty = NAN;
	int pen = 0;

	fprintf(f, "<path class=\"series\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
		"stroke-linejoin=\"round\" d=\"", colour);
	for (size_t i = 0; i < n && i < a->slots; i++) {
		struct json_object *v = gpumem_json_at(tl, i);

		if (gpumem_json_is(v, json_type_null)) {
			pen = 0;
			continue;
		}
		lasty = yat(a, json_object_get_double(v));
		fprintf(f, "%s%.1f %.1f", pen ? "L" : "M", xat(a, i), lasty);
		pen = 1;
		first = first < i ? first : i;
		last = i;
	}
	fputs("\"/>\n", f);
	for (size_t i = 0; i < n && i < a->slots; i++) {    /* a lone point: a dot */
		int alone = !gpumem_json_is(gpumem_json_at(tl, i), json_type_null) &&
			    (i == 0 || gpumem_json_is(gpumem_json_at(tl, i - 1), json_type_null)) &&
			    (i + 1 >= n || gpumem_json_is(gpumem_json_at(tl, i + 1), json_type_null));

		if (alone)
			fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2\" fill=\"%s\"/>", xat(a, i),
				yat(a, json_object_get_double(gpumem_json_at(tl, i))), colour);
	}
	for (size_t i = first, n0 = 0; i < last; i++)
		if ((n0 += gpumem_json_is(gpumem_json_at(tl, i), json_type_null)) > *gaps)
			*gaps = n0;
	return lasty;
}

/* A line's label at its right end: its name, then its mean. */
static void label(FILE *f, const struct axis *a, double y, const struct series *s,
		  struct json_object *m, const char *unit, const char *name)
{
	double mean;
	char b[48];

	if (gpumem_json_num(m, "mean", &mean) == 0)
		snprintf(b, sizeof(b), "mean %.*f%s%s", mean < 10 && strcmp(unit, "%") ? 1 : 0, mean,
			 strcmp(unit, "%") ? " " : "", unit);
	else
		snprintf(b, sizeof(b), "no mean");
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10.5\" font-weight=\"bold\" "
		"fill=\"%s\">", a->x1 + 5, y, s->colour);
	gpumem_svg_xml(f, name);
	fprintf(f, "</text><text x=\"%.1f\" y=\"%.1f\" font-size=\"9.5\" fill=\"%s\">%s</text>\n",
		a->x1 + 5, y + 10, s->colour, b);
}

/* One plot at x, y of GPU's METRICS (NULL: no figures, NOTE says why). */
static void plot(FILE *f, const struct plot *p, struct json_object *metrics, double step,
		 size_t slots, const char *gpm_or_not, const char *note, double x, double y)
{
	struct axis a = { x + IL, x + JSVG_PLOT_W - IR, y + IT, y + JSVG_PLOT_H - IB,
			  top_of(p, metrics), step > 0 ? step : 1, slots ? slots : 1 };
	double ly[2] = { NAN, NAN };
	size_t gaps = 0, ny = 0;
	char notes[256] = "";

	frame(f, p, &a, x, y, metrics != NULL);
	for (size_t k = 0; k < p->ns; k++) {
		struct json_object *m = gpumem_json_get(metrics, p->s[k].key);
		const char *name = p->s[k].label;

		if (k == 0 && p == &plots[0] && gpm_or_not && strcmp(gpm_or_not, "gpm"))
			name = "HBM busy";      /* NVML's: a share of time, not of bandwidth */
		if (!gpumem_json_is(m, json_type_object)) {
			if (metrics)
				snprintf(notes + strlen(notes), sizeof(notes) - strlen(notes), "%s%s: not "
					 "measured by this GPU's source", notes[0] ? "; " : "", name);
			continue;
		}
		ly[k] = line(f, &a, timeline(metrics, p->s[k].key), p->s[k].colour, &gaps);
		if (isnan(ly[k])) {
			snprintf(notes + strlen(notes), sizeof(notes) - strlen(notes), "%s%s: no sample",
				 notes[0] ? "; " : "", name);
			continue;
		}
		ny++;
	}
	if (ny == 2 && fabs(ly[0] - ly[1]) < LABEL_GAP) {       /* labels apart */
		int up = ly[0] <= ly[1] ? 0 : 1;
		double mid = (ly[0] + ly[1]) / 2;

		if (mid + LABEL_GAP / 2.0 > a.y1 - 8)     /* both within the plot's height */
			mid = a.y1 - 8 - LABEL_GAP / 2.0;
		ly[up] = mid - LABEL_GAP / 2.0;
		ly[1 - up] = mid + LABEL_GAP / 2.0;
	}
	for (size_t k = 0; k < p->ns; k++)
		if (!isnan(ly[k]))
			label(f, &a, ly[k] + 3, &p->s[k], gpumem_json_get(metrics, p->s[k].key), p->unit,
			      k == 0 && p == &plots[0] && gpm_or_not && strcmp(gpm_or_not, "gpm") ?
			      "HBM busy" : p->s[k].label);
	if (gaps)
		snprintf(notes + strlen(notes), sizeof(notes) - strlen(notes), "%sbreaks: %zu slot%s "
			 "without a sample", notes[0] ? "; " : "", gaps, gaps == 1 ? "" : "s");
	if (metrics == NULL)
		snprintf(notes, sizeof(notes), "%s", note);
	if (notes[0]) {         /* over the lines, on a white halo */
		fputs("<g class=\"pnote\">", f);
		gpumem_svg_wrapped(f, a.x0 + 6, a.y0 + 14, 9.5, a.x1 - a.x0 - 12, "#37474f", notes, 1);
		fputs("</g>\n", f);
	}
}

/* The caption's text: "gpu01 GPU 0, NVIDIA H100: 120 samples, 1 s a point, source gpm". */
static void caption_head(const struct gpumem_jsvg_gpu *g, char *b, size_t len)
{
	struct json_object *o = g->gpu;
	const char *src = gpumem_json_str(o, "source"), *name = gpumem_json_str(o, "name");
	double idx = -1, n = 0, step = 0;

	gpumem_json_num(o, "index", &idx);
	gpumem_json_num(o, "samples", &n);
	gpumem_json_num(o, "timeline_step_s", &step);
	snprintf(b, len, "%.64s GPU %.0f%s%.64s: %.0f sample%s, %g s a point, source %s", g->node,
		 idx, name ? ", " : "", name ? name : "", n, n == 1 ? "" : "s", step,
		 src ? src : "none");
}

/* "Advice: try stream.yaml (hbm-bound): REASON" in words. */
static void caption_advice(const struct gpumem_jsvg_gpu *g, char *b, size_t len)
{
	const struct gpumem_advice *a = &g->adv;

	if (!g->advised)
		snprintf(b, len, "Advice: none (the profile's summary of this GPU could not be read)");
	else if (a->policy)
		snprintf(b, len, "Advice: %s %s (rule %s): %s", a->in_effect ? "already ran with" :
			 "try policy", a->policy, a->rule, a->reason);
	else
		snprintf(b, len, "Advice: no policy change (rule %s): %s", a->rule, a->reason);
}

double gpumem_jsvg_gpu(FILE *f, const struct gpumem_jsvg_gpu *g, double y, int draw)
{
	struct json_object *metrics = gpumem_json_get(g->gpu, "metrics");
	const char *src = gpumem_json_str(g->gpu, "source"), *gnote = gpumem_json_str(g->gpu, "note");
	double w = JSVG_PAGE_W - 2 * JSVG_MARGIN, step = 0, samples = 0;
	char head[320], adv[640], note[200] = "";
	size_t slots = 0;
	int lines;

	caption_head(g, head, sizeof(head));
	caption_advice(g, adv, sizeof(adv));
	lines = gpumem_svg_wrapped(f, 0, 0, 11.5, w, "#37474f", adv, 0);
	if (!draw)
		return 18 + lines * 11.5 * 1.35 + 6 + JSVG_PLOT_H;
	fputs("<g class=\"gpu\">\n", f);
	fprintf(f, "<text x=\"%d\" y=\"%.0f\" font-size=\"12.5\" font-weight=\"bold\" "
		"fill=\"#263238\">", JSVG_MARGIN, y + 13);
	gpumem_svg_xml(f, head);
	fputs("</text>\n<g class=\"advice\">\n", f);
	gpumem_svg_wrapped(f, JSVG_MARGIN, y + 31, 11.5, w, "#37474f", adv, 1);
	fputs("</g>\n", f);
	gpumem_json_num(g->gpu, "timeline_step_s", &step);
	gpumem_json_num(g->gpu, "samples", &samples);
	for (size_t p = 0; p < 3; p++)
		for (size_t k = 0; k < plots[p].ns; k++) {
			size_t n = gpumem_json_len(timeline(metrics, plots[p].s[k].key));

			slots = n > slots ? n : slots;
		}
	if (src == NULL || samples <= 0 || slots == 0) {
		snprintf(note, sizeof(note), "not sampled%s%.120s", gnote ? ": " : "",
			 gnote ? gnote : src ? " (no sample in the job's time)" : " (no source)");
		metrics = NULL;
	}
	y += 18 + lines * 11.5 * 1.35 + 6;
	for (size_t p = 0; p < 3; p++)
		plot(f, &plots[p], metrics, step, slots, src, note,
		     JSVG_MARGIN + (double)p * (JSVG_PLOT_W + JSVG_GAP), y);
	fputs("</g>\n", f);
	return 18 + lines * 11.5 * 1.35 + 6 + JSVG_PLOT_H;
}

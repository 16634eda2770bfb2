/*
 * gpumem report --svg: small multiples, one panel per GPU, of one bandwidth
 * metric over time against the pass threshold the check applied.  SVG 1.1
 * written by hand: it opens in any browser and renders with rsvg-convert,
 * and the CLI gains no dependency.  Text widths are estimated (no font
 * metrics here), generously, so labels are placed or dropped, never
 * overlapped.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "report.h"

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

static const char *const colours[GPUMEM_REPORT_NV] = {
	[GPUMEM_REPORT_V_FAIL] = "#d32f2f", [GPUMEM_REPORT_V_UNUSABLE] = "#8e24aa",
	[GPUMEM_REPORT_V_ERROR] = "#37474f", [GPUMEM_REPORT_V_WARN] = "#f29900",
	[GPUMEM_REPORT_V_SKIPPED] = "#9e9e9e", [GPUMEM_REPORT_V_NOT_RUN] = "#9e9e9e",
	[GPUMEM_REPORT_V_PASS] = "#2e7d32",
};

/* ------------------------------------------------------------ text */
static size_t nchars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* DejaVu Sans averages ~0.55 em a character; 0.6 leaves room to spare. */
static double text_w(const char *s, double size)
{
	return (double)nchars(s) * size * 0.6;
}

/* XML text: escape markup, replace what XML 1.0 cannot hold. */
static void xml_put(FILE *f, const char *s)
{
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		switch (*c) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			if (*c < 0x20 && *c != '\t' && *c != '\n')
				fputs("\xef\xbf\xbd", f);
			else
				fputc(*c, f);
		}
	}
}

/* Cut s (UTF-8) to at most max characters, ending in an ellipsis. */
static void cut(const char *s, size_t max, char *out, size_t outlen)
{
	size_t chars = 0, o = 0;

	if (nchars(s) <= max) {
		snprintf(out, outlen, "%s", s);
		return;
	}
	for (const char *p = s; *p && o + 4 < outlen; p++) {
		if (((unsigned char)*p & 0xc0) != 0x80 && ++chars > (max ? max - 1 : 0))
			break;
		out[o++] = *p;
	}
	if (max && o + 4 <= outlen) {
		memcpy(out + o, "\xe2\x80\xa6", 3);     /* U+2026 */
		o += 3;
	}
	out[o] = '\0';
}

static void fmt_gbps(double v, char *buf, size_t len)
{
	snprintf(buf, len, v < 100 ? "%.1f" : "%.0f", v);
}

/* ------------------------------------------------------------ scales */
static double nice_step(double range, int n)
{
	double raw = range / n, mag = 1;

	if (!(raw > 0))
		return 1;
	while (mag * 10 <= raw)
		mag *= 10;
	while (mag > raw)
		mag /= 10;
	raw /= mag;
	return mag * (raw <= 1 ? 1 : raw <= 2 ? 2 : raw <= 2.5 ? 2.5 : raw <= 5 ? 5 : 10);
}

static void utc(time_t t, struct tm *tm)
{
	gmtime_r(&t, tm);
}

/*
 * Ticks on round UTC times, as many as fit labels about 60 px apart; at
 * hour steps a second line gives the date where it changes.
 */
static void make_ticks(struct xscale *xs, double plot_w)
{
	static const long steps[] = {
		60, 300, 600, 900, 1800, 3600, 2 * 3600, 3 * 3600, 6 * 3600, 12 * 3600,
		86400, 2 * 86400, 7 * 86400, 14 * 86400, 28 * 86400
	};
	int max = (int)(plot_w / 60);
	double span = difftime(xs->t1, xs->t0);
	long step = 0;
	char prev_day[16] = "";

	if (max < 2)
		max = 2;
	if (max > MAX_TICKS)
		max = MAX_TICKS;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]) && !step; i++)
		if (span / (double)steps[i] <= max)
			step = steps[i];
	if (!step)
		step = (long)(span / max / 86400 + 1) * 86400;
	xs->nticks = 0;
	for (long long t = ((long long)xs->t0 / step + 1) * step;
	     t <= (long long)xs->t1 && xs->nticks < MAX_TICKS; t += step) {
		struct tick *k = &xs->ticks[xs->nticks++];
		char day[16], mon[8];
		struct tm tm;

		k->t = (time_t)t;
		utc(k->t, &tm);
		strftime(mon, sizeof(mon), "%b", &tm);
		snprintf(day, sizeof(day), "%s %d", mon, tm.tm_mday);
		k->l2[0] = '\0';
		if (step >= 86400) {
			snprintf(k->l1, sizeof(k->l1), "%s", day);
		} else {
			snprintf(k->l1, sizeof(k->l1), "%02d:%02d", tm.tm_hour, tm.tm_min);
			if (strcmp(day, prev_day))
				snprintf(k->l2, sizeof(k->l2), "%s", day);
		}
		snprintf(prev_day, sizeof(prev_day), "%s", day);
	}
}

static double xpos(const struct xscale *xs, time_t t)
{
	return PL + difftime(t, xs->t0) / difftime(xs->t1, xs->t0) * (PW - PL - PR);
}

/* ------------------------------------------------------------ panels */
static const char *row_key(const struct gpumem_report_row *r)
{
	return r->gpu_uuid && r->gpu_uuid[0] ? r->gpu_uuid : NULL;
}

static int row_index(const struct gpumem_report_row *r)
{
	return r->node_index >= 0 ? r->node_index : r->cuda_index;
}

/* The same GPU: its node and its UUID (or, without one, its index). */
static int cmp_gpu(const struct gpumem_report_row *a, const struct gpumem_report_row *b)
{
	int c = gpumem_report_natcmp(a->rep->node, b->rep->node);

	if (c)
		return c;
	if (a->has_gpu != b->has_gpu)
		return a->has_gpu ? -1 : 1;
	if (!a->has_gpu)
		return 0;
	if (row_key(a) && row_key(b))
		return strcmp(row_key(a), row_key(b));
	if (!row_key(a) != !row_key(b))
		return row_key(a) ? -1 : 1;
	return row_index(a) - row_index(b);
}

static int cmp_gpu_q(const void *a, const void *b)
{
	return cmp_gpu(*(const struct gpumem_report_row *const *)a,
		       *(const struct gpumem_report_row *const *)b);
}

static int add_point(struct panel *p, const struct gpumem_report_row *r, int metric)
{
	const struct gpumem_report_metric *m = &r->m[metric];
	struct pt *pt;

	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		struct pt *pts = realloc(p->pts, cap * sizeof(*pts));

		if (pts == NULL)
			return -1;
		p->pts = pts;
		p->cap = cap;
	}
	pt = &p->pts[p->n++];
	pt->t = r->rep->time;
	pt->row = r;
	pt->rclass = r->vclass;
	pt->v = r->has_gpu && m->present ? m->best : NAN;
	pt->thr = r->has_gpu && m->present ? m->threshold : NAN;
	pt->floor = r->has_gpu && m->present ? m->warn_floor : NAN;
	pt->mclass = isfinite(pt->v) ? m->vclass : r->vclass;
	if (gpumem_report_vclass_rank(r->vclass) < p->worst)
		p->worst = gpumem_report_vclass_rank(r->vclass);
	return 0;
}

static int gpus_list_has(const char *gpus, int idx)
{
	const char *s = gpus;

	while (s && *s) {
		char *end;
		long a = strtol(s, &end, 10), b;

		if (end == s)
			return 0;
		b = a;
		s = end;
		if (*s == '-') {
			b = strtol(s + 1, &end, 10);
			s = end;
		}
		if (idx >= a && idx <= b)
			return 1;
		if (*s != ',')
			return 0;
		s++;
	}
	return 0;
}

static struct panel *new_panel(struct panel **ps, size_t *np, size_t *cap)
{
	if (*np == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		struct panel *n = realloc(*ps, c * sizeof(*n));

		if (n == NULL)
			return NULL;
		*ps = n;
		*cap = c;
	}
	memset(&(*ps)[*np], 0, sizeof(**ps));
	(*ps)[*np].worst = GPUMEM_REPORT_NV;
	return &(*ps)[(*np)++];
}

/*
 * A report without a GPU (skipped, timed out) still happened to the GPUs
 * of its step: mark it on their panels, or on all of the node's panels
 * when "gpus" does not say which, or on a panel of its own when the node
 * has no GPU panel at all.
 */
static int attach_nogpu(struct panel **ps, size_t *np, size_t *cap,
			const struct gpumem_report_row *r, int metric)
{
	size_t first = *np, last = 0, hits = 0;
	struct panel *p;

	for (size_t i = 0; i < *np; i++) {
		if (strcmp((*ps)[i].node, r->rep->node))
			continue;
		if ((*ps)[i].nogpu) {
			return add_point(&(*ps)[i], r, metric);
		}
		if (first == *np)
			first = i;
		last = i;
		if ((*ps)[i].index >= 0 && gpus_list_has(r->rep->gpus, (*ps)[i].index)) {
			if (add_point(&(*ps)[i], r, metric) < 0)
				return -1;
			hits++;
		}
	}
	if (hits)
		return 0;
	if (first < *np) {
		for (size_t i = first; i <= last; i++)
			if (!strcmp((*ps)[i].node, r->rep->node) && add_point(&(*ps)[i], r, metric) < 0)
				return -1;
		return 0;
	}
	p = new_panel(ps, np, cap);
	if (p == NULL)
		return -1;
	p->node = r->rep->node;
	p->index = -1;
	p->nogpu = 1;
	return add_point(p, r, metric);
}

static int cmp_pt(const void *pa, const void *pb)
{
	const struct pt *a = pa, *b = pb;

	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return a->row < b->row ? -1 : a->row > b->row;
}

/* Panels worst first (as the table), then in node and GPU order. */
static int cmp_panel(const void *pa, const void *pb)
{
	const struct panel *a = pa, *b = pb;
	int c;

	if (a->worst != b->worst)
		return a->worst < b->worst ? -1 : 1;
	if ((c = gpumem_report_natcmp(a->node, b->node)) != 0)
		return c;
	if (a->nogpu != b->nogpu)
		return a->nogpu ? 1 : -1;
	if (a->index != b->index)
		return a->index < b->index ? -1 : 1;
	return strcmp(a->uuid ? a->uuid : "", b->uuid ? b->uuid : "");
}

static int build_panels(struct gpumem_report_row *const *rows, size_t n, int metric,
			struct panel **psp, size_t *npp)
{
	const struct gpumem_report_row **sorted;
	struct panel *ps = NULL, *p = NULL;
	size_t np = 0, cap = 0, i;
	int rv = -1;

	sorted = malloc((n ? n : 1) * sizeof(*sorted));
	if (sorted == NULL)
		return -1;
	memcpy(sorted, rows, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_gpu_q);
	for (i = 0; i < n && sorted[i]; i++) {
		const struct gpumem_report_row *r = sorted[i];

		if (!r->has_gpu)
			continue;
		if (p == NULL || cmp_gpu(r, p->pts[0].row) != 0) {
			if ((p = new_panel(&ps, &np, &cap)) == NULL)
				goto fail;
			p->node = r->rep->node;
			p->uuid = row_key(r);
			p->model = r->gpu_name;
			p->index = row_index(r);
		}
		if (add_point(p, r, metric) < 0)
			goto fail;
	}
	for (i = 0; i < n; i++)
		if (!sorted[i]->has_gpu && attach_nogpu(&ps, &np, &cap, sorted[i], metric) < 0)
			goto fail;
	for (i = 0; i < np; i++)
		qsort(ps[i].pts, ps[i].n, sizeof(*ps[i].pts), cmp_pt);
	if (np)
		qsort(ps, np, sizeof(*ps), cmp_panel);
	*psp = ps;
	*npp = np;
	ps = NULL;
	np = 0;
	rv = 0;
fail:
	for (i = 0; i < np; i++)
		free(ps[i].pts);
	free(ps);
	free(sorted);
	return rv;
}

/* ------------------------------------------------------------ drawing */
static void marker(FILE *f, double x, double y, enum gpumem_report_vclass c)
{
	const char *col = colours[c];

	switch (c) {
	case GPUMEM_REPORT_V_PASS:
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.6\" fill=\"%s\" stroke=\"#fff\" "
			"stroke-width=\"0.7\"/>", x, y, col);
		break;
	case GPUMEM_REPORT_V_WARN:
		fprintf(f, "<path d=\"M%.1f %.1fl4.8 4.8l-4.8 4.8l-4.8 -4.8z\" fill=\"%s\" "
			"stroke=\"#fff\" stroke-width=\"0.7\"/>", x, y - 4.8, col);
		break;
	case GPUMEM_REPORT_V_FAIL:
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"7.6\" height=\"7.6\" fill=\"%s\" "
			"stroke=\"#fff\" stroke-width=\"0.7\"/>", x - 3.8, y - 3.8, col);
		break;
	case GPUMEM_REPORT_V_UNUSABLE:
		fprintf(f, "<path d=\"M%.1f %.1fh9.6l-4.8 8.4z\" fill=\"%s\" stroke=\"#fff\" "
			"stroke-width=\"0.7\"/>", x - 4.8, y - 4.2, col);
		break;
	case GPUMEM_REPORT_V_ERROR:
		fprintf(f, "<path d=\"M%.1f %.1fl7 7m0 -7l-7 7\" stroke=\"%s\" stroke-width=\"2.2\" "
			"fill=\"none\"/>", x - 3.5, y - 3.5, col);
		break;
	default:
		fprintf(f, "<path d=\"M%.1f %.1fl4.6 8h-9.2z\" fill=\"#fff\" stroke=\"%s\" "
			"stroke-width=\"1.4\"/>", x, y - 4.6, col);
		break;
	}
}

/* Hover text: everything needed to find the report again. */
static void point_title(FILE *f, const struct pt *p, int metric)
{
	const struct gpumem_report_row *r = p->row;
	char when[32], v[32], thr[32];
	struct tm tm;

	utc(p->t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &tm);
	fputs("<title>", f);
	fprintf(f, "%s, job %lld.", when, r->rep->job);
	xml_put(f, r->rep->step);
	fputs(" ", f);
	xml_put(f, r->rep->phase);
	fputs(", ", f);
	xml_put(f, r->rep->name);
	if (isfinite(p->v)) {
		fmt_gbps(p->v, v, sizeof(v));
		if (isfinite(p->thr))
			fmt_gbps(p->thr, thr, sizeof(thr));
		fprintf(f, "\n%s %s GB/s (threshold %s): %s", gpumem_report_metric_names[metric], v,
			isfinite(p->thr) ? thr : "none", gpumem_report_vclass_name(p->mclass));
	}
	fprintf(f, "\nGPU verdict: %s", gpumem_report_vclass_name(p->rclass));
	if (r->reason) {
		fputs(": ", f);
		xml_put(f, r->reason);
	}
	fputs("</title>", f);
}

/* A threshold over time, as steps: it changes only with the site file. */
static int step_line(FILE *f, const struct panel *p, const struct xscale *xs, int floor_line,
		     double top, const char *style, double *last_y)
{
	double py1 = PH - PB, h = PH - PB - PT;
	int drawn = 0;

	for (size_t i = 0; i < p->n; i++) {
		double v = floor_line ? p->pts[i].floor : p->pts[i].thr, y;

		if (!isfinite(v))
			continue;
		y = py1 - v / top * h;
		if (!drawn)
			fprintf(f, "<path %s d=\"M%d %.1f", style, PL, y);
		else if (y - *last_y > 0.05 || *last_y - y > 0.05)
			fprintf(f, "H%.1fV%.1f", xpos(xs, p->pts[i].t), y);
		*last_y = y;
		drawn = 1;
	}
	if (drawn)
		fprintf(f, "H%d\"/>\n", PW - PR);
	return drawn;
}

static void draw_panel(FILE *f, const struct panel *p, double x0, double y0,
		       const struct xscale *xs, int metric)
{
	const char *mname = gpumem_report_metric_names[metric];
	double py0 = PT, py1 = PH - PB, px0 = PL, px1 = PW - PR, h = py1 - py0;
	double ymax = 0, top = 0, step = 0, thr_y = 0, floor_y = 0;
	const struct pt *lastm = NULL;
	char right[96], buf[64], model[64] = "", uuid[40] = "";
	size_t nmeasured = 0, nskipped = 0;
	double last_thr = NAN, last_floor = NAN;
	int has_thr, has_floor;

	for (size_t i = 0; i < p->n; i++) {
		const struct pt *q = &p->pts[i];

		if (isfinite(q->v)) {
			nmeasured++;
			lastm = q;
			if (q->v > ymax) ymax = q->v;
		} else {
			nskipped++;
		}
		if (isfinite(q->thr)) {
			last_thr = q->thr;
			if (q->thr > ymax) ymax = q->thr;
		}
		if (isfinite(q->floor)) {
			last_floor = q->floor;
			if (q->floor > ymax) ymax = q->floor;
		}
	}
	if (ymax > 0) {
		step = nice_step(ymax * 1.04, 5);
		top = step * (double)(long long)(ymax * 1.04 / step + 0.999999);
	}

	fprintf(f, "<g transform=\"translate(%.0f,%.0f)\">\n", x0, y0);
	fprintf(f, "<rect x=\"0.5\" y=\"0.5\" width=\"%d\" height=\"%d\" rx=\"4\" fill=\"#fff\" "
		"stroke=\"#cfd8dc\"/>\n", PW - 1, PH - 1);

	/* Title: node, GPU index, model, short UUID; dropped right to left. */
	if (lastm) {
		fmt_gbps(lastm->v, buf, sizeof(buf));
		snprintf(right, sizeof(right), "last %s GB/s", buf);
	} else {
		snprintf(right, sizeof(right), "no %s figure", mname);
	}
	if (p->model)
		snprintf(model, sizeof(model), " \xc2\xb7 %s",
			 !strncmp(p->model, "NVIDIA ", 7) ? p->model + 7 : p->model);
	if (p->uuid)
		snprintf(uuid, sizeof(uuid), "%.12s", p->uuid);
	{
		double avail = PW - 16 - text_w(right, 10) - 10;
		char idx[32];
		char node[64];

		if (p->nogpu)
			snprintf(idx, sizeof(idx), " \xc2\xb7 no GPU measured");
		else
			snprintf(idx, sizeof(idx), " \xc2\xb7 GPU %d", p->index);
		cut(p->node, 24, node, sizeof(node));
		if (text_w(node, 11.5) + text_w(idx, 11) + text_w(model, 11) + text_w(uuid, 10) + 7 >
		    avail)
			uuid[0] = '\0';
		if (text_w(node, 11.5) + text_w(idx, 11) + text_w(model, 11) > avail) {
			double left = (avail - text_w(node, 11.5) - text_w(idx, 11)) / (11 * 0.6);
			char m2[64];

			cut(model, left > 4 ? (size_t)left : 0, m2, sizeof(m2));
			snprintf(model, sizeof(model), "%s", m2);
		}
		fputs("<text x=\"8\" y=\"18\" font-size=\"11\" fill=\"#263238\">"
		      "<tspan font-weight=\"bold\" font-size=\"11.5\">", f);
		xml_put(f, node);
		fputs("</tspan>", f);
		xml_put(f, idx);
		xml_put(f, model);
		if (uuid[0]) {
			/* dx, not a space: spaces at a tspan's edge collapse. */
			fputs("<tspan dx=\"7\" fill=\"#90a4ae\" font-size=\"10\">", f);
			xml_put(f, uuid);
			fputs("</tspan>", f);
		}
		fputs("</text>\n", f);
	}
	fprintf(f, "<text x=\"%d\" y=\"18\" font-size=\"10\" text-anchor=\"end\" fill=\"%s\">",
		PW - 8, lastm ? colours[lastm->mclass] : "#78909c");
	xml_put(f, right);
	fputs("</text>\n", f);

	/* Grid and axes. */
	fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"#fafbfc\"/>\n",
		px0, py0, px1 - px0, h);
	for (int i = 0; top > 0 && i <= 12; i++) {
		double v = step * i, y;

		if (v > top + step / 1000)
			break;
		y = py1 - v / top * h;
		if (i)
			fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" "
				"stroke=\"#e4e8eb\"/>", px0, y, px1, y);
		snprintf(buf, sizeof(buf), step < 1 ? "%.1f" : "%.0f", v);
		fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" class=\"tick\" text-anchor=\"end\">%s</text>\n",
			px0 - 4, y + 3.2, buf);
	}
	if (top > 0)
		fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" class=\"tick\" text-anchor=\"end\">GB/s</text>\n",
			px0 - 4, py0 - 8);
	for (int i = 0; i < xs->nticks; i++) {
		const struct tick *k = &xs->ticks[i];
		double x = xpos(xs, k->t), w = text_w(k->l1, 9);

		if (text_w(k->l2, 9) > w)
			w = text_w(k->l2, 9);

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#eceff1\"/>",
			x, py0, x, py1);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#90a4ae\"/>",
			x, py1, x, py1 + 3);
		/* A label that would leave the panel is dropped, not clipped. */
		if (x - w / 2 < 2 || x + w / 2 > PW - 2)
			continue;
		fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" class=\"tick\" text-anchor=\"middle\">%s",
			x, py1 + 13, k->l1);
		if (k->l2[0])
			fprintf(f, "<tspan x=\"%.1f\" dy=\"11\">%s</tspan>", x, k->l2);
		fputs("</text>\n", f);
	}
	fprintf(f, "<path d=\"M%.0f %.0fV%.0fH%.0f\" fill=\"none\" stroke=\"#90a4ae\"/>\n",
		px0, py0, py1, px1);

	/* Threshold (dashed) and fail floor (dotted), then the trend line. */
	has_floor = top > 0 && step_line(f, p, xs, 1, top,
					  "fill=\"none\" stroke=\"#d32f2f\" stroke-width=\"1\" "
					  "stroke-dasharray=\"1.5,3\" class=\"floor\"", &floor_y);
	has_thr = top > 0 && step_line(f, p, xs, 0, top,
					"fill=\"none\" stroke=\"#455a64\" stroke-width=\"1.3\" "
					"stroke-dasharray=\"6,4\" class=\"threshold\"", &thr_y);
	if (nmeasured > 1) {
		size_t k = 0;

		fputs("<polyline fill=\"none\" stroke=\"#b0bec5\" stroke-width=\"1.1\" points=\"", f);
		for (size_t i = 0; i < p->n; i++)
			if (isfinite(p->pts[i].v))
				fprintf(f, "%s%.1f,%.1f", k++ ? " " : "", xpos(xs, p->pts[i].t),
					py1 - p->pts[i].v / top * h);
		fputs("\"/>\n", f);
	}

	/* Points: unmeasured ones sit on the time axis. */
	for (size_t i = 0; i < p->n; i++) {
		const struct pt *q = &p->pts[i];
		double x = xpos(xs, q->t), y = isfinite(q->v) ? py1 - q->v / top * h : py1 - 5;

		fputs("<g>", f);
		point_title(f, q, metric);
		/* A ring: the GPU's verdict is worse than this metric's. */
		if (isfinite(q->v) &&
		    gpumem_report_vclass_rank(q->rclass) < gpumem_report_vclass_rank(q->mclass))
			fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6.8\" fill=\"none\" "
				"stroke=\"%s\" stroke-width=\"1.6\"/>", x, y, colours[q->rclass]);
		marker(f, x, y, q->mclass);
		fputs("</g>\n", f);
	}

	/*
	 * The lines' values in the right margin, level with their ends: never
	 * over a point, and the legend says which line is which.  Two values
	 * too close are pushed apart.
	 */
	if (has_thr || has_floor) {
		double ty = thr_y + 3.2, fy = floor_y + 3.2;

		if (has_thr && has_floor && fy - ty < 10) {
			double mid = (ty + fy) / 2;

			ty = mid - 5;
			fy = mid + 5;
		}
		if (has_thr) {
			fmt_gbps(last_thr, buf, sizeof(buf));
			fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" class=\"lbl\">\xe2\x89\xa5%s</text>\n",
				px1 + 3, ty, buf);
		}
		if (has_floor) {
			fmt_gbps(last_floor, buf, sizeof(buf));
			fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" class=\"lbl\" "
				"style=\"fill:#c62828\">&lt;%s</text>\n", px1 + 3, fy, buf);
		}
	}
	if (!has_thr && nmeasured)
		fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" class=\"note\" text-anchor=\"end\">"
			"no reference: no threshold</text>\n", px1 - 3, py0 + 11);
	if (nmeasured == 0) {
		const char *why = NULL;

		for (size_t i = p->n; i-- > 0 && why == NULL;)
			why = p->pts[i].row->reason;
		snprintf(buf, sizeof(buf), "%zu report%s, no %s figure", nskipped,
			 nskipped == 1 ? "" : "s", mname);
		fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"middle\" "
			"fill=\"#78909c\">%s", (px0 + px1) / 2, py0 + h / 2 - 4, buf);
		if (why) {
			char w2[64];

			cut(why, 44, w2, sizeof(w2));
			fprintf(f, "<tspan x=\"%.0f\" dy=\"14\" font-size=\"10\">last: ", (px0 + px1) / 2);
			xml_put(f, w2);
			fputs("</tspan>", f);
		}
		fputs("</text>\n", f);
	}
	fputs("</g>\n", f);
}

/* Text wrapped at spaces to a width; returns the number of lines. */
static int wrapped(FILE *f, double x, double y, double size, double width, const char *text,
		   int draw)
{
	size_t per = (size_t)(width / (size * 0.6)), len = strlen(text);
	int lines = 0;

	if (per < 10)
		per = 10;
	for (size_t at = 0; at < len; lines++) {
		size_t end = at + per < len ? at + per : len;

		if (end < len) {
			size_t sp = end;

			while (sp > at && text[sp] != ' ')
				sp--;
			if (sp > at)
				end = sp;
		}
		if (draw) {
			char line[512];

			snprintf(line, sizeof(line), "%.*s", (int)(end - at), text + at);
			fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"%.1f\" fill=\"#78909c\">",
				x, y + lines * size * 1.35, size);
			xml_put(f, line);
			fputs("</text>\n", f);
		}
		at = end;
		while (at < len && text[at] == ' ')
			at++;
	}
	return lines;
}

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
	double w = 22 + text_w(label, 10.5) + 14;

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
			"stroke-width=\"1.6\"/>", x + 9, y - 3.5, colours[GPUMEM_REPORT_V_FAIL]);
		marker(f, x + 9, y - 3.5, GPUMEM_REPORT_V_PASS);
		break;
	default:
		marker(f, x + 9, y - 3.5, (enum gpumem_report_vclass)kind);
		break;
	}
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10.5\" fill=\"#37474f\">", x + 22, y);
	xml_put(f, label);
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

int gpumem_report_svg(FILE *f, struct gpumem_report_row *const *rows, size_t n,
		      const struct gpumem_report_svg_opts *o, size_t *total)
{
	const char *mname = gpumem_report_metric_names[o->metric];
	struct panel *ps = NULL;
	size_t np = 0, shown, nodes = 0, reports = 0;
	struct xscale xs = { 0 };
	double page_w, page_h, grid_y, legend_h;
	char sub[512], from[32], to[32], src[160], foot[400];
	int cols, nrows;
	struct tm tm;

	*total = 0;
	if (build_panels(rows, n, o->metric, &ps, &np) < 0)
		return -1;
	*total = np;
	shown = o->max_panels && o->max_panels < np ? o->max_panels : np;
	cols = shown <= 3 ? (int)(shown ? shown : 1) : shown <= 4 ? 2 : shown <= 9 ? 3 : 4;
	nrows = shown ? (int)((shown + (size_t)cols - 1) / (size_t)cols) : 0;
	page_w = 2 * MARGIN + cols * PW + (cols - 1) * GAP;
	if (page_w < MIN_PAGE_W)
		page_w = MIN_PAGE_W;

	/* One time axis for every panel, so panels compare at a glance. */
	for (size_t i = 0, k; i < shown; i++) {
		for (k = 0; k < ps[i].n; k++) {
			time_t t = ps[i].pts[k].t;

			if ((i == 0 && k == 0) || t < xs.t0) xs.t0 = t;
			if ((i == 0 && k == 0) || t > xs.t1) xs.t1 = t;
		}
		for (k = 0; k < i && strcmp(ps[k].node, ps[i].node); k++)
			;
		nodes += k == i;
	}
	reports = count_reports(rows, n);
	utc(xs.t0, &tm);
	strftime(from, sizeof(from), "%Y-%m-%d %H:%M", &tm);
	utc(xs.t1, &tm);
	strftime(to, sizeof(to), "%Y-%m-%d %H:%M", &tm);
	{
		/* A lone point (or a burst) still gets an hour-wide axis. */
		double span = difftime(xs.t1, xs.t0), pad;

		if (span < 3600) {
			xs.t0 -= (time_t)((3600 - span) / 2);
			xs.t1 = xs.t0 + 3600;
			span = 3600;
		}
		pad = span * 0.04;
		xs.t0 -= (time_t)pad;
		xs.t1 += (time_t)pad;
	}
	make_ticks(&xs, PW - PL - PR);

	cut(o->source ? o->source : "", 60, src, sizeof(src));
	if (shown)
		snprintf(sub, sizeof(sub), "%zu GPU panel%s on %zu node%s, %zu report%s, %s to %s UTC, "
			 "from %s", shown, shown == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s",
			 reports, reports == 1 ? "" : "s", from, to, src);
	else
		snprintf(sub, sizeof(sub), "no reports match, from %s", src);
	legend_h = legend(f, 0, page_w, 0);
	grid_y = 78 + legend_h;
	snprintf(foot, sizeof(foot), "Times in UTC. One point per check of a GPU (a job step's "
		 "before or after check); marker: the %s verdict; hover a point for its job.", mname);
	if (shown < np)
		snprintf(foot + strlen(foot), sizeof(foot) - strlen(foot),
			 " Showing the %zu worst of %zu GPUs (--limit).", shown, np);
	page_h = grid_y + (nrows ? nrows * PH + (nrows - 1) * GAP : 40) + 16 +
		14 * wrapped(f, 0, 0, 10, page_w - 2 * MARGIN, foot, 0);

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
	{
		char s2[512];

		cut(sub, (size_t)((page_w - 2 * MARGIN) / (11.5 * 0.6)), s2, sizeof(s2));
		xml_put(f, s2);
	}
	fputs("</text>\n", f);
	legend(f, 72, page_w, 1);

	for (size_t i = 0; i < shown; i++)
		draw_panel(f, &ps[i], MARGIN + (double)(i % (size_t)cols) * (PW + GAP),
			   grid_y + (double)(i / (size_t)cols) * (PH + GAP), &xs, o->metric);
	if (!shown)
		fprintf(f, "<text x=\"%d\" y=\"%.0f\" font-size=\"13\" fill=\"#78909c\">No report "
			"matches: nothing to draw.</text>\n", MARGIN, grid_y + 20);
	wrapped(f, MARGIN, grid_y + (nrows ? nrows * PH + (nrows - 1) * GAP : 40) + 20, 10,
		page_w - 2 * MARGIN, foot, 1);
	fputs("</svg>\n", f);

	for (size_t i = 0; i < np; i++)
		free(ps[i].pts);
	free(ps);
	return (int)shown;
}

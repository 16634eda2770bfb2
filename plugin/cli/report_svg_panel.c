/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The panels of the picture: the rows grouped by GPU (UUID, else node and
 * index; a node whose reports had no GPU gets a panel of its own), its
 * points in time order, panels worst first; and one panel drawn: title,
 * axes, the threshold and fail-floor lines, the trend, the points.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "report_svg.h"

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
	if (gpumem_report_row_rank(r) < p->worst)
		p->worst = gpumem_report_row_rank(r);
	if (r->vs.slow && r->vs.ratio < p->slow)
		p->slow = r->vs.ratio;
	if (isfinite(pt->v) && m->reference > 0 && pt->v / m->reference < p->low)
		p->low = pt->v / m->reference;
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
	(*ps)[*np].worst = 2 * GPUMEM_REPORT_NV;
	(*ps)[*np].low = (*ps)[*np].slow = HUGE_VAL;
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

/*
 * Panels worst first (as the table: a GPU slow against its peers right
 * after the warnings, the slowest first), then the lowest figure (as a fraction
 * of its reference: in a fleet of passes, the ones closest to failing),
 * then in node and GPU order.
 */
static int cmp_panel(const void *pa, const void *pb)
{
	const struct panel *a = pa, *b = pb;
	int c;

	if (a->worst != b->worst)
		return a->worst < b->worst ? -1 : 1;
	if (a->slow != b->slow)
		return a->slow < b->slow ? -1 : 1;
	if (a->low != b->low)
		return a->low < b->low ? -1 : 1;
	if ((c = gpumem_report_natcmp(a->node, b->node)) != 0)
		return c;
	if (a->nogpu != b->nogpu)
		return a->nogpu ? 1 : -1;
	if (a->index != b->index)
		return a->index < b->index ? -1 : 1;
	return strcmp(a->uuid ? a->uuid : "", b->uuid ? b->uuid : "");
}

int gpumem_svg_build_panels(struct gpumem_report_row *const *rows, size_t n, int metric,
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
/* Hover text: everything needed to find the report again. */
static void point_title(FILE *f, const struct pt *p, int metric)
{
	const struct gpumem_report_row *r = p->row;
	char when[32], v[32], thr[32];
	struct tm tm;

	gpumem_svg_utc(p->t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &tm);
	fputs("<title>", f);
	fprintf(f, "%s, job %lld.", when, r->rep->job);
	gpumem_svg_xml(f, r->rep->step);
	fputs(" ", f);
	gpumem_svg_xml(f, r->rep->phase);
	fputs(", ", f);
	gpumem_svg_xml(f, r->rep->name);
	if (isfinite(p->v)) {
		gpumem_svg_gbps(p->v, v, sizeof(v));
		if (isfinite(p->thr))
			gpumem_svg_gbps(p->thr, thr, sizeof(thr));
		fprintf(f, "\n%s %s GB/s (threshold %s): %s", gpumem_report_metric_names[metric], v,
			isfinite(p->thr) ? thr : "none", gpumem_report_vclass_name(p->mclass));
	}
	fprintf(f, "\nGPU verdict: %s", gpumem_report_vclass_name(p->rclass));
	if (r->reason) {
		fputs(": ", f);
		gpumem_svg_xml(f, r->reason);
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
			fprintf(f, "H%.1fV%.1f", gpumem_svg_xpos(xs, p->pts[i].t), y);
		*last_y = y;
		drawn = 1;
	}
	if (drawn)
		fprintf(f, "H%d\"/>\n", PW - PR);
	return drawn;
}

/* What drawing a panel needs to know of it, found in one pass. */
struct look {
	const struct panel *p;
	const struct xscale *xs;
	int metric;
	double top, step;                       /* the y axis: 0..top GB/s */
	const struct pt *lastm;                 /* the newest measured point */
	size_t nmeasured, nskipped;
	double last_thr, last_floor;
};

#define PY0 ((double)PT)
#define PY1 ((double)(PH - PB))
#define PX0 ((double)PL)
#define PX1 ((double)(PW - PR))

static double ypos(const struct look *k, double v)
{
	return PY1 - v / k->top * (PY1 - PY0);
}

static void look_at(struct look *k)
{
	double ymax = 0;

	k->last_thr = k->last_floor = NAN;
	for (size_t i = 0; i < k->p->n; i++) {
		const struct pt *q = &k->p->pts[i];

		if (isfinite(q->v)) {
			k->nmeasured++;
			k->lastm = q;
			ymax = q->v > ymax ? q->v : ymax;
		} else {
			k->nskipped++;
		}
		if (isfinite(q->thr)) {
			k->last_thr = q->thr;
			ymax = q->thr > ymax ? q->thr : ymax;
		}
		if (isfinite(q->floor)) {
			k->last_floor = q->floor;
			ymax = q->floor > ymax ? q->floor : ymax;
		}
	}
	if (ymax > 0) {
		k->step = gpumem_svg_nice_step(ymax * 1.04, 5);
		k->top = k->step * (double)(long long)(ymax * 1.04 / k->step + 0.999999);
	}
}

/* Title: node, GPU index, model, short UUID, dropped right to left; the last figure right. */
static void draw_title(FILE *f, const struct look *k)
{
	const struct panel *p = k->p;
	char right[96], buf[64], model[64] = "", uuid[40] = "", idx[32], node[64];
	double avail;

	if (k->lastm) {
		gpumem_svg_gbps(k->lastm->v, buf, sizeof(buf));
		snprintf(right, sizeof(right), "last %s GB/s", buf);
	} else {
		snprintf(right, sizeof(right), "no %s figure", gpumem_report_metric_names[k->metric]);
	}
	if (p->model)
		snprintf(model, sizeof(model), " \xc2\xb7 %s", gpumem_report_short_model(p->model));
	if (p->uuid)
		snprintf(uuid, sizeof(uuid), "%.12s", p->uuid);
	avail = PW - 16 - gpumem_svg_text_w(right, 10) - 10;
	if (p->nogpu)
		snprintf(idx, sizeof(idx), " \xc2\xb7 no GPU measured");
	else
		snprintf(idx, sizeof(idx), " \xc2\xb7 GPU %d", p->index);
	gpumem_svg_cut(p->node, 24, node, sizeof(node));
	if (gpumem_svg_text_w(node, 11.5) + gpumem_svg_text_w(idx, 11) +
	    gpumem_svg_text_w(model, 11) + gpumem_svg_text_w(uuid, 10) + 7 > avail)
		uuid[0] = '\0';
	if (gpumem_svg_text_w(node, 11.5) + gpumem_svg_text_w(idx, 11) +
	    gpumem_svg_text_w(model, 11) > avail) {
		double left = (avail - gpumem_svg_text_w(node, 11.5) - gpumem_svg_text_w(idx, 11)) /
			(11 * 0.6);
		char m2[64];

		gpumem_svg_cut(model, left > 4 ? (size_t)left : 0, m2, sizeof(m2));
		snprintf(model, sizeof(model), "%s", m2);
	}
	fputs("<text x=\"8\" y=\"18\" font-size=\"11\" fill=\"#263238\">"
	      "<tspan font-weight=\"bold\" font-size=\"11.5\">", f);
	gpumem_svg_xml(f, node);
	fputs("</tspan>", f);
	gpumem_svg_xml(f, idx);
	gpumem_svg_xml(f, model);
	if (uuid[0]) {
		/* dx, not a space: spaces at a tspan's edge collapse. */
		fputs("<tspan dx=\"7\" fill=\"#90a4ae\" font-size=\"10\">", f);
		gpumem_svg_xml(f, uuid);
		fputs("</tspan>", f);
	}
	fputs("</text>\n", f);
	fprintf(f, "<text x=\"%d\" y=\"18\" font-size=\"10\" text-anchor=\"end\" fill=\"%s\">",
		PW - 8, k->lastm ? gpumem_svg_colours[k->lastm->mclass] : "#78909c");
	gpumem_svg_xml(f, right);
	fputs("</text>\n", f);
}

static void draw_yaxis(FILE *f, const struct look *k)
{
	char buf[32];

	for (int i = 0; k->top > 0 && i <= 12; i++) {
		double v = k->step * i, y;

		if (v > k->top + k->step / 1000)
			break;
		y = ypos(k, v);
		if (i)
			fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" "
				"stroke=\"#e4e8eb\"/>", PX0, y, PX1, y);
		snprintf(buf, sizeof(buf), k->step < 1 ? "%.1f" : "%.0f", v);
		fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" class=\"tick\" text-anchor=\"end\">%s</text>\n",
			PX0 - 4, y + 3.2, buf);
	}
	if (k->top > 0)
		fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" class=\"tick\" text-anchor=\"end\">GB/s</text>\n",
			PX0 - 4, PY0 - 8);
}

static void draw_xaxis(FILE *f, const struct look *k)
{
	for (int i = 0; i < k->xs->nticks; i++) {
		const struct tick *t = &k->xs->ticks[i];
		double x = gpumem_svg_xpos(k->xs, t->t), w = gpumem_svg_text_w(t->l1, 9);

		if (gpumem_svg_text_w(t->l2, 9) > w)
			w = gpumem_svg_text_w(t->l2, 9);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#eceff1\"/>",
			x, PY0, x, PY1);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#90a4ae\"/>",
			x, PY1, x, PY1 + 3);
		/* A label that would leave the panel is dropped, not clipped. */
		if (x - w / 2 < 2 || x + w / 2 > PW - 2)
			continue;
		fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" class=\"tick\" text-anchor=\"middle\">%s",
			x, PY1 + 13, t->l1);
		if (t->l2[0])
			fprintf(f, "<tspan x=\"%.1f\" dy=\"11\">%s</tspan>", x, t->l2);
		fputs("</text>\n", f);
	}
	fprintf(f, "<path d=\"M%.0f %.0fV%.0fH%.0f\" fill=\"none\" stroke=\"#90a4ae\"/>\n",
		PX0, PY0, PY1, PX1);
}

/* The trend line, then the points: unmeasured ones sit on the time axis. */
static void draw_points(FILE *f, const struct look *k)
{
	const struct panel *p = k->p;

	if (k->nmeasured > 1) {
		size_t n = 0;

		fputs("<polyline fill=\"none\" stroke=\"#b0bec5\" stroke-width=\"1.1\" points=\"", f);
		for (size_t i = 0; i < p->n; i++)
			if (isfinite(p->pts[i].v))
				fprintf(f, "%s%.1f,%.1f", n++ ? " " : "",
					gpumem_svg_xpos(k->xs, p->pts[i].t), ypos(k, p->pts[i].v));
		fputs("\"/>\n", f);
	}
	for (size_t i = 0; i < p->n; i++) {
		const struct pt *q = &p->pts[i];
		double x = gpumem_svg_xpos(k->xs, q->t), y = isfinite(q->v) ? ypos(k, q->v) : PY1 - 5;

		fputs("<g>", f);
		point_title(f, q, k->metric);
		/* A ring: the GPU's verdict is worse than this metric's. */
		if (isfinite(q->v) &&
		    gpumem_report_vclass_rank(q->rclass) < gpumem_report_vclass_rank(q->mclass))
			fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6.8\" fill=\"none\" "
				"stroke=\"%s\" stroke-width=\"1.6\"/>", x, y, gpumem_svg_colours[q->rclass]);
		gpumem_svg_marker(f, x, y, q->mclass);
		fputs("</g>\n", f);
	}
}

/*
 * The lines' values in the right margin, level with their ends: never
 * over a point, and the legend says which line is which.  Two values too
 * close are pushed apart.
 */
static void draw_values(FILE *f, int has_thr, double thr_y, int has_floor, double floor_y,
			const struct look *k)
{
	double ty = thr_y + 3.2, fy = floor_y + 3.2;
	char buf[32];

	if (has_thr && has_floor && fy - ty < 10) {
		double mid = (ty + fy) / 2;

		ty = mid - 5;
		fy = mid + 5;
	}
	if (has_thr) {
		gpumem_svg_gbps(k->last_thr, buf, sizeof(buf));
		fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" class=\"lbl\">\xe2\x89\xa5%s</text>\n",
			PX1 + 3, ty, buf);
	}
	if (has_floor) {
		gpumem_svg_gbps(k->last_floor, buf, sizeof(buf));
		fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" class=\"lbl\" "
			"style=\"fill:#c62828\">&lt;%s</text>\n", PX1 + 3, fy, buf);
	}
}

/* A panel without a figure says how many reports it has and the last reason. */
static void draw_empty(FILE *f, const struct look *k)
{
	const char *why = NULL;
	char buf[96];

	for (size_t i = k->p->n; i-- > 0 && why == NULL;)
		why = k->p->pts[i].row->reason;
	snprintf(buf, sizeof(buf), "%zu report%s, no %s figure", k->nskipped,
		 k->nskipped == 1 ? "" : "s", gpumem_report_metric_names[k->metric]);
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"middle\" "
		"fill=\"#78909c\">%s", (PX0 + PX1) / 2, PY0 + (PY1 - PY0) / 2 - 4, buf);
	if (why) {
		char w2[64];

		gpumem_svg_cut(why, 44, w2, sizeof(w2));
		fprintf(f, "<tspan x=\"%.0f\" dy=\"14\" font-size=\"10\">last: ", (PX0 + PX1) / 2);
		gpumem_svg_xml(f, w2);
		fputs("</tspan>", f);
	}
	fputs("</text>\n", f);
}

/* The newest check slow against its peers: said under the title. */
static void draw_slow(FILE *f, const struct panel *p)
{
	char text[160];

	if (p->n == 0 || p->nogpu || !p->pts[p->n - 1].row->vs.slow)
		return;
	gpumem_report_vs_text(p->pts[p->n - 1].row, text, sizeof(text));
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" class=\"note slow-peers\" style=\"fill:%s\">",
		PX0 + 3, PY0 + 23, gpumem_svg_colours[GPUMEM_REPORT_V_WARN]);
	gpumem_svg_xml(f, text);
	fputs("</text>\n", f);
}

void gpumem_svg_draw_panel(FILE *f, const struct panel *p, double x0, double y0,
			   const struct xscale *xs, int metric)
{
	struct look k = { .p = p, .xs = xs, .metric = metric };
	double thr_y = 0, floor_y = 0;
	int has_thr, has_floor;

	look_at(&k);
	fprintf(f, "<g transform=\"translate(%.0f,%.0f)\">\n", x0, y0);
	fprintf(f, "<rect x=\"0.5\" y=\"0.5\" width=\"%d\" height=\"%d\" rx=\"4\" fill=\"#fff\" "
		"stroke=\"#cfd8dc\"/>\n", PW - 1, PH - 1);
	draw_title(f, &k);
	fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"#fafbfc\"/>\n",
		PX0, PY0, PX1 - PX0, PY1 - PY0);
	draw_yaxis(f, &k);
	draw_xaxis(f, &k);
	/* Threshold (dashed) and fail floor (dotted), then the trend and points. */
	has_floor = k.top > 0 && step_line(f, p, xs, 1, k.top,
					    "fill=\"none\" stroke=\"#d32f2f\" stroke-width=\"1\" "
					    "stroke-dasharray=\"1.5,3\" class=\"floor\"", &floor_y);
	has_thr = k.top > 0 && step_line(f, p, xs, 0, k.top,
					  "fill=\"none\" stroke=\"#455a64\" stroke-width=\"1.3\" "
					  "stroke-dasharray=\"6,4\" class=\"threshold\"", &thr_y);
	draw_points(f, &k);
	draw_values(f, has_thr, thr_y, has_floor, floor_y, &k);
	if (!has_thr && k.nmeasured)
		fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" class=\"note\" text-anchor=\"end\">"
			"no reference: no threshold</text>\n", PX1 - 3, PY0 + 11);
	if (k.nmeasured == 0)
		draw_empty(f, &k);
	draw_slow(f, p);
	fputs("</g>\n", f);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The picture's primitives, shared by `gpumem report --svg` and `gpumem
 * job --svg` (job_svg*.c): text widths (estimated: DejaVu Sans averages
 * about 0.55 em a character, 0.6 leaves room), XML escaping, wrapping and
 * cutting long text, round scale steps, the time axis's ticks, and the verdict markers
 * every part of the picture shares.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "report_svg.h"

const char *const gpumem_svg_colours[GPUMEM_REPORT_NV] = {
	[GPUMEM_REPORT_V_FAIL] = "#d32f2f", [GPUMEM_REPORT_V_UNUSABLE] = "#8e24aa",
	[GPUMEM_REPORT_V_ERROR] = "#37474f", [GPUMEM_REPORT_V_WARN] = "#f29900",
	[GPUMEM_REPORT_V_SKIPPED] = "#9e9e9e", [GPUMEM_REPORT_V_NOT_RUN] = "#9e9e9e",
	[GPUMEM_REPORT_V_PASS] = "#2e7d32",
};

/* ------------------------------------------------------------ text */
size_t gpumem_svg_nchars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* DejaVu Sans averages ~0.55 em a character; 0.6 leaves room to spare. */
double gpumem_svg_text_w(const char *s, double size)
{
	return (double)gpumem_svg_nchars(s) * size * 0.6;
}

/* XML text: escape markup, replace what XML 1.0 cannot hold. */
void gpumem_svg_xml(FILE *f, const char *s)
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

int gpumem_svg_wrapped(FILE *f, double x, double y, double size, double width, const char *fill,
		       const char *text, int draw)
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
			while (end > at + 1 && ((unsigned char)text[end] & 0xc0) == 0x80)
				end--;  /* never inside a UTF-8 character */
		}
		if (draw) {
			char line[512];

			snprintf(line, sizeof(line), "%.*s", (int)(end - at), text + at);
			fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"%.1f\" fill=\"%s\">",
				x, y + lines * size * 1.35, size, fill);
			gpumem_svg_xml(f, line);
			fputs("</text>\n", f);
		}
		at = end;
		while (at < len && text[at] == ' ')
			at++;
	}
	return lines;
}

/* Cut s (UTF-8) to at most max characters, ending in an ellipsis. */
void gpumem_svg_cut(const char *s, size_t max, char *out, size_t outlen)
{
	size_t chars = 0, o = 0;

	if (gpumem_svg_nchars(s) <= max) {
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

void gpumem_svg_gbps(double v, char *buf, size_t len)
{
	snprintf(buf, len, v < 100 ? "%.1f" : "%.0f", v);
}

/* ------------------------------------------------------------ scales */
double gpumem_svg_nice_step(double range, int n)
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

void gpumem_svg_utc(time_t t, struct tm *tm)
{
	gmtime_r(&t, tm);
}

/*
 * Ticks on round UTC times, as many as fit labels about 60 px apart; at
 * hour steps a second line gives the date where it changes.
 */
void gpumem_svg_ticks(struct xscale *xs, double plot_w)
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
		gpumem_svg_utc(k->t, &tm);
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

double gpumem_svg_xpos(const struct xscale *xs, time_t t)
{
	return PL + difftime(t, xs->t0) / difftime(xs->t1, xs->t0) * (PW - PL - PR);
}

void gpumem_svg_marker(FILE *f, double x, double y, enum gpumem_report_vclass c)
{
	const char *col = gpumem_svg_colours[c];

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


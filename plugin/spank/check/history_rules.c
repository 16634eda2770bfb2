/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The pure rules of a GPU against its own history (history_rules.h): the
 * history file's text, the passes it keeps, the median of each figure and
 * the margin below it that warns.  The margins are wider than the check's
 * run-to-run spread of each class of figure (memory, host link), so that a
 * healthy GPU never warns, and narrow enough that one 20% down does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history_rules.h"

static const char *const names[GPUMEM_HIST_NFIG] = {
	"read", "write", "copy", "triad", "d2d", "h2d", "d2h",
};

const char *gpumem_hist_name(int i)
{
	return i >= 0 && i < GPUMEM_HIST_NFIG ? names[i] : "unknown";
}

double gpumem_hist_margin(int i)
{
	return i >= 5 ? GPUMEM_HIST_MARGIN_HOST : GPUMEM_HIST_MARGIN_MEM;
}

/* One line into *P: 0, or -1 when it is not "SEC F F F F F F F". */
static int parse_line(char *line, struct gpumem_hist_pass *p)
{
	char *save = NULL, *tok = strtok_r(line, " \t", &save), *end;

	if (!tok)
		return -1;
	p->sec = strtoll(tok, &end, 10);
	if (*end || p->sec < 0)
		return -1;
	for (int i = 0; i < GPUMEM_HIST_NFIG; i++) {
		tok = strtok_r(NULL, " \t", &save);
		if (!tok)
			return -1;
		if (!strcmp(tok, "-")) {
			p->fig[i] = 0;
			continue;
		}
		p->fig[i] = strtod(tok, &end);
		if (*end || !(p->fig[i] > 0) || p->fig[i] > 1e7)
			return -1;
	}
	return strtok_r(NULL, " \t", &save) ? -1 : 0;
}

int gpumem_hist_parse(const char *text, struct gpumem_hist *h, char *why, size_t len)
{
	char *copy, *save = NULL, *line;
	int rv = 0, n = 0;

	memset(h, 0, sizeof(*h));
	if (!text || !text[0])
		return 0;
	copy = strdup(text);
	if (!copy) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct gpumem_hist_pass p;

		n++;
		if (parse_line(line, &p) < 0) {
			snprintf(why, len, "line %d is not \"SEC READ WRITE COPY TRIAD D2D H2D D2H\"", n);
			rv = -1;
			break;
		}
		gpumem_hist_add(h, &p);
	}
	free(copy);
	if (rv < 0)
		memset(h, 0, sizeof(*h));
	return rv;
}

int gpumem_hist_format(const struct gpumem_hist *h, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int k = 0; k < h->n && off < len; k++) {
		off += (size_t)snprintf(buf + off, len - off, "%lld", h->pass[k].sec);
		for (int i = 0; i < GPUMEM_HIST_NFIG && off < len; i++)
			off += h->pass[k].fig[i] > 0 ?
				(size_t)snprintf(buf + off, len - off, " %.2f", h->pass[k].fig[i]) :
				(size_t)snprintf(buf + off, len - off, " -");
		if (off < len)
			off += (size_t)snprintf(buf + off, len - off, "\n");
	}
	return off < len ? 0 : -1;
}

void gpumem_hist_add(struct gpumem_hist *h, const struct gpumem_hist_pass *p)
{
	if (h->n == GPUMEM_HIST_KEEP) {
		memmove(&h->pass[0], &h->pass[1], sizeof(h->pass[0]) * (GPUMEM_HIST_KEEP - 1));
		h->n--;
	}
	h->pass[h->n++] = *p;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of figure I over H's passes that measured it; their count in *N. */
static double median(const struct gpumem_hist *h, int i, int *n)
{
	double v[GPUMEM_HIST_KEEP];

	*n = 0;
	for (int k = 0; k < h->n; k++)
		if (h->pass[k].fig[i] > 0)
			v[(*n)++] = h->pass[k].fig[i];
	if (*n == 0)
		return 0;
	qsort(v, (size_t)*n, sizeof(v[0]), cmp_double);
	return *n % 2 ? v[*n / 2] : (v[*n / 2 - 1] + v[*n / 2]) / 2;
}

int gpumem_hist_below(const struct gpumem_hist *h, const struct gpumem_hist_pass *now, char *why,
		      size_t len)
{
	size_t off = 0;
	int found = 0;

	why[0] = '\0';
	for (int i = 0; i < GPUMEM_HIST_NFIG; i++) {
		int n;
		double med = median(h, i, &n), m = gpumem_hist_margin(i);

		if (!(now->fig[i] > 0) || n < GPUMEM_HIST_MIN || now->fig[i] >= med * (1 - m))
			continue;
		found++;
		if (off < len)
			off += (size_t)snprintf(why + off, len - off, "%s%s %.1f GB/s is %.0f%% below "
						"its median %.1f of %d passes (margin %.0f%%)",
						off ? "; " : "", names[i], now->fig[i],
						100 * (1 - now->fig[i] / med), med, n, 100 * m);
	}
	return found;
}

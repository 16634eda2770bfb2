/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Diagnostics: every problem carries its file, line and column. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "diag.h"
#include "trust.h"

void gpumem_diag_add(struct gpumem_diags *d, enum gpumem_sev sev, const char *file,
		     int line, int col, const char *fmt, ...)
{
	struct gpumem_diag *g;
	va_list ap;
	int n;

	if (d == NULL)
		return;
	g = calloc(1, sizeof(*g));
	if (g == NULL)
		goto oom;
	g->sev = sev;
	g->line = line;
	g->col = col;
	g->file = strdup(file ? file : "(policy)");
	va_start(ap, fmt);
	n = vasprintf(&g->msg, fmt, ap);
	va_end(ap);
	if (n < 0 || g->file == NULL) {
		if (n >= 0)
			free(g->msg);
		free(g->file);
		free(g);
		goto oom;
	}
	if (d->tail)
		d->tail->next = g;
	else
		d->head = g;
	d->tail = g;
oom:
	/* Out of memory still counts: an error must never turn into a pass. */
	if (sev == GPUMEM_SEV_ERROR)
		d->nerrors++;
	else
		d->nwarnings++;
}

/*
 * One line per diagnostic, escaped (trust.h): file names and messages
 * quote what a user wrote, and a line must stay one line wherever it goes
 * (a terminal, slurmd's log).
 */
static int diag_line(const struct gpumem_diag *g, char *buf, size_t len)
{
	const char *sev = g->sev == GPUMEM_SEV_ERROR ? "error" : "warning";
	char raw[2048];

	if (g->line > 0)
		snprintf(raw, sizeof(raw), "%s:%d:%d: %s: %s", g->file, g->line, g->col, sev, g->msg);
	else
		snprintf(raw, sizeof(raw), "%s: %s: %s", g->file, sev, g->msg);
	return (int)strlen(gpumem_escape(buf, len, raw));
}

void gpumem_diags_print(const struct gpumem_diags *d, FILE *out)
{
	char buf[2048];

	for (const struct gpumem_diag *g = d->head; g; g = g->next) {
		diag_line(g, buf, sizeof(buf));
		fprintf(out, "%s\n", buf);
	}
}

char *gpumem_diags_join(const struct gpumem_diags *d, int errors_only)
{
	char buf[2048];
	char *out = NULL;
	size_t len = 0;

	for (const struct gpumem_diag *g = d->head; g; g = g->next) {
		size_t n;
		char *tmp;

		if (errors_only && g->sev != GPUMEM_SEV_ERROR)
			continue;
		n = (size_t)diag_line(g, buf, sizeof(buf));
		if (n >= sizeof(buf))
			n = sizeof(buf) - 1;
		tmp = realloc(out, len + n + 2);
		if (tmp == NULL)
			break;
		out = tmp;
		if (len)
			out[len++] = '\n';
		memcpy(out + len, buf, n);
		len += n;
		out[len] = '\0';
	}
	return out;
}

void gpumem_diags_free(struct gpumem_diags *d)
{
	struct gpumem_diag *g, *next;

	for (g = d->head; g; g = next) {
		next = g->next;
		free(g->file);
		free(g->msg);
		free(g);
	}
	memset(d, 0, sizeof(*d));
}

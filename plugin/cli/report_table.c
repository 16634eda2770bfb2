/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem report's rows for people and for programs: the table (columns
 * sized to their widest cell, control characters made harmless, long
 * reasons cut) and the JSON array (every field, REPORT-JSON.md).  A fleet
 * has 100,000 rows: the table sizes its columns in one pass, keeping the
 * cells it made, and prints them in a second, and the JSON goes out a row
 * at a time.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "report_cli.h"
#include "core_base.h"

static size_t utf8_chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

enum { C_TIME, C_NODE, C_JOB, C_PHASE, C_GPU, C_VERDICT, C_READ, C_COPY, C_TRIAD, C_H2D,
       C_D2H, C_REASON, NCOLS };
static const char *const col_names[NCOLS] = {
	"TIME (UTC)", "NODE", "JOB.STEP", "PHASE", "GPU", "VERDICT", "READ", "COPY", "TRIAD",
	"H2D", "D2H", "REASON"
};
static const int col_metric[NCOLS] = {
	[C_READ] = GPUMEM_REPORT_M_READ, [C_COPY] = GPUMEM_REPORT_M_COPY,
	[C_TRIAD] = GPUMEM_REPORT_M_TRIAD, [C_H2D] = GPUMEM_REPORT_M_H2D,
	[C_D2H] = GPUMEM_REPORT_M_D2H,
};
#define CELL 160

static void format_metric(const struct gpumem_report_metric *m, char *buf, size_t len)
{
	if (!m->present || !isfinite(m->best)) {
		snprintf(buf, len, "-");
		return;
	}
	/* Host links run at tens of GB/s, HBM at thousands: keep 3-4 digits. */
	snprintf(buf, len, m->best < 100 ? "%.1f%s" : "%.0f%s", m->best,
		 m->vclass == GPUMEM_REPORT_V_WARN || m->vclass == GPUMEM_REPORT_V_FAIL ||
		 (isfinite(m->threshold) && m->best < m->threshold) ? "*" : "");
}

/* Why not a pass, then whether the GPU is slow against its peers. */
static void reason_cell(const struct gpumem_report_row *r, char *buf, size_t len)
{
	const char *why = r->vclass == GPUMEM_REPORT_V_PASS || !r->reason ? "" : r->reason;
	int n = snprintf(buf, len, "%s", why);

	if (r->vs.slow && n >= 0 && (size_t)n < len) {
		if (n && (size_t)n + 2 < len) {
			memcpy(buf + n, "; ", 3);
			n += 2;
		}
		gpumem_report_vs_text(r, buf + n, len - (size_t)n);
	}
}

/* A row's cells and their widths. */
static void row_cells(const struct gpumem_report_row *r, char cells[NCOLS][CELL],
		      size_t width[NCOLS])
{
	const struct gpumem_report_file *f = r->rep;
	char tmp[CELL * 2];

	for (int c = 0; c < NCOLS; c++) {
		tmp[0] = '\0';
		switch (c) {
		case C_TIME:
			gpumem_report_utc(f->time, tmp, sizeof(tmp));
			break;
		case C_NODE:
			snprintf(tmp, sizeof(tmp), "%s", f->node);
			break;
		case C_JOB:
			snprintf(tmp, sizeof(tmp), "%lld.%s", f->job, f->step);
			break;
		case C_PHASE:
			snprintf(tmp, sizeof(tmp), "%s", f->phase);
			break;
		case C_GPU:
			if (!r->has_gpu) {
				snprintf(tmp, sizeof(tmp), "-");
				break;
			}
			snprintf(tmp, sizeof(tmp), "%d %s", gpumem_report_gpu_index(r),
				 gpumem_report_short_model(r->gpu_name));
			break;
		case C_VERDICT: {
			int not_ran = strcmp(f->status, "ran") &&
				strcmp(f->status, gpumem_report_vclass_name(r->vclass));

			snprintf(tmp, sizeof(tmp), "%s%s%s%s%s", gpumem_report_vclass_name(r->vclass),
				 not_ran || f->drained ? " (" : "", not_ran ? f->status : "",
				 not_ran && f->drained ? ", " : "",
				 f->drained ? "drained)" : not_ran ? ")" : "");
			break;
		}
		case C_REASON:
			reason_cell(r, tmp, sizeof(tmp));
			break;
		default:
			format_metric(&r->m[col_metric[c]], tmp, sizeof(tmp));
			break;
		}
		width[c] = gpumem_term_clean(tmp, cells[c], CELL, c == C_REASON ? CELL / 4 * 3 : 40);
		if (c == C_REASON && r->reason && strlen(r->reason) > width[c] &&
		    r->vclass != GPUMEM_REPORT_V_PASS) {
			/* Long reasons are cut; --json has them whole. */
			size_t n = strlen(cells[c]);

			if (n + 4 < CELL)
				memcpy(cells[c] + n, "...", 4);
		}
	}
}

/* Columns are separated before each cell so no line ends in blanks. */
static void print_header(const size_t width[NCOLS])
{
	for (int c = 0; c < NCOLS; c++) {
		int right = c >= C_READ && c <= C_D2H;

		if (c == C_REASON)
			printf("  %s\n", col_names[c]);
		else
			printf(right ? "%s%*s" : "%s%-*s", c ? "  " : "", (int)width[c], col_names[c]);
	}
}

static void pad(size_t n)
{
	static const char spaces[] = "                                ";

	for (; n > sizeof(spaces) - 1; n -= sizeof(spaces) - 1)
		fputs(spaces, stdout);
	fwrite(spaces, 1, n, stdout);
}

/* Padded by hand (printf pads bytes, not UTF-8 characters), without printf: 100,000 lines. */
static void print_cells(const char *const cells[NCOLS], const size_t width[NCOLS])
{
	for (int c = 0; c < NCOLS; c++) {
		const char *cell = cells[c];
		size_t n = width[c] - utf8_chars(cell);
		int right = c >= C_READ && c <= C_D2H;

		if (c == C_REASON) {
			if (cell[0]) {
				fputs("  ", stdout);
				fputs(cell, stdout);
			}
			putchar('\n');
			continue;
		}
		if (c)
			fputs("  ", stdout);
		if (right)
			pad(n);
		fputs(cell, stdout);
		if (!right)
			pad(n);
	}
}

/* Two passes over the rows: widths, then lines; one row's cells at a time. */
/*
 * Every row's cells as the first pass made them, each ending in a NUL, so
 * that the second pass only prints: a fleet's table is 100,000 rows.
 */
struct made {
	char *p;
	size_t len, cap;
	size_t *at;                     /* where each row's cells start; NULL: made again */
};

static void keep(struct made *m, size_t i, char cells[NCOLS][CELL])
{
	size_t len[NCOLS], need = 0;

	for (int c = 0; c < NCOLS; c++)
		need += (len[c] = strlen(cells[c])) + 1;
	if (m->len + need > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 1 << 20;
		char *p;

		while (cap < m->len + need)
			cap *= 2;
		if ((p = realloc(m->p, cap)) == NULL) {
			free(m->at);
			m->at = NULL;
			return;
		}
		m->p = p;
		m->cap = cap;
	}
	m->at[i] = m->len;
	for (int c = 0; c < NCOLS; c++) {
		memcpy(m->p + m->len, cells[c], len[c] + 1);
		m->len += len[c] + 1;
	}
}

/* Two passes over the rows: widths (and the cells kept), then lines. */
void gpumem_report_print_table(struct gpumem_report_row *const *rows, size_t n)
{
	struct made m = { .at = malloc((n ? n : 1) * sizeof(size_t)) };
	char cells[NCOLS][CELL];
	const char *cp[NCOLS];
	size_t width[NCOLS], w[NCOLS];

	for (int c = 0; c < NCOLS; c++)
		width[c] = strlen(col_names[c]);
	for (size_t i = 0; i < n; i++) {
		row_cells(rows[i], cells, w);
		for (int c = 0; c < NCOLS; c++)
			if (w[c] > width[c])
				width[c] = w[c];
		if (m.at)
			keep(&m, i, cells);
	}
	print_header(width);
	for (size_t i = 0; i < n; i++) {
		if (m.at) {
			const char *s = m.p + m.at[i];

			for (int c = 0; c < NCOLS; c++, s += strlen(s) + 1)
				cp[c] = s;
		} else {
			row_cells(rows[i], cells, w);
			for (int c = 0; c < NCOLS; c++)
				cp[c] = cells[c];
		}
		print_cells(cp, width);
	}
	free(m.at);
	free(m.p);
}

static struct json_object *json_metric(const struct gpumem_report_metric *m)
{
	struct json_object *o;

	if (!m->present || (o = json_object_new_object()) == NULL)
		return NULL;
	gpumem_json_add(o, "verdict", gpumem_json_string(m->verdict));
	gpumem_json_add(o, "best_gbps", gpumem_json_number(m->best));
	gpumem_json_add(o, "median_gbps", gpumem_json_number(m->median));
	gpumem_json_add(o, "reference_gbps", gpumem_json_number(m->reference));
	gpumem_json_add(o, "threshold_gbps", gpumem_json_number(m->threshold));
	gpumem_json_add(o, "warn_floor_gbps", gpumem_json_number(m->warn_floor));
	return o;
}

/* The row against its peers (report_peers.c); null when not compared. */
static struct json_object *json_vs(const struct gpumem_report_row *r)
{
	const struct gpumem_report_vs *v = &r->vs;
	struct json_object *o;
	char text[160];

	if (v->peers == 0 || (o = json_object_new_object()) == NULL)
		return NULL;
	gpumem_report_vs_text(r, text, sizeof(text));
	gpumem_json_add(o, "slow", gpumem_json_bool(v->slow));
	gpumem_json_add(o, "metric", gpumem_json_string(gpumem_report_metric_names[v->metric]));
	gpumem_json_add(o, "against", gpumem_json_string(v->node ? "node" : "fleet"));
	gpumem_json_add(o, "ratio", gpumem_json_number(round(v->ratio * 1e4) / 1e4));
	gpumem_json_add(o, "peer_median_gbps", gpumem_json_number(round(v->median * 10) / 10));
	gpumem_json_add(o, "peers", gpumem_json_int((long long)v->peers));
	gpumem_json_add(o, "margin", gpumem_json_number(gpumem_report_peer_margin(v->metric)));
	gpumem_json_add(o, "text", v->slow ? gpumem_json_string(text) : NULL);
	return o;
}

/* One row as an object.  Field names here are an interface: REPORT-JSON.md documents each. */
static struct json_object *json_row(const struct gpumem_report_row *r)
{
	const struct gpumem_report_file *f = r->rep;
	struct json_object *o = json_object_new_object(), *metrics;

	if (o == NULL)
		return NULL;
	gpumem_json_add(o, "file", gpumem_json_string(f->name));
	gpumem_json_add(o, "time", gpumem_json_string(f->time_text));
	gpumem_json_add(o, "epoch", gpumem_json_int((long long)f->time));
	gpumem_json_add(o, "node", gpumem_json_string(f->node));
	gpumem_json_add(o, "job", gpumem_json_int(f->job));
	gpumem_json_add(o, "step", gpumem_json_string(f->step));
	gpumem_json_add(o, "phase", gpumem_json_string(f->phase));
	gpumem_json_add(o, "user", gpumem_json_string(f->user));
	gpumem_json_add(o, "uid", f->has_uid ? gpumem_json_int(f->uid) : NULL);
	gpumem_json_add(o, "policy", gpumem_json_string(f->policy));
	gpumem_json_add(o, "gpus", gpumem_json_string(f->gpus));
	gpumem_json_add(o, "status", gpumem_json_string(f->status));
	gpumem_json_add(o, "exit_code", f->has_exit_code ? gpumem_json_int(f->exit_code) : NULL);
	gpumem_json_add(o, "drained", gpumem_json_bool(f->drained));
	gpumem_json_add(o, "report_verdict", gpumem_json_string(f->verdict));
	gpumem_json_add(o, "gpu_index", r->has_gpu ? gpumem_json_int(gpumem_report_gpu_index(r)) : NULL);
	gpumem_json_add(o, "gpu_cuda_index", r->has_gpu ? gpumem_json_int(r->cuda_index) : NULL);
	gpumem_json_add(o, "gpu_name", gpumem_json_string(r->gpu_name));
	gpumem_json_add(o, "gpu_uuid", gpumem_json_string(r->gpu_uuid));
	gpumem_json_add(o, "gpu_pci_bus_id", gpumem_json_string(r->gpu_pci));
	gpumem_json_add(o, "verdict", gpumem_json_string(gpumem_report_vclass_name(r->vclass)));
	gpumem_json_add(o, "verdict_text", gpumem_json_string(r->verdict));
	gpumem_json_add(o, "reason", gpumem_json_string(r->reason));
	metrics = json_object_new_object();
	for (int m = 0; metrics && m < GPUMEM_REPORT_NMETRICS; m++)
		gpumem_json_add(metrics, gpumem_report_metric_names[m],
				r->has_gpu ? json_metric(&r->m[m]) : NULL);
	gpumem_json_add(o, "metrics", metrics);
	gpumem_json_add(o, "peers", json_vs(r));
	return o;
}

/* The rows as a JSON array, one row a line. */
void gpumem_report_print_json(FILE *out, struct gpumem_report_row *const *rows, size_t n)
{
	fputc('[', out);
	for (size_t i = 0; i < n; i++) {
		struct json_object *o = json_row(rows[i]);

		fputs(i ? ",\n " : "\n ", out);
		gpumem_json_write(out, o, GPUMEM_JSON_SPACED);
		json_object_put(o);
	}
	fputs(n ? "\n]\n" : "]\n", out);
}


/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem report --prometheus: each GPU against its peers (report_peers.c)
 * in the Prometheus text format, worst first, for a node_exporter textfile
 * or a push, so an alert can name the slow GPU of a fleet whose checks all
 * pass.  The per-check textfiles (report.textfile_dir) say what a node saw
 * of itself; only this, reading every node's reports, sees the fleet.
 * Label values come from report files: escaped as the format asks
 * (backslash, double quote, newline), so none can add a line or a label.
 */
#include <math.h>
#include <stdio.h>
#include "report_cli.h"

static void label(FILE *out, const char *name, const char *value, int first)
{
	fprintf(out, "%s%s=\"", first ? "" : ",", name);
	for (const char *s = value ? value : ""; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(out, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", out);
		else
			fputc(*s, out);
	}
	fputc('"', out);
}

/* The labels that name a GPU. */
static void gpu_labels(FILE *out, const struct gpumem_report_row *r)
{
	char idx[16];

	snprintf(idx, sizeof(idx), "%d", gpumem_report_gpu_index(r));
	label(out, "node", r->rep->node, 1);
	label(out, "gpu", idx, 0);
	label(out, "uuid", r->gpu_uuid, 0);
	label(out, "model", r->gpu_name, 0);
}

static void sample(FILE *out, const char *family, const struct gpumem_report_row *r, int vs,
		   double v)
{
	fprintf(out, "%s{", family);
	gpu_labels(out, r);
	if (vs) {
		label(out, "metric", gpumem_report_metric_names[r->vs.metric], 0);
		label(out, "against", r->vs.node ? "node" : "fleet", 0);
	}
	fprintf(out, v == floor(v) ? "} %.0f\n" : "} %.4f\n", v);
}

void gpumem_report_print_prom(FILE *out, const struct gpumem_fleet *fl)
{
	static const struct { const char *name, *help; } fam[] = {
		{ "gpumem_peer_slow", "1 when the GPU's newest check is under the margin of its "
		  "peers' median (gpumem report)" },
		{ "gpumem_peer_ratio", "The GPU's newest figure over its peers' median, of the "
		  "figure lowest against its margin" },
		{ "gpumem_peer_count", "How many peers that median is of" },
	};

	for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		fprintf(out, "# HELP %s %s\n# TYPE %s gauge\n", fam[f].name, fam[f].help,
			fam[f].name);
		for (size_t i = 0; i < fl->ngpus; i++) {
			const struct gpumem_report_row *r = fl->worst[i]->last;

			if (r->vs.peers == 0)
				continue;
			if (f == 0)
				sample(out, fam[f].name, r, 0, r->vs.slow);
			else
				sample(out, fam[f].name, r, 1, f == 1 ? r->vs.ratio : (double)r->vs.peers);
		}
	}
}

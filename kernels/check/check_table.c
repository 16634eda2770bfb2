/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-check human output: a few lines per GPU, short enough to read in a
 * job log.  Everything here is also in the JSON; scripts should read that.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"

static void upper(const char *s, char *out, size_t len)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < len; i++)
		out[i] = (s[i] >= 'a' && s[i] <= 'z') ? (char)(s[i] - 'a' + 'A') : s[i];
	out[i] = '\0';
}

/* A counter that may be unknown (-1). */
static const char *cnt(long long v, char *buf, size_t len)
{
	if (v < 0)
		snprintf(buf, len, "?");
	else
		snprintf(buf, len, "%lld", v);
	return buf;
}

static void health_line(FILE *f, const struct gpumem_check_device *d)
{
	const struct gpumem_check_health *h = &d->health;
	char names[160], x[24], y[24];

	fprintf(f, "  health   %-8s", gpumem_check_verdict_name(h->verdict));
	if (!h->context_ok) {
		fprintf(f, " context: %s\n", h->context_error);
		return;
	}
	if (h->nvml == GPUMEM_CHECK_NVML_MISSING) {
		fprintf(f, " context ok; skipped: NVML not found\n");
		return;
	}
	if (h->nvml != GPUMEM_CHECK_NVML_OK) {
		fprintf(f, " context ok; NVML: %s\n", h->nvml_note[0] ? h->nvml_note : "not run");
		return;
	}
	if (h->nv.ecc_enabled == 1)
		fprintf(f, " ECC on, %s corrected/%s uncorrected", cnt(h->nv.ecc[0][0], x, sizeof(x)),
			cnt(h->nv.ecc[0][1], y, sizeof(y)));
	else
		fprintf(f, " ECC %s", h->nv.ecc_enabled == 0 ? "off" : "n/a");
	if (h->nv.remap_pending >= 0)
		fprintf(f, "; remap %s/%s%s%s", cnt(h->nv.remap_c, x, sizeof(x)),
			cnt(h->nv.remap_u, y, sizeof(y)),
			h->nv.remap_pending == 1 ? " PENDING" : "", h->nv.remap_failure == 1 ? " FAILED" : "");
	else if (h->nv.retired_pending >= 0)
		fprintf(f, "; retired %s/%s%s", cnt(h->nv.retired_sbe, x, sizeof(x)),
			cnt(h->nv.retired_dbe, y, sizeof(y)),
			h->nv.retired_pending == 1 ? " PENDING" : "");
	if (h->nv.gen > 0)
		fprintf(f, "; PCIe gen%d x%s (max gen%s x%s)", h->nv.gen,
			cnt(h->nv.width, x, sizeof(x)), cnt(h->nv.max_gen, y, sizeof(y)),
			cnt(h->nv.max_width, names, sizeof(names)));
	gpumem_health_clock_names(h->nv.clocks, names, sizeof(names));
	fprintf(f, "; clocks: %s", names);
	if (h->nv.mig_mode == 1)
		fprintf(f, "; MIG on");
	fputc('\n', f);
}

static void gbps(FILE *f, double v, int show)
{
	if (show)
		fprintf(f, " %9.1f", v);
	else
		fprintf(f, " %9s", "-");
}

void gpumem_check_table_write(FILE *f, const struct gpumem_check_report *r)
{
	char big[32];
	int i, j;

	fprintf(f, "%s %s on %s, %s\n", GPUMEM_CHECK_PROG, r->version, r->host, r->time);
	fprintf(f, "min fraction %.2f (warn down to %.2f), MPS share %.0f%% (%s), site %s\n",
		r->min_fraction, r->min_fraction - GPUMEM_CHECK_WARN_BAND > 0 ?
		r->min_fraction - GPUMEM_CHECK_WARN_BAND : 0, r->mps_share,
		r->mps_share_source ? r->mps_share_source : "default",
		r->site_path ? r->site_path : "(none: built-in defaults, no references)");
	for (i = 0; i < r->ndevices; i++) {
		const struct gpumem_check_device *d = &r->devices[i];

		fprintf(f, "\nGPU %d  %s  %s  %s", d->index, d->name[0] ? d->name : "?",
			d->uuid[0] ? d->uuid : "?", d->pci_bus_id[0] ? d->pci_bus_id : "?");
		if (d->numa.node >= 0)
			fprintf(f, "  NUMA %d%s", d->numa.node, d->numa.placed ? "" : " (not verified)");
		fputc('\n', f);
		health_line(f, d);
		if (d->memtest.run || d->memtest.error[0]) {
			const struct gpumem_check_memtest *m = &d->memtest;

			gpumem_format_size(m->bytes, big, sizeof(big));
			fprintf(f, "  memtest  %-8s", gpumem_check_verdict_name(m->verdict));
			if (m->error[0] && !m->mismatches)
				fprintf(f, " %s\n", m->error);
			else
				fprintf(f, " %s, %d patterns, %llu mismatch(es)%s, %.1f ms\n", big,
					m->patterns, (unsigned long long)m->mismatches,
					m->planted ? " (error planted)" : "", m->seconds * 1e3);
		}
		fprintf(f, "  %-7s %9s %9s %9s %9s  %s\n", "GB/s", "best", "median", "ref/peak",
			"threshold", "verdict");
		for (j = 0; j < GPUMEM_CHECK_NMETRICS; j++) {
			const struct gpumem_check_metric *m = &d->metric[j];

			if (!m->measured && !m->error[0])
				continue;
			fprintf(f, "  %-7s", gpumem_check_metric_name((enum gpumem_check_metric_id)j));
			gbps(f, m->best, m->measured);
			gbps(f, m->median, m->measured);
			gbps(f, m->reference > 0 ? m->reference : m->peak,
			     m->reference > 0 || m->peak > 0);
			gbps(f, m->threshold, m->threshold > 0);
			fprintf(f, "  %s", gpumem_check_verdict_name(m->verdict));
			if (m->measured && m->basis[0])
				fprintf(f, " (%s)", m->basis);
			if (m->error[0])
				fprintf(f, ": %s", m->error);
			fputc('\n', f);
		}
		if (r->l2ab) {
			const struct gpumem_check_l2ab *l = &d->l2ab;

			if (l->run)
				fprintf(f, "  l2-ab    window speedup %.2fx (%s): %.3f ms with, %.3f ms "
					"without, hot %.1f MiB\n", l->speedup,
					l->speedup >= 1.02 ? "faster" : l->speedup <= 0.98 ? "slower" :
					"no change", l->ms_with, l->ms_without,
					(double)l->hot_bytes / (1024.0 * 1024.0));
			else
				fprintf(f, "  l2-ab    not run: %s\n", l->error[0] ? l->error : "-");
			if (l->sa.run)
				fprintf(f, "  l2-ab    set-aside %.1f%% of L2: triad %.0f GB/s with, %.0f "
					"without (%.2fx)\n", l->sa.percent, l->sa.gbps_with,
					l->sa.gbps_without, l->sa.ratio);
			else if (l->sa.asked)
				fprintf(f, "  l2-ab    set-aside cost not measured: %s\n",
					l->sa.error[0] ? l->sa.error : "-");
		}
		if (d->numa.note[0])
			fprintf(f, "  host     %s\n", d->numa.note);
		upper(gpumem_check_verdict_name(d->verdict), big, sizeof(big));
		fprintf(f, "  => %s (%.3f s)\n", big, d->t.total);
		for (j = 0; j < d->nreasons; j++)
			fprintf(f, "     - %s\n", d->reasons[j]);
	}
	upper(gpumem_check_verdict_name(r->verdict), big, sizeof(big));
	fprintf(f, "\noverall: %s (exit %d)%s%s, wall %.3f s\n", big, r->exit_code,
		r->reason[0] ? ": " : "", r->reason, r->wall_s);
}

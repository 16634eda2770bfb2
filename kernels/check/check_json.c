/*
 * gpumem-check JSON output, written by hand so the check needs no JSON
 * library on the nodes.  The document is described in doc/CHECK-JSON.md;
 * any change of meaning there bumps GPUMEM_CHECK_SCHEMA.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

/*
 * Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not
 * valid (stray continuation byte, overlong form, surrogate, > U+10FFFF,
 * truncated).  Device names and driver messages are ASCII in practice, but
 * a hostname or a path can hold anything and the document must stay JSON.
 */
static int utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	int n, i;
	unsigned cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2; cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3; cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4; cp = c & 0x07;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;       /* also stops at the NUL of a truncated one */
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void gpumem_check_json_string(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	int n;

	if (!str) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	while (*s) {
		switch (*s) {
		case '"':  fputs("\\\"", f); s++; continue;
		case '\\': fputs("\\\\", f); s++; continue;
		case '\b': fputs("\\b", f); s++; continue;
		case '\f': fputs("\\f", f); s++; continue;
		case '\n': fputs("\\n", f); s++; continue;
		case '\r': fputs("\\r", f); s++; continue;
		case '\t': fputs("\\t", f); s++; continue;
		default: break;
		}
		if (*s < 0x20 || *s == 0x7f) {
			fprintf(f, "\\u%04x", *s);
			s++;
			continue;
		}
		n = utf8_len(s);
		if (!n) {
			fputs("\\ufffd", f);
			s++;
			continue;
		}
		fwrite(s, 1, (size_t)n, f);
		s += n;
	}
	fputc('"', f);
}

/* JSON has no NaN or infinity: those become null. */
static void num(FILE *f, double v, const char *fmt)
{
	if (isfinite(v))
		fprintf(f, fmt, v);
	else
		fputs("null", f);
}

static void key(FILE *f, const char *k)
{
	gpumem_check_json_string(f, k);
	fputc(':', f);
}

static void opt_ll(FILE *f, long long v)
{
	if (v < 0)
		fputs("null", f);
	else
		fprintf(f, "%lld", v);
}

static void opt_bool(FILE *f, int v)
{
	fputs(v < 0 ? "null" : v ? "true" : "false", f);
}

static void opt_str(FILE *f, const char *s)
{
	gpumem_check_json_string(f, s && *s ? s : NULL);
}

static void write_health(FILE *f, const struct gpumem_check_device *d)
{
	const struct gpumem_check_health *h = &d->health;
	char names[256];
	const char *nvml;

	fputc('{', f);
	key(f, "verdict"); gpumem_check_json_string(f, gpumem_check_verdict_name(h->verdict));
	fputc(',', f); key(f, "context");
	gpumem_check_json_string(f, h->context_ok ? "ok" : h->context_error);
	fputc(',', f); key(f, "unusable"); opt_str(f, h->unusable);
	fputc(',', f); key(f, "compute_mode");
	if (h->compute_mode < 0)
		fputs("null", f);
	else
		gpumem_check_json_string(f, h->compute_mode == 0 ? "default" :
					 h->compute_mode == 2 ? "prohibited" :
					 h->compute_mode == 3 ? "exclusive_process" : "other");
	switch (h->nvml) {
	case GPUMEM_CHECK_NVML_OK:      nvml = "ok"; break;
	case GPUMEM_CHECK_NVML_MISSING: nvml = "skipped: NVML not found"; break;
	case GPUMEM_CHECK_NVML_ERROR:   nvml = h->nvml_note[0] ? h->nvml_note : "error"; break;
	default:                        nvml = h->nvml_note[0] ? h->nvml_note : "not run"; break;
	}
	fputc(',', f); key(f, "nvml"); gpumem_check_json_string(f, nvml);
	fputc(',', f); key(f, "mig_mode"); opt_bool(f, h->mig_mode);
	fputc(',', f); key(f, "mig_instance"); opt_bool(f, h->mig_instance);

	fputc(',', f); key(f, "ecc"); fputc('{', f);
	key(f, "enabled"); opt_bool(f, h->ecc_enabled);
	fputc(',', f); key(f, "pending_enabled"); opt_bool(f, h->ecc_pending);
	fputc(',', f); key(f, "corrected_volatile"); opt_ll(f, h->ecc_corrected);
	fputc(',', f); key(f, "uncorrected_volatile"); opt_ll(f, h->ecc_uncorrected);
	fputc('}', f);

	fputc(',', f); key(f, "retired_pages"); fputc('{', f);
	key(f, "single_bit"); opt_ll(f, h->retired_sbe);
	fputc(',', f); key(f, "double_bit"); opt_ll(f, h->retired_dbe);
	fputc(',', f); key(f, "pending"); opt_bool(f, h->retired_pending);
	fputc('}', f);

	fputc(',', f); key(f, "row_remap"); fputc('{', f);
	key(f, "correctable"); opt_ll(f, h->remap_corr);
	fputc(',', f); key(f, "uncorrectable"); opt_ll(f, h->remap_unc);
	fputc(',', f); key(f, "pending"); opt_bool(f, h->remap_pending);
	fputc(',', f); key(f, "failure"); opt_bool(f, h->remap_failure);
	fputc('}', f);

	fputc(',', f); key(f, "pcie"); fputc('{', f);
	key(f, "gen"); opt_ll(f, h->pcie_gen);
	fputc(',', f); key(f, "max_gen"); opt_ll(f, h->pcie_max_gen);
	fputc(',', f); key(f, "width"); opt_ll(f, h->pcie_width);
	fputc(',', f); key(f, "max_width"); opt_ll(f, h->pcie_max_width);
	fputc('}', f);

	fputc(',', f); key(f, "throttle"); fputc('{', f);
	key(f, "mask");
	if (h->throttle < 0) {
		fputs("null", f);
		fputc(',', f); key(f, "reasons"); fputs("null", f);
	} else {
		char *p, *save = NULL;
		int first = 1;

		fprintf(f, "\"0x%llx\"", (unsigned long long)h->throttle);
		fputc(',', f); key(f, "reasons"); fputc('[', f);
		gpumem_check_throttle_names(h->throttle, names, sizeof(names));
		if (strcmp(names, "none"))
			for (p = strtok_r(names, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
				if (!first)
					fputc(',', f);
				gpumem_check_json_string(f, p);
				first = 0;
			}
		fputc(']', f);
	}
	fputc('}', f);
	fputc('}', f);
}

static void write_memtest(FILE *f, const struct gpumem_check_memtest *m)
{
	fputc('{', f);
	key(f, "verdict"); gpumem_check_json_string(f, gpumem_check_verdict_name(m->verdict));
	fputc(',', f); key(f, "bytes"); fprintf(f, "%llu", (unsigned long long)m->bytes);
	fputc(',', f); key(f, "patterns"); fprintf(f, "%d", m->patterns);
	fputc(',', f); key(f, "mismatches"); fprintf(f, "%llu", (unsigned long long)m->mismatches);
	fputc(',', f); key(f, "first_offset");
	if (m->mismatches)
		fprintf(f, "%llu", (unsigned long long)m->first_offset);
	else
		fputs("null", f);
	fputc(',', f); key(f, "first_address");
	if (m->mismatches)
		fprintf(f, "\"0x%llx\"", (unsigned long long)m->first_address);
	else
		fputs("null", f);
	fputc(',', f); key(f, "bad_bits");
	if (m->mismatches)
		fprintf(f, "\"0x%016llx\"", (unsigned long long)m->bad_bits);
	else
		fputs("null", f);
	fputc(',', f); key(f, "planted_error"); fputs(m->planted ? "true" : "false", f);
	fputc(',', f); key(f, "seconds"); num(f, m->seconds, "%.6f");
	fputc(',', f); key(f, "traffic_gbps"); num(f, m->gbps, "%.1f");
	fputc(',', f); key(f, "error"); opt_str(f, m->error);
	fputc('}', f);
}

static void write_metric(FILE *f, const struct gpumem_check_metric *m)
{
	fputc('{', f);
	key(f, "verdict"); gpumem_check_json_string(f, gpumem_check_verdict_name(m->verdict));
	fputc(',', f); key(f, "best_gbps");
	if (m->measured) num(f, m->best, "%.2f"); else fputs("null", f);
	fputc(',', f); key(f, "median_gbps");
	if (m->measured) num(f, m->median, "%.2f"); else fputs("null", f);
	fputc(',', f); key(f, "repeats"); fprintf(f, "%d", m->repeats);
	fputc(',', f); key(f, "bytes"); fprintf(f, "%llu", (unsigned long long)m->bytes);
	fputc(',', f); key(f, "reference_gbps");
	if (m->reference > 0) num(f, m->reference, "%.2f"); else fputs("null", f);
	fputc(',', f); key(f, "mps_scale"); num(f, m->scale, "%.4f");
	fputc(',', f); key(f, "threshold_gbps");
	if (m->reference > 0) num(f, m->threshold, "%.2f"); else fputs("null", f);
	fputc(',', f); key(f, "warn_floor_gbps");
	if (m->reference > 0) num(f, m->warn_floor, "%.2f"); else fputs("null", f);
	fputc(',', f); key(f, "error"); opt_str(f, m->error);
	fputc('}', f);
}

static void write_l2ab(FILE *f, const struct gpumem_check_l2ab *l)
{
	fputc('{', f);
	key(f, "run"); fputs(l->run ? "true" : "false", f);
	fputc(',', f); key(f, "l2_bytes"); fprintf(f, "%llu", (unsigned long long)l->l2_bytes);
	fputc(',', f); key(f, "persisting_bytes");
	fprintf(f, "%llu", (unsigned long long)l->setaside_bytes);
	fputc(',', f); key(f, "hot_bytes"); fprintf(f, "%llu", (unsigned long long)l->hot_bytes);
	fputc(',', f); key(f, "stream_bytes"); fprintf(f, "%llu", (unsigned long long)l->stream_bytes);
	fputc(',', f); key(f, "repeats"); fprintf(f, "%d", l->repeats);
	fputc(',', f); key(f, "ms_without_window");
	if (l->run) num(f, l->ms_without, "%.6f"); else fputs("null", f);
	fputc(',', f); key(f, "ms_with_window");
	if (l->run) num(f, l->ms_with, "%.6f"); else fputs("null", f);
	fputc(',', f); key(f, "speedup");
	if (l->run) num(f, l->speedup, "%.4f"); else fputs("null", f);
	fputc(',', f); key(f, "error"); opt_str(f, l->error);
	fputc('}', f);
}

static void write_device(FILE *f, const struct gpumem_check_report *r,
			 const struct gpumem_check_device *d)
{
	int i;

	fputc('{', f);
	key(f, "index"); fprintf(f, "%d", d->ordinal);
	fputc(',', f); key(f, "name"); opt_str(f, d->name);
	fputc(',', f); key(f, "uuid"); opt_str(f, d->uuid);
	fputc(',', f); key(f, "pci_bus_id"); opt_str(f, d->pci_bus_id);
	fputc(',', f); key(f, "compute_capability");
	if (d->cc_major > 0) fprintf(f, "\"%d.%d\"", d->cc_major, d->cc_minor); else fputs("null", f);
	fputc(',', f); key(f, "sm_count"); fprintf(f, "%d", d->sm_count);
	fputc(',', f); key(f, "memory_bytes"); fprintf(f, "%llu", (unsigned long long)d->mem_total);
	fputc(',', f); key(f, "l2_bytes"); fprintf(f, "%llu", (unsigned long long)d->l2_bytes);
	fputc(',', f); key(f, "mps_client"); fputs(d->mps_client ? "true" : "false", f);
	fputc(',', f); key(f, "array_bytes"); fprintf(f, "%llu", (unsigned long long)d->array_bytes);

	fputc(',', f); key(f, "numa"); fputc('{', f);
	key(f, "node"); opt_ll(f, d->numa.node);
	fputc(',', f); key(f, "placed"); fputs(d->numa.placed ? "true" : "false", f);
	fputc(',', f); key(f, "cuda_host_node"); opt_ll(f, d->numa.cuda_node);
	fputc(',', f); key(f, "pinning");
	gpumem_check_json_string(f, d->numa.pinned_by_register ? "cudaHostRegister" : "cudaMallocHost");
	fputc(',', f); key(f, "note"); opt_str(f, d->numa.note);
	fputc('}', f);

	fputc(',', f); key(f, "health"); write_health(f, d);
	fputc(',', f); key(f, "memtest");
	if (d->memtest.run || d->memtest.error[0]) write_memtest(f, &d->memtest); else fputs("null", f);
	fputc(',', f); key(f, "metrics"); fputc('{', f);
	for (i = 0; i < GPUMEM_CHECK_NMETRICS; i++) {
		if (i)
			fputc(',', f);
		key(f, gpumem_check_metric_name((enum gpumem_check_metric_id)i));
		write_metric(f, &d->metric[i]);
	}
	fputc('}', f);
	fputc(',', f); key(f, "l2_ab");
	if (r->l2ab) write_l2ab(f, &d->l2ab); else fputs("null", f);
	fputc(',', f); key(f, "reference");
	if (d->has_reference) {
		fputc('{', f); key(f, "model"); opt_str(f, d->ref_model); fputc('}', f);
	} else {
		fputs("null", f);
	}
	fputc(',', f); key(f, "timings_s"); fputc('{', f);
	key(f, "init"); num(f, d->t.init, "%.4f");
	fputc(',', f); key(f, "memtest"); num(f, d->t.memtest, "%.4f");
	fputc(',', f); key(f, "bandwidth"); num(f, d->t.bandwidth, "%.4f");
	fputc(',', f); key(f, "host"); num(f, d->t.host, "%.4f");
	fputc(',', f); key(f, "l2_ab"); num(f, d->t.l2ab, "%.4f");
	fputc(',', f); key(f, "nvml"); num(f, d->t.nvml, "%.4f");
	fputc(',', f); key(f, "total"); num(f, d->t.total, "%.4f");
	fputc('}', f);
	fputc(',', f); key(f, "verdict"); gpumem_check_json_string(f, gpumem_check_verdict_name(d->verdict));
	fputc(',', f); key(f, "reasons"); fputc('[', f);
	for (i = 0; i < d->nreasons; i++) {
		if (i)
			fputc(',', f);
		gpumem_check_json_string(f, d->reasons[i]);
	}
	fputc(']', f);
	fputc('}', f);
}

int gpumem_check_json_write(FILE *f, const struct gpumem_check_report *r)
{
	int i;

	fputc('{', f);
	key(f, "schema"); gpumem_check_json_string(f, GPUMEM_CHECK_SCHEMA);
	fputc(',', f); key(f, "program"); gpumem_check_json_string(f, GPUMEM_CHECK_PROG);
	fputc(',', f); key(f, "version"); gpumem_check_json_string(f, r->version);
	fputc(',', f); key(f, "host"); gpumem_check_json_string(f, r->host);
	fputc(',', f); key(f, "time"); gpumem_check_json_string(f, r->time);
	fputc(',', f); key(f, "wall_s"); num(f, r->wall_s, "%.4f");
	fputc(',', f); key(f, "timings_s"); fputc('{', f);
	key(f, "driver"); num(f, r->t.driver, "%.4f");
	fputc(',', f); key(f, "runtime"); num(f, r->t.runtime, "%.4f");
	fputc(',', f); key(f, "identify"); num(f, r->t.identify, "%.4f");
	fputc(',', f); key(f, "devices"); num(f, r->t.devices, "%.4f");
	fputc('}', f);
	fputc(',', f); key(f, "cuda"); fputc('{', f);
	key(f, "driver"); if (r->cuda_driver > 0) fprintf(f, "%d", r->cuda_driver); else fputs("null", f);
	fputc(',', f); key(f, "runtime");
	if (r->cuda_runtime > 0) fprintf(f, "%d", r->cuda_runtime); else fputs("null", f);
	fputc(',', f); key(f, "nvml_driver"); opt_str(f, r->nvml_driver);
	fputc('}', f);
	fputc(',', f); key(f, "settings"); fputc('{', f);
	key(f, "site"); opt_str(f, r->site_path);
	fputc(',', f); key(f, "min_fraction"); num(f, r->min_fraction, "%.4f");
	fputc(',', f); key(f, "warn_band"); num(f, GPUMEM_CHECK_WARN_BAND, "%.4f");
	fputc(',', f); key(f, "mps_share_pct"); num(f, r->mps_share, "%.6g");
	fputc(',', f); key(f, "mps_share_source"); opt_str(f, r->mps_share_source);
	fputc(',', f); key(f, "quick"); fputs(r->quick ? "true" : "false", f);
	fputc(',', f); key(f, "memtest"); fputs(r->memtest ? "true" : "false", f);
	fputc(',', f); key(f, "mem_bytes"); fprintf(f, "%llu", (unsigned long long)r->mem_bytes);
	fputc(',', f); key(f, "l2_ab"); fputs(r->l2ab ? "true" : "false", f);
	fputc(',', f); key(f, "plant_error"); fputs(r->plant_error ? "true" : "false", f);
	fputc('}', f);
	fputc(',', f); key(f, "devices"); fputc('[', f);
	for (i = 0; i < r->ndevices; i++) {
		if (i)
			fputc(',', f);
		fputs("\n ", f);
		write_device(f, r, &r->devices[i]);
	}
	fputs("],\n", f);
	key(f, "overall"); fputc('{', f);
	key(f, "verdict"); gpumem_check_json_string(f, gpumem_check_verdict_name(r->verdict));
	fputc(',', f); key(f, "exit_code"); fprintf(f, "%d", r->exit_code);
	fputc(',', f); key(f, "reason"); opt_str(f, r->reason);
	fputc('}', f);
	fputs("}\n", f);
	return ferror(f) ? -1 : 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-check's JSON document, built with the project's JSON module
 * (plugin/core/base/json.h, on json-c) and written compact, as the plugin and
 * the tests read it.  The document is described in doc/CHECK-JSON.md; any
 * change of meaning there bumps GPUMEM_CHECK_SCHEMA.  Figures keep their
 * decimals ("%.2f" GB/s); NaN and infinity are written as null.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "core_base.h"

typedef struct json_object jo;

static jo *obj(void)
{
	return json_object_new_object();
}

static void add(jo *o, const char *k, jo *v)
{
	gpumem_json_add(o, k, v);
}

/* -1 (not known) is null. */
static jo *opt_ll(long long v)
{
	return v < 0 ? NULL : gpumem_json_int(v);
}

static jo *opt_bool(int v)
{
	return v < 0 ? NULL : gpumem_json_bool(v);
}

/* "" is null. */
static jo *opt_str(const char *s)
{
	return gpumem_json_string(s && *s ? s : NULL);
}

static jo *hex(const char *fmt, unsigned long long v)
{
	char buf[32];

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(buf, sizeof(buf), fmt, v);
#pragma GCC diagnostic pop
	return gpumem_json_string(buf);
}

static jo *verdict(enum gpumem_check_verdict v)
{
	return gpumem_json_string(gpumem_check_verdict_name(v));
}

static const char *compute_mode(int mode)
{
	return mode == 0 ? "default" : mode == 2 ? "prohibited" :
		mode == 3 ? "exclusive_process" : "other";
}

static const char *nvml_state(const struct gpumem_check_health *h)
{
	switch (h->nvml) {
	case GPUMEM_CHECK_NVML_OK:      return "ok";
	case GPUMEM_CHECK_NVML_MISSING: return "skipped: NVML not found";
	case GPUMEM_CHECK_NVML_ERROR:   return h->nvml_note[0] ? h->nvml_note : "error";
	default:                        return h->nvml_note[0] ? h->nvml_note : "not run";
	}
}

static jo *throttle(const struct gpumem_check_health *h)
{
	jo *t = obj(), *list;
	char names[256], *p, *save = NULL;

	if (h->nv.clocks < 0) {
		add(t, "mask", NULL);
		add(t, "reasons", NULL);
		return t;
	}
	add(t, "mask", hex("0x%llx", (unsigned long long)h->nv.clocks));
	list = json_object_new_array();
	gpumem_health_clock_names(h->nv.clocks, names, sizeof(names));
	if (strcmp(names, "none"))
		for (p = strtok_r(names, ",", &save); p; p = strtok_r(NULL, ",", &save))
			json_object_array_add(list, gpumem_json_string(p));
	add(t, "reasons", list);
	return t;
}

static jo *health(const struct gpumem_check_device *d)
{
	const struct gpumem_check_health *h = &d->health;
	jo *o = obj(), *ecc = obj(), *retired = obj(), *remap = obj(), *pcie = obj();

	add(o, "verdict", verdict(h->verdict));
	add(o, "context", gpumem_json_string(h->context_ok ? "ok" : h->context_error));
	add(o, "unusable", opt_str(h->unusable));
	add(o, "compute_mode",
	    h->compute_mode < 0 ? NULL : gpumem_json_string(compute_mode(h->compute_mode)));
	add(o, "nvml", gpumem_json_string(nvml_state(h)));
	add(o, "mig_mode", opt_bool(h->nv.mig_mode));
	add(o, "mig_instance", opt_bool(h->mig_instance));
	add(ecc, "enabled", opt_bool(h->nv.ecc_enabled));
	add(ecc, "pending_enabled", opt_bool(h->nv.ecc_pending));
	add(ecc, "corrected_volatile", opt_ll(h->nv.ecc[0][0]));
	add(ecc, "uncorrected_volatile", opt_ll(h->nv.ecc[0][1]));
	add(o, "ecc", ecc);
	add(retired, "single_bit", opt_ll(h->nv.retired_sbe));
	add(retired, "double_bit", opt_ll(h->nv.retired_dbe));
	add(retired, "pending", opt_bool(h->nv.retired_pending));
	add(o, "retired_pages", retired);
	add(remap, "correctable", opt_ll(h->nv.remap_c));
	add(remap, "uncorrectable", opt_ll(h->nv.remap_u));
	add(remap, "pending", opt_bool(h->nv.remap_pending));
	add(remap, "failure", opt_bool(h->nv.remap_failure));
	add(o, "row_remap", remap);
	add(pcie, "gen", opt_ll(h->nv.gen));
	add(pcie, "max_gen", opt_ll(h->nv.max_gen));
	add(pcie, "width", opt_ll(h->nv.width));
	add(pcie, "max_width", opt_ll(h->nv.max_width));
	add(o, "pcie", pcie);
	add(o, "throttle", throttle(h));
	return o;
}

static jo *memtest(const struct gpumem_check_memtest *m)
{
	jo *o = obj();

	add(o, "verdict", verdict(m->verdict));
	add(o, "bytes", gpumem_json_int((long long)m->bytes));
	add(o, "patterns", gpumem_json_int(m->patterns));
	add(o, "mismatches", gpumem_json_int((long long)m->mismatches));
	add(o, "first_offset", m->mismatches ? gpumem_json_int((long long)m->first_offset) : NULL);
	add(o, "first_address",
	    m->mismatches ? hex("0x%llx", (unsigned long long)m->first_address) : NULL);
	add(o, "bad_bits", m->mismatches ? hex("0x%016llx", (unsigned long long)m->bad_bits) : NULL);
	add(o, "planted_error", gpumem_json_bool(m->planted));
	add(o, "seconds", gpumem_json_fixed(m->seconds, 6));
	add(o, "traffic_gbps", gpumem_json_fixed(m->gbps, 1));
	add(o, "error", opt_str(m->error));
	return o;
}

static jo *metric(const struct gpumem_check_metric *m)
{
	jo *o = obj();
	int ref = m->reference > 0, judged = m->threshold > 0;

	add(o, "verdict", verdict(m->verdict));
	add(o, "best_gbps", m->measured ? gpumem_json_fixed(m->best, 2) : NULL);
	add(o, "median_gbps", m->measured ? gpumem_json_fixed(m->median, 2) : NULL);
	add(o, "repeats", gpumem_json_int(m->repeats));
	add(o, "bytes", gpumem_json_int((long long)m->bytes));
	add(o, "reference_gbps", ref ? gpumem_json_fixed(m->reference, 2) : NULL);
	add(o, "mps_scale", gpumem_json_fixed(m->scale, 4));
	add(o, "peak_gbps", m->peak > 0 ? gpumem_json_fixed(m->peak, 2) : NULL);
	add(o, "threshold_gbps", judged ? gpumem_json_fixed(m->threshold, 2) : NULL);
	add(o, "warn_floor_gbps", judged ? gpumem_json_fixed(m->warn_floor, 2) : NULL);
	add(o, "basis", m->measured && m->basis[0] ? gpumem_json_string(m->basis) : NULL);
	add(o, "error", opt_str(m->error));
	return o;
}

static jo *num_or_null(int v)
{
	return v > 0 ? gpumem_json_int(v) : NULL;
}

/* The GPU's peaks from NVML's figures (peak.h), and why one is not known. */
static jo *peak(const struct gpumem_check_device *d)
{
	const struct gpumem_check_health *h = &d->health;
	const struct gpumem_peak *p = &d->peak;
	jo *o = obj();

	add(o, "memory_type", p->type ? gpumem_json_string(gpumem_memtype_name(p->type)) : NULL);
	add(o, "architecture", num_or_null(h->nv.arch));
	add(o, "bus_bits", num_or_null(h->nv.bus_bits));
	add(o, "memory_clock_mhz", num_or_null(h->nv.mem_mhz));
	add(o, "memory_gbps", p->mem_gbps > 0 ? gpumem_json_fixed(p->mem_gbps, 2) : NULL);
	add(o, "memory_why", opt_str(p->mem_why));
	add(o, "pcie_max_gen", num_or_null(h->nv.max_gen));
	add(o, "pcie_max_width", num_or_null(h->nv.max_width));
	add(o, "host_gbps", p->host_gbps > 0 ? gpumem_json_fixed(p->host_gbps, 2) : NULL);
	add(o, "host_why", opt_str(p->host_why));
	return o;
}

/* l2_ab.setaside: the job's set-aside's own cost (--l2-setaside). */
static jo *setaside(const struct gpumem_check_l2ab *l)
{
	const struct gpumem_check_setaside *sa = &l->sa;
	const char *why = sa->error[0] ? sa->error : l->error[0] ? l->error : "not run";
	jo *o = obj();

	add(o, "run", gpumem_json_bool(sa->run));
	add(o, "percent", sa->bytes ? gpumem_json_fixed(sa->percent, 2) : NULL);
	add(o, "bytes", sa->bytes ? gpumem_json_int((long long)sa->bytes) : NULL);
	add(o, "repeats", gpumem_json_int(sa->repeats));
	add(o, "triad_without_gbps", sa->run ? gpumem_json_fixed(sa->gbps_without, 2) : NULL);
	add(o, "triad_with_gbps", sa->run ? gpumem_json_fixed(sa->gbps_with, 2) : NULL);
	add(o, "ratio", sa->run ? gpumem_json_fixed(sa->ratio, 4) : NULL);
	add(o, "error", sa->run ? NULL : gpumem_json_string(why));
	return o;
}

static jo *l2ab(const struct gpumem_check_report *r, const struct gpumem_check_l2ab *l)
{
	jo *o = obj();

	add(o, "run", gpumem_json_bool(l->run));
	add(o, "l2_bytes", gpumem_json_int((long long)l->l2_bytes));
	add(o, "persisting_bytes", gpumem_json_int((long long)l->setaside_bytes));
	add(o, "hot_bytes", gpumem_json_int((long long)l->hot_bytes));
	add(o, "stream_bytes", gpumem_json_int((long long)l->stream_bytes));
	add(o, "repeats", gpumem_json_int(l->repeats));
	add(o, "ms_without_window", l->run ? gpumem_json_fixed(l->ms_without, 6) : NULL);
	add(o, "ms_with_window", l->run ? gpumem_json_fixed(l->ms_with, 6) : NULL);
	add(o, "speedup", l->run ? gpumem_json_fixed(l->speedup, 4) : NULL);
	add(o, "error", opt_str(l->error));
	add(o, "setaside", r->l2_setaside_pct > 0 || r->l2_setaside_bytes ? setaside(l) : NULL);
	return o;
}

static jo *l2reset(const struct gpumem_check_l2reset *l)
{
	jo *o = obj();

	add(o, "done", gpumem_json_bool(l->done));
	add(o, "note", opt_str(l->note));
	add(o, "seconds", gpumem_json_fixed(l->seconds, 4));
	return o;
}

static jo *numa(const struct gpumem_check_device *d)
{
	jo *o = obj();

	add(o, "node", opt_ll(d->numa.node));
	add(o, "placed", gpumem_json_bool(d->numa.placed));
	add(o, "cuda_host_node", opt_ll(d->numa.cuda_node));
	add(o, "pinning", gpumem_json_string(d->numa.pinned_by_register ? "cudaHostRegister" :
					     "cudaMallocHost"));
	add(o, "note", opt_str(d->numa.note));
	return o;
}

static jo *device_timings(const struct gpumem_check_device *d)
{
	jo *o = obj();

	add(o, "init", gpumem_json_fixed(d->t.init, 4));
	add(o, "memtest", gpumem_json_fixed(d->t.memtest, 4));
	add(o, "bandwidth", gpumem_json_fixed(d->t.bandwidth, 4));
	add(o, "host", gpumem_json_fixed(d->t.host, 4));
	add(o, "l2_ab", gpumem_json_fixed(d->t.l2ab, 4));
	add(o, "nvml", gpumem_json_fixed(d->t.nvml, 4));
	add(o, "host_prepare", gpumem_json_fixed(d->t.prepare, 4));
	add(o, "gpu_wait", gpumem_json_fixed(d->t.wait, 4));
	add(o, "total", gpumem_json_fixed(d->t.total, 4));
	return o;
}

static jo *device(const struct gpumem_check_report *r, const struct gpumem_check_device *d)
{
	jo *o = obj(), *metrics = obj(), *reasons = json_object_new_array(), *ref = NULL;
	char cc[32];
	int i;

	snprintf(cc, sizeof(cc), "%d.%d", d->cc_major, d->cc_minor);
	add(o, "index", gpumem_json_int(d->index));
	add(o, "name", opt_str(d->name));
	add(o, "uuid", opt_str(d->uuid));
	add(o, "pci_bus_id", opt_str(d->pci_bus_id));
	add(o, "compute_capability", d->cc_major > 0 ? gpumem_json_string(cc) : NULL);
	add(o, "sm_count", gpumem_json_int(d->sm_count));
	add(o, "memory_bytes", gpumem_json_int((long long)d->mem_total));
	add(o, "l2_bytes", gpumem_json_int((long long)d->l2_bytes));
	add(o, "mps_client", gpumem_json_bool(d->mps_client));
	add(o, "array_bytes", gpumem_json_int((long long)d->array_bytes));
	add(o, "numa", numa(d));
	add(o, "health", health(d));
	add(o, "memtest", d->memtest.run || d->memtest.error[0] ? memtest(&d->memtest) : NULL);
	for (i = 0; i < GPUMEM_CHECK_NMETRICS; i++)
		add(metrics, gpumem_check_metric_name((enum gpumem_check_metric_id)i),
		    metric(&d->metric[i]));
	add(o, "metrics", metrics);
	add(o, "l2_ab", r->l2ab ? l2ab(r, &d->l2ab) : NULL);
	add(o, "l2_reset", r->l2_reset ? l2reset(&d->l2reset) : NULL);
	if (d->has_reference) {
		ref = obj();
		add(ref, "model", opt_str(d->ref_model));
	}
	add(o, "reference", ref);
	add(o, "peak", peak(d));
	add(o, "timings_s", device_timings(d));
	add(o, "verdict", verdict(d->verdict));
	for (i = 0; i < d->nreasons; i++)
		json_object_array_add(reasons, gpumem_json_string(d->reasons[i]));
	add(o, "reasons", reasons);
	return o;
}

/* --l2-setaside as given: "50%" or bytes, or null. */
static jo *setaside_setting(const struct gpumem_check_report *r)
{
	char buf[32];

	if (r->l2_setaside_bytes)
		return gpumem_json_int((long long)r->l2_setaside_bytes);
	if (!(r->l2_setaside_pct > 0))
		return NULL;
	snprintf(buf, sizeof(buf), "%g%%", r->l2_setaside_pct);
	return gpumem_json_string(buf);
}

static jo *settings(const struct gpumem_check_report *r)
{
	jo *o = obj();

	add(o, "site", opt_str(r->site_path));
	add(o, "min_fraction", gpumem_json_fixed(r->min_fraction, 4));
	add(o, "warn_band", gpumem_json_fixed(GPUMEM_CHECK_WARN_BAND, 4));
	add(o, "mps_share_pct", gpumem_json_fmt(r->mps_share, "%.6g"));
	add(o, "mps_share_source", opt_str(r->mps_share_source));
	add(o, "quick", gpumem_json_bool(r->quick));
	add(o, "memtest", gpumem_json_bool(r->memtest));
	add(o, "mem_bytes", gpumem_json_int((long long)r->mem_bytes));
	add(o, "l2_ab", gpumem_json_bool(r->l2ab));
	add(o, "l2_setaside", setaside_setting(r));
	add(o, "l2_reset", gpumem_json_bool(r->l2_reset));
	add(o, "plant_error", gpumem_json_bool(r->plant_error));
	return o;
}

static jo *document(const struct gpumem_check_report *r)
{
	jo *o = obj(), *t = obj(), *cuda = obj(), *devs = json_object_new_array(), *all = obj();
	int i;

	add(o, "schema", gpumem_json_string(GPUMEM_CHECK_SCHEMA));
	add(o, "program", gpumem_json_string(GPUMEM_CHECK_PROG));
	add(o, "version", gpumem_json_string(r->version));
	add(o, "host", gpumem_json_string(r->host));
	add(o, "time", gpumem_json_string(r->time));
	add(o, "wall_s", gpumem_json_fixed(r->wall_s, 4));
	add(t, "driver", gpumem_json_fixed(r->t.driver, 4));
	add(t, "runtime", gpumem_json_fixed(r->t.runtime, 4));
	add(t, "identify", gpumem_json_fixed(r->t.identify, 4));
	add(t, "devices", gpumem_json_fixed(r->t.devices, 4));
	add(o, "timings_s", t);
	add(cuda, "driver", r->cuda_driver > 0 ? gpumem_json_int(r->cuda_driver) : NULL);
	add(cuda, "runtime", r->cuda_runtime > 0 ? gpumem_json_int(r->cuda_runtime) : NULL);
	add(cuda, "nvml_driver", opt_str(r->nvml_driver));
	add(o, "cuda", cuda);
	add(o, "settings", settings(r));
	for (i = 0; i < r->ndevices; i++)
		json_object_array_add(devs, device(r, &r->devices[i]));
	add(o, "devices", devs);
	add(all, "verdict", verdict(r->verdict));
	add(all, "exit_code", gpumem_json_int(r->exit_code));
	add(all, "reason", opt_str(r->reason));
	add(o, "overall", all);
	return o;
}

int gpumem_check_json_write(FILE *f, const struct gpumem_check_report *r)
{
	jo *doc = document(r);
	int rv = gpumem_json_write(f, doc, GPUMEM_JSON_COMPACT);

	json_object_put(doc);
	fputc('\n', f);
	return rv < 0 || ferror(f) ? -1 : 0;
}

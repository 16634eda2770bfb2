/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-check verdicts: every figure against the site reference, health
 * findings, and how the results combine into one exit code.  Plain C with
 * no CUDA so the rules are unit tested on CI (tests/unit/test_verdict.c).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

const char *gpumem_check_verdict_name(enum gpumem_check_verdict v)
{
	switch (v) {
	case GPUMEM_CHECK_V_NOTRUN:   return "not run";
	case GPUMEM_CHECK_V_PASS:     return "pass";
	case GPUMEM_CHECK_V_NOREF:    return "pass (no reference)";
	case GPUMEM_CHECK_V_WARN:     return "warn";
	case GPUMEM_CHECK_V_UNUSABLE: return "unusable";
	case GPUMEM_CHECK_V_FAIL:     return "fail";
	case GPUMEM_CHECK_V_SKIPPED:  return "skipped";
	}
	return "unknown";
}

const char *gpumem_check_metric_name(enum gpumem_check_metric_id m)
{
	static const char *const names[GPUMEM_CHECK_NMETRICS] = {
		"read", "write", "copy", "triad", "d2d", "h2d", "d2h",
	};
	return (unsigned)m < GPUMEM_CHECK_NMETRICS ? names[m] : "unknown";
}

/*
 * fail outranks unusable: a GPU that is both in MIG mode and reports
 * uncorrectable ECC errors must be repaired, not merely skipped.  unusable
 * outranks warn because a GPU the check could not look at is no evidence
 * that the node is fine.
 */
int gpumem_check_verdict_rank(enum gpumem_check_verdict v)
{
	switch (v) {
	case GPUMEM_CHECK_V_NOTRUN:   return 0;
	case GPUMEM_CHECK_V_SKIPPED:  return 0;
	case GPUMEM_CHECK_V_PASS:     return 1;
	case GPUMEM_CHECK_V_NOREF:    return 1;
	case GPUMEM_CHECK_V_WARN:     return 2;
	case GPUMEM_CHECK_V_UNUSABLE: return 3;
	case GPUMEM_CHECK_V_FAIL:     return 4;
	}
	return 4;
}

int gpumem_check_exit_code(enum gpumem_check_verdict v)
{
	switch (v) {
	case GPUMEM_CHECK_V_PASS:
	case GPUMEM_CHECK_V_NOREF:    return GPUMEM_CHECK_EXIT_PASS;
	case GPUMEM_CHECK_V_WARN:     return GPUMEM_CHECK_EXIT_WARN;
	case GPUMEM_CHECK_V_UNUSABLE: return GPUMEM_CHECK_EXIT_UNUSABLE;
	case GPUMEM_CHECK_V_SKIPPED:  return GPUMEM_CHECK_EXIT_SKIPPED;
	case GPUMEM_CHECK_V_NOTRUN:
	case GPUMEM_CHECK_V_FAIL:     return GPUMEM_CHECK_EXIT_FAIL;
	}
	return GPUMEM_CHECK_EXIT_FAIL;
}

double gpumem_check_ref_value(const struct gpumem_ref *ref, enum gpumem_check_metric_id m)
{
	if (!ref)
		return 0;
	switch (m) {
	case GPUMEM_CHECK_READ:  return ref->read;
	case GPUMEM_CHECK_WRITE: return ref->write;
	case GPUMEM_CHECK_COPY:  return ref->copy;
	case GPUMEM_CHECK_TRIAD: return ref->triad;
	case GPUMEM_CHECK_D2D:   return ref->d2d;
	case GPUMEM_CHECK_H2D:   return ref->h2d;
	case GPUMEM_CHECK_D2H:   return ref->d2h;
	case GPUMEM_CHECK_NMETRICS: break;
	}
	return 0;
}

double gpumem_check_mps_scale(enum gpumem_check_metric_id m, double share_pct)
{
	double s;

	/* Copy engines serve H2D/D2H; the SM share does not limit them. */
	if (m == GPUMEM_CHECK_H2D || m == GPUMEM_CHECK_D2H)
		return 1.0;
	if (!(share_pct > 0) || share_pct >= 100)       /* also catches NaN */
		return 1.0;
	s = sqrt(share_pct / 100.0);
	return s > 1.0 ? 1.0 : s;
}

double gpumem_check_peak_floor(enum gpumem_check_metric_id m, double min_fraction)
{
	static const double floor[GPUMEM_CHECK_NMETRICS] = {
		[GPUMEM_CHECK_READ] = 0.85, [GPUMEM_CHECK_WRITE] = 0.80,
		[GPUMEM_CHECK_COPY] = 0.80, [GPUMEM_CHECK_TRIAD] = 0.82,
		[GPUMEM_CHECK_D2D] = 0.75, [GPUMEM_CHECK_H2D] = 0.78, [GPUMEM_CHECK_D2H] = 0.78,
	};

	if ((unsigned)m >= GPUMEM_CHECK_NMETRICS || !(min_fraction > 0))
		return 0;
	return floor[m] * min_fraction / GPUMEM_CHECK_DEFAULT_FRACTION;
}

void gpumem_check_add_reason(struct gpumem_check_device *d, const char *fmt, ...)
{
	va_list ap;

	if (d->nreasons >= GPUMEM_CHECK_MAX_REASONS)
		return;
	va_start(ap, fmt);
	vsnprintf(d->reasons[d->nreasons], GPUMEM_CHECK_MSG, fmt, ap);
	va_end(ap);
	d->nreasons++;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double gpumem_check_median(double *v, int n)
{
	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double gpumem_check_max(const double *v, int n)
{
	double m = 0;
	int i;

	for (i = 0; i < n; i++)
		if (v[i] > m)
			m = v[i];
	return m;
}

void gpumem_check_device_init(struct gpumem_check_device *d, int ordinal)
{
	struct gpumem_check_health *h = &d->health;

	memset(d, 0, sizeof(*d));
	d->ordinal = d->index = ordinal;
	h->compute_mode = -1;
	h->mig_instance = -1;
	gpumem_health_clear(&h->nv);
	d->numa.node = -1;
	d->numa.cuda_node = -1;
}

static enum gpumem_check_verdict worse(enum gpumem_check_verdict a, enum gpumem_check_verdict b)
{
	return gpumem_check_verdict_rank(b) > gpumem_check_verdict_rank(a) ? b : a;
}

/*
 * Health first.  fail: the context could not be made for another reason
 * than being busy, uncorrectable volatile ECC errors, a row remap that
 * failed or is pending (the GPU needs a reset before the repair takes
 * effect; until then a job can hit the bad row), a pending page retirement
 * (same thing on pre-Ampere GPUs).  unusable: MIG mode, a MIG slice, a
 * busy, exclusive-process or prohibited GPU, or one without the free memory
 * the check needs: the check cannot measure the whole GPU, so its figures
 * would mean nothing.  warn: a PCIe link below what the device and slot
 * can do (read while the H2D/D2H copies run: an idle link downshifts to
 * save power), or a hardware/thermal slowdown.
 */
static enum gpumem_check_verdict judge_health(struct gpumem_check_device *d)
{
	struct gpumem_check_health *h = &d->health;
	enum gpumem_check_verdict v = GPUMEM_CHECK_V_PASS;
	char names[128];

	if (!h->context_ok) {
		if (h->busy) {
			gpumem_check_add_reason(d, "GPU unusable for the check: %s", h->context_error);
			v = GPUMEM_CHECK_V_UNUSABLE;
		} else {
			gpumem_check_add_reason(d, "CUDA context creation failed: %s", h->context_error);
			v = GPUMEM_CHECK_V_FAIL;
		}
	}
	if (h->context_ok && h->unusable[0]) {
		gpumem_check_add_reason(d, "GPU unusable for the check: %s", h->unusable);
		v = worse(v, GPUMEM_CHECK_V_UNUSABLE);
	}
	if (h->compute_mode == 2 /* cudaComputeModeProhibited */ && v != GPUMEM_CHECK_V_FAIL) {
		if (h->context_ok)      /* else the context reason says it already */
			gpumem_check_add_reason(d, "GPU unusable for the check: compute mode is prohibited");
		v = worse(v, GPUMEM_CHECK_V_UNUSABLE);
	}
	if (h->nv.mig_mode == 1) {
		gpumem_check_add_reason(d, "GPU unusable for the check: MIG mode is enabled");
		v = worse(v, GPUMEM_CHECK_V_UNUSABLE);
	} else if (h->mig_instance == 1) {
		gpumem_check_add_reason(d, "GPU unusable for the check: the CUDA device is a MIG instance");
		v = worse(v, GPUMEM_CHECK_V_UNUSABLE);
	}
	if (h->nv.ecc[0][1] > 0) {
		gpumem_check_add_reason(d, "%lld uncorrectable ECC error(s) since the driver loaded",
					h->nv.ecc[0][1]);
		v = worse(v, GPUMEM_CHECK_V_FAIL);
	}
	if (h->nv.remap_failure == 1) {
		gpumem_check_add_reason(d, "row remapping failed (the GPU needs service)");
		v = worse(v, GPUMEM_CHECK_V_FAIL);
	}
	if (h->nv.remap_pending == 1) {
		gpumem_check_add_reason(d, "row remap pending (a GPU reset is needed)");
		v = worse(v, GPUMEM_CHECK_V_FAIL);
	}
	if (h->nv.retired_pending == 1) {
		gpumem_check_add_reason(d, "page retirement pending (a GPU reset is needed)");
		v = worse(v, GPUMEM_CHECK_V_FAIL);
	}
	if (h->nv.gen > 0 && h->nv.max_gen > 0 && h->nv.width > 0 && h->nv.max_width > 0 &&
	    (h->nv.gen < h->nv.max_gen || h->nv.width < h->nv.max_width)) {
		gpumem_check_add_reason(d, "PCIe link at gen%d x%d, below gen%d x%d",
					h->nv.gen, h->nv.width, h->nv.max_gen, h->nv.max_width);
		v = worse(v, GPUMEM_CHECK_V_WARN);
	}
	if (h->nv.clocks > 0 && ((unsigned long long)h->nv.clocks & GPUMEM_HEALTH_SLOWDOWN)) {
		gpumem_health_clock_names((long long)((unsigned long long)h->nv.clocks &
							GPUMEM_HEALTH_SLOWDOWN), names, sizeof(names));
		gpumem_check_add_reason(d, "clocks slowed down: %s", names);
		v = worse(v, GPUMEM_CHECK_V_WARN);
	}
	h->verdict = v;
	return v;
}

static enum gpumem_check_verdict judge_memtest(struct gpumem_check_device *d)
{
	struct gpumem_check_memtest *m = &d->memtest;

	if (m->mismatches > 0) {
		gpumem_check_add_reason(d, "memory test: %llu mismatch(es), first at offset 0x%llx "
					"(address 0x%llx, bits 0x%llx)%s",
					(unsigned long long)m->mismatches,
					(unsigned long long)m->first_offset,
					(unsigned long long)m->first_address,
					(unsigned long long)m->bad_bits,
					m->planted ? " [planted by --plant-error]" : "");
		m->verdict = GPUMEM_CHECK_V_FAIL;
	} else if (m->error[0]) {
		gpumem_check_add_reason(d, "memory test: %s", m->error);
		m->verdict = m->fatal ? GPUMEM_CHECK_V_FAIL : GPUMEM_CHECK_V_WARN;
	} else if (m->run) {
		m->verdict = GPUMEM_CHECK_V_PASS;
	} else {
		m->verdict = GPUMEM_CHECK_V_NOTRUN;
	}
	return m->verdict;
}

/* The GPU's peak for figure ID (its memory's, or its host link's), 0 unknown; WHY: why not. */
static double peak_of(const struct gpumem_check_device *d, enum gpumem_check_metric_id id,
		      const char **why)
{
	int host = id == GPUMEM_CHECK_H2D || id == GPUMEM_CHECK_D2H;

	*why = host ? d->peak.host_why : d->peak.mem_why;
	return host ? d->peak.host_gbps : d->peak.mem_gbps;
}

/*
 * What figure ID is judged against: the site's reference (REF's figure
 * times min_fraction), else the GPU's peak times its floor; its threshold
 * and warn floor.  0, or -1 (basis says why) when there is neither.
 */
static int expectation(struct gpumem_check_device *d, enum gpumem_check_metric_id id,
		       const struct gpumem_ref *ref, double min_fraction, double *frac)
{
	struct gpumem_check_metric *m = &d->metric[id];
	const char *why = "";
	double base;

	m->reference = gpumem_check_ref_value(ref, id);
	m->peak = 0;
	if (m->reference > 0) {
		base = m->reference;
		*frac = min_fraction;
		snprintf(m->basis, sizeof(m->basis), "site reference");
	} else if ((base = peak_of(d, id, &why)) > 0) {
		m->peak = base;
		*frac = gpumem_check_peak_floor(id, min_fraction);
		snprintf(m->basis, sizeof(m->basis), "%.2f of this GPU's peak", *frac);
	} else {
		snprintf(m->basis, sizeof(m->basis), "not judged: %.48s", why[0] ? why : "no reference");
		return -1;
	}
	m->threshold = base * m->scale * *frac;
	m->warn_floor = base * m->scale * (*frac > GPUMEM_CHECK_WARN_BAND ?
					    *frac - GPUMEM_CHECK_WARN_BAND : 0);
	return 0;
}

static enum gpumem_check_verdict judge_metric(struct gpumem_check_device *d,
					      enum gpumem_check_metric_id id,
					      const struct gpumem_ref *ref,
					      double min_fraction, double share_pct)
{
	struct gpumem_check_metric *m = &d->metric[id];
	double frac = 0, base;
	int judged;

	m->scale = gpumem_check_mps_scale(id, share_pct);
	m->threshold = m->warn_floor = 0;
	judged = expectation(d, id, ref, min_fraction, &frac) == 0;
	if (!m->measured) {
		if (m->error[0]) {
			gpumem_check_add_reason(d, "%s: %s", gpumem_check_metric_name(id), m->error);
			m->verdict = m->fatal ? GPUMEM_CHECK_V_FAIL : GPUMEM_CHECK_V_WARN;
		} else {
			m->verdict = GPUMEM_CHECK_V_NOTRUN;
		}
		return m->verdict;
	}
	if (!isfinite(m->best) || m->best < 0) {
		/* a timing gone wrong, not a slow GPU: say so, do not judge it */
		gpumem_check_add_reason(d, "%s: no valid figure", gpumem_check_metric_name(id));
		m->verdict = GPUMEM_CHECK_V_WARN;
		return m->verdict;
	}
	if (!judged) {
		m->verdict = GPUMEM_CHECK_V_NOREF;
		return m->verdict;
	}
	base = (m->reference > 0 ? m->reference : m->peak) * m->scale;
	if (m->best >= m->threshold) {
		m->verdict = GPUMEM_CHECK_V_PASS;
		return m->verdict;
	}
	m->verdict = m->best >= m->warn_floor ? GPUMEM_CHECK_V_WARN : GPUMEM_CHECK_V_FAIL;
	if (m->verdict == GPUMEM_CHECK_V_FAIL)
		frac = frac > GPUMEM_CHECK_WARN_BAND ? frac - GPUMEM_CHECK_WARN_BAND : 0;
	gpumem_check_add_reason(d, "%s %.1f GB/s below %.1f (%.2f of %s%.1f%s)",
				gpumem_check_metric_name(id), m->best,
				m->verdict == GPUMEM_CHECK_V_WARN ? m->threshold : m->warn_floor,
				frac, m->reference > 0 ? "" : "this GPU's peak ", base,
				m->scale < 1 ? " after MPS scaling" : "");
	return m->verdict;
}

/* The GPU's peaks from the NVML figures its health holds (peak.h). */
static void device_peak(struct gpumem_check_device *d)
{
	const struct gpumem_check_health *h = &d->health;
	struct gpumem_peak_in in = {
		.name = d->name, .arch = h->nv.arch, .bus_bits = h->nv.bus_bits, .mem_mhz = h->nv.mem_mhz,
		.pcie_gen = h->nv.max_gen, .pcie_width = h->nv.max_width,
	};

	gpumem_peak_compute(&in, &d->peak);
}

void gpumem_check_judge_device(struct gpumem_check_device *d, const struct gpumem_ref *ref,
			       double min_fraction, double share_pct)
{
	enum gpumem_check_verdict v, health;
	int i, with_ref = 0, any = 0;

	d->nreasons = 0;
	d->has_reference = ref != NULL;
	snprintf(d->ref_model, sizeof(d->ref_model), "%s", ref && ref->model ? ref->model : "");
	device_peak(d);

	health = judge_health(d);
	v = health;
	v = worse(v, judge_memtest(d));
	for (i = 0; i < GPUMEM_CHECK_NMETRICS; i++) {
		enum gpumem_check_verdict mv = judge_metric(d, (enum gpumem_check_metric_id)i, ref,
							    min_fraction, share_pct);
		if (d->metric[i].measured) {
			any = 1;
			if (d->metric[i].threshold > 0)
				with_ref = 1;
		}
		v = worse(v, mv);
	}
	/*
	 * On an unusable GPU (MIG, busy) the figures measure a slice or a
	 * shared GPU: they are reported but must not turn into a fail.  Only
	 * a real health or memory fault outranks "unusable".
	 */
	if (health == GPUMEM_CHECK_V_UNUSABLE) {
		v = (d->memtest.verdict == GPUMEM_CHECK_V_FAIL && d->memtest.mismatches > 0)
			? GPUMEM_CHECK_V_FAIL : GPUMEM_CHECK_V_UNUSABLE;
	}
	if (v == GPUMEM_CHECK_V_NOTRUN && !any && d->health.context_ok)
		v = GPUMEM_CHECK_V_PASS;        /* nothing asked but the context: it works */
	if (v == GPUMEM_CHECK_V_PASS && any && !with_ref) {
		v = GPUMEM_CHECK_V_NOREF;
		gpumem_check_add_reason(d, ref ? "the site reference for \"%s\" has no figure "
					"for what was measured, and %s" :
					"no site reference for \"%s\": figures not judged: %s", d->name,
					d->peak.mem_why[0] ? d->peak.mem_why : d->peak.host_why);
	}
	if (v == GPUMEM_CHECK_V_NOTRUN)
		v = GPUMEM_CHECK_V_FAIL;        /* e.g. no context and no reason: never a pass */
	d->verdict = v;
}

void gpumem_check_judge_report(struct gpumem_check_report *r)
{
	enum gpumem_check_verdict v = GPUMEM_CHECK_V_NOTRUN;
	int i, all_noref = r->ndevices > 0;

	for (i = 0; i < r->ndevices; i++) {
		v = worse(v, r->devices[i].verdict);
		if (r->devices[i].verdict != GPUMEM_CHECK_V_NOREF)
			all_noref = 0;
	}
	if (v == GPUMEM_CHECK_V_NOREF && !all_noref)
		v = GPUMEM_CHECK_V_PASS;
	if (v == GPUMEM_CHECK_V_PASS && all_noref)
		v = GPUMEM_CHECK_V_NOREF;
	if (r->ndevices == 0 && v == GPUMEM_CHECK_V_NOTRUN)
		v = GPUMEM_CHECK_V_SKIPPED;
	r->verdict = v;
	r->exit_code = gpumem_check_exit_code(v);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-check without a GPU: a figure the site names no reference for,
 * judged against the GPU's own peak from NVML's figures
 * (plugin/core/health/peak.c): the basis each figure says, the floors of
 * the peak and min_fraction's scaling of them, an unknown memory type
 * left unjudged, and a site reference that still wins.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "check.h"
#include "verdict_fixture.h"

/* An H200 as NVML describes it, measured as the run did: no site reference. */
static void h200_nvml(struct gpumem_check_device *d)
{
	static const double got[GPUMEM_CHECK_NMETRICS] = {
		[GPUMEM_CHECK_READ] = 4575, [GPUMEM_CHECK_COPY] = 4296, [GPUMEM_CHECK_TRIAD] = 4376,
		[GPUMEM_CHECK_H2D] = 55, [GPUMEM_CHECK_D2H] = 55,
	};

	healthy(d, 0);
	d->health.nv.arch = GPUMEM_ARCH_HOPPER;
	d->health.nv.bus_bits = 6016;
	d->health.nv.mem_mhz = 3201;
	for (int i = 0; i < GPUMEM_CHECK_NMETRICS; i++) {
		d->metric[i].best = got[i];
		d->metric[i].measured = got[i] > 0;
	}
}

static void test_peak_basis(void)
{
	struct gpumem_check_device d;
	const struct gpumem_check_metric *m = &d.metric[GPUMEM_CHECK_TRIAD];

	h200_nvml(&d);
	is_int(judge(&d, NULL, 100), GPUMEM_CHECK_V_PASS, "no site reference, NVML figures: a judged pass");
	ok(d.nreasons == 0, "no \"no reference\" reason");
	ok(fabs(d.peak.mem_gbps - 4814.3) < 0.1, "HBM peak %.1f GB/s", d.peak.mem_gbps);
	is_str(d.metric[GPUMEM_CHECK_READ].basis, "0.85 of this GPU's peak", "read: 0.85 of peak");
	is_str(m->basis, "0.82 of this GPU's peak", "triad: 0.82 of peak");
	ok(fabs(m->threshold - 0.82 * 4814.304) < 0.01, "triad threshold %.1f", m->threshold);
	ok(fabs(m->peak - 4814.304) < 0.01 && m->reference == 0, "peak kept, no site reference");
	is_str(d.metric[GPUMEM_CHECK_H2D].basis, "0.78 of this GPU's peak", "h2d: 0.78 of peak");

	h200_nvml(&d);
	d.metric[GPUMEM_CHECK_TRIAD].best = 4376 * 0.80;
	is_int(judge(&d, NULL, 100), GPUMEM_CHECK_V_WARN, "triad 20%% low: warn against the peak");
	ok(has_reason(&d, "(0.82 of this GPU's peak 4814.3)"), "the reason says the basis");
	d.metric[GPUMEM_CHECK_TRIAD].best = 3000;
	is_int(judge(&d, NULL, 100), GPUMEM_CHECK_V_FAIL, "triad 3000: fail");
	ok(has_reason(&d, "(0.72 of this GPU's peak"), "below the warn band");

	h200_nvml(&d);
	gpumem_check_judge_device(&d, NULL, 0.425, 100);
	is_str(m->basis, "0.41 of this GPU's peak", "min_fraction 0.425 halves the floor");

	h200_nvml(&d);
	snprintf(d.name, sizeof(d.name), "Tesla K80");
	d.health.nv.arch = 2;
	d.metric[GPUMEM_CHECK_READ].best = 100;
	is_int(judge(&d, NULL, 100), GPUMEM_CHECK_V_PASS, "unknown memory type: the host link judged");
	is_int(d.metric[GPUMEM_CHECK_READ].verdict, GPUMEM_CHECK_V_NOREF, "read not judged");
	is_str(d.metric[GPUMEM_CHECK_READ].basis, "not judged: unknown memory type",
	       "and says: unknown memory type");
	d.health.nv.max_gen = -1;
	is_int(judge(&d, NULL, 100), GPUMEM_CHECK_V_NOREF, "nothing judged: pass (no reference)");
	ok(has_reason(&d, "figures not judged: unknown memory type"), "the reason says why");

	h200_nvml(&d);
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_PASS, "a site reference still wins");
	is_str(m->basis, "site reference", "triad: site reference");
	ok(m->peak == 0 && fabs(m->threshold - 4127 * 0.85) < 0.01, "threshold from the reference");
}

int main(void)
{
	test_peak_basis();
	return tap_done();
}

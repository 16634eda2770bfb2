/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the gpumem-check verdict tests share: the H200's site reference, a
 * healthy H200 measured at it with NVML answering, one device judged, and
 * a reason looked up.
 */
#ifndef GPUMEM_TEST_CHECK_FIXTURE_H
#define GPUMEM_TEST_CHECK_FIXTURE_H
#include <stdio.h>
#include <string.h>

#include "check.h"

static struct gpumem_ref h200 = {
	.model = "NVIDIA H200",
	.read = 4373, .write = 4200, .copy = 3969, .triad = 4127, .d2d = 4294,
	.h2d = 55, .d2h = 55,
};

/* A healthy H200 at its reference, NVML answering. */
static inline void healthy(struct gpumem_check_device *d, int ordinal)
{
	int i;

	gpumem_check_device_init(d, ordinal);
	snprintf(d->name, sizeof(d->name), "NVIDIA H200");
	snprintf(d->uuid, sizeof(d->uuid), "GPU-01234567-89ab-cdef-0123-456789abcdef");
	snprintf(d->pci_bus_id, sizeof(d->pci_bus_id), "0000:3B:00.0");
	d->health.context_ok = 1;
	d->health.compute_mode = 0;
	d->health.nvml = GPUMEM_CHECK_NVML_OK;
	d->health.nv.ecc_enabled = 1;
	d->health.nv.ecc[0][0] = 3;
	d->health.nv.ecc[0][1] = 0;
	d->health.nv.remap_c = d->health.nv.remap_u = 0;
	d->health.nv.remap_pending = d->health.nv.remap_failure = 0;
	d->health.nv.gen = d->health.nv.max_gen = 5;
	d->health.nv.width = d->health.nv.max_width = 16;
	d->health.nv.clocks = GPUMEM_HEALTH_GPU_IDLE;
	d->health.nv.mig_mode = 0;
	d->health.mig_instance = 0;
	d->memtest.run = 1;
	d->memtest.bytes = 1ull << 30;
	d->memtest.patterns = 4;
	for (i = 0; i < GPUMEM_CHECK_NMETRICS; i++) {
		d->metric[i].measured = 1;
		d->metric[i].best = gpumem_check_ref_value(&h200, (enum gpumem_check_metric_id)i);
		d->metric[i].median = d->metric[i].best * 0.99;
		d->metric[i].repeats = 10;
		d->metric[i].bytes = 1ull << 28;
	}
}

static inline enum gpumem_check_verdict judge(struct gpumem_check_device *d, const struct gpumem_ref *r,
				       double share)
{
	gpumem_check_judge_device(d, r, 0.85, share);
	return d->verdict;
}

static inline int has_reason(const struct gpumem_check_device *d, const char *needle)
{
	int i;

	for (i = 0; i < d->nreasons; i++)
		if (strstr(d->reasons[i], needle))
			return 1;
	return 0;
}
#endif

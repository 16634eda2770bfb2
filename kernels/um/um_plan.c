/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The stripe plan of libgpumem-um: which byte ranges of a
 * managed allocation go to the GPU and which stay on the CPU.
 *
 * Pure arithmetic, no CUDA: the unit test (tests/unit/test_um_config.c)
 * checks the ranges exactly, and um_stripe.c turns each range into one
 * driver call.  Why stripes in periods rather than one GPU prefix, and why
 * at most GPUMEM_UM_MAX_PERIODS of them, is said in um_stripe.c.
 */
#include <stdint.h>

#include "um_config.h"

uint64_t gpumem_um_granules(uint64_t n, uint64_t granularity)
{
	return n / granularity + (n % granularity != 0);
}

/* floor(x * ppm / 10^6) without overflow (x < 2^64, ppm <= 10^6). */
static uint64_t um_scale(uint64_t x, uint32_t ppm)
{
	return x / GPUMEM_UM_PPM * ppm + x % GPUMEM_UM_PPM * ppm / GPUMEM_UM_PPM;
}

uint64_t gpumem_um_gpu_granules(uint64_t n, const struct gpumem_um_config *c, uint64_t free_bytes)
{
	uint64_t total = gpumem_um_granules(n, c->granularity), g, cap;

	if (c->gpu_ppm == GPUMEM_UM_AUTO) {
		/* Whole granules only: a short last one still counts as a full one. */
		g = free_bytes > c->reserve ? (free_bytes - c->reserve) / c->granularity : 0;
		if (g > total)
			g = total;
	} else {
		g = um_scale(total, (uint32_t)c->gpu_ppm);
	}
	cap = um_scale(total, c->max_ppm);
	return g < cap ? g : cap;
}

static int um_push(struct gpumem_um_range *r, int nr, uint64_t off, uint64_t end, int gpu)
{
	if (end <= off)
		return nr;
	if (nr > 0 && r[nr - 1].gpu == gpu && r[nr - 1].off + r[nr - 1].len == off) {
		r[nr - 1].len += end - off;
		return nr;
	}
	r[nr].off = off;
	r[nr].len = end - off;
	r[nr].gpu = gpu;
	return nr + 1;
}

int gpumem_um_plan(uint64_t n, uint64_t granularity, uint64_t gpu_granules,
		   struct gpumem_um_range *r)
{
	uint64_t total = gpumem_um_granules(n, granularity), periods;
	int nr = 0;

	if (total == 0)
		return 0;
	if (gpu_granules > total)
		gpu_granules = total;
	periods = total < GPUMEM_UM_MAX_PERIODS ? total : GPUMEM_UM_MAX_PERIODS;
	for (uint64_t k = 0; k < periods; k++) {
		/* Granules [lo, hi) of this period; its GPU share spread evenly. */
		uint64_t lo = k * total / periods, hi = (k + 1) * total / periods;
		uint64_t g = (k + 1) * gpu_granules / periods - k * gpu_granules / periods;
		uint64_t mid = lo + g;
		uint64_t b_lo = lo * granularity, b_mid = mid * granularity;
		uint64_t b_hi = hi == total ? n : hi * granularity;

		if (b_mid > n)
			b_mid = n;
		nr = um_push(r, nr, b_lo, b_mid, 1);
		nr = um_push(r, nr, b_mid, b_hi, 0);
	}
	return nr;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The advice libgpumem-um applies, as the SPANK plugin passes it in one
 * environment variable:
 *
 *   GPUMEM_UM_ADVICE=v1;preferred=cpu;accessed_by=gpu;read_mostly=0;prefetch=none;min_bytes=1048576;verbose=0
 *
 * Version 2 is version 1 plus placement by size; the plugin
 * writes it only when a policy asks for a placement, so a policy without
 * one reaches an older library exactly as before, and an older library
 * that gets v2 refuses it whole (with a message) instead of half-applying:
 *
 *   GPUMEM_UM_ADVICE=v2;...v1 fields...;placement=stripe;gpu_fraction=auto|0.25;
 *                    gpu_max=1;reserve=1073741824;granularity=2097152
 *
 * Fractions are decimals with at most 6 digits after the point, read
 * without strtod (no locale): the library keeps them in parts per million.
 * Pure C, no CUDA: the parser is unit-tested without a GPU, and the plugin
 * side (plugin/core/policy/env.c, gpumem_um_format) writes the same grammar; the
 * versions and which one a string needs are plugin/core/policy/um_advice.h's.
 */
#ifndef GPUMEM_UM_CONFIG_H
#define GPUMEM_UM_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include "core_policy.h"

#define GPUMEM_UM_ENV           GPUMEM_ENV_UM
/* Longer values are refused: the plugin writes well under 200 bytes. */
#define GPUMEM_UM_MAX_LEN       1024

enum gpumem_um_where { GPUMEM_UM_NONE = 0, GPUMEM_UM_CPU, GPUMEM_UM_GPU };

#define GPUMEM_UM_BY_CPU        1u
#define GPUMEM_UM_BY_GPU        2u

enum gpumem_um_placement { GPUMEM_UM_PLACE_NONE = 0, GPUMEM_UM_PLACE_STRIPE };

#define GPUMEM_UM_PPM           1000000u
#define GPUMEM_UM_AUTO          (-1)            /* gpu_ppm: from free memory */
#define GPUMEM_UM_GRAN_DEFAULT  (2u << 20)
#define GPUMEM_UM_GRAN_MIN      4096u
#define GPUMEM_UM_GRAN_MAX      (1u << 30)

struct gpumem_um_config {
	enum gpumem_um_where preferred;
	unsigned accessed_by;           /* GPUMEM_UM_BY_* */
	int read_mostly;
	enum gpumem_um_where prefetch;
	uint64_t min_bytes;             /* advise allocations of at least this */
	int verbose;
	/* v2: placement by size (um_plan.c, um_stripe.c) */
	enum gpumem_um_placement placement;
	int32_t gpu_ppm;                /* GPUMEM_UM_AUTO or 0..GPUMEM_UM_PPM */
	uint32_t max_ppm;               /* the site's cap on the GPU share */
	uint64_t reserve;               /* auto: left free on the GPU */
	uint64_t granularity;           /* power of two, GRAN_MIN..GRAN_MAX */
};

/* Nothing advised: what a field left out means. */
void gpumem_um_config_init(struct gpumem_um_config *c);

/*
 * Parse 's' into 'c'.  Returns 0, or -1 with a one-line reason (no prefix,
 * no newline, printable ASCII only) in 'err'; 'c' is then left at its
 * defaults, so a bad value never advises half of what was meant.
 */
int gpumem_um_config_parse(const char *s, struct gpumem_um_config *c, char *err, size_t errlen);

/* Whether 'c' asks for any advice at all. */
int gpumem_um_config_active(const struct gpumem_um_config *c);

/* The canonical form of 'c' (parses back to the same); -1 when 'len' is short. */
int gpumem_um_config_format(const struct gpumem_um_config *c, char *buf, size_t len);

const char *gpumem_um_where_name(enum gpumem_um_where w);

/* ------------------------------------------------------------ the stripe plan (um_plan.c) */
/*
 * An allocation of n bytes is cut into granules of 'granularity' bytes
 * (the last one may be short) and the granules into at most
 * GPUMEM_UM_MAX_PERIODS periods of equal size (to one granule).  Each
 * period holds its share of the GPU granules first, then its CPU granules,
 * so any stretch of the allocation longer than a period has the asked mix.
 * Adjacent ranges of one kind are merged: at most 2 * GPUMEM_UM_MAX_PERIODS
 * ranges, each costing the library one driver call (um_stripe.c).
 */
#define GPUMEM_UM_MAX_PERIODS   64
#define GPUMEM_UM_MAX_RANGES    (2 * GPUMEM_UM_MAX_PERIODS)

struct gpumem_um_range {
	uint64_t off, len;              /* bytes from the allocation's start */
	int gpu;                        /* 1: GPU part, 0: CPU part */
};

/* Granules of an n-byte allocation. */
uint64_t gpumem_um_granules(uint64_t n, uint64_t granularity);

/*
 * How many granules go to the GPU: floor(granules * ppm / 10^6) for a fixed
 * fraction; for GPUMEM_UM_AUTO, as many whole granules as fit in
 * free - reserve (never more: no oversubscription by us).  Both are then
 * capped at max_ppm.
 */
uint64_t gpumem_um_gpu_granules(uint64_t n, const struct gpumem_um_config *c, uint64_t free_bytes);

/* The ranges; returns their count (0 for n == 0).  'r' holds GPUMEM_UM_MAX_RANGES. */
int gpumem_um_plan(uint64_t n, uint64_t granularity, uint64_t gpu_granules,
		   struct gpumem_um_range *r);

#endif

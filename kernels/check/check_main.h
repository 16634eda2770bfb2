/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the parts of gpumem-check's main program share: the command line
 * (options, --devices selectors; check_args.c) and the driver probe that
 * must answer in milliseconds on a node without a GPU (check_probe.c).
 * main() itself, with its order and its promises, is in check_main.c.
 */
#ifndef GPUMEM_CHECK_MAIN_H
#define GPUMEM_CHECK_MAIN_H

#include <stddef.h>

#include "check_gpu.h"

#ifndef GPUMEM_SYSCONFDIR
#define GPUMEM_SYSCONFDIR "/etc"
#endif
#define GPUMEM_CHECK_DEFAULT_SITE GPUMEM_SYSCONFDIR "/slurm/gpumem.yaml"
#define GPUMEM_CHECK_MAX_DEVICES  GPUMEM_MAX_GPUS

#define GPUMEM_CHECK_PFX GPUMEM_CHECK_PROG ": "

/* ------------------------------------------------------------ options */
/* One entry of --devices, matched against the devices after the driver probe. */
struct gpumem_check_selector {
	enum { GPUMEM_CHECK_SEL_ORDINAL, GPUMEM_CHECK_SEL_UUID, GPUMEM_CHECK_SEL_PCI } kind;
	char text[96];
	int ordinal;
};

struct gpumem_check_args {
	struct gpumem_check_opts o;
	const char *site;
	const char *json;
	const char *devices;
	struct gpumem_check_selector sel[GPUMEM_CHECK_MAX_DEVICES];
	int nsel;
	double min_fraction;            /* < 0: from the site */
	double mps_share;               /* < 0: from the environment */
	int timeout_s;                  /* < 0: from the site */
	int narrow_index[GPUMEM_CHECK_MAX_DEVICES];     /* CUDA ordinal -> the caller's number */
	int nnarrow;                    /* 0: CUDA_VISIBLE_DEVICES left as it was */
};

/* 0: run; 1: done (help/version printed); -1: usage error (printed). */
int gpumem_check_parse_args(int argc, char **argv, struct gpumem_check_args *a);
/* Does --devices entry 's' name device 'd'? */
int gpumem_check_selector_matches(const struct gpumem_check_selector *s,
				  const struct gpumem_check_device *d);

/* ------------------------------------------------------------ check_visible.c */
/*
 * Before cuInit: a --devices list of ordinals becomes CUDA_VISIBLE_DEVICES
 * (within the caller's own), so that CUDA starts only the GPUs tested.
 * Returns how many are visible now, 0 when the environment was left alone.
 */
int gpumem_check_visible_narrow(struct gpumem_check_args *a);
/* The caller's number of CUDA ordinal ORD (ORD itself when not narrowed). */
int gpumem_check_visible_index(const struct gpumem_check_args *a, int ord);

/* ------------------------------------------------------------ driver probe */
/*
 * Is there a driver with a GPU, and will the CUDA runtime start?  Fills
 * rep->t.driver and rep->t.runtime and *cuda_count.  Returns 0 to go on,
 * else the exit code (3 skipped, 2 fail) with 'why' filled.
 */
int gpumem_check_probe(struct gpumem_check_report *rep, int *cuda_count, char *why, size_t len);

#endif

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
#include <stdio.h>

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

/*
 * Where one check (gpumem_check_run_one) reads and writes, and which GPUs
 * it takes: the one-shot command's stdout and stdin, or the warm server's
 * request (check_serve.c).
 */
struct gpumem_check_io {
	FILE *json_out;                 /* --json -: here (stdout, or the reply) */
	const char *site_text;          /* --site -: this text, not stdin (NULL: stdin) */
	size_t site_len;
	/*
	 * The server's GPUs: the CUDA ordinals the request's CUDA_VISIBLE_DEVICES
	 * list names, in its order, numbered 0..n-1 as that list would number
	 * them (nord < 0: every visible GPU, the one-shot command).
	 */
	int ordinals[GPUMEM_CHECK_MAX_DEVICES];
	int nord;
	int used[GPUMEM_CHECK_MAX_DEVICES];     /* out: the ordinals that got a context */
	int nused;
};
/*
 * One check: gpumem-check's options in ARGV; the exit code.  Leaves the
 * process as it found it but for CUDA's contexts on io->used (and NVML
 * started); a hang past --timeout ends the process (SIGALRM).
 */
int gpumem_check_run_one(int argc, char **argv, struct gpumem_check_io *io);
/* gpumem-check --serve (check_serve.c): the warm server's loop; its exit code. */
int gpumem_check_serve(int argc, char **argv);
/*
 * How many of io->ordinals CUDA would show with that list as
 * CUDA_VISIBLE_DEVICES on a node of CUDA_COUNT devices: it stops at the
 * first entry that names none (check_visible.c).
 */
int gpumem_check_io_ordinals(struct gpumem_check_io *io, int cuda_count);

/* ------------------------------------------------------------ driver probe */
/*
 * Is there a driver with a GPU, and will the CUDA runtime start?  Fills
 * rep->t.driver and rep->t.runtime and *cuda_count.  Returns 0 to go on,
 * else the exit code (3 skipped, 2 fail) with 'why' filled.
 */
int gpumem_check_probe(struct gpumem_check_report *rep, int *cuda_count, char *why, size_t len);

#endif

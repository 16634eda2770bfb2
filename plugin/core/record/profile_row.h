/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One GPU of the profile's compact summary (profile.h, member "g"), in the
 * two forms records carry: the named row written since record version 2,
 *
 *   {"gpu":0,"n":12,"src":"gpm","dram":61,"dram95":91,"sm":97,"sm95":99,
 *    "occ":79,"rx":0.1,"rx95":0.3,"tx":0.0,"nvrx":null,"nvtx":null,
 *    "mem":7.9,"model":"NVIDIA H200","note":"MIG: ..."}
 *
 * ("model" and "note" only where known), and the positional row of
 * version 1 records, read back as they are in sites' databases:
 * [index, samples, source, 11 figures(, note)] in the order of
 * gpumem_prof_col.  One table names each figure once for building,
 * checking and reading both forms.
 */
#ifndef GPUMEM_PROFILE_ROW_H
#define GPUMEM_PROFILE_ROW_H
#include <stddef.h>
#include "core_base.h"

/* The positions in a version 1 (positional) row. */
enum gpumem_prof_col {
	GPUMEM_PROF_INDEX, GPUMEM_PROF_SAMPLES, GPUMEM_PROF_SOURCE,
	GPUMEM_PROF_DRAM_MEAN, GPUMEM_PROF_DRAM_P95, GPUMEM_PROF_SM_MEAN, GPUMEM_PROF_SM_P95,
	GPUMEM_PROF_OCC_MEAN, GPUMEM_PROF_RX_MEAN, GPUMEM_PROF_RX_P95, GPUMEM_PROF_TX_MEAN,
	GPUMEM_PROF_NVRX_MEAN, GPUMEM_PROF_NVTX_MEAN, GPUMEM_PROF_MEM_MAX,
	GPUMEM_PROF_NCOLS,              /* 14; a 15th item is the note */
};
/* The compact summary's note and model, in characters. */
#define GPUMEM_PROF_NOTE_CHARS 60
#define GPUMEM_PROF_MODEL_CHARS 48

/* One GPU of a compact summary, as numbers: NAN where the row says null. */
struct gpumem_prof_gpu {
	long index;
	double samples;
	char source[33];        /* "" when null */
	double dram_mean, dram_p95, sm_mean, sm_p95, occ_mean;
	double rx_mean, rx_p95, tx_mean, nvrx_mean, nvtx_mean, mem_max;
	char model[GPUMEM_PROF_MODEL_CHARS * 4 + 1];    /* "" when unknown (version 1) */
	char note[GPUMEM_PROF_NOTE_CHARS * 4 + 1];      /* "" when none */
};

/* The named row of G, one "gpus" entry of a checked gpumem-profile/1 document; NULL: no memory. */
struct json_object *gpumem_prof_row_build(struct json_object *g);
/* Is ROW a row of either form?  0, or -1 with why, naming AT's member. */
int gpumem_prof_row_check(struct json_object *row, char *err, size_t len, const char *at);
/* ROW (either form, checked) -> *G; -1 when not a row. */
int gpumem_prof_gpu_of(struct json_object *row, struct gpumem_prof_gpu *g);
#endif

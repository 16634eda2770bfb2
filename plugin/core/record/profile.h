/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The per-job GPU memory profile: the gpumem-profile/1 document
 * gpumem-sample writes (doc/REPORT-JSON.md, "profile"), the check that lets
 * the plugin embed it in a report, and its compact summary, member "prof"
 * of the accounting record (acct.h), which `gpumem job` and `gpumem advise`
 * read back.  Everything is read and built with the JSON module (json.h).
 *
 * The compact summary:
 *
 *   {"st":"ran","why":null,"s":12,"src":"gpm",
 *    "g":[[0,12,"gpm",61,91,97,99,79,0.1,0.3,0.0,0.0,0.0,7.9]]}
 *
 * st: "ran", "skipped", "refused" or "none"; why: the reason, or null;
 * s: seconds sampled; src: the GPUs' source when they share one, "mixed",
 * or null.  Per GPU (GPUMEM_PROF_* below): node index, samples, source,
 * DRAM mean and p95, SM mean and p95, occupancy mean (percent, integers),
 * PCIe rx mean and p95, PCIe tx mean, NVLink rx and tx mean (GB/s, one
 * decimal), memory used max (GiB, one decimal); null where absent; then,
 * only when the GPU has one, its note ("MIG: ...").
 */
#ifndef GPUMEM_PROFILE_H
#define GPUMEM_PROFILE_H
#include <stddef.h>
#include "core_base.h"

#define GPUMEM_PROFILE_SCHEMA "gpumem-profile/1"
/* Caps for a profile document. */
#define GPUMEM_PROFILE_MAX_BYTES (256 * 1024)
#define GPUMEM_PROFILE_MAX_DEPTH 8
#define GPUMEM_PROFILE_MAX_VALUES (80 * 1024)
#define GPUMEM_PROFILE_MAX_GPUS 64
#define GPUMEM_PROFILE_MAX_TIMELINE 120
#define GPUMEM_PROFILE_MAX_STRING 128   /* characters */
/* A figure's range, by unit (gpumem_profile_check; the fuzz oracle's bounds too). */
#define GPUMEM_PROFILE_MAX_PCT  100.5   /* percent: a little over for NVML's rounding */
#define GPUMEM_PROFILE_MAX_GBPS 100000.0
#define GPUMEM_PROFILE_MAX_GIB  65536.0
/* The compact summary's reason and note, in characters. */
#define GPUMEM_PROF_WHY_CHARS 120
#define GPUMEM_PROF_NOTE_CHARS 60

/* The positions in a compact GPU row. */
enum gpumem_prof_col {
	GPUMEM_PROF_INDEX, GPUMEM_PROF_SAMPLES, GPUMEM_PROF_SOURCE,
	GPUMEM_PROF_DRAM_MEAN, GPUMEM_PROF_DRAM_P95, GPUMEM_PROF_SM_MEAN, GPUMEM_PROF_SM_P95,
	GPUMEM_PROF_OCC_MEAN, GPUMEM_PROF_RX_MEAN, GPUMEM_PROF_RX_P95, GPUMEM_PROF_TX_MEAN,
	GPUMEM_PROF_NVRX_MEAN, GPUMEM_PROF_NVTX_MEAN, GPUMEM_PROF_MEM_MAX,
	GPUMEM_PROF_NCOLS,              /* 14; a 15th item is the note */
};

/*
 * Is DOC a gpumem-profile/1 document this version reads (types, ranges:
 * percent 0..100 (allow up to 100.5), GB/s 0..100000, counts >= 0,
 * timeline <= 120 entries, gpus <= 64, strings <= 128 chars)?  0, or -1
 * with why in ERR, naming the member ("gpus[1].metrics.pcie_rx.p95: ...").
 */
int gpumem_profile_check(struct json_object *doc, char *err, size_t len);
/*
 * Parse BUF (LEN bytes) under the profile caps and check it: 0 and *out
 * (json_object_put it), or -1 with why.
 */
int gpumem_profile_parse(const char *buf, size_t len, struct json_object **out, char *err,
			 size_t errlen);
/*
 * The compact summary for the accounting record, a new object, of a
 * report's "profile" member DOC: a gpumem-profile/1 document (checked
 * here: one that fails gives st "refused" and the reason), or what the
 * plugin writes in its place, {"state":"refused"|"skipped"|"none",
 * "reason":...}.  NULL only when out of memory.
 */
struct json_object *gpumem_profile_compact(struct json_object *doc);
/* Is V a compact summary this version reads?  0, or -1 with why. */
int gpumem_profile_compact_check(struct json_object *v, char *err, size_t len);

/* One GPU of a compact summary, as numbers: NAN where the row says null. */
struct gpumem_prof_gpu {
	long index;
	double samples;
	char source[33];        /* "" when null */
	double dram_mean, dram_p95, sm_mean, sm_p95, occ_mean;
	double rx_mean, rx_p95, tx_mean, nvrx_mean, nvtx_mean, mem_max;
	char note[GPUMEM_PROF_NOTE_CHARS * 4 + 1];      /* "" when none */
};
/* ROW (checked by gpumem_profile_compact_check) -> *G; -1 when not a row. */
int gpumem_prof_gpu_of(struct json_object *row, struct gpumem_prof_gpu *g);
#endif

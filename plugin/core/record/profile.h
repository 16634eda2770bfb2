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
 *    "g":[{"gpu":0,"n":12,"src":"gpm","dram":61,"dram95":91,...,"mem":7.9}]}
 *
 * st: "ran", "skipped", "refused" or "none"; why: the reason, or null;
 * s: seconds sampled; src: the GPUs' source when they share one, "mixed",
 * or null.  Per GPU a named row (profile_row.h; version 1 records hold
 * positional rows, still read): node index, samples, source, DRAM mean
 * and p95, SM mean and p95, occupancy mean (percent, integers), PCIe rx
 * mean and p95, PCIe tx mean, NVLink rx and tx mean (GB/s, one decimal),
 * memory used max (GiB, one decimal); null where absent; the GPU's model
 * and note ("MIG: ...") only where it has one.
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
/* The compact summary's reason, in characters (the note's: profile_row.h). */
#define GPUMEM_PROF_WHY_CHARS 120

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

#include "profile_row.h"     /* one GPU of the summary, both forms */
#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Per-job records in Slurm's accounting (doc/admin/reports.md, "Accounting").
 *
 * One record per node and job: the effective policy, the check verdicts
 * with their main figures, a drain if any, the GPU memory profile in short.  It is built from the node's
 * report files by gpumem-acct (plugin/acct) and read back from sacct's
 * AdminComment by `gpumem job` (plugin/cli/job.c).  In AdminComment a
 * record is one segment "{~" DATA "~}": DATA is the record's compact JSON,
 * deflated (zlib, raw), written as base 16 with the digits "!#$%&()*,-.:;<>?".
 * Why that alphabet: it survives what sacctmgr and MySQL do to the value
 * (22.05's sacctmgr lower-cases it and turns quotes into backquotes; MySQL
 * reads backslashes as escapes), and it holds no base64 character, so
 * jobstats' reader (base64 of everything after "JS1:", non-alphabet
 * characters discarded) decodes its own content as if ours were not there.
 */
#ifndef GPUMEM_ACCT_H
#define GPUMEM_ACCT_H

#include <stddef.h>
#include "core_base.h"
#include "report.h"

/* Written: 2 (named profile rows, "adv"); read: 1 and 2. */
#define GPUMEM_ACCT_VERSION 2
#define GPUMEM_ACCT_OPEN "{~"
#define GPUMEM_ACCT_CLOSE "~}"
/* One segment's cap: an 8-GPU node's record takes about 700 bytes, 2 KiB with "prof". */
#define GPUMEM_ACCT_MAX_SEGMENT 4096
/* The record's JSON, inflated: a bound against a hostile segment. */
#define GPUMEM_ACCT_MAX_JSON 16384

/*
 * Build NODE's record of JOB from the report files in DIR: the newest
 * "before" and "after" report of any step, and the GPU memory profile
 * (member "prof", profile.h) of the newest "after" or "job" report that
 * has one ("job": no after-check ran; never listed as a check).  Returns the record's JSON
 * (malloc'd) or NULL with a message in err; *nreports says how many
 * report files were used (0: no report of that job on that node).
 */
char *gpumem_acct_build(const char *dir, long long job, const char *node, int *nreports,
			char *err, size_t errlen);

/*
 * A report's "effective" policy in short, the record's "eff" ({"l2", "mps",
 * "daemon", "um"}: what gpumem_advise reads), a new object; NULL when EFF
 * is no object (or out of memory).
 */
struct json_object *gpumem_acct_effective(struct json_object *eff);

/* JSON -> segment "{~...~}" (malloc'd), or NULL with a message. */
char *gpumem_acct_encode(const char *json, char *err, size_t errlen);
/*
 * Segment text (without the delimiters, LEN bytes) -> the record's JSON
 * (malloc'd, validated: gpumem_acct_check), or NULL with a message naming
 * what is wrong.
 */
char *gpumem_acct_decode(const char *data, size_t len, char *err, size_t errlen);
/*
 * A record's JSON -> *out (json_object_put it), parsed with the JSON module
 * under the record's caps and checked (gpumem_acct_check); 0, or -1 and why.
 */
int gpumem_acct_parse(const char *json, struct json_object **out, char *err, size_t errlen);
/*
 * One AdminComment segment's DATA (LEN bytes between the delimiters) ->
 * *out, decoded (gpumem_acct_decode) and parsed (gpumem_acct_parse); 0, or
 * -1 and why, *out NULL.
 */
int gpumem_acct_segment_record(const char *data, size_t len, struct json_object **out,
			       char *err, size_t errlen);
/* Is V (parsed from JSON) a record this version reads?  0, or -1 and why. */
int gpumem_acct_check(struct json_object *v, char *err, size_t errlen);

/*
 * Walk the segments of an AdminComment: for each "{~...~}" calls FN with
 * its data (between the delimiters); returns the number of segments.  The
 * text outside the segments is another tool's and is never touched.
 */
typedef void (*gpumem_acct_seg_fn)(const char *data, size_t len, size_t at, void *arg);
size_t gpumem_acct_segments(const char *comment, gpumem_acct_seg_fn fn, void *arg);

/*
 * The new AdminComment: COMMENT with NODE's segment (if any) replaced by
 * SEGMENT, every other byte kept.  Malloc'd, or NULL when out of memory.
 */
char *gpumem_acct_merge(const char *comment, const char *node, const char *segment);
/*
 * Would sacctmgr store TEXT unchanged?  Not if it has a quote or a
 * backslash, nor (LOWERS: sacctmgr before 23.02) an upper-case letter.
 * 0, or -1 with the reason.
 */
int gpumem_acct_storable(const char *text, int lowers, char *err, size_t errlen);

#endif

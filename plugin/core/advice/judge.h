/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The judge of one advised run (judge.c): pure, no I/O.  It compares the
 * job's work, never its wall: the .batch step's elapsed time (else its
 * longest step's), which leaves out the prolog, with the median of up to
 * five comparable runs of the name under the site's defaults, and says
 * gpumem's own time (job minus work: prolog, checks, MPS start) apart.
 * The rules and their thresholds are written once, in
 * doc/admin/profile.md ("The judge"):
 *
 *   comparable   both completed (exit 0); both profiled with a used GPU
 *                and at least GPUMEM_JUDGE_MIN_SAMPLES samples; the same
 *                GPU count and model; the same command where accounting
 *                gives both (WorkDir and SubmitLine); GPU-busy seconds not below the
 *                reference's by more than a factor GPUMEM_JUDGE_BUSY_BAND
 *                (less GPU work is other work); otherwise "not judged: WHY".
 *   near zero    a work time under GPUMEM_JUDGE_MIN_WORK_S is never a
 *                ratio: not judged.
 *   floor        max(two accounting ticks, GPUMEM_JUDGE_MARGIN of the
 *                reference), doubled with one reference run.
 *   gained       work time below reference - floor (and, for a rule that
 *                promises a gain, its symptom gone).
 *   even         within the floor: for a rule that promises no speed-up
 *                that is what it promised ("not slower than the noise").
 *   loss         reference + floor or more, or a gain rule's symptom still
 *                there.
 *   harm         the advised run failed where the reference runs did not,
 *                or took over GPUMEM_JUDGE_HARM times the reference on a
 *                run of GPUMEM_JUDGE_LONG_S or more.
 */
#ifndef GPUMEM_JUDGE_H
#define GPUMEM_JUDGE_H
#include <stddef.h>
#include <stdint.h>
#include "core_record.h"

struct gpumem_advice_table;     /* advise.h */

#define GPUMEM_JUDGE_TICK_S 1           /* sacct's whole seconds */
#define GPUMEM_JUDGE_MIN_SAMPLES 10
#define GPUMEM_JUDGE_MIN_WORK_S 5
#define GPUMEM_JUDGE_MARGIN 0.05
#define GPUMEM_JUDGE_MAX_REFS 5
#define GPUMEM_JUDGE_BUSY_BAND 4.0
#define GPUMEM_JUDGE_LONG_S 300
#define GPUMEM_JUDGE_HARM 1.5

/* One run of a name, as accounting and its records say. */
struct gpumem_judge_run {
	long long id;
	int completed;          /* State COMPLETED: every step exited 0 */
	long work_s;            /* .batch step's elapsed, else the longest step's; -1: none */
	long job_s;             /* the job's ElapsedRaw (prolog included) */
	int profiled;           /* a profile that ran */
	double samples;         /* the fewest samples of a used GPU */
	int ngpus, nused;
	char model[GPUMEM_PROF_MODEL_CHARS * 4 + 1];    /* "" unknown (version 1 records) */
	double busy_s;          /* GPU-busy seconds: sampled seconds x SM busy, summed */
	int symptom;            /* the advised rule still matches a used GPU */
	uint64_t cmd;           /* the job's command: hash of WorkDir and SubmitLine; 0 unknown */
};

enum gpumem_judge_result {
	GPUMEM_J_NOT_JUDGED, GPUMEM_J_GAINED, GPUMEM_J_EVEN, GPUMEM_J_LOSS, GPUMEM_J_HARM,
};

struct gpumem_judgement {
	enum gpumem_judge_result result;
	int nrefs;
	double ref_s, floor_s, ratio;   /* ratio: reference / run; 0 when none */
	double busy_ratio;              /* run's GPU-busy seconds / the reference's; 0: none */
	double own_s, ref_own_s;        /* gpumem's own time (job - work), run and reference */
	char why[240];                  /* the figures, or why not judged */
};

/*
 * Does RULE of table T (NULL: the built-in one) promise the job a gain
 * (judged on symptom and time)?  The rule's own promise (advise.h), the
 * one that advised.by_default reads too.  Else: no speed-up promised.
 */
int gpumem_judge_gain_rule(const struct gpumem_advice_table *t, const char *rule);
/*
 * Judge advised run K for RULE of table T (NULL: the built-in one)
 * against CANDS (the name's runs under the site's defaults older than K,
 * newest first, NCANDS of them): the first GPUMEM_JUDGE_MAX_REFS
 * comparable ones are the reference.
 */
void gpumem_judge(const struct gpumem_judge_run *k, const struct gpumem_judge_run *const *cands,
		  size_t ncands, const struct gpumem_advice_table *t, const char *rule,
		  struct gpumem_judgement *out);
/* "gained", "even", "slower", "still", "failed", "not judged": --json's outcome. */
const char *gpumem_judge_outcome(const struct gpumem_judgement *j, const struct gpumem_judge_run *k);
#endif

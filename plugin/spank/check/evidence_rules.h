/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The pure rules of reuse that rests on evidence (evidence_rules.c; the
 * hooks' side is evidence.c): a GPU's last measured pass as root keeps it
 * in state_dir/gpus/pass.NODE.GPU, what it was measured at, whether it
 * answers a check, whether a check may clear the GPU's marks, and how a
 * job's profile row counts against a low-HBM mark.  No Slurm, no state:
 * tests/unit/test_evidence_rules.c tests them whole.
 */
#ifndef GPUMEM_EVIDENCE_RULES_H
#define GPUMEM_EVIDENCE_RULES_H
#include <stddef.h>
#include "core_policy.h"
#include "core_record.h"

/* Longest evidence string kept (gpumem-health's is about 330 characters). */
#define GPUMEM_EVIDENCE_MAX 700
/* A digest of the site's references: 16 hex digits. */
#define GPUMEM_PASS_REFS_LEN 17

/* A profile whose DRAM p95 reached this (% of peak) shows the GPU is not slow. */
#define GPUMEM_EVIDENCE_HBM_OK_PCT 90.0
/*
 * HBM-bound yet low: DRAM the busier unit (mean at least the SM mean), a
 * mean of at least BOUND_PCT, flat (mean at least FLAT of p95: the job sat
 * at a ceiling), and that ceiling (p95) below LOW_PCT of the GPU's peak.
 */
#define GPUMEM_EVIDENCE_HBM_BOUND_PCT 40.0
#define GPUMEM_EVIDENCE_HBM_LOW_PCT 70.0
#define GPUMEM_EVIDENCE_HBM_FLAT 0.85
#define GPUMEM_EVIDENCE_HBM_SAMPLES 3
/* The one DRAM source that measures bandwidth (gpumem-sample's metric source). */
#define GPUMEM_EVIDENCE_DRAM_SOURCE "gpm"

/*
 * A measured pass, as kept:
 *   JOB PHASE EPOCH_SECONDS
 *   EVIDENCE (gpumem-health's string for the GPU, read before the check)
 *   judged min_fraction=F references=HEX16
 * The third line is what the check judged the GPU against: the
 * check.bandwidth.min_fraction it was run at and a digest of the site's
 * references it was given.  A pass without it (an older gpumem's) says
 * nothing of its threshold: it answers no check (JUDGED 0).
 */
struct gpumem_pass {
	long long job;
	char phase[8];
	long long sec;
	char evidence[GPUMEM_EVIDENCE_MAX];
	int judged;                     /* the third line was there and valid */
	double min_fraction;            /* 0..1 */
	char refs[GPUMEM_PASS_REFS_LEN];
};

/* TEXT (a pass file's) into *P: 0, or -1 when it holds no pass. */
int gpumem_pass_parse(const char *text, struct gpumem_pass *p);
/* *P as its file's text into BUF: 0, or -1 when it does not fit. */
int gpumem_pass_format(const struct gpumem_pass *p, char *buf, size_t len);
/*
 * The digest of the references site S gives the check (every model, each
 * figure), 16 hex digits into OUT; S NULL: no references.
 */
void gpumem_pass_refs(const struct gpumem_site *s, char out[GPUMEM_PASS_REFS_LEN]);
/*
 * Does pass P answer a check asking min_fraction ASKED against the
 * references of digest REFS?  Only when P says what it was measured at,
 * at a min_fraction of at least ASKED, against the same references.  1,
 * or 0 with why ("job 5's pass was measured at min_fraction 0.2, this
 * check asks 0.85").
 */
int gpumem_pass_answers(const struct gpumem_pass *p, double asked, const char *refs, char *why,
			size_t len);
/*
 * May a check run at min_fraction ASKED clear a GPU's marks (suspect,
 * low HBM, a drain)?  Only one at least as strict as the site's default
 * (SITE_DEFAULT, defaults.check.bandwidth.min_fraction).
 */
int gpumem_pass_strict(double asked, double site_default);
/*
 * The same for the job's effective policy EFF under site S (NULL: no
 * site file, the built-in default applies).
 */
int gpumem_check_strict(const struct gpumem_policy *eff, const struct gpumem_site *s);
/*
 * A job's profile row G against a low-HBM mark, DRAM_SOURCE the source of
 * its DRAM figure (metrics.dram_bw_util.source; NULL: unknown): 1 low
 * (HBM-bound at a low ceiling: mark the GPU), -1 not slow (the figure
 * reached GPUMEM_EVIDENCE_HBM_OK_PCT of peak: clear the mark), 0 neither.
 * Only GPM's DRAM bandwidth counts upward: NVML's memory utilization
 * (GPUs without GPM) is the share of time memory was busy, not of its
 * bandwidth, and never clears a mark.
 */
int gpumem_hbm_class(const struct gpumem_prof_gpu *g, const char *dram_source);
#endif

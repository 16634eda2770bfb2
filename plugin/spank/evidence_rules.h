/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The pure rules of reuse that rests on evidence (evidence_rules.c; the
 * hooks' side is evidence.c): a GPU's last measured pass as root keeps it
 * in state_dir/gpus/pass.NODE.GPU, and how a job's profile row counts
 * against a low-HBM mark.  No Slurm, no state:
 * tests/unit/test_evidence_rules.c tests them whole.
 */
#ifndef GPUMEM_EVIDENCE_RULES_H
#define GPUMEM_EVIDENCE_RULES_H
#include <stddef.h>
#include "policy.h"
#include "profile.h"

/* Longest evidence string kept (gpumem-health's is about 330 characters). */
#define GPUMEM_EVIDENCE_MAX 700

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

/*
 * A measured pass, as kept:
 *   JOB PHASE EPOCH_SECONDS
 *   EVIDENCE (gpumem-health's string for the GPU, read before the check)
 */
struct gpumem_pass {
	long long job;
	char phase[8];
	long long sec;
	char evidence[GPUMEM_EVIDENCE_MAX];
};

/* TEXT (a pass file's) into *P: 0, or -1 when it holds no pass. */
int gpumem_pass_parse(const char *text, struct gpumem_pass *p);
/*
 * A job's profile row G against a low-HBM mark: 1 low (HBM-bound at a
 * low ceiling: mark the GPU), -1 not slow (the figure reached
 * GPUMEM_EVIDENCE_HBM_OK_PCT of peak: clear the mark), 0 neither.
 */
int gpumem_hbm_class(const struct gpumem_prof_gpu *g);
#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reuse that rests on evidence (evidence.c; doc/admin/checks.md, "Reuse: a check
 * that rests on evidence"): whether a job's check must measure the GPUs'
 * bandwidth, or may rest on the GPUs' last measured pass, and what it rests
 * on, for the report.  The state it keeps per GPU lives in root's
 * state_dir/gpus/ beside gpustate.c's marks (statefiles.h names them);
 * the rules it applies, and the pass's record, are evidence_rules.h's.
 * Each takes the check's contract (check_ctx.h).
 */
#ifndef GPUMEM_EVIDENCE_H
#define GPUMEM_EVIDENCE_H
#include "check_ctx.h"
#include "evidence_rules.h"
#include "jobcheck.h"

struct gpumem_evidence {
	int limit_min;          /* check.min_interval; 0: every check measured, nothing read */
	int have;               /* gpumem-health answered for every GPU of the job */
	char now[GPUMEM_MAX_GPUS][GPUMEM_EVIDENCE_MAX];
	char basis[320];        /* what the check rests on, for the report */
	long long pass_job;     /* reused: the pass's job, its phase, its age */
	char pass_phase[8];
	long pass_age_s;
	int node_free;          /* gpumem-health: no process holds any GPU of the node */
	char node_why[160];     /* its words, and who read NVML */
	int warm;               /* the health came from the warm check server */
	double asked;           /* the check's check.bandwidth.min_fraction */
	char refs[GPUMEM_PASS_REFS_LEN];        /* the site's references it is judged against */
};

/*
 * Before a check of the job's GPUs (PHASE before/after; FORCED: a suspect
 * GPU): read their NVML health (gpumem-health, as the site's check_user)
 * and decide.  1: the check may rest on the GPUs' last measured pass
 * (EV->basis "reused: ..."); 0: it must measure (EV->basis "measured: why").
 */
int gpumem_evidence_decide(const struct gpumem_check_ctx *c, const char *phase, int forced,
			   struct gpumem_evidence *ev);
/* R (status "reused", no check run) rests on EV: verdict "pass", its basis and pass. */
void gpumem_evidence_reused(const struct gpumem_evidence *ev, struct gpumem_checkrun *r);
/*
 * After a measured check R: when it passed on every GPU of the job, each
 * keeps this pass with the health read before it (EV); any other outcome
 * forgets them all (the check numbers the GPUs in CUDA's order, which need
 * not be Slurm's); R's basis is set.
 */
void gpumem_evidence_record(const struct gpumem_check_ctx *c, const struct gpumem_evidence *ev,
			    struct gpumem_checkrun *r);
/*
 * The job epilog, with the job's profile (the report's "profile" member):
 * a GPU that streamed at a low ceiling gets the "hbmlow" mark (its next
 * check is measured); one whose GPM DRAM bandwidth reached
 * GPUMEM_EVIDENCE_HBM_OK_PCT loses it (gpumem_hbm_class).
 */
void gpumem_evidence_profile(const struct gpumem_check_ctx *c, const char *profile);
#endif

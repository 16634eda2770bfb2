/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Root's memory of the job's GPUs on this node between jobs (gpustate.c):
 * state_dir/gpus/, one file per mark, GPU and node; the suspect mark is
 * kept here, the pass and low-HBM marks by evidence.c through the same
 * directory and names.  Each takes the check's contract (check_ctx.h).
 */
#ifndef GPUMEM_GPUSTATE_H
#define GPUMEM_GPUSTATE_H
#include <stddef.h>
#include "check_ctx.h"
#include "jobcheck.h"

/*
 * Is one of the job's GPUs suspect (an earlier check of it gave no
 * verdict)?  1 and the mark's text ("JOB.HOOK PHASE KIND REASON", escaped)
 * in WHAT, or 0.
 */
int gpumem_suspect_find(const struct gpumem_check_ctx *c, char *what, size_t len);
/*
 * After check R ran on the job's GPUs: a pass or warn at least as strict
 * as the site's default clears their marks; no verdict
 * (gpumem_jobcheck_no_verdict) marks them, and drains the node when they
 * were marked already (doc/admin/checks.md, "A check that gives no
 * verdict"), setting r->drained.  NODE: the GPUs' UUIDs, for the drain.
 */
void gpumem_suspect_update(const struct gpumem_check_ctx *c, const struct gpumem_node *node,
			   struct gpumem_checkrun *r);
/* state_dir/gpus opened (made root's and 0700); an fd, or -1 with WHY. */
int gpumem_gpudir_open(const struct gpumem_check_ctx *c, char *why, size_t wlen);
/* The name KIND.NODE.GPU of the job's GPU J (J < 0: "all") in that directory. */
void gpumem_gpu_name(const struct gpumem_check_ctx *c, const char *kind, int j, char *buf,
		     size_t len);
#endif

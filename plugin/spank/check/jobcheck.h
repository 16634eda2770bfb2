/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The GPU check of a job (prolog and epilog): run it (jobcheck.c), and
 * what a check's outcome is (struct gpumem_checkrun, which the reuse, the
 * GPUs' marks and the report read).  It takes the check's contract
 * (check_ctx.h), never the job's whole context.
 */
#ifndef GPUMEM_JOBCHECK_H
#define GPUMEM_JOBCHECK_H
#include "check_ctx.h"

struct json_object;

struct gpumem_checkrun {
	int done;               /* a result is here to report */
	char phase[8];          /* before | after */
	char time[32];          /* ISO 8601 UTC, start */
	char status[16];        /* ran | reused | skipped | not_run | timed_out | failed */
	char verdict[16];       /* pass | warn | fail | unusable | skipped | error */
	char reason[512];
	int exit_code;          /* of gpumem-check, -1 when it did not run */
	char *json;             /* its gpumem-check/1 document, or NULL */
	struct json_object *doc; /* the same, parsed once (read_result), or NULL */
	char figures[512];      /* "gpu0 read 3010 copy 2750 ... GB/s" for the log */
	int drained;
	int cut;                /* stopped at the hook's time limit, not by its own timeout */
	char basis[320];        /* what the verdict rests on: "measured: ..." or "reused: ..." (evidence.h) */
	long long pass_job;     /* reused: the measured pass's job, phase, age */
	char pass_phase[8];
	long pass_age_s;
	char ran_by[320];       /* "one-shot", "warm server pid N" (checkserve.c), or why not */
	int broken;             /* a warm server was asked and gave no whole reply */
	int node_free;          /* reused: gpumem-health saw no process on any GPU of the node */
	char node_why[160];
};

/*
 * Run gpumem-check for check context C (the job prolog's or epilog's) as
 * the site's check_user on the job's bare GPUs (bounded by the site
 * timeout); asked of the node's warm server first where the site runs one
 * (checkserve.h); skipped on a node without GPU device; never when
 * check_user is the job's user (not_run); L2_RESET: it also resets the
 * persisting L2 at its end (--l2-reset).
 */
void gpumem_jobcheck_run(const struct gpumem_check_ctx *c, const char *phase, int l2_reset,
			 struct gpumem_checkrun *r);
/*
 * The node's index of the check's device IDX (numbered from 0): entry IDX of
 * GPUS (the job's list, as in SLURM_STEP_GPUS), else IDX itself; OUT holds it.
 */
const char *gpumem_jobcheck_node_index(const char *gpus, const char *idx, char *out, size_t len);
/* Did the check reset the persisting L2 of every GPU it checked (--l2-reset)? */
int gpumem_jobcheck_l2_reset_done(const struct gpumem_checkrun *r);
/*
 * A check that gave no verdict of its own (killed, crashed, timed out,
 * could not run, printed no valid report): why, for the steps' message
 * ("did not finish (counted as failed)"...), or NULL when it gave one.
 */
const char *gpumem_jobcheck_no_verdict(const struct gpumem_checkrun *r);
void gpumem_jobcheck_free(struct gpumem_checkrun *r);
#endif

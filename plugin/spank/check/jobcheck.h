/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The GPU check of a job (prolog and epilog): run it (jobcheck.c); its
 * report, the drain on failure, and the report of a job's profile alone
 * are jobreport.c's.  Both take the job's state (jobctx.h).
 */
#ifndef GPUMEM_JOBCHECK_H
#define GPUMEM_JOBCHECK_H
#include <sys/types.h>
#include "plugin.h"

struct gpumem_jobinfo {
	uint32_t job;
	char step[32];          /* "prolog", "epilog": the hook that ran the check */
	char node[64];          /* SLURMD_NODENAME */
	char user[64];
	uid_t uid;
	gid_t gid;
	char policy[256];
	char gpus[256];         /* the job's GPUs on the node as Slurm gave them */
};

struct json_object;
struct gpumem_jobctx;

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
 * Run gpumem-check for the job prolog/epilog of C as the site's check_user
 * on the job's bare GPUs (bounded by the site timeout); skipped on a node
 * without GPU device; never when check_user is the job's user (not_run);
 * L2_RESET: it also resets the persisting L2 at its end (--l2-reset).
 */
/*
 * checkserve.c: the check asked of the node's warm server (site check.warm
 * above 0, the job's GPUs plain indices).  1: served, P's status and out
 * as a finished one-shot check's, VIA "warm server pid N"; 0: no server
 * (logged): run the one-shot check; -1: asked, no whole reply (VIA: why):
 * a check that did not finish.
 */
struct gpumem_proc;
int gpumem_checkserve_run(const struct gpumem_jobctx *c, int timeout, int l2_reset,
			  struct gpumem_proc *p, char *via, size_t vlen);
/*
 * The gpumem-health/1 document of the job's GPUs asked of the node's warm
 * server (check.warm above 0): 1, *DOC (malloc'd) and *CODE (gpumem-health's
 * exit), the log naming the server's pid; 0: none (logged, *DOC NULL): run
 * gpumem-health.
 */
int gpumem_checkserve_health(const struct gpumem_jobctx *c, char **doc, int *code);
/* When gpumem drains the node: stop its warm server (SIGTERM, after the check in hand). */
void gpumem_checkserve_stop(const struct gpumem_jobctx *c);
void gpumem_jobcheck_run(const struct gpumem_jobctx *c, const char *phase, int l2_reset,
			 struct gpumem_checkrun *r);
/*
 * The node's index of the check's device IDX (numbered from 0): entry IDX of
 * GPUS (the job's list, as in SLURM_STEP_GPUS), else IDX itself; OUT holds it.
 */
const char *gpumem_jobcheck_node_index(const char *gpus, const char *idx, char *out, size_t len);
/* Did the check reset the persisting L2 of every GPU it checked (--l2-reset)? */
int gpumem_jobcheck_l2_reset_done(const struct gpumem_checkrun *r);
/*
 * jobreport.c, as root, as soon as the check ends: write the report
 * atomically, the node_exporter textfile, one summary line in the slurmd
 * log, and drain the node when the check failed and both the policy and
 * the site ask for it.
 */
void gpumem_jobreport_check(const struct gpumem_jobctx *c, struct gpumem_checkrun *r);
/*
 * jobreport.c, the epilog of a job with no after-check that took a
 * profile: a report of phase "job" carrying c->profile, no check in it
 * (status and verdict "not_run", check null).
 */
void gpumem_jobreport_profile(const struct gpumem_jobctx *c);
/*
 * A check that gave no verdict of its own (killed, crashed, timed out,
 * could not run, printed no valid report): why, for the steps' message
 * ("did not finish (counted as failed)"...), or NULL when it gave one.
 */
const char *gpumem_jobcheck_no_verdict(const struct gpumem_checkrun *r);
void gpumem_jobcheck_free(struct gpumem_checkrun *r);
#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --gpumem-policy=advised: which policy a job gets from its
 * name's history in Slurm's accounting, and whether the advice paid.
 * Pure functions over one sacct answer (the caller runs sacct as the user:
 * gpumem_advised_argv): the rows of the user's jobs of one name, each
 * job's records decoded and checked by the accounting record's own reader
 * (acct.h), advice per GPU from advise.h.  The rules, written once here and
 * in doc/admin/profile.md ("Advised"):
 *
 *   which GPU wins  among the GPUs of every node of a job that were used
 *                   (rule not unsampled, short or idle), the rule earliest
 *                   in the advice table in force (the site's advice:, else
 *                   the built-in one: faulting, link-bound, hbm-bound,
 *                   underused, compute-bound); idle GPUs win only where no GPU
 *                   was used; ties: the first node, then the lowest GPU.
 *                   A job whose GPUs were all idle gets no policy: its own
 *                   per-job MPS daemon shares the GPU with no other job, so
 *                   mps-half.yaml cannot gain it anything (and was seen to
 *                   slow an idle-looking program); the line says to ask
 *                   for fewer GPUs.
 *   the judge       each advised run K is judged on its work (its .batch
 *                   step's time, from the step rows sacct gives with the
 *                   job's) against the name's runs under the site's
 *                   defaults before it (judge.h); the policy's standing
 *                   for the name (kept, probation, dropped) follows from
 *                   the verdicts (advised_loop.h).
 *
 * An advised job's source (job A, RULE, POLICY) travels as fields
 * (advsrc.h): forwarded by srun, kept in the record's "adv"; the label
 * "POLICY (advised from job A: RULE)" is made from them for people and
 * read back only from version 1 records, which have no "adv".
 */
#ifndef GPUMEM_ADVICE_HISTORY_H
#define GPUMEM_ADVICE_HISTORY_H
#include <stddef.h>
#include "judge.h"

struct gpumem_advice_table;     /* advise.h */

#define GPUMEM_ADVISED "advised"        /* the option's value, reserved as a policy name */
#define GPUMEM_ADVISED_MAX_JOBS 512     /* rows looked at, newest first */
#define GPUMEM_ADVISED_SACCT_CAP (8 * 1024 * 1024)

struct gpumem_advised_job {
	long long id;
	long elapsed;                   /* seconds (sacct ElapsedRaw: the prolog included) */
	int completed;                  /* State COMPLETED */
	int profiled;                   /* a GPU with a rule beyond unsampled/short */
	char node[72];                  /* of the winning GPU */
	long gpu;
	char rule[32];                  /* the winning advice */
	char policy[72];                /* "" : none */
	char reason[400];
	int ngpus, nused, nrecords, nrefused;
	/* It ran advised: */
	int advised;
	long long from;
	char from_rule[32], from_policy[72];
	int still;                      /* from_rule (faulting) still matches a used GPU */
	int dflt;                       /* it ran under the site's defaults */
	long batch_s, step_s;           /* the .batch step's elapsed, the longest other step's; -1 */
	struct gpumem_judge_run jr;     /* what the judge reads (judge.h) */
	int unasked;                    /* it asked for nothing: advised.by_default */
};

enum gpumem_verdict { GPUMEM_V_UNKNOWN = 0, GPUMEM_V_KEPT, GPUMEM_V_DROPPED, GPUMEM_V_PROBATION };

struct gpumem_advised_history {
	const struct gpumem_advised_job *job, *from;    /* from: NULL when out of the window */
	enum gpumem_verdict verdict;
	double ratio;                   /* the reference's work time / job's; 0: not judged */
	const char *outcome;            /* gpumem_judge_outcome: "gained", "even", "slower",
					 * "still", "failed", "not judged" */
	struct gpumem_judgement j;
	char text[600];                 /* "zerocopy.yaml tried in job 1240 ...: kept" */
};

struct gpumem_advised {
	const struct gpumem_advice_table *rules; /* the advice table the records are read with */
	struct gpumem_advised_job *jobs;        /* newest first */
	size_t njobs;
	struct gpumem_advised_history *hist;    /* one per advised job, newest first */
	size_t nhist;
	/* The choice (gpumem_advised_choose): */
	char policy[72];                /* "" : the site's defaults */
	char fwd_name[256];             /* the label "POLICY (advised from job A: RULE)" */
	char src_json[400];             /* the advised source's fields, forwarded (advsrc.h) */
	long long from;                 /* A */
	char rule[32];                  /* RULE */
	char standing[16];              /* "new", "kept", "probation" */
	char line[1400];                /* the one line for the user, raw (escape it) */
};

/*
 * sacct's arguments (NULL-terminated, pointing into BUF) for the user USER's
 * (a name or a uid) jobs named NAME in the last DAYS days: JobIDRaw|
 * ElapsedRaw|State|JobName|AdminComment, a line per job and per step; with
 * --name=NAME,allocation where sacct matches NAME exactly (printable ASCII,
 * no comma, quote or backslash), else all of the user's jobs of the window
 * (matched by gpumem_advised_read).  "allocation": Slurm's database names
 * a job so when a step's start reached it before the job's (seen with
 * 22.05 on a loaded host); such a job is NAME's when a step of it is named
 * NAME.  -1 when NAME cannot be looked up (empty, a line
 * break, over 200 bytes), with the reason in WHY.
 */
int gpumem_advised_argv(const char *name, const char *user, int days, char *buf, size_t blen,
			char **argv, size_t nargv, char *why, size_t wlen);
/*
 * OUT from sacct's answer TEXT (modified): rows whose JobName is NAME
 * exactly, their records decoded (acct.h; a record refused is counted and
 * skipped), newest first, the history judged.  0, or -1 out of memory.
 */
int gpumem_advised_read(char *text, const char *name, const struct gpumem_advice_table *rules,
			struct gpumem_advised *out);
/* A's job ID, or NULL when it is not in the window. */
const struct gpumem_advised_job *gpumem_advised_find(const struct gpumem_advised *a, long long id);
void gpumem_advised_free(struct gpumem_advised *a);
#include "advised_loop.h"    /* the loop's verdicts and the choice */
#endif

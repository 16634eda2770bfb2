/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the parts of gpumem-acct share (doc/admin/reports.md, "Accounting"): the
 * options, one node's record, the log line, and the two ways a record
 * reaches the job's AdminComment: dbd.c (sacct/sacctmgr, addressing exactly
 * one job record: a plain job, one array task, one het component) and
 * spool.c (the spool the nodes leave their records in, the controller's
 * merge, late records and reaping).
 */
#ifndef GPUMEM_ACCTCMD_H
#define GPUMEM_ACCTCMD_H

#define GPUMEM_ACCT_TIMEOUT_S 30
#define GPUMEM_ACCT_ATTEMPTS 6
#define GPUMEM_ACCT_MAX_NODES 4096

/* One node's record: its node and its segment "{~...~}". */
struct rec {
	char *node, *seg;
};

struct opts {
	const char *site, *dir, *node, *spool, *nodes;
	/*
	 * JOB is the job's own id (SLURM_JOB_ID: an array task's, a het
	 * component's); JOBSPEC what selects exactly its record in sacct and
	 * sacctmgr ("12", "10_3", "20+1"), "" until known (dbd.c finds it).
	 */
	long long job;
	char jobspec[64];
	int ctld;               /* the slurmctld mode (EpilogSlurmctld) */
	int sweep;              /* the sweep mode: only late records and reaping */
	int wait_s, reap_s;
};

/* "gpumem: acct: job JOB on NODE: ..." on stderr, and in syslog. */
void gpumem_acct_say(const struct opts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void gpumem_acct_pause_ms(long ms);

/* dbd.c: merge the N records of R into the job's AdminComment, at most ATTEMPTS passes; 0 or -1. */
int gpumem_acct_store(struct opts *o, const struct rec *r, int n, int attempts);
/* Is SPEC what sacct calls a job: "12", "10_3" or "20+1"? */
int gpumem_acct_spec_ok(const char *spec);

/* spool.c */
int gpumem_acct_spool_put(const struct opts *o, const char *seg);
int gpumem_acct_ctld(struct opts *o);
/* Late records of other jobs merged, old ones reaped (the controller, after its job). */
void gpumem_acct_sweep(const struct opts *o);

#endif

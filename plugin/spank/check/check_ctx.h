/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The node check's contract: everything a check of a job's GPUs needs, and
 * nothing else of the hook that asks for it.  The job context builds it
 * once (jobctx.c, when the job's policy is settled: decided by the job
 * prolog, recalled by the epilog) and hands it to the check's files, which
 * take only this: jobcheck.c (run gpumem-check), evidence.c (may the check
 * rest on a pass?), gpustate.c (the GPUs' marks), checkserve.c and
 * checkwatch.c (the warm server), jobreport.c (report, textfiles, drain).
 * It holds values, and pointers into the job context that outlive every
 * check; no Slurm call is needed to make one.
 */
#ifndef GPUMEM_CHECK_CTX_H
#define GPUMEM_CHECK_CTX_H
#include <stdint.h>
#include <sys/types.h>
#include "evidence_rules.h"
#include "core_policy.h"

struct gpumem_check_ctx {
	struct gpumem_check_job {
		uint32_t id;
		uid_t uid;
		gid_t gid;
		char user[64];
		char hook[32];          /* "prolog", "epilog": the hook that runs the check */
		char policy[256];       /* the policy's name for logs and reports: escaped */
		const struct gpumem_policy *eff; /* the effective policy, for the report; NULL: none */
	} job;
	struct gpumem_check_node {
		char name[64];          /* SLURMD_NODENAME, else the host's name */
		int has_dev;            /* an NVIDIA device is here */
		const char *nvidia_dev; /* plugstack nvidia_dev: its nvidiaN neighbours count GPUs */
	} node;
	struct gpumem_check_gpus {
		char list[GPUMEM_MAX_GPUS][64]; /* the job's GPUs on this node (physical) */
		int n;                  /* -1: every GPU of the node (plugstack gpus=all) */
		char text[256];         /* the list as Slurm gave it, comma-separated ("" all) */
	} gpus;
	/* Who runs the check's programs: the site's check_user, never root, never the job's user. */
	struct gpumem_check_as {
		const char *check;      /* gpumem-check */
		const char *libexecdir; /* gpumem-health */
		uid_t uid;
		gid_t gid;
		const char *missing;    /* why check_user cannot be used, or NULL */
		const char *nomps;      /* their MPS pipe directory: root's empty one, never NULL */
	} as;
	/* The check asked: the site's settings (as the job's record holds them) and the job's. */
	struct gpumem_check_want {
		const char *site_text;  /* the site file's text for gpumem-check --site -; NULL: none */
		int timeout_s;          /* check.timeout, else plugstack timeout= */
		int min_interval_min;   /* check.min_interval; 0: every check measured */
		int warm_s;             /* check.warm; 0: no warm server */
		int warm_min_gpus;      /* check.warm_min_gpus: fewer GPUs here, no warm server */
		char refs[GPUMEM_PASS_REFS_LEN]; /* digest of the site's references (gpumem_pass_refs) */
		double min_fraction;    /* the job's check.bandwidth.min_fraction */
		int strict;             /* at least as strict as the site's default (gpumem_check_strict) */
		int l2_ab;              /* check.l2_ab */
		int on_fail;            /* GPUMEM_ONFAIL_* */
		char l2_setaside[16];   /* the job's set-aside for the L2 A/B: "50%", bytes, or "" */
	} check;
	struct gpumem_check_drain {
		int enabled;            /* the site's drain.enabled */
		const char *reason;     /* drain.reason, or NULL */
	} drain;
	struct gpumem_check_report {
		const char *dir;        /* report.dir, or NULL */
		const char *textfile_dir; /* report.textfile_dir, or NULL */
	} report;
	struct gpumem_check_state {
		int dfd;                /* root's state_dir, or -1 */
		const char *dir;        /* its path, for messages and the warm server's socket */
	} state;
};
#endif

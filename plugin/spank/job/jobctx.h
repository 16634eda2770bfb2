/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the job prolog and the job epilog share (jobctx.c): their whole
 * state, one struct gpumem_jobctx made by each and passed down (of the
 * process-wide gpumem_plugin they use only the plugstack arguments): the
 * job, its user, its GPUs on this node, root's state directory, and the
 * job's one agreed policy (statedir.h's record: the effective policy,
 * decided once by the prolog, and the site file as it read it).
 */
#ifndef GPUMEM_JOBCTX_H
#define GPUMEM_JOBCTX_H
#include <time.h>
#include "core_policy.h"
#include "check_ctx.h"
#include "jobcheck.h"
#include "plugin.h"
#include "statedir.h"

/* The job as the hooks see it, for logs, the steps' messages and the check's contract. */
struct gpumem_jobinfo {
	uint32_t job;
	char step[32];          /* "prolog", "epilog": the hook */
	char node[64];          /* SLURMD_NODENAME */
	char user[64];
	uid_t uid;
	gid_t gid;
	char policy[256];
	char gpus[256];         /* the job's GPUs on the node as Slurm gave them */
};

struct gpumem_jobctx {
	const struct gpumem_args *args; /* the plugstack arguments (gpumem_plugin.args) */
	int has_dev;                    /* this node has an NVIDIA device */
	struct gpumem_site site;        /* prolog: the site file; epilog: as the record holds it */
	int have_site;
	char *site_text;                /* its text: the prolog's, for the record; the epilog's
					 * from the record, for gpumem-check --site - */
	char *site_error;               /* prolog: the site file is unusable (every step fails) */
	struct gpumem_policy eff;       /* the job's effective policy */
	int have_eff;
	char *nomps;                    /* root's empty mps_dir/nomps: helpers' MPS pipe directory */
	char *profile;                  /* epilog: the report's "profile" member (sampler.h), or NULL */
	uint32_t job;
	uid_t uid;
	gid_t gid;
	char policy[256];               /* the policy's name for logs and reports: escaped */
	char list[GPUMEM_MAX_GPUS][64]; /* the job's GPUs on this node (physical) */
	int ngpus;                      /* -1: every GPU of the node (plugstack gpus=all) */
	int dfd;                        /* state_dir, or -1 */
	char dir_err[512];              /* why dfd is -1 */
	struct gpumem_jobrec rec;       /* the job's record (prolog: being made) */
	struct gpumem_jobinfo ji;
	struct gpumem_check_ctx check;  /* what the node check takes (check_ctx.h): made once
					 * the policy is settled (decide, recall) */
};

/*
 * The plugin's setup (setup.c, which Slurm does not call in this context),
 * the job, its user and GPUs, the state directory (made when CREATE).
 * -1 only when the plugstack arguments are wrong (logged).
 */
int gpumem_jobctx_init(spank_t sp, int ac, char **av, const char *step, int create,
		       struct gpumem_jobctx *c);
/*
 * The job's policy as the prolog decides it, once: the user's, resolved
 * and validated (jobpolicy.c), over the site's defaults, clamped to its
 * limits; a policy that is refused is recorded with the reason and the
 * site's defaults apply in full.  Fills c->rec (the effective policy and
 * the site file's text, gpumem_jobpolicy_record) and c->eff.
 * -1 when not even the site's defaults can apply (the site file is
 * unusable: c->rec.rejected says so).  Either way c->check is made.
 */
int gpumem_jobctx_decide(spank_t sp, struct gpumem_jobctx *c);
/*
 * The job's policy as the epilog finds it: the prolog's record, with the
 * site file as the prolog read it (c->site, c->site_text), never
 * the file.  -1 when there is no record (logged: cleanup only) or it holds
 * no policy; c->check is made either way (a profile is still reported).
 */
int gpumem_jobctx_recall(spank_t sp, struct gpumem_jobctx *c);
void gpumem_jobctx_free(struct gpumem_jobctx *c);
/*
 * node->gpus for the job's GPUs from the probe cache; on a miss, when
 * MAY_PROBE, run gpumem-probe once and cache it.  1 when all were found.
 */
int gpumem_jobctx_gpus(struct gpumem_jobctx *c, struct gpumem_node *node, int may_probe);
/*
 * The persisting-L2 limit, percent of L2, the job's tasks get on NODE
 * under its effective policy (gpumem_policy_env, as the steps set it); -1
 * none.
 */
int gpumem_jobctx_l2_pct(const struct gpumem_jobctx *c, const struct gpumem_node *node);
/* The job has GPUs here to act on (a list, or every GPU with gpus=all). */
int gpumem_jobctx_has_gpus(const struct gpumem_jobctx *c);
/*
 * Run one check of the job through its contract c->check (it may rest on
 * the GPUs' last measured pass where the evidence allows, evidence.h,
 * never when FORCED: a GPU is suspect), keep what it says of the GPUs
 * (gpustate.h, evidence.h), report it with the job's profile (jobreport.h);
 * with L2_RESET the check also resets the persisting L2
 * (gpumem_jobcheck_run).
 */
void gpumem_perjob_check(struct gpumem_jobctx *c, const struct gpumem_node *node,
			 const char *phase, int forced, int l2_reset, struct gpumem_checkrun *r);
/* Make fds 0-2 open (on /dev/null): Slurm may start these hooks with them closed. */
void gpumem_stdio_open(void);
#endif

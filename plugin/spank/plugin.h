/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem.so: what the plugin keeps in each process it runs in (struct
 * gpumem_plugin, one copy per process: the plugstack arguments, parsed in
 * every process, slurmd's init included, and what srun and a step's
 * slurmstepd keep between Slurm's calls), and the entry points of each
 * process, one file each:
 *
 *   srun.c                  srun, sbatch, salloc (local and allocator contexts, as the user)
 *   step/slurmstepd.c       a job step's slurmstepd (remote context): the tasks' environment
 *   step/slurmstepd_exit.c  the same process when the step's tasks have ended
 *   job/job_prolog.c        "slurmstepd spank prolog" (job_script context, root), once per job and node
 *   job/job_epilog.c        "slurmstepd spank epilog" (the same), once per job and node
 *
 * dispatch.c routes Slurm's callbacks to them; setup.c is the one setup and
 * teardown they share.  The job prolog and epilog, each one call of
 * Slurm's, keep their state in their own struct gpumem_jobctx (jobctx.h),
 * passed down; of this struct they use only the arguments.  The lifecycle is told once, in doc/admin/lifecycle.md
 * ("Per job, not per step").
 */
#ifndef GPUMEM_PLUGIN_H
#define GPUMEM_PLUGIN_H
#include <stdint.h>
#include "compat.h"
#include "args.h"
#include "core_policy.h"
#include "mps.h"

#define GPUMEM_OPT_POLICY "gpumem-policy"
/* The names under which srun/sbatch/salloc forward the policy: env.h's GPUMEM_FWD_*. */

struct gpumem_plugin {
	struct gpumem_args args;        /* the plugstack arguments, in every process */
	int has_dev;                    /* this node has an NVIDIA device (args.nvidia_dev) */
	/* srun/sbatch/salloc and a step's slurmstepd */
	struct gpumem_site site;        /* srun side: the site file; a step: as the job's record
					 * holds it */
	int have_site;
	char *opt_policy;       /* --gpumem-policy, as typed (srun side) */
	struct gpumem_policy eff; /* the step's effective policy */
	int have_eff;
	/* slurmstepd */
	char *deferred_error;   /* reported from task_init: user_init cannot fail srun */
	char *user_notes;       /* node-side warnings, shown by the first task */
	char *mig_notes;        /* per GPU: what was done and skipped under MIG */
	int mig;                /* one of the step's GPUs is a MIG instance */
	uint32_t tasks_exited;  /* local tasks whose exit was collected */
	const char *mps_pipe;   /* the job's MPS pipe directory (mps.daemon=job), or NULL */
	char *mps_devices;      /* the tasks' CUDA_VISIBLE_DEVICES as its clients, or NULL */
	struct gpumem_mps_place mps_place; /* where its daemon lives (its record); pipe_ino 0: unknown */
	int torn_down;
};

extern struct gpumem_plugin gpumem_plugin;
extern struct spank_option gpumem_policy_option;

/*
 * The one setup, for every context CTX: parse the plugstack arguments; in
 * srun/sbatch/salloc load the site file too (gpumem_plugin_site).  0, or
 * -1 (arguments).
 */
int gpumem_plugin_setup(int ac, char **av, spank_context_t ctx);
/*
 * Load the site file PATH into SITE (gpumem_site_init'd), its text into
 * *TEXT (unless TEXT is NULL), where a job's policy is decided:
 * srun/sbatch/salloc (LOGIN) and the job prolog, never a step or the job
 * epilog.  On a node a site file that is unusable is logged and becomes
 * *ERROR (every job there fails with it); on a login node it is a warning
 * and the policy is checked on its own.  1 loaded, 0 none (no site file,
 * or unusable: SITE freed), -1 out of memory.
 */
int gpumem_plugin_site(const char *path, int login, struct gpumem_site *site, char **text,
		     char **error);
/* The one teardown: everything setup and the hooks left in gpumem_plugin. */
void gpumem_plugin_teardown(void);

int gpumem_srun_post_opt(spank_t sp);
/*
 * advised.c: the policy --gpumem-policy=advised chooses for the job about
 * to be submitted (POLICY, a name in the site's policy_dir, "" for the
 * site's defaults), the name to forward (FWD: the label, for people) and
 * the advised source's fields to forward (SRC: JSON, advsrc.h); its one
 * line said.  UNASKED: the job named no policy (advised.by_default: the
 * site's mode decides which rules may apply; the line says "by default",
 * the fields say "unasked").  0.
 */
int gpumem_advised_policy(spank_t sp, const struct gpumem_site *site, int unasked, char *policy,
			  size_t plen, char *fwd, size_t flen, char *src, size_t slen);
/*
 * advised.c, where the site's advised.hint is on: one line, once per job
 * name (the user's own cache), when the name's last advice is not ASKED
 * (the policy named, NULL: the site's defaults).  GPUMEM_NO_HINT hides it.
 */
void gpumem_advised_hint(spank_t sp, const struct gpumem_site *site, const char *asked);
int gpumem_slurmstepd_user_init(spank_t sp);
int gpumem_slurmstepd_task_init(spank_t sp);
int gpumem_slurmstepd_task_exit(spank_t sp);
int gpumem_slurmstepd_exit(spank_t sp);
int gpumem_job_prolog(spank_t sp, int ac, char **av);
int gpumem_job_epilog(spank_t sp, int ac, char **av);
#endif

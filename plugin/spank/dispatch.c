/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem.so's entry points: every slurm_spank_* symbol Slurm looks up, each
 * only routing the call to the file named after the process it runs in
 * (plugin.h lists them).  Nothing else happens here.
 *
 * Builds: gpumem.so (plugin/spank/spank.am).  Runs in srun/sbatch/salloc
 * (as the user), in slurmstepd and "slurmstepd spank prolog|epilog" (as
 * root) and in slurmd.  Includes: this folder's headers, plugin/core's
 * public headers, slurm/spank.h.
 */
#include <stdlib.h>
#include <string.h>
#include "log.h"
#include "plugin.h"
#include "slurmconf.h"

SPANK_PLUGIN(gpumem, 1);

#if GPUMEM_HAVE_INIT_FAILURE_MODE
/*
 * slurm_spank_init fails only on the site's own mistake (plugstack
 * arguments gpumem cannot use): every job on such a node would fail, so
 * Slurm drains it, its reason naming the plugin (doc/admin/slurm.md, "Slurm
 * series").  Nothing a user sends fails init: the option's text is taken
 * as is and judged later, a failure of the job alone.
 */
__attribute__((visibility("default"))) int slurm_spank_init_failure_mode = ESPANK_NODE_FAILURE;
#endif

struct gpumem_plugin gpumem_plugin;

static int opt_policy_cb(int val, const char *arg, int remote)
{
	(void)val;
	(void)remote;
	free(gpumem_plugin.opt_policy);
	gpumem_plugin.opt_policy = arg ? strdup(arg) : NULL;
	return 0;
}

struct spank_option gpumem_policy_option = {
	GPUMEM_OPT_POLICY, "FILE|NAME",
	"GPU memory policy for this job: a YAML file, or the name of a site policy "
	"(see gpumem-policy(5))",
	1, 0, opt_policy_cb
};

static int login_side(void)
{
	return spank_context() == S_CTX_LOCAL || spank_context() == S_CTX_ALLOCATOR;
}

/*
 * slurmd's init fails (slurmd does not start) on one setting only, where
 * every job there would fail: PrologFlags=RunInJob, under which Slurm
 * calls no SPANK job prolog or epilog (slurmconf.c).
 */
static int slurmd_init(int setup_rv)
{
	if (setup_rv == 0)
		gpumem_slurmd_limits_save(gpumem_plugin.args.state_dir);
	if (gpumem_slurm_run_in_job() != 1)
		return 0;       /* slurmd keeps running: each step reports any other problem */
	gpumem_error("gpumem: PrologFlags=RunInJob is set: under it Slurm runs no SPANK job "
		     "prolog or epilog, where gpumem decides each job's policy, starts its MPS "
		     "daemon, checks and resets its GPUs; every step would fail. Remove RunInJob "
		     "from PrologFlags (Contain and Alloc are fine) or gpumem from plugstack.conf "
		     "(doc/admin/slurm.md, \"Slurm series\")");
	return GPUMEM_SPANK_FAIL;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();
	int rv = gpumem_plugin_setup(ac, av, ctx);

	if (ctx == S_CTX_SLURMD)
		return slurmd_init(rv);
	if (rv == 0 && (login_side() || ctx == S_CTX_REMOTE) &&
	    spank_option_register(sp, &gpumem_policy_option) != ESPANK_SUCCESS) {
		slurm_error("gpumem: cannot register --%s", GPUMEM_OPT_POLICY);
		rv = GPUMEM_SPANK_FAIL;
	}
	return rv;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return login_side() ? gpumem_srun_post_opt(sp) : 0;
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return spank_remote(sp) ? gpumem_slurmstepd_user_init(sp) : 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return spank_remote(sp) ? gpumem_slurmstepd_task_init(sp) : 0;
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return spank_remote(sp) ? gpumem_slurmstepd_task_exit(sp) : 0;
}

/* Once per job and node, as root, in a process of their own. */
int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
	return gpumem_job_prolog(sp, ac, av);
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	return gpumem_job_epilog(sp, ac, av);
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	int rv = 0;

	(void)ac;
	(void)av;
	if (spank_context() == S_CTX_REMOTE)
		rv = gpumem_slurmstepd_exit(sp);
	gpumem_plugin_teardown();
	return rv;
}

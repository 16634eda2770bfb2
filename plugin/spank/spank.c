/*
 * gpumem.so: a memory policy for every GPU job step.  This file is the
 * dispatcher: Slurm calls the same symbols in srun/sbatch/salloc (local and
 * allocator contexts, as the user), in slurmstepd (remote context, as root),
 * in the job prolog/epilog (job_script context, as root) and in slurmd;
 * each call is routed to the file for its context.
 *
 * Builds: gpumem.so (plugin/spank/spank.am).  Runs as the user in
 * srun/sbatch/salloc, as root in slurmstepd and slurmd.  Includes: this
 * folder's headers, plugin/core's public headers, slurm/spank.h.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "jobcheck.h"
#include "perjob.h"
#include "spank.h"

SPANK_PLUGIN(gpumem, 1);

struct gpumem_state gpumem_state;

static int opt_policy_cb(int val, const char *arg, int remote)
{
	(void)val;
	(void)remote;
	free(gpumem_state.opt_policy);
	gpumem_state.opt_policy = arg ? strdup(arg) : NULL;
	return 0;
}

struct spank_option gpumem_policy_option = {
	GPUMEM_OPT_POLICY, "FILE|NAME",
	"GPU memory policy for this job: a YAML file, or the name of a site policy "
	"(see gpumem-policy(5))",
	1, 0, opt_policy_cb
};

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	struct gpumem_diags d = { 0 };
	spank_context_t ctx = spank_context();
	int rv = GPUMEM_SPANK_FAIL;

	memset(&gpumem_state, 0, sizeof(gpumem_state));
	gpumem_state.ngpus = -1;
	gpumem_site_init(&gpumem_state.site);
	if (gpumem_args_parse(&gpumem_state.args, ac, av) < 0)
		goto fail;
	if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR || ctx == S_CTX_REMOTE) {
		if (spank_option_register(sp, &gpumem_policy_option) != ESPANK_SUCCESS) {
			slurm_error("gpumem: cannot register --%s", GPUMEM_OPT_POLICY);
			goto fail;
		}
	}
	if (gpumem_state.args.site && ctx != S_CTX_SLURMD) {
		if (gpumem_site_load(gpumem_state.args.site, &gpumem_state.site, &d) == 0) {
			gpumem_state.have_site = 1;
		} else if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR) {
			/*
			 * A login node may lack the site file: validate the
			 * policy alone; the compute node applies its own limits.
			 * A file that is there but broken is worth a word.
			 */
			if (access(gpumem_state.args.site, F_OK) == 0) {
				char *msg = gpumem_diags_join(&d, 1);

				slurm_info("gpumem: warning: site file unusable here, the policy "
					   "is checked on its own: %s", msg ? msg : "");
				free(msg);
			}
			gpumem_site_free(&gpumem_state.site);
		} else {
			char *msg = gpumem_diags_join(&d, 1);

			/*
			 * Fail the steps, with the reason where the user sees it
			 * (task_init), rather than a bare "plugin init failed".
			 */
			slurm_error("gpumem: site file unusable, jobs cannot get a policy on "
				    "this node: %s", msg ? msg : "out of memory");
			if (asprintf(&gpumem_state.deferred_error, "site file unusable on this "
				     "node (tell your admin): %s", msg ? msg : "out of memory") < 0)
				gpumem_state.deferred_error = NULL;
			free(msg);
			if (gpumem_state.deferred_error == NULL)
				goto fail;
		}
	}
	rv = 0;
fail:
	gpumem_diags_free(&d);
	/* slurmd itself keeps running: the error shows in each step instead. */
	return ctx == S_CTX_SLURMD ? 0 : rv;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (spank_context() == S_CTX_LOCAL || spank_context() == S_CTX_ALLOCATOR)
		return gpumem_local_post_opt(sp);
	return 0;
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return spank_remote(sp) ? gpumem_remote_user_init(sp) : 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return spank_remote(sp) ? gpumem_remote_task_init(sp) : 0;
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return spank_remote(sp) ? gpumem_remote_task_exit(sp) : 0;
}

/* Once per job and node, as root, in their own process (prolog.c, epilog.c). */
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
		rv = gpumem_remote_exit(sp);
	free(gpumem_state.opt_policy);
	free(gpumem_state.deferred_error);
	free(gpumem_state.user_notes);
	free(gpumem_state.mps_dir);
	free(gpumem_state.step_gpus);
	if (gpumem_state.before)
		gpumem_jobcheck_free(gpumem_state.before);
	if (gpumem_state.after)
		gpumem_jobcheck_free(gpumem_state.after);
	free(gpumem_state.before);
	free(gpumem_state.after);
	free(gpumem_state.ji);
	gpumem_site_free(&gpumem_state.site);
	gpumem_args_free(&gpumem_state.args);
	memset(&gpumem_state, 0, sizeof(gpumem_state));
	return rv;
}

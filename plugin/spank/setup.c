/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one setup and teardown every process of the plugin shares (plugin.h):
 * slurm_spank_init calls it in srun/sbatch/salloc, slurmstepd and slurmd;
 * the job prolog and epilog, where Slurm does not call slurm_spank_init,
 * call it themselves.  The site file is read only where a job's policy is
 * decided (srun/sbatch/salloc, the job prolog): the job's steps and its
 * epilog take it from the job's record (jobpolicy.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "log.h"
#include "plugin.h"

/* The site file on a node: unusable means every job there fails, saying why. */
static void site_unusable(struct gpumem_plugin *pl, struct gpumem_diags *d)
{
	char *msg = gpumem_diags_join(d, 1);

	gpumem_error("gpumem: site file unusable, jobs cannot get a policy on this node: %s",
		     msg ? msg : "out of memory");
	if (asprintf(&pl->deferred_error, "site file unusable on this node (tell your admin): %s",
		     msg ? msg : "out of memory") < 0)
		pl->deferred_error = NULL;
	free(msg);
}

int gpumem_plugin_setup(int ac, char **av, spank_context_t ctx)
{
	struct gpumem_plugin *pl = &gpumem_plugin;

	memset(pl, 0, sizeof(*pl));
	gpumem_site_init(&pl->site);
	if (gpumem_args_parse(&pl->args, ac, av) < 0)
		return GPUMEM_SPANK_FAIL;
	pl->has_dev = access(pl->args.nvidia_dev, F_OK) == 0;
	/*
	 * Only where a job's policy is decided: srun/sbatch/salloc check it
	 * here, the job prolog (jobctx.c) calls gpumem_plugin_site.  slurmd
	 * never needs it; the job's steps and its epilog take the site file
	 * from the job's record, as the prolog read it.
	 */
	if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR)
		return 0;
	return gpumem_plugin_site(ctx);
}

int gpumem_plugin_site(spank_context_t ctx)
{
	struct gpumem_plugin *pl = &gpumem_plugin;
	struct gpumem_diags d = { 0 };
	int login = ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR;
	size_t len = 0;

	if (pl->args.site == NULL)
		return 0;
	/* Read once: the text parsed here is the one the job prolog records. */
	if (gpumem_read_file(pl->args.site, &pl->site_text, &len, &d) == 0 &&
	    gpumem_site_parse(pl->site_text, len, pl->args.site, &pl->site, &d) == 0) {
		pl->have_site = 1;
	} else if (login) {
		/*
		 * A login node may lack the site file: the policy is validated
		 * on its own, the compute node applies its own limits.  A file
		 * that is there but broken is worth a word.
		 */
		if (access(pl->args.site, F_OK) == 0) {
			char *msg = gpumem_diags_join(&d, 1);

			slurm_info("gpumem: warning: site file unusable here, the policy is "
				   "checked on its own: %s", msg ? msg : "");
			free(msg);
		}
		gpumem_site_free(&pl->site);
	} else {
		site_unusable(pl, &d);
		gpumem_site_free(&pl->site);
	}
	if (!pl->have_site) {
		free(pl->site_text);
		pl->site_text = NULL;
	}
	gpumem_diags_free(&d);
	return login || pl->have_site || pl->deferred_error ? 0 : GPUMEM_SPANK_FAIL;
}

void gpumem_plugin_teardown(void)
{
	struct gpumem_plugin *pl = &gpumem_plugin;

	free(pl->opt_policy);
	free(pl->deferred_error);
	free(pl->user_notes);
	free(pl->mig_notes);
	free(pl->mps_devices);
	free(pl->nomps);
	free(pl->profile);
	free(pl->site_text);
	gpumem_site_free(&pl->site);
	gpumem_args_free(&pl->args);
	memset(pl, 0, sizeof(*pl));
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one setup and teardown every process of the plugin shares (plugin.h):
 * slurm_spank_init calls it in srun/sbatch/salloc, slurmstepd and slurmd;
 * the job prolog and epilog, where Slurm does not call slurm_spank_init,
 * call it themselves, and keep the rest of their state in their own struct
 * (jobctx.h).  The site file is read only where a job's policy is decided
 * (srun/sbatch/salloc, the job prolog: gpumem_plugin_site): the job's steps
 * and its epilog take it from the job's record (jobpolicy.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "log.h"
#include "plugin.h"

/*
 * The site file on a node: unusable means every job there fails, saying
 * why.  That reason (malloc'd), or NULL (out of memory).
 */
static char *site_unusable(const struct gpumem_diags *d)
{
	char *msg = gpumem_diags_join(d, 1), *deferred_error;

	gpumem_error("gpumem: site file unusable, jobs cannot get a policy on this node: %s",
		     msg ? msg : "out of memory");
	if (asprintf(&deferred_error, "site file unusable on this node (tell your admin): %s",
		     msg ? msg : "out of memory") < 0)
		deferred_error = NULL;
	free(msg);
	return deferred_error;
}

/*
 * A login node may lack the site file: the policy is validated on its
 * own, the compute node applies its own limits.  A file that is there but
 * broken is worth a word.
 */
static void site_warning(const char *path, const struct gpumem_diags *d)
{
	char *msg;

	if (access(path, F_OK) != 0)
		return;
	msg = gpumem_diags_join(d, 1);
	slurm_info("gpumem: warning: site file unusable here, the policy is checked on its own: "
		   "%s", msg ? msg : "");
	free(msg);
}

int gpumem_plugin_setup(int ac, char **av, spank_context_t ctx)
{
	struct gpumem_plugin *pl = &gpumem_plugin;
	int rv;

	memset(pl, 0, sizeof(*pl));
	gpumem_site_init(&pl->site);
	if (gpumem_args_parse(&pl->args, ac, av) < 0)
		return GPUMEM_SPANK_FAIL;
	pl->has_dev = access(pl->args.nvidia_dev, F_OK) == 0;
	/* Once, as slurmd loads the plugin: a missing account is never replaced (args.h). */
	if (ctx == S_CTX_SLURMD && gpumem_args_check_missing(&pl->args))
		gpumem_error("gpumem: check_user: %s: every check on this node is not run "
			     "(counted as failed)", gpumem_args_check_missing(&pl->args));
	if (ctx == S_CTX_SLURMD && gpumem_args_sample_missing(&pl->args))
		gpumem_error("gpumem: sample_user: %s: no job on this node gets a profile",
			     gpumem_args_sample_missing(&pl->args));
	/*
	 * Only where a job's policy is decided: srun/sbatch/salloc check it
	 * here, the job prolog (jobctx.c) loads it for itself.  slurmd never
	 * needs it; the job's steps and its epilog take the site file from
	 * the job's record, as the prolog read it.
	 */
	if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR)
		return 0;
	rv = gpumem_plugin_site(pl->args.site, 1, &pl->site, NULL, NULL);
	pl->have_site = rv > 0;
	return 0;
}

int gpumem_plugin_site(const char *path, int login, struct gpumem_site *site, char **text,
		     char **error)
{
	struct gpumem_diags d = { 0 };
	char *buf = NULL;
	size_t len = 0;
	int rv = 0;

	if (text)
		*text = NULL;
	if (path == NULL)
		return 0;
	/* Read once: the text parsed here is the one the job prolog records. */
	if (gpumem_read_file(path, &buf, &len, &d) == 0 &&
	    gpumem_site_parse(buf, len, path, site, &d) == 0) {
		rv = 1;
	} else {
		if (login)
			site_warning(path, &d);
		else if ((*error = site_unusable(&d)) == NULL)
			rv = -1;
		gpumem_site_free(site);
	}
	if (rv > 0 && text)
		*text = buf;
	else
		free(buf);
	gpumem_diags_free(&d);
	return rv;
}

void gpumem_plugin_teardown(void)
{
	struct gpumem_plugin *pl = &gpumem_plugin;

	free(pl->opt_policy);
	free(pl->deferred_error);
	free(pl->user_notes);
	free(pl->mig_notes);
	free(pl->mps_devices);
	gpumem_site_free(&pl->site);
	gpumem_args_free(&pl->args);
	memset(pl, 0, sizeof(*pl));
}

/*
 * srun, sbatch and salloc (local and allocator contexts), running as the
 * user: read the policy with the user's own rights, refuse the job on any
 * error with file:line:col messages, and forward the validated policy so a
 * node that cannot see the user's file still gets it.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "spank.h"

static void log_diags(const struct gpumem_diags *d)
{
	for (const struct gpumem_diag *g = d->head; g; g = g->next) {
		const char *sev = g->sev == GPUMEM_SEV_ERROR ? "error" : "warning";

		/* Warnings (clamps) are information: the job goes ahead. */
		void (*out)(const char *, ...) = g->sev == GPUMEM_SEV_ERROR ?
			slurm_error : slurm_info;

		if (g->line > 0)
			out("gpumem: %s:%d:%d: %s: %s", g->file, g->line, g->col, sev, g->msg);
		else
			out("gpumem: %s: %s: %s", g->file, sev, g->msg);
	}
}

int gpumem_local_post_opt(spank_t sp)
{
	struct gpumem_state *st = &gpumem_state;
	struct gpumem_diags d = { 0 };
	struct gpumem_policy user, eff;
	char *path = NULL, *json = NULL;
	int rv = -1;

	if (st->opt_policy == NULL)
		return 0;       /* site defaults, applied on the node */
	/* srun is not setuid, but be sure we read as the user. */
	if (getuid() != geteuid()) {
		slurm_error("gpumem: refusing to read a policy with elevated privileges");
		goto fail;
	}
	path = gpumem_policy_resolve(st->have_site ? &st->site : NULL, st->opt_policy, &d);
	if (path == NULL)
		goto fail;
	if (gpumem_policy_load(path, &user, &d) < 0)
		goto fail;
	if (gpumem_policy_effective(st->have_site ? &st->site : NULL, &user, path, &eff, &d) < 0)
		goto fail;
	json = gpumem_policy_format(&user, GPUMEM_FMT_JSON, 1);
	if (json == NULL) {
		slurm_error("gpumem: out of memory");
		goto fail;
	}
	/*
	 * Two routes to the node: the job control environment (prolog,
	 * epilog, batch steps) and srun's own environment, which srun copies
	 * into the steps it launches.  The node re-validates what arrives.
	 */
	if (spank_job_control_setenv(sp, GPUMEM_FWD_DATA, json, 1) != ESPANK_SUCCESS ||
	    spank_job_control_setenv(sp, GPUMEM_FWD_NAME, st->opt_policy, 1) != ESPANK_SUCCESS)
		slurm_debug("gpumem: job control environment not available here");
	if (setenv("SPANK_" GPUMEM_FWD_DATA, json, 1) < 0 ||
	    setenv("SPANK_" GPUMEM_FWD_NAME, st->opt_policy, 1) < 0) {
		slurm_error("gpumem: cannot forward the policy: out of memory");
		goto fail;
	}
	rv = 0;
fail:
	log_diags(&d);
	if (rv < 0 && d.nerrors)
		slurm_error("gpumem: policy '%s' rejected: no job submitted", st->opt_policy);
	gpumem_diags_free(&d);
	free(path);
	free(json);
	return rv;
}

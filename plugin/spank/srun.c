/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * srun, sbatch and salloc (local and allocator contexts), running as the
 * user: read the policy with the user's own rights (jobpolicy.c), refuse
 * the job on any error with file:line:col messages, and forward the
 * validated policy so a node that cannot see the user's file still gets it.
 * --gpumem-policy=advised (or, for a job that names no policy, the site's
 * advised.by_default): the policy advised.c chooses from the name's
 * history, then the same path as a named policy; one that fails there
 * leaves the site's defaults, said.  --gpumem-policy=none: the site's
 * defaults, never advised (a user's way out of advised.by_default).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core_advice.h"
#include "core_record.h"
#include "jobpolicy.h"
#include "plugin.h"

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

int gpumem_srun_post_opt(spank_t sp)
{
	struct gpumem_plugin *st = &gpumem_plugin;
	const struct gpumem_site *site = st->have_site ? &st->site : NULL;
	struct gpumem_policy_src src = { .option = st->opt_policy };
	struct gpumem_diags d = { 0 };
	struct gpumem_policy user, eff;
	char name[4200], *json = NULL, adv[80], fwd[256], src_json[GPUMEM_ADVSRC_MAX_JSON];
	int rv = -1, advised = 0;
	/* No policy named, and the site advises such jobs (advised.by_default). */
	int unasked = st->opt_policy == NULL && site != NULL &&
		site->advised.by_default != GPUMEM_BY_DEFAULT_OFF;

	/* --gpumem-policy=none: the site's defaults, no advice (the node reads none as no policy). */
	if (st->opt_policy && !strcmp(st->opt_policy, GPUMEM_NO_POLICY)) {
		if (getuid() == geteuid())
			gpumem_advised_hint(sp, site, NULL);
		return 0;
	}
	if (unasked || (st->opt_policy && !strcmp(st->opt_policy, GPUMEM_ADVISED))) {
		advised = 1;
		if (getuid() != geteuid() ||
		    gpumem_advised_policy(sp, site, unasked, adv, sizeof(adv), fwd, sizeof(fwd),
					  src_json, sizeof(src_json)) < 0 || !adv[0])
			return 0;       /* site defaults, said */
		/* "zerocopy.yaml" is the site's policy_dir/zerocopy.yaml: resolved by its name. */
		if (strlen(adv) > 5 && !strcmp(adv + strlen(adv) - 5, ".yaml"))
			adv[strlen(adv) - 5] = '\0';
		src.option = adv;
	}
	if (!advised && getuid() == geteuid())
		gpumem_advised_hint(sp, site, st->opt_policy);
	if (src.option == NULL)
		return 0;       /* site defaults, applied on the node */
	/* srun is not setuid, but be sure we read as the user. */
	if (getuid() != geteuid()) {
		slurm_error("gpumem: refusing to read a policy with elevated privileges");
		goto fail;
	}
	if (gpumem_policy_of_job(site, &src, &user, name, sizeof(name), &d) < 0 ||
	    gpumem_policy_effective(site, &user, name, &eff, &d) < 0)
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
	    spank_job_control_setenv(sp, GPUMEM_FWD_NAME, advised ? fwd : st->opt_policy, 1) !=
	    ESPANK_SUCCESS)
		slurm_debug("gpumem: job control environment not available here");
	/* The advised source as fields (advsrc.h): the node's epilog puts them in the record. */
	if (advised && spank_job_control_setenv(sp, GPUMEM_ADVSRC_ENV, src_json, 1) != ESPANK_SUCCESS)
		slurm_debug("gpumem: job control environment not available here");
	if (setenv("SPANK_" GPUMEM_FWD_DATA, json, 1) < 0 ||
	    setenv("SPANK_" GPUMEM_FWD_NAME, advised ? fwd : st->opt_policy, 1) < 0 ||
	    (advised && setenv("SPANK_" GPUMEM_ADVSRC_ENV, src_json, 1) < 0)) {
		slurm_error("gpumem: cannot forward the policy: out of memory");
		goto fail;
	}
	rv = 0;
fail:
	log_diags(&d);
	if (rv < 0 && advised) {
		/* The site's own policy did not pass: the job goes on with the site's defaults. */
		slurm_info("gpumem: advised: %s did not pass the site's checks (above): site "
			   "defaults", adv);
		unsetenv("SPANK_" GPUMEM_FWD_DATA);
		unsetenv("SPANK_" GPUMEM_FWD_NAME);
		unsetenv("SPANK_" GPUMEM_ADVSRC_ENV);
		rv = 0;
	} else if (rv < 0 && d.nerrors)
		slurm_error("gpumem: policy '%s' rejected: no job submitted", st->opt_policy);
	gpumem_diags_free(&d);
	free(json);
	return rv;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one resolver of a job's policy (jobpolicy.h).  srun/sbatch/salloc
 * read the option's file as the user they run as and forward the validated
 * policy; slurmstepd (user_init, with the user's effective ids) and the job
 * prolog/epilog (root: a forked reader as the user) read the forwarded copy,
 * else the option.  The forwarded copy is the user's to set: it is parsed,
 * validated and clamped like a file, never trusted.
 *
 * The job prolog decides the job's effective policy once and records it
 * with the site file's text it read (gpumem_jobpolicy_record); the steps
 * and the epilog take both from the record (gpumem_jobpolicy_recall) and
 * never read the site file: an edit of it reaches the next job, never a
 * running one.  The record is root's (statedir.c): the recorded site text
 * is parsed by the site parser like the file, under the same caps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core_advice.h"
#include "core_policy.h"
#include "jobpolicy.h"
#include "core_base.h"

#define FWD "forwarded policy (SPANK_GPUMEM_POLICY_DATA)"

/* The user's policy file, read as the user (never with root's rights). */
static char *read_as_user(const char *path, uid_t uid, gid_t gid, int timeout)
{
	char *argv[] = { "/bin/cat", "--", (char *)path, NULL };
	struct gpumem_henv env;
	struct gpumem_proc p = { 0 };
	char *out = NULL;

	gpumem_henv_init(&env);
	gpumem_proc_as_user(&p, argv[0], argv, gpumem_henv_envp(&env), uid, gid, timeout);
	p.drop_stderr = 1;
	p.out_max = GPUMEM_MAX_FILE_BYTES + 1;
	if (gpumem_proc_run(&p) == 0 && p.status == 0 && !p.timed_out &&
	    strlen(p.out) <= GPUMEM_MAX_FILE_BYTES) {
		out = p.out;
		p.out = NULL;
	}
	gpumem_proc_free(&p);
	return out;
}

static int from_file(const char *path, const struct gpumem_policy_src *src,
		     struct gpumem_policy *p, struct gpumem_diags *d)
{
	char *text;
	int rv;

	if (!src->as_root)
		return gpumem_policy_load(path, p, d);
	text = read_as_user(path, src->uid, src->gid, src->timeout);
	if (text == NULL) {
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, path, 0, 0, "cannot read it as the job's user");
		return -1;
	}
	rv = gpumem_policy_parse(text, strlen(text), path, p, d);
	free(text);
	return rv;
}

int gpumem_policy_of_job(const struct gpumem_site *site, const struct gpumem_policy_src *src,
			 struct gpumem_policy *p, char *name, size_t nlen, struct gpumem_diags *d)
{
	char *path;
	int rv;

	if (src->data_too_big) {
		snprintf(name, nlen, "%s", FWD);
		/* Refused like any other invalid forwarded policy, never dropped. */
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, FWD, 0, 0,
				"larger than the %d-byte limit: refused", GPUMEM_MAX_FILE_BYTES);
		return -1;
	}
	if (src->data) {
		snprintf(name, nlen, "%.200s (as forwarded)",
			 src->fwd_name && *src->fwd_name ? src->fwd_name : "policy");
		return gpumem_policy_parse_json(src->data, strlen(src->data), name, p, d) < 0 ? -1 : 1;
	}
	/*
	 * advised, with nothing forwarded: srun found no advice (it said so);
	 * none: the user asked for nothing to be advised.  The site's defaults.
	 */
	if (src->option == NULL || strcmp(src->option, GPUMEM_ADVISED) == 0 ||
	    strcmp(src->option, GPUMEM_NO_POLICY) == 0)
		return 0;
	path = gpumem_policy_resolve(site, src->option, d);
	if (path == NULL) {
		snprintf(name, nlen, "%.200s", src->option);
		return -1;
	}
	snprintf(name, nlen, "%s", path);
	rv = from_file(path, src, p, d);
	free(path);
	return rv < 0 ? -1 : 1;
}

int gpumem_jobpolicy_record(const struct gpumem_policy *eff, const char *text, const char *path,
			    struct gpumem_jobrec *rec, struct gpumem_diags *d)
{
	struct gpumem_policy back;
	char *again = NULL;
	int rv = -1;

	rec->effective = gpumem_policy_format(eff, GPUMEM_FMT_JSON, 1);
	rec->site = text ? strdup(text) : NULL;
	rec->site_path = path ? strdup(path) : NULL;
	if (rec->effective == NULL || (text && !rec->site) || (path && !rec->site_path)) {
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, "the job's record", 0, 0, "out of memory");
		return -1;
	}
	/* What a step reads must be what was decided (placement: stripe over a site's advice). */
	if (gpumem_policy_parse_json(rec->effective, strlen(rec->effective),
				     "the effective policy (the site's defaults with the job's)",
				     &back, d) == 0 &&
	    (again = gpumem_policy_format(&back, GPUMEM_FMT_JSON, 1)) &&
	    !strcmp(again, rec->effective))
		rv = 0;
	else if (again)
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, "the job's record", 0, 0,
				"the effective policy does not read back the same");
	free(again);
	return rv;
}

int gpumem_jobpolicy_recall(const struct gpumem_jobrec *rec, struct gpumem_policy *eff,
			    struct gpumem_site *site, int *have_site, struct gpumem_diags *d)
{
	const char *path = rec->site_path ? rec->site_path : "the site file";

	*have_site = 0;
	gpumem_site_init(site);
	if (rec->site) {
		if (gpumem_site_parse(rec->site, strlen(rec->site), path, site, d) < 0)
			return -1;
		*have_site = 1;
	}
	if (rec->effective == NULL)
		return 0;
	if (gpumem_policy_parse_json(rec->effective, strlen(rec->effective), "the job's record",
				     eff, d) < 0)
		return -1;
	/* The limits the merge took along (merge.c), applied on the node. */
	if (*have_site) {
		eff->l2.site_max_percent = site->limits.l2_max_percent;
		eff->l2.site_caps = site->limits.l2_caps;
		eff->um.site_max_fraction = site->limits.um_max_gpu_fraction;
	}
	return 1;
}

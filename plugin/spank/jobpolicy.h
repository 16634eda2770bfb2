/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one resolver of a job's policy (jobpolicy.c), for every process that
 * needs one: srun/sbatch/salloc, slurmstepd and the job prolog/epilog.
 */
#ifndef GPUMEM_JOBPOLICY_H
#define GPUMEM_JOBPOLICY_H
#include <sys/types.h>
#include "policy.h"

/* Where the policy may come from in the process at hand. */
struct gpumem_policy_src {
	const char *data;       /* forwarded JSON (SPANK_GPUMEM_POLICY_DATA), or NULL */
	int data_too_big;       /* it was there, but over GPUMEM_MAX_FILE_BYTES */
	const char *fwd_name;   /* the name it was forwarded under, or NULL */
	const char *option;     /* --gpumem-policy as given, or NULL */
	int as_root;            /* this process is root: read a file as uid/gid through a forked reader */
	uid_t uid;
	gid_t gid;
	int timeout;            /* seconds for that reader */
};

/*
 * The user's policy: the forwarded data, else the option (a file, or a name
 * in the site's policy_dir), always read with the user's rights, parsed and
 * validated by the same parsers everywhere (policy.h).  Returns 1 with the
 * policy in *P and what logs and reports call it in NAME (raw: escape it
 * before a log or report), 0 when there is none, -1 with errors in D.
 */
int gpumem_policy_of_job(const struct gpumem_site *site, const struct gpumem_policy_src *src,
			 struct gpumem_policy *p, char *name, size_t nlen, struct gpumem_diags *d);
#endif

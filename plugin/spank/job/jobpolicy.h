/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one resolver of a job's policy (jobpolicy.c), for every process that
 * needs one: srun/sbatch/salloc, slurmstepd and the job prolog/epilog; and
 * the policy's part of the job's record (statedir.h): what the job prolog
 * decided, which the steps and the epilog apply without the site file.
 */
#ifndef GPUMEM_JOBPOLICY_H
#define GPUMEM_JOBPOLICY_H
#include <sys/types.h>
#include "core_policy.h"
#include "statedir.h"

/* --gpumem-policy=none: the site's defaults, never advised (reserved like "advised"). */
#define GPUMEM_NO_POLICY "none"

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

/*
 * Into the record: EFF, the effective policy the job prolog decided (its
 * set keys, JSON), and the site file's TEXT it was decided under, read
 * from PATH.  The policy is read back at once (what a step would do): -1
 * with errors in D when it does not read back the same, or out of memory.
 */
int gpumem_jobpolicy_record(const struct gpumem_policy *eff, const char *text, const char *path,
			    struct gpumem_jobrec *rec, struct gpumem_diags *d);
/*
 * From the record, with no file read: the site as the job prolog read it
 * into SITE (*have_site: there was one) and, when the record has one, the
 * effective policy into EFF, with the site's limits it carries.  1 with a
 * policy, 0 with none (a site file the prolog could not use), -1 with
 * errors in D.
 */
int gpumem_jobpolicy_recall(const struct gpumem_jobrec *rec, struct gpumem_policy *eff,
			    struct gpumem_site *site, int *have_site, struct gpumem_diags *d);
#endif

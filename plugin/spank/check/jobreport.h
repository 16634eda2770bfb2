/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The job prolog's and epilog's reports, as root (jobreport.c): of a check
 * as soon as it ends, and of a job's profile where no after-check ran.
 * Each takes the check's contract (check_ctx.h) and what is reported.
 */
#ifndef GPUMEM_JOBREPORT_H
#define GPUMEM_JOBREPORT_H
#include "check_ctx.h"
#include "jobcheck.h"

/*
 * Check R's report: write it atomically into report.dir, the node_exporter
 * textfiles, one summary line in the slurmd log, and drain the node when
 * the check failed and both the policy and the site ask for it (resume on
 * a measured pass).  PROFILE (the report's "profile" member, or NULL) goes
 * with a check that is not the before-check.
 */
void gpumem_jobreport_check(const struct gpumem_check_ctx *c, struct gpumem_checkrun *r,
			    const char *profile);
/*
 * The epilog of a job with no after-check that took a profile: a report
 * of phase "job" carrying PROFILE, no check in it (status and verdict
 * "not_run", check null).
 */
void gpumem_jobreport_profile(const struct gpumem_check_ctx *c, const char *profile);
#endif

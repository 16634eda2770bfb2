/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The per-job GPU sampler (sampler.c): gpumem-sample started by the job
 * prolog for the job's GPUs, stopped by the job epilog, which takes the
 * profile it wrote into the job's report (doc/admin/profile.md, "The job's
 * profile").  Both as root; the sampler itself runs as sample_user (the
 * package's gpumem-sample account by default, args.h).
 */
#ifndef GPUMEM_SAMPLER_H
#define GPUMEM_SAMPLER_H
#include <stddef.h>
#include <sys/types.h>

struct gpumem_sampler {
	const char *path;       /* libexecdir/gpumem-sample */
	uid_t uid;              /* sample_user (args.h): not the job's user, not root */
	gid_t gid;
	int sfd;                /* root's state directory */
	unsigned job;
	const char *node;       /* SLURMD_NODENAME: nodes of one host share state_dir */
	const char *gpus;       /* the job's GPUs on the node; NULL: every GPU */
	int interval_ms;
};

/*
 * As root (the job prolog): start the sampler in its own session, its
 * stdout a file in state_dir only root can open, and record its pid and
 * start time (state_dir/sample.<JOB>.<NODE>, statefiles.h).  SKIP, when not NULL, is recorded
 * instead: the profile then says why there is none.  Returns at once.
 */
void gpumem_sampler_start(const struct gpumem_sampler *s, const char *skip);
/*
 * As root (the job epilog): stop the sampler the record names (SIGTERM,
 * SIGKILL 2 s later), read and check its document, forget its files.
 * Returns the text of the report's "profile" member (malloc'd): the
 * gpumem-profile/1 document, or {"state": "skipped"|"refused", "reason": ...};
 * NULL when the job has no record of a sampler (profiles off).  *RAN: a
 * sampler was started (else the member only says why not).
 */
char *gpumem_sampler_stop(int sfd, unsigned job, const char *node, int *ran);
#endif

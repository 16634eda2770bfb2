/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A job step's slurmstepd (remote context, as root), at the end of the step
 * on this node: when the step set a persisting-L2 limit that the job's own
 * policy did not, leave word for the job epilog, which resets L2 once, on
 * the job's GPUs (job_epilog.c).  Run when the last local task has exited,
 * or at exit for tasks that never started.  Everything else at a job's end
 * (the checks, the L2 reset, the MPS daemon) is the epilog's.
 */
#include <stdio.h>
#include <unistd.h>
#include "jobctx.h"
#include "log.h"
#include "slurmstepd.h"

/* state_dir/job<JOB>.<HOST>.l2: its being there is the word; it holds nothing of the user's. */
static void mark_l2(struct gpumem_plugin *st, uint32_t job)
{
	char err[4400], name[128];
	int dfd = gpumem_state_open(st->args.state_dir, 1, err, sizeof(err));

	gpumem_sf_job(name, sizeof(name), GPUMEM_SF_L2, job, NULL);
	if (dfd < 0 || gpumem_state_write(dfd, name, "set\n") < 0)
		gpumem_error("gpumem: job %u: the epilog will not know to reset L2: %s", job,
			     dfd < 0 ? err : "cannot write");
	if (dfd >= 0)
		close(dfd);
}

static void teardown(spank_t sp)
{
	struct gpumem_plugin *st = &gpumem_plugin;
	uint32_t job = 0;

	if (st->torn_down)
		return;
	st->torn_down = 1;
	spank_get_item(sp, S_JOB_ID, &job);
	if (st->have_eff && (st->eff.set & GPUMEM_K_L2_LIMIT) && st->eff.l2.reset_at_exit &&
	    st->has_dev)
		mark_l2(st, job);
}

int gpumem_slurmstepd_task_exit(spank_t sp)
{
	uint32_t ntasks = 0;

	gpumem_plugin.tasks_exited++;
	if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &ntasks) == ESPANK_SUCCESS &&
	    gpumem_plugin.tasks_exited >= ntasks)
		teardown(sp);
	return 0;
}

int gpumem_slurmstepd_exit(spank_t sp)
{
	/* Tasks that never started (a failed launch) still get their teardown. */
	teardown(sp);
	return 0;
}

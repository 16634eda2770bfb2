/*
 * slurmstepd (remote context), the end of the step on this node: stop an
 * MPS daemon the step started on its own, and leave word for the job
 * epilog when the step set a persisting-L2 limit (the epilog resets L2
 * once, on the job's GPUs).  Run when the last local task has exited,
 * while the step is still alive, or at exit for tasks that never started.
 * The checks, the L2 reset and the job's MPS daemon are the epilog's.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gpus.h"
#include "jobstate.h"
#include "log.h"
#include "mps.h"
#include "perjob.h"
#include "spank.h"

/* Is ",entry," (tok) one of the entries of the comma-separated list? */
static int list_has(const char *list, const char *tok)
{
	char buf[GPUMEM_GPU_LIST_MAX * 2 + 16];

	snprintf(buf, sizeof(buf), ",%s,", list);
	return strstr(buf, tok) != NULL;
}

/*
 * Tell the job epilog that this step set a persisting-L2 limit, and on
 * which whole GPUs (the node's names; "all" when the step had no list):
 * where Slurm gave the job no GPU list, the epilog resets these.  Steps
 * add to what earlier ones wrote.
 */
static void mark_l2(struct gpumem_state *st, uint32_t job)
{
	char err[4400], name[64], text[GPUMEM_GPU_LIST_MAX * 2 + 8];
	char *old = NULL;
	int dfd = gpumem_state_open(st->args.state_dir, 1, err, sizeof(err));

	snprintf(name, sizeof(name), GPUMEM_STATE_L2, job);
	if (dfd >= 0)
		old = gpumem_state_read(dfd, name, GPUMEM_GPU_LIST_MAX);
	if (old)
		old[strcspn(old, "\n")] = '\0';
	snprintf(text, sizeof(text), "%s", old ? old : "");
	/* A step with no GPU list saw every GPU of the node: "all". */
	for (char *g = st->l2_gpus ? st->l2_gpus : "all", *e; *g; g = *e ? e + 1 : e) {
		size_t n = strcspn(g, ","), o = strlen(text);
		char tok[72];

		e = g + n;
		snprintf(tok, sizeof(tok), ",%.*s,", (int)(n < 64 ? n : 64), g);
		if (o + n + 2 < GPUMEM_GPU_LIST_MAX && !list_has(text, tok))
			snprintf(text + o, sizeof(text) - o, "%s%.*s", o ? "," : "", (int)n, g);
	}
	strcat(text, "\n");
	if (dfd < 0 || gpumem_state_write(dfd, name, text) < 0)
		gpumem_error("gpumem: job %u: the epilog will not know to reset L2: %s", job,
			    dfd < 0 ? err : "cannot write");
	free(old);
	if (dfd >= 0)
		close(dfd);
}

static void teardown(spank_t sp)
{
	struct gpumem_state *st = &gpumem_state;
	uid_t uid = 0;
	gid_t gid = 0;
	uint32_t job = 0;

	if (st->torn_down)
		return;
	st->torn_down = 1;
	spank_get_item(sp, S_JOB_UID, &uid);
	spank_get_item(sp, S_JOB_GID, &gid);
	spank_get_item(sp, S_JOB_ID, &job);
	if (st->mps_dir) {
		gpumem_mps_stop(gpumem_mps_find(st->args.mps_control), uid, gid, st->mps_dir,
				st->args.timeout);
		free(st->mps_dir);
		st->mps_dir = NULL;
	}
	if (st->have_eff && (st->eff.set & GPUMEM_K_L2_LIMIT) && st->eff.l2.reset_at_exit &&
	    st->has_dev)
		mark_l2(st, job);
}

int gpumem_remote_task_exit(spank_t sp)
{
	uint32_t ntasks = 0;

	gpumem_state.tasks_exited++;
	if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &ntasks) == ESPANK_SUCCESS &&
	    gpumem_state.tasks_exited >= ntasks)
		teardown(sp);
	return 0;
}

int gpumem_remote_exit(spank_t sp)
{
	/* Tasks that never started (a failed launch) still get their teardown. */
	teardown(sp);
	return 0;
}

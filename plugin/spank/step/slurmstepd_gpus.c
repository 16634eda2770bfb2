/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A job step's GPUs, in its slurmstepd (user_init, with the user's ids):
 * Slurm's list from the job's environment (it only chooses what the user's
 * own tasks get: the devices cgroup is what confines them), the tasks'
 * numbering of it, what root's probe cache knows of them, and what the
 * plugin does and skips on a MIG instance.  No CUDA here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core_policy.h"
#include "log.h"
#include "core_base.h"
#include "slurmstepd.h"
#include "statedir.h"

static int job_getenv(void *ctx, const char *name, char *buf, int len)
{
	return spank_getenv((spank_t)ctx, name, buf, len) == ESPANK_SUCCESS ? 0 : -1;
}

/*
 * Ask gpumem-probe (as the user, in the step's devices cgroup) what the
 * GPUs are; fills node->gpus.  It never reaches an MPS daemon: its pipe
 * directory is root's empty mps_dir/nomps (mps.h).
 */
static void probe(const struct gpumem_args *a, uid_t uid, gid_t gid, char list[][64], int n,
		  struct gpumem_node *node)
{
	char nomps[4300];
	struct gpumem_proc p = { 0 };

	gpumem_mps_nomps_path(nomps, sizeof(nomps), a->mps_dir);
	if (gpumem_probe_run(&p, a->libexecdir, nomps, NULL, uid, gid, a->timeout) == 0)
		gpumem_gpus_match(p.out, list, n, node);
	else
		gpumem_info("gpumem: %s/gpumem-probe: %s: GPU limits unknown", a->libexecdir,
			    p.timed_out ? "timed out" : p.out ? p.out : "cannot run");
	gpumem_proc_free(&p);
}

/* The job's GPUs from root's probe cache (no CUDA), read as root: 0 when all are there. */
static int cached_gpus(char list[][64], int n, struct gpumem_node *node)
{
	char err[4400];
	int saved = gpumem_state_as_root();
	int dfd = gpumem_state_open(gpumem_plugin.args.state_dir, 0, err, sizeof(err));
	int rv = gpumem_probe_cache_lookup(dfd, list, n, node) ? 0 : -1;

	if (dfd >= 0)
		close(dfd);
	return gpumem_state_as_before(saved) < 0 ? -1 : rv;
}

int gpumem_env_drop_l2(struct gpumem_env *env)
{
	for (int i = 0; i < env->n; i++)
		if (!strcmp(env->var[i].name, GPUMEM_ENV_L2_PCT)) {
			env->var[i] = env->var[--env->n];
			break;
		}
	return 0;
}

/*
 * Per GPU of the step, what the plugin does on a MIG instance and what it
 * skips: the log gets one line each, the user the same from task_init.
 * Nothing here fails the step.
 */
static void mig_notes(struct gpumem_plugin *st, char node[][64], char task[][64], int n,
		      uint32_t job, uint32_t step)
{
	char *notes = NULL;
	size_t len = 0;
	FILE *f;
	int nmig = 0;

	for (int i = 0; i < n; i++)
		nmig += gpumem_gpu_kind(task[i], NULL, 0) == GPUMEM_GPU_MIG;
	if (nmig == 0 || (f = open_memstream(&notes, &len)) == NULL)
		return;
	st->mig = 1;
	for (int i = 0; i < n; i++) {
		char parent[64];
		int mig = gpumem_gpu_kind(task[i], parent, sizeof(parent)) == GPUMEM_GPU_MIG;

		fprintf(f, "%sGPU %s (%s%s%s): ", i ? "\n" : "", node[i], task[i],
			parent[0] ? " on " : "", parent);
		if (!mig) {
			fprintf(f, "whole GPU: L2 limit not set for the step (one of its GPUs is a MIG "
				"instance)%s", (st->eff.set & GPUMEM_K_L2_LIMIT) && st->eff.l2.reset_at_exit ?
				"; L2 reset at exit" : "");
			continue;
		}
		fprintf(f, "MIG instance: persisting L2 limit not set and no L2 reset (persisting "
			"L2 is disabled under MIG)");
		if (st->eff.mps.daemon == GPUMEM_DAEMON_JOB)
			fprintf(f, "; the job's MPS daemon serves the job's MIG instances (each "
				"CUDA client uses only the first it is given)");
		if (st->eff.check.before || st->eff.check.after)
			fprintf(f, "; check: a MIG instance is reported 'unusable' (no verdict on a "
				"slice)%s", i == 0 ? "" : " and only the first instance is enumerated");
	}
	if (fclose(f) != 0) {
		free(notes);
		return;
	}
	for (char *l = notes, *nl; l && *l; l = nl ? nl + 1 : NULL) {
		nl = strchr(l, '\n');
		slurm_info("gpumem: job %s: %.*s", gpumem_step_name(job, step),
			   nl ? (int)(nl - l) : (int)strlen(l), l);
	}
	st->mig_notes = notes;
}

void gpumem_step_gpus(spank_t sp, struct gpumem_plugin *st, struct gpumem_node *node,
		      uid_t uid, gid_t gid, uint32_t job, uint32_t step, const char **src)
{
	char list[GPUMEM_MAX_GPUS][64], tlist[GPUMEM_MAX_GPUS][64];
	int ngpu_env = gpumem_gpus_from_env(job_getenv, sp, list, GPUMEM_MAX_GPUS, src);

	/* No list where Slurm allocates the GPUs (gpus=gres): the step has none. */
	if (ngpu_env < 0 && !st->args.all_gpus)
		ngpu_env = 0;

	/* The probe runs in the step's devices cgroup: it gets the tasks' numbering. */
	if (ngpu_env > 0)
		gpumem_gpus_for_tasks(job_getenv, sp, *src, list, ngpu_env, tlist, GPUMEM_MAX_GPUS);
	node->ngpus = 0;
	if (st->has_dev && ngpu_env != 0 && (st->eff.set & GPUMEM_K_L2_LIMIT) &&
	    cached_gpus(list, ngpu_env, node) < 0)
		probe(&st->args, uid, gid, tlist, ngpu_env, node);
	if (ngpu_env > 0)
		mig_notes(st, list, tlist, ngpu_env, job, step);
	if (access(st->args.um_library, R_OK) == 0)
		node->um_library = st->args.um_library;
}

int gpumem_step_mps_devices(spank_t sp, const char *daemon, char *out, size_t len)
{
	char list[GPUMEM_MAX_GPUS][64];
	const char *src;
	int n = gpumem_gpus_from_env(job_getenv, sp, list, GPUMEM_MAX_GPUS, &src);

	out[0] = '\0';
	/* Slurm's own list in the node's numbering, as the prolog's: else leave it be. */
	if (daemon == NULL || n <= 0 || !strcmp(src, GPUMEM_ENV_VISIBLE))
		return 0;
	return gpumem_gpus_mps_client(daemon, list, n, out, len);
}

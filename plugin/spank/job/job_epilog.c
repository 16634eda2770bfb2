/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The job epilog (slurm_spank_job_epilog): once per job on every node of
 * the allocation, as root, after the job's last step there has ended, even
 * when a step's slurmstepd was killed.  Slurm keeps the node COMPLETING
 * until it returns, so the after-check still guards the node: no next job
 * starts there before the check has ended, nor after it drained the node.
 * It acts on the policy and the site file the prolog recorded (jobctx.c),
 * never on the site file itself; without a record (no prolog ran here, or
 * it failed: none of the job's steps ran) it only cleans up.  In order:
 * stop the per-job
 * MPS daemon (mps.c: its quit runs as the user, whose daemon it is;
 * nothing it does decides a site outcome), run check.after on the whole
 * GPUs (measured, or resting on the GPUs' last measured pass where the
 * evidence allows, never the job's own before-check: evidence.c; a
 * no-verdict marks the GPUs suspect), reset the persisting L2 (in the
 * after-check's own CUDA start where there is one, else gpumem-l2reset),
 * remove the job's state.  The check and gpumem-l2reset run as the site's
 * check_user (jobcheck.c), out of reach of the user's other jobs on the
 * node.  Before all of it, the job's sampler is stopped
 * (sampler.c): its profile goes into the after-check's report, else, when
 * one was taken, into a report of its own (phase "job", no check in it:
 * jobreport.c), and a GPU it shows streaming HBM at a low ceiling gets its
 * next check measured.  Its state, like the prolog's, is its own struct
 * gpumem_jobctx (jobctx.h), passed down.  Never fails: a failing epilog would drain the node with Slurm's
 * reason instead of gpumem's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core_policy.h"
#include "evidence.h"
#include "jobctx.h"
#include "jobreport.h"
#include "log.h"
#include "mps.h"
#include "core_base.h"
#include "sampler.h"

static void l2_reset(const struct gpumem_jobctx *c)
{
	char path[4200], gpus[GPUMEM_GPU_LIST_MAX + 32], timeout[32];
	char *argv[] = { path, "--timeout", timeout, NULL };
	struct gpumem_henv env;
	struct gpumem_proc p = { 0 };
	size_t o = 0;
	int n = 0;

	snprintf(path, sizeof(path), "%s/gpumem-l2reset", c->args->libexecdir);
	/* No MPS daemon: the job's is stopped by now, and no other may be reached. */
	gpumem_henv_init(&env);
	gpumem_henv_set(&env, GPUMEM_ENV_MPS_PIPE, "%s", c->nomps);
	snprintf(timeout, sizeof(timeout), "%d", c->args->timeout);
	gpus[0] = '\0';
	/* Under MIG no L2 lines persist: only whole GPUs are reset. */
	for (int i = 0; i < c->ngpus; i++)
		if (o < sizeof(gpus) && gpumem_gpu_kind(c->list[i], NULL, 0) != GPUMEM_GPU_MIG)
			o += (size_t)snprintf(gpus + o, sizeof(gpus) - o, "%s%s", n++ ? "," : "",
					      c->list[i]);
	if (c->ngpus >= 0)
		gpumem_henv_set(&env, GPUMEM_ENV_VISIBLE, "%s", gpus);
	if (c->ngpus >= 0 && n == 0) {
		gpumem_info("gpumem: job %u: L2 reset skipped: no whole GPU (MIG instances only)",
			    c->job);
		return;
	}
	if (access(path, X_OK) != 0) {
		gpumem_info("gpumem: job %u: L2 reset skipped: %s not installed", c->job, path);
		return;
	}
	/* As the site's check_user, like the check: out of the user's reach. */
	if (gpumem_args_check_missing(c->args)) {
		gpumem_error("gpumem: job %u: L2 reset not run: check_user: %s", c->job,
			     gpumem_args_check_missing(c->args));
		return;
	}
	if (c->uid == c->args->check_uid) {
		gpumem_error("gpumem: job %u: L2 reset not run: check_user (uid %u) is the job's "
			     "own user", c->job, (unsigned)c->uid);
		return;
	}
	gpumem_proc_as_site(&p, path, argv, gpumem_henv_envp(&env), c->args->check_uid,
			    c->args->check_gid, c->args->timeout + 5);
	if (gpumem_proc_run(&p) == 0)
		gpumem_info("gpumem: job %u: L2 reset on GPUs %s (exit %d): %.300s", c->job,
			    c->ngpus >= 0 ? gpus : "(all)", p.status,
			    p.cut ? "stopped at the job epilog's time limit" : p.out);
	gpumem_proc_free(&p);
}

/* Did this job (its policy, or one of its steps: slurmstepd_exit.c) set a persisting-L2 limit? */
static int used_l2(const struct gpumem_jobctx *c)
{
	char name[128], *mark;

	if (c->dfd >= 0) {
		gpumem_sf_job(name, sizeof(name), GPUMEM_SF_L2, c->job, NULL);
		mark = gpumem_state_read(c->dfd, name, 4096);
		if (mark) {
			free(mark);
			return 1;
		}
	}
	return c->have_eff && (c->eff.set & GPUMEM_K_L2_LIMIT) && c->eff.l2.reset_at_exit;
}

static void forget_job(const struct gpumem_jobctx *c)
{
	char name[128];

	if (c->dfd < 0)
		return;
	gpumem_sf_job(name, sizeof(name), GPUMEM_SF_L2, c->job, NULL);
	unlinkat(c->dfd, name, 0);
	gpumem_jobrec_forget(c->dfd, c->job, c->ji.node);
}

/* The per-job MPS daemon, whatever the policy: a refused one may have left one. */
static void stop_mps(const struct gpumem_jobctx *c)
{
	const struct gpumem_args *a = c->args;
	struct gpumem_mps m = { gpumem_mps_find(a->mps_control), a->mps_dir, c->dfd, c->job,
				c->uid, c->gid, NULL, -1, a->timeout };

	if (a->mps_dir)
		gpumem_mps_stop(&m);
}

/*
 * check.after on the job's whole GPUs, reported (with the job's profile);
 * with L2 it resets the persisting L2 in the same CUDA start where it can.
 * 1 when it did.
 */
static int after_check(struct gpumem_jobctx *c, int l2)
{
	struct gpumem_node node;
	struct gpumem_checkrun r;
	int reset;

	memset(&node, 0, sizeof(node));
	gpumem_jobctx_gpus(c, &node, 0);
	gpumem_perjob_check(c, &node, "after", 0, l2, &r);
	reset = l2 && gpumem_jobcheck_l2_reset_done(&r);
	if (reset)
		gpumem_info("gpumem: job %u: L2 reset by the after-check on GPUs %s", c->job,
			    c->ji.gpus[0] ? c->ji.gpus : "(all)");
	/*
	 * An after-check that rested on evidence read NVML just now: where no
	 * process holds any GPU of the node, no context is left to hold
	 * persisting lines, which is all gpumem-l2reset would find out first.
	 */
	if (l2 && !reset && !strcmp(r.status, "reused") && r.node_free) {
		gpumem_info("gpumem: job %u: L2 reset not needed on GPUs %s: %s",
			    c->job, c->ji.gpus[0] ? c->ji.gpus : "(all)", r.node_why);
		reset = 1;
	}
	gpumem_jobcheck_free(&r);
	return reset;
}

int gpumem_job_epilog(spank_t sp, int ac, char **av)
{
	struct gpumem_jobctx c;
	int rc = gpumem_jobctx_init(sp, ac, av, "epilog", 0, &c), l2, checked, sampled;

	if (rc == 0)
		rc = gpumem_jobctx_recall(sp, &c);
	/* First, so that nothing of the epilog's own work is in the job's profile. */
	c.profile = gpumem_sampler_stop(c.dfd, c.job, c.ji.node, &sampled);
	/* A GPU the profile shows streaming at a low ceiling is measured next (evidence.c). */
	if (rc == 0 && c.has_dev)
		gpumem_evidence_profile(&c.check, c.profile);
	stop_mps(&c);
	l2 = c.has_dev && gpumem_jobctx_has_gpus(&c) && used_l2(&c);
	checked = rc == 0 && c.eff.check.after && gpumem_jobctx_has_gpus(&c);
	if (checked && after_check(&c, l2))
		l2 = 0;
	/* A report of its own only for a profile taken: a skip is in the slurmd log. */
	if (sampled && !checked)
		gpumem_jobreport_profile(&c.check, c.profile);
	if (l2)
		l2_reset(&c);
	forget_job(&c);
	gpumem_jobctx_free(&c);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The job prolog (slurm_spank_job_prolog): once per job and node, as root,
 * in Slurm's "slurmstepd spank prolog" process, before any step of the job
 * starts there.  It reads the site file, the only hook that does, and
 * decides the job's effective policy once (jobctx.c: a refused user policy
 * means the site's defaults, and every step fails with the reason),
 * learns the GPUs (gpumem-probe, cached in state_dir), makes the per-job
 * MPS daemon's directory and starts the daemon (mps.c, from a child of its
 * own) after check.before has run (as the site's check_user, on the bare
 * GPUs; forced where a GPU is suspect, gpustate.c; measured, or resting on
 * the GPUs' last measured pass where the evidence holds, evidence.c) and its report is
 * written, starts the job's sampler (sampler.c, the job's profile), then
 * leaves the job's record in state_dir, with the effective policy and the
 * site file as read: the steps and the epilog act on it alone (without one
 * the steps fail and the epilog only cleans up: fail closed).  Its state is
 * its own struct gpumem_jobctx (jobctx.h), passed down.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gpustate.h"
#include "jobctx.h"
#include "log.h"
#include "mps.h"
#include "core_base.h"
#include "sampler.h"

/* What the child (or the prolog itself) does: start, log, record. */
static void mps_start_logged(const struct gpumem_mps *m)
{
	char why[2100], dir[4200];

	gpumem_mps_path(dir, sizeof(dir), m->base, m->job, NULL);
	if (gpumem_mps_start(m, why, sizeof(why)) < 0)
		gpumem_error("gpumem: job %u: per-job MPS daemon not started: %.500s", m->job, why);
	else
		gpumem_info("gpumem: job %u: per-job MPS daemon started in %s", m->job, dir);
}

/*
 * nvidia-cuda-mps-control takes about as long to listen as Slurm spends
 * launching the job's first step anyway.  So the prolog goes on and a
 * child of it (its own session:
 * nothing of the prolog's end reaches it) starts the daemon and records
 * the outcome; the steps wait for that record before their tasks start,
 * the epilog before it stops the daemon.  Where no child can be made, the
 * prolog starts the daemon itself.
 */
static void start_mps(struct gpumem_jobctx *c, const struct gpumem_node *node)
{
	const char *control = gpumem_mps_find(c->args->mps_control), *skip;
	struct gpumem_mps m = { control, c->args->mps_dir, c->dfd, c->job, c->uid, c->gid,
				c->ngpus > 0 ? c->ji.gpus : NULL, gpumem_jobctx_l2_pct(c, node), c->args->timeout };
	char why[2100];
	pid_t pid;

	skip = !c->has_dev ? "no GPU on this node" : !gpumem_jobctx_has_gpus(c) ?
		"the job has no GPU on this node" : control == NULL ?
		"nvidia-cuda-mps-control not found" : NULL;
	if (skip) {
		gpumem_info("gpumem: job %u: mps.daemon=job skipped: %s", c->job, skip);
		c->rec.mps = strdup(skip);
		return;
	}
	c->rec.mps = strdup("start");
	/* The daemon numbers these from 0: the steps give their tasks those numbers. */
	c->rec.mps_gpus = m.gpus ? strdup(m.gpus) : NULL;
	/* Its directory now, before Slurm makes the job's mount namespace (mps.h). */
	if (gpumem_mps_prepare(&m, why, sizeof(why)) < 0) {
		gpumem_error("gpumem: job %u: per-job MPS daemon not started: %.500s", m.job, why);
		return;
	}
	/*
	 * Its starter in a session of its own before the prolog returns (Slurm
	 * kills the prolog's process group then); the state directory's fd is
	 * above 2 (trust.h): the streams are kept.
	 */
	pid = gpumem_proc_fork_session();
	if (pid > 0)
		return;
	mps_start_logged(&m);
	if (pid == 0)
		_exit(0);
}

/*
 * Before the job's MPS daemon starts, on the bare GPUs (jobcheck.c: the
 * check runs as check_user, and the job's daemon serves the job's user
 * only).  A site-required check that gave no verdict of its own (killed,
 * timed out, could not start, printed no valid report) counts as failed
 * for the steps with on_fail fail or drain; FORCED (the GPU is suspect,
 * gpustate.c): the steps fail on a fail or no verdict whatever the job's
 * on_fail.  Draining for no verdict is gpustate.c's (twice in a row).
 */
static void before_check(struct gpumem_jobctx *c, const struct gpumem_node *node, int forced)
{
	struct gpumem_checkrun r;
	const char *none;

	gpumem_perjob_check(c, node, "before", forced, 0, &r);
	none = gpumem_jobcheck_no_verdict(&r);
	if ((!strcmp(r.verdict, "fail") || none) &&
	    (forced || c->eff.check.on_fail != GPUMEM_ONFAIL_WARN) &&
	    asprintf(&c->rec.fail, "GPU check before the job %s on %s: %s",
		     none ? none : "failed", c->ji.node, r.reason) < 0)
		c->rec.fail = strdup("GPU check before the job failed");
	gpumem_jobcheck_free(&r);
}

/* The job's profile (sampler.c): from after the before-check to the epilog. */
static void start_sampler(struct gpumem_jobctx *c)
{
	char path[4200];
	struct gpumem_sampler s = { path, c->args->sample_uid, c->args->sample_gid, c->dfd, c->job,
				    c->ji.node, c->ngpus > 0 ? c->ji.gpus : NULL,
				    c->have_site ? c->site.profile_interval_ms : 1000 };
	const char *skip = gpumem_args_sample_missing(c->args);

	if (!c->eff.profile.enabled)
		return;
	if (!c->has_dev || !gpumem_jobctx_has_gpus(c)) {
		gpumem_info("gpumem: job %u: profile skipped: %s", c->job, !c->has_dev ?
			    "no GPU on this node" : "the job has no GPU on this node");
		return;
	}
	for (int i = 0; i < c->ngpus && !skip; i++)
		if (gpumem_gpu_kind(c->list[i], NULL, 0) == GPUMEM_GPU_MIG)
			skip = "a MIG instance: per-instance sampling is not supported";
	if (!skip && c->ji.uid == c->args->sample_uid)
		skip = "sample_user is the job's own user: the sampler would be within its reach";
	snprintf(path, sizeof(path), "%s/gpumem-sample", c->args->libexecdir);
	gpumem_sampler_start(&s, skip);
}

int gpumem_job_prolog(spank_t sp, int ac, char **av)
{
	struct gpumem_jobctx c;
	struct gpumem_node node;
	char suspect[700];
	int forced;

	if (gpumem_jobctx_init(sp, ac, av, "prolog", 1, &c) < 0)
		goto out;       /* plugstack arguments: every step fails at init too */
	if (c.dfd < 0)
		gpumem_error("gpumem: job %u: state directory unusable, every step of the job "
			     "fails: %s", c.job, c.dir_err);
	if (gpumem_jobctx_decide(sp, &c) < 0)
		goto record;    /* the site file: nothing applies */
	memset(&node, 0, sizeof(node));
	if (c.has_dev && (c.eff.set & GPUMEM_K_L2_LIMIT))
		gpumem_jobctx_gpus(&c, &node, 1);
	forced = c.has_dev && gpumem_jobctx_has_gpus(&c) &&
		gpumem_suspect_find(&c.check, suspect, sizeof(suspect));
	if (forced)
		gpumem_info("gpumem: job %u: GPUs %s are suspect (job %s): before-check forced",
			    c.job, c.ji.gpus[0] ? c.ji.gpus : "all", suspect);
	if ((c.eff.check.before || forced) && gpumem_jobctx_has_gpus(&c))
		before_check(&c, &node, forced);
	if (c.eff.mps.daemon == GPUMEM_DAEMON_JOB)
		start_mps(&c, &node);
	start_sampler(&c);
record:
	if (c.dfd < 0 || gpumem_jobrec_write(c.dfd, c.job, c.ji.node, &c.rec) < 0)
		gpumem_error("gpumem: job %u: cannot write the job's record, every step of the job "
			     "fails: %s", c.job, c.dfd < 0 ? c.dir_err : "write failed");
out:
	gpumem_jobctx_free(&c);
	return 0;       /* a failing prolog would drain the node: never for this */
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A job step's slurmstepd (remote context), as root; user_init runs once
 * per step and node with the user's effective ids.  The job's GPU work is
 * the job prolog's and epilog's: a step reads what the prolog decided (the
 * job's record in root's state_dir, read with the effective uid 0 for the
 * while, as that directory is root's alone: no record, a refused policy or a
 * failed before-check fails it) and applies the job's effective policy as
 * recorded; only a step's own policy that is not the job's (jobpolicy.c)
 * is merged, with the site file as the record holds it: a step never reads
 * the site file.  It reads the GPUs from the probe cache (slurmstepd_gpus.c;
 * no CUDA in slurmstepd), joins the job's MPS daemon, and sets the tasks'
 * environment.
 * Its errors are kept for task_init, because an error returned from
 * user_init does not fail an srun.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core_policy.h"
#include "jobpolicy.h"
#include "log.h"
#include "mps.h"
#include "slurmconf.h"
#include "slurmstepd.h"
#include "statedir.h"

const char *gpumem_step_name(uint32_t job, uint32_t step)
{
	static char buf[64];

	switch (step) {
	case 0xfffffffbu: snprintf(buf, sizeof(buf), "%u.batch", job); break;
	case 0xfffffffcu: snprintf(buf, sizeof(buf), "%u.extern", job); break;
	case 0xfffffffau: snprintf(buf, sizeof(buf), "%u.interactive", job); break;
	default: snprintf(buf, sizeof(buf), "%u.%u", job, step); break;
	}
	return buf;
}

/*
 * Keep the first error for task_init.  ARG may hold what a user chose (a
 * check's reason, a helper's output): it is escaped here, so the message
 * is one line.  defer_lines keeps lines that are escaped already (joined
 * diagnostics, trust.h), one per diagnostic.
 */
static void defer_lines(const char *fmt, const char *arg)
{
	char *msg;

	if (asprintf(&msg, fmt, arg) < 0)
		return;
	if (gpumem_plugin.deferred_error == NULL)
		gpumem_plugin.deferred_error = msg;
	else
		free(msg);
}

static void defer(const char *fmt, const char *arg)
{
	char *esc = malloc(4 * strlen(arg) + 1);

	if (esc == NULL)
		return;
	defer_lines(fmt, gpumem_escape(esc, 4 * strlen(arg) + 1, arg));
	free(esc);
}

/*
 * The step's own policy (jobpolicy.c): its forwarded copy, else its
 * option, read with the user's ids user_init runs with.  1 when it has one
 * that is not the job's (in *P, NAME), 0 when it has none or the job's
 * (NAME: what the step runs under), -1 with errors in D.
 */
static int step_policy(spank_t sp, const struct gpumem_jobrec *rec, struct gpumem_policy *p,
		       char *name, size_t nlen, struct gpumem_diags *d)
{
	struct gpumem_plugin *st = &gpumem_plugin;
	struct gpumem_policy_src src = { 0 };
	char fwd_name[256] = "", *data = malloc(GPUMEM_MAX_FILE_BYTES + 1), *opt = NULL, *own;
	int rc, rv, same;

	if (data == NULL)
		return -1;
	rc = spank_getenv(sp, "SPANK_" GPUMEM_FWD_DATA, data, GPUMEM_MAX_FILE_BYTES + 1);
	src.data_too_big = rc == ESPANK_NOSPACE;
	if (rc == ESPANK_SUCCESS) {
		src.data = data;
		if (spank_getenv(sp, "SPANK_" GPUMEM_FWD_NAME, fwd_name, sizeof(fwd_name)) ==
		    ESPANK_SUCCESS)
			src.fwd_name = fwd_name;
	} else if (spank_option_getopt(sp, &gpumem_policy_option, &opt) == ESPANK_SUCCESS && opt) {
		src.option = opt;
	} else {
		src.option = st->opt_policy;
	}
	/* A name is resolved in the policy_dir of the site file the record holds. */
	rv = gpumem_policy_of_job(st->have_site ? &st->site : NULL, &src, p, name, nlen, d);
	free(data);
	if (rv == 0)
		snprintf(name, nlen, "%s", rec->policy == NULL ? "site defaults" :
			 rec->name ? rec->name : "policy");
	if (rv != 1 || rec->policy == NULL)
		return rv;
	/* The job's own (an inherited copy): its effective policy is the recorded one. */
	own = gpumem_policy_format(p, GPUMEM_FMT_JSON, 1);
	same = own && !strcmp(own, rec->policy);
	free(own);
	return same ? 0 : 1;
}

/*
 * What the job prolog decided for the job on this node (statedir.h): 0, or
 * -1 (deferred) when there is no record, the job's policy was refused or
 * its before-check failed.  Fail closed: no record, no task.
 */
static int job_record(struct gpumem_plugin *st, uint32_t job, struct gpumem_jobrec *rec)
{
	char err[600], why[256] = "";
	int saved = gpumem_state_as_root();     /* state_dir is root's alone (statedir.h) */
	int dfd = gpumem_state_open(st->args.state_dir, 0, err, sizeof(err)), rv = -1;
	int got = dfd >= 0 && gpumem_jobrec_read(dfd, job, NULL, rec, why, sizeof(why)) == 0;

	if (gpumem_state_as_before(saved) < 0) {
		defer("%s", "cannot take back the job's user ids after reading the job's record");
		if (dfd >= 0)
			close(dfd);
		return -1;
	}

	if (!got && gpumem_slurm_run_in_job() == 1)        /* gpumem listed optional: slurmd ran */
		defer("the job prolog left no record of this job on this node: %s",
		      "PrologFlags=RunInJob is set, under which Slurm runs no SPANK job prolog");
	else if (dfd < 0)
		defer("the job prolog left no record of this job on this node (state directory "
		      "%s)", err);
	else if (!got)
		defer("the job prolog left no record of this job on this node: %s (see slurmd's "
		      "log)", why);
	else if (rec->rejected)
		defer_lines("policy rejected on this node: %s", rec->rejected);
	else if (rec->fail)
		defer("%s", rec->fail);
	else
		rv = 0;
	if (dfd >= 0)
		close(dfd);
	return rv;
}

/*
 * The job's effective policy and site file, as the prolog recorded them,
 * into st->eff and st->site: 0, or -1 (deferred).  Only errors count:
 * the recorded site file's warnings are not repeated in every step.
 */
static int step_recall(struct gpumem_plugin *st, const struct gpumem_jobrec *rec)
{
	struct gpumem_diags d = { 0 };
	char *msg;

	if (gpumem_jobpolicy_recall(rec, &st->eff, &st->site, &st->have_site, &d) > 0) {
		gpumem_diags_free(&d);
		return 0;
	}
	msg = gpumem_diags_join(&d, 1);
	defer_lines("the job's record on this node does not read back: %s",
		    msg ? msg : "it holds no policy");
	free(msg);
	gpumem_diags_free(&d);
	return -1;
}

static void log_diags(const struct gpumem_diags *d, unsigned job, unsigned step)
{
	int n = 0, total = d->nerrors + d->nwarnings;

	/* A hostile forwarded policy can hold thousands of errors: bound the log. */
	for (const struct gpumem_diag *g = d->head; g && n < 20; g = g->next, n++)
		gpumem_info("gpumem: job %s: %s: %s: %s", gpumem_step_name(job, step), g->file,
			   g->sev == GPUMEM_SEV_ERROR ? "error" : "warning", g->msg);
	if (total > n)
		gpumem_info("gpumem: job %s: ... and %d more", gpumem_step_name(job, step), total - n);
}

static int set_env(spank_t sp, const struct gpumem_env *env)
{
	for (int i = 0; i < env->n; i++) {
		const char *name = env->var[i].name, *val = env->var[i].value;
		char *old = NULL, *joined = NULL;
		int rc;

		/* Our library goes first; the user's own preloads still load. */
		if (!strcmp(name, GPUMEM_ENV_PRELOAD) && (old = malloc(65536)) &&
		    spank_getenv(sp, name, old, 65536) == ESPANK_SUCCESS && old[0]) {
			if (asprintf(&joined, "%s %s", val, old) < 0)
				joined = NULL;
			else
				val = joined;
		}
		rc = spank_setenv(sp, name, val, 1);
		free(old);
		free(joined);
		if (rc != ESPANK_SUCCESS) {
			gpumem_error("gpumem: cannot set %s in the job environment", name);
			return -1;
		}
	}
	return 0;
}

/*
 * mps.daemon=job: the job's daemon, which a child of the job prolog starts
 * (mps.c); no task starts before it is up, or CUDA would run without it.
 * Its directories into NODE; -1 (deferred) when it did not start.  A step
 * whose own policy asks for one in a job that has none gets a note.
 */
static int step_mps(spank_t sp, struct gpumem_plugin *st, const struct gpumem_jobrec *rec,
		    struct gpumem_node *node, uint32_t job, struct gpumem_diags *notes)
{
	static char pipe_dir[4300], log_dir[4300];
	char err[600], why[2100] = "", devs[GPUMEM_GPU_LIST_MAX];
	int dfd, rc = -2, saved;

	if (rec->mps == NULL || strcmp(rec->mps, "start")) {
		gpumem_diag_add(notes, GPUMEM_SEV_WARNING, "mps.daemon", 0, 0, "%s%s",
				rec->mps ? "no per-job MPS daemon: " : "the job has no per-job MPS "
				"daemon (give the policy that asks for one to sbatch, salloc or srun)",
				rec->mps ? rec->mps : "");
		return 0;
	}
	saved = gpumem_state_as_root();         /* the daemon's record: root's alone */
	dfd = gpumem_state_open(st->args.state_dir, 0, err, sizeof(err));
	if (dfd >= 0)
		rc = gpumem_mps_wait(dfd, job, st->args.timeout * 1000L, &st->mps_place, why,
				     sizeof(why));
	if (gpumem_state_as_before(saved) < 0) {
		defer("%s", "cannot take back the job's user ids after reading the MPS record");
		goto fail;
	}
	if (rc != 0) {
		defer("the job's MPS daemon did not start: %s", dfd < 0 ? err : rc == -2 ?
		      "not up within the timeout" : why);
		goto fail;
	}
	/* Its clients' numbering of the step's GPUs, set in task_init, after Slurm's. */
	if (gpumem_step_mps_devices(sp, rec->mps_gpus, devs, sizeof(devs)) < 0) {
		defer("a GPU of this step is not one the job's MPS daemon serves (%s)",
		      rec->mps_gpus ? rec->mps_gpus : "all");
		goto fail;
	}
	st->mps_devices = devs[0] ? strdup(devs) : NULL;
	gpumem_mps_path(pipe_dir, sizeof(pipe_dir), st->args.mps_dir, job, GPUMEM_MPS_PIPE);
	gpumem_mps_path(log_dir, sizeof(log_dir), st->args.mps_dir, job, GPUMEM_MPS_LOG);
	node->mps_pipe_dir = pipe_dir;
	node->mps_log_dir = log_dir;
	/* Where the daemon lives (its record, above), for task_init to compare with the tasks'. */
	st->mps_pipe = pipe_dir;
	close(dfd);
	return 0;
fail:
	if (dfd >= 0)
		close(dfd);
	return -1;
}

/*
 * In the task, inside the job's mount namespace where Slurm makes one
 * (job_container/tmpfs, namespace/tmpfs): is the MPS pipe directory the
 * daemon's?  If not, CUDA would run without the job's daemon: the task
 * fails (-1).  Is /dev/shm the daemon's?  NVIDIA's MPS shares files there
 * with its clients; a private /dev/shm per job (those plugins' default)
 * is not the one the daemon, started by the job prolog outside the job's
 * namespace, has: the first task says so (the user and slurmd's log).
 */
static int mps_place_check(spank_t sp)
{
	struct gpumem_plugin *st = &gpumem_plugin;
	struct gpumem_mps_place here, *d = &st->mps_place;
	uint32_t job = 0, task = 0;

	if (st->mps_pipe == NULL || d->pipe_ino == 0)
		return 0;
	spank_get_item(sp, S_JOB_ID, &job);
	spank_get_item(sp, S_TASK_ID, &task);
	gpumem_mps_place_here(st->mps_pipe, &here);
	if (here.pipe_dev != d->pipe_dev || here.pipe_ino != d->pipe_ino) {
		gpumem_error("gpumem: job %u: the MPS pipe directory %s the tasks see is not the one the "
			    "job's daemon listens in (the job's mount namespace was made without "
			    "it): the task would run without its MPS daemon", job, st->mps_pipe);
		return -1;
	}
	if ((here.shm_dev != d->shm_dev || here.shm_ino != d->shm_ino) && task == 0) {
		char host[64] = "";

		gethostname(host, sizeof(host) - 1);
		gpumem_info("gpumem: job %u: the job's /dev/shm is not the one of its MPS daemon "
			   "(a private /dev/shm per job: job_container.conf Dirs=, 23.02+): MPS clients share "
			   "files there with the daemon", job);
		fprintf(stderr, "gpumem: %s: this job's /dev/shm is private, its MPS daemon's is the "
			"node's: CUDA's MPS clients may fail to use it (the site's job_container.conf "
			"should leave /dev/shm out: Dirs=/tmp, Slurm 23.02+)\n", host);
	}
	return 0;
}

/*
 * What only the node can know (the GPU's own L2 maximum, a missing
 * library) is shown to the user too, from task_init, whose stderr is the
 * task's.
 */
static void keep_user_notes(struct gpumem_plugin *st, struct gpumem_diags *envd)
{
	char *all = NULL;

	st->user_notes = gpumem_diags_join(envd, 0);
	if (st->mig_notes &&
	    asprintf(&all, "%s%s%s", st->user_notes ? st->user_notes : "",
		     st->user_notes && *st->user_notes ? "\n" : "", st->mig_notes) >= 0) {
		free(st->user_notes);
		st->user_notes = all;
	}
}

/* One line in slurmd's log: the policy, the GPUs and what was set. */
static void log_step(const struct gpumem_env *env, uint32_t job, uint32_t step,
		     const char *policy, const char *src, int has_dev)
{
	char summary[2048];
	int off = 0;

	for (int i = 0; i < env->n && off < (int)sizeof(summary) - 1; i++)
		off += snprintf(summary + off, sizeof(summary) - (size_t)off, " %s=%s",
				env->var[i].name, env->var[i].value);
	if (off == 0)
		snprintf(summary, sizeof(summary), " (nothing to set)");
	gpumem_info("gpumem: job %s: policy %s; GPUs %s%s; set%s", gpumem_step_name(job, step), policy,
		   src ? src : "none", has_dev ? "" : " (no GPU device on this node: probe, MPS "
		   "daemon, check and L2 reset skipped)", summary);
}

int gpumem_slurmstepd_user_init(spank_t sp)
{
	struct gpumem_plugin *st = &gpumem_plugin;
	struct gpumem_diags d = { 0 }, envd = { 0 };
	struct gpumem_jobrec rec = { 0 };
	struct gpumem_policy user;
	struct gpumem_node node;
	struct gpumem_env env;
	const char *src = NULL;
	char name[4200] = "site defaults";
	uint32_t job = 0, step = 0;
	uid_t uid = 0;
	gid_t gid = 0;
	int have_user, own;

	spank_get_item(sp, S_JOB_UID, &uid);
	spank_get_item(sp, S_JOB_GID, &gid);
	spank_get_item(sp, S_JOB_ID, &job);
	spank_get_item(sp, S_JOB_STEPID, &step);

	if (st->deferred_error || job_record(st, job, &rec) < 0)
		goto out;       /* what the prolog decided: task_init says why */
	/* The job's effective policy and site file, as the prolog recorded them. */
	if (step_recall(st, &rec) < 0)
		goto out;
	own = step_policy(sp, &rec, &user, name, sizeof(name), &d);
	if (own < 0 ||
	    (own == 1 && gpumem_policy_effective(st->have_site ? &st->site : NULL, &user, name,
						 &st->eff, &d) < 0)) {
		char *msg = gpumem_diags_join(&d, 1);

		log_diags(&d, job, step);
		defer_lines("policy rejected on this node: %s", msg ? msg : "out of memory");
		free(msg);
		goto out;
	}
	st->have_eff = 1;
	have_user = own == 1 || rec.policy != NULL;
	/* Nothing asked, nothing set: keep steps without a policy cheap. */
	if (!have_user && st->eff.set == 0 && st->eff.sections == 0)
		goto out;

	memset(&node, 0, sizeof(node));
	gpumem_step_gpus(sp, st, &node, uid, gid, job, step, &src);
	if (st->eff.mps.daemon == GPUMEM_DAEMON_JOB && step_mps(sp, st, &rec, &node, job, &envd) < 0)
		goto out;
	if (gpumem_policy_env(&st->eff, &node, &env, &envd) < 0 ||
	    (st->mig && gpumem_env_drop_l2(&env)) || set_env(sp, &env) < 0) {
		defer("%s", "cannot build the task environment");
		goto out;
	}
	keep_user_notes(st, &envd);
	spank_setenv(sp, GPUMEM_ENV_POLICY, have_user ? name : "site defaults", 1);
	log_diags(&d, job, step);
	log_diags(&envd, job, step);
	log_step(&env, job, step, have_user ? name : "site defaults", src, st->has_dev);
out:
	gpumem_diags_free(&d);
	gpumem_diags_free(&envd);
	gpumem_jobrec_free(&rec);
	return 0;
}

int gpumem_slurmstepd_task_init(spank_t sp)
{
	uint32_t task = 0;

	if (!gpumem_plugin.deferred_error && mps_place_check(sp) < 0)
		return -1;
	/* After Slurm set the step's GPUs: the job's MPS daemon numbers them from 0. */
	if (gpumem_plugin.mps_devices && !gpumem_plugin.deferred_error &&
	    spank_setenv(sp, GPUMEM_ENV_VISIBLE, gpumem_plugin.mps_devices, 1) != ESPANK_SUCCESS) {
		slurm_error("gpumem: cannot set " GPUMEM_ENV_VISIBLE " for the job's MPS daemon");
		return -1;
	}
	if (gpumem_plugin.deferred_error) {
		/* Escaped when deferred: one log line per line, nothing raw. */
		for (char *l = gpumem_plugin.deferred_error, *nl; l && *l; l = nl ? nl + 1 : NULL) {
			nl = strchr(l, '\n');
			slurm_error("gpumem: %.*s", nl ? (int)(nl - l) : (int)strlen(l), l);
		}
		return -1;
	}
	/* Once per node: the first local task says what the node adjusted. */
	if (gpumem_plugin.user_notes && spank_get_item(sp, S_TASK_ID, &task) == ESPANK_SUCCESS &&
	    task == 0) {
		char host[64] = "";

		gethostname(host, sizeof(host) - 1);
		for (char *l = gpumem_plugin.user_notes, *nl; l && *l; l = nl ? nl + 1 : NULL) {
			nl = strchr(l, '\n');
			fprintf(stderr, "gpumem: %s: %.*s\n", host, nl ? (int)(nl - l) : (int)strlen(l), l);
		}
	}
	return 0;
}

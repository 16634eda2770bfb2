/*
 * slurmstepd (remote context).  user_init runs once per step and node with
 * the user's effective ids: it re-validates the forwarded policy, merges it
 * with this node's site file, learns the step's GPUs from a forked probe
 * (no CUDA in slurmstepd), starts a per-job MPS daemon if asked, and sets
 * the tasks' environment.  Its errors are kept for task_init, because an
 * error returned from user_init does not fail an srun.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pwd.h>
#include "gpus.h"
#include "jobcheck.h"
#include "log.h"
#include "mps.h"
#include "proc.h"
#include "spank.h"

/* "123.0", "123.batch": Slurm's special step ids read as their names. */
static const char *step_name(uint32_t job, uint32_t step)
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

static int job_getenv(void *ctx, const char *name, char *buf, int len)
{
	return spank_getenv((spank_t)ctx, name, buf, len) == ESPANK_SUCCESS ? 0 : -1;
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
	if (gpumem_state.deferred_error == NULL)
		gpumem_state.deferred_error = msg;
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

/* 1: a user policy was found and parsed, 0: none, -1: errors in d. */
static int user_policy(spank_t sp, struct gpumem_policy *p, char **name,
		       struct gpumem_diags *d)
{
	struct gpumem_state *st = &gpumem_state;
	char fwd_name[256] = "";
	char *data, *opt = NULL, *path;
	int rv;

	*name = NULL;
	data = malloc(GPUMEM_MAX_FILE_BYTES + 1);
	if (data == NULL)
		return -1;
	rv = spank_getenv(sp, "SPANK_" GPUMEM_FWD_DATA, data, GPUMEM_MAX_FILE_BYTES + 1);
	if (rv == ESPANK_NOSPACE) {
		/* Refused like any other invalid forwarded policy, never dropped. */
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, "forwarded policy (SPANK_" GPUMEM_FWD_DATA ")",
				0, 0, "larger than the %d-byte limit: refused", GPUMEM_MAX_FILE_BYTES);
		free(data);
		return -1;
	}
	if (rv == ESPANK_SUCCESS) {
		if (spank_getenv(sp, "SPANK_" GPUMEM_FWD_NAME, fwd_name, sizeof(fwd_name)) !=
		    ESPANK_SUCCESS)
			fwd_name[0] = '\0';
		if (asprintf(name, "%s (as forwarded)", fwd_name[0] ? fwd_name : "policy") < 0)
			*name = NULL;
		rv = gpumem_policy_parse_json(data, strlen(data), *name ? *name : "policy", p, d);
		free(data);
		return rv < 0 ? -1 : 1;
	}
	free(data);
	/* No forwarded copy (e.g. a foreign srun): read the file here, as the user. */
	if (spank_option_getopt(sp, &gpumem_policy_option, &opt) != ESPANK_SUCCESS || !opt) {
		if (st->opt_policy == NULL)
			return 0;
		opt = st->opt_policy;
	}
	path = gpumem_policy_resolve(st->have_site ? &st->site : NULL, opt, d);
	if (path == NULL)
		return -1;
	*name = path;
	return gpumem_policy_load(path, p, d) < 0 ? -1 : 1;
}

static void log_diags(const struct gpumem_diags *d, unsigned job, unsigned step)
{
	int n = 0, total = d->nerrors + d->nwarnings;

	/* A hostile forwarded policy can hold thousands of errors: bound the log. */
	for (const struct gpumem_diag *g = d->head; g && n < 20; g = g->next, n++)
		gpumem_info("gpumem: job %s: %s: %s: %s", step_name(job, step), g->file,
			   g->sev == GPUMEM_SEV_ERROR ? "error" : "warning", g->msg);
	if (total > n)
		gpumem_info("gpumem: job %s: ... and %d more", step_name(job, step), total - n);
}

/* Ask gpumem-probe (as the user) what the GPUs are; fills node->gpus. */
static void probe(const struct gpumem_args *a, uid_t uid, gid_t gid, char list[][64], int n,
		  struct gpumem_node *node)
{
	char path[4200];
	char *argv[] = { path, NULL };
	char *envp[] = { "PATH=/usr/bin:/bin", NULL };
	struct gpumem_proc p = { 0 };

	snprintf(path, sizeof(path), "%s/gpumem-probe", a->libexecdir);
	gpumem_proc_as_user(&p, path, argv, envp, uid, gid, a->timeout);
	if (gpumem_proc_run(&p) < 0) {
		gpumem_info("gpumem: cannot run %s: GPU limits unknown", path);
		return;
	}
	if (p.status == 0)
		gpumem_gpus_match(p.out, list, n, node);
	else
		gpumem_info("gpumem: %s: %s", path, p.timed_out ? "timed out" : p.out);
	gpumem_proc_free(&p);
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

static void jobinfo(spank_t sp, struct gpumem_jobinfo *ji, const char *policy, uid_t uid,
		    gid_t gid, uint32_t job, uint32_t step)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	const char *sn = step_name(job, step);

	memset(ji, 0, sizeof(*ji));
	ji->job = job;
	snprintf(ji->step, sizeof(ji->step), "%s", strchr(sn, '.') + 1);
	/*
	 * slurmd puts its node name in slurmstepd's own environment.  Never
	 * the job's: the name decides which node a failed check drains.
	 */
	(void)sp;
	if (getenv("SLURMD_NODENAME"))
		snprintf(ji->node, sizeof(ji->node), "%s", getenv("SLURMD_NODENAME"));
	else
		gethostname(ji->node, sizeof(ji->node) - 1);
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res)
		snprintf(ji->user, sizeof(ji->user), "%s", pw.pw_name);
	else
		snprintf(ji->user, sizeof(ji->user), "%u", (unsigned)uid);
	ji->uid = uid;
	ji->gid = gid;
	/* A forwarded name is the user's: the report holds it escaped. */
	gpumem_escape(ji->policy, sizeof(ji->policy), policy);
	snprintf(ji->gpus, sizeof(ji->gpus), "%s", gpumem_state.step_gpus ? gpumem_state.step_gpus : "");
}

/*
 * check.before: run now, as the user, with the job's GPUs and share.  A
 * failure fails the step (from task_init) when the policy says fail or
 * drain; the report itself is written by root at the end of the step.
 */
static void before_check(spank_t sp, const char *policy, uid_t uid, gid_t gid, uint32_t job,
			 uint32_t step)
{
	struct gpumem_state *st = &gpumem_state;

	st->ji = calloc(1, sizeof(*st->ji));
	st->before = calloc(1, sizeof(*st->before));
	st->after = calloc(1, sizeof(*st->after));
	if (!st->ji || !st->before || !st->after)
		return;
	jobinfo(sp, st->ji, policy, uid, gid, job, step);
	st->checks = gpumem_jobcheck_applies(sp, st->ji);
	if (!st->checks || !st->eff.check.before)
		return;
	gpumem_jobcheck_run(st, st->ji, "before", st->has_dev, 1, st->before);
	if (!strcmp(st->before->verdict, "fail") && st->eff.check.on_fail != GPUMEM_ONFAIL_WARN) {
		char msg[700];

		snprintf(msg, sizeof(msg), "GPU check before the job failed on %s: %s",
			 st->ji->node, st->before->reason);
		defer("%s", msg);
	}
}

/* The entries of list (n) joined with commas, leaving out those of kind 'skip'. */
static char *join_list(char list[][64], int n, int skip)
{
	char *out = calloc(1, GPUMEM_GPU_LIST_MAX);
	size_t o = 0;

	for (int i = 0; out && i < n; i++) {
		if (gpumem_gpu_kind(list[i], NULL, 0) == skip)
			continue;
		o += (size_t)snprintf(out + o, GPUMEM_GPU_LIST_MAX - o, "%s%s", o ? "," : "", list[i]);
		if (o >= GPUMEM_GPU_LIST_MAX)
			break;
	}
	return out;
}

/* Under MIG no L2 lines can persist: the limit is not set (0 would be moot). */
static int drop_l2(struct gpumem_env *env)
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
static void mig_notes(struct gpumem_state *st, char node[][64], char task[][64], int n,
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
			fprintf(f, "; per-job MPS daemon started on the step's MIG instances (each "
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
		slurm_info("gpumem: job %s: %.*s", step_name(job, step),
			   nl ? (int)(nl - l) : (int)strlen(l), l);
	}
	st->mig_notes = notes;
}

int gpumem_remote_user_init(spank_t sp)
{
	struct gpumem_state *st = &gpumem_state;
	struct gpumem_diags d = { 0 }, envd = { 0 };
	struct gpumem_policy user;
	struct gpumem_node node;
	struct gpumem_env env;
	char list[GPUMEM_MAX_GPUS][64], tlist[GPUMEM_MAX_GPUS][64], summary[2048];
	const char *src = NULL, *control;
	char *name = NULL;
	uint32_t job = 0, step = 0;
	uid_t uid = 0;
	gid_t gid = 0;
	int have_user, ngpu_env, has_dev, off = 0;

	spank_get_item(sp, S_JOB_UID, &uid);
	spank_get_item(sp, S_JOB_GID, &gid);
	spank_get_item(sp, S_JOB_ID, &job);
	spank_get_item(sp, S_JOB_STEPID, &step);

	if (st->deferred_error)
		goto out;       /* the site file is unusable: task_init says why */
	have_user = user_policy(sp, &user, &name, &d);
	if (have_user < 0 ||
	    gpumem_policy_effective(st->have_site ? &st->site : NULL, have_user ? &user : NULL,
				    name, &st->eff, &d) < 0) {
		char *msg = gpumem_diags_join(&d, 1);

		log_diags(&d, job, step);
		defer_lines("policy rejected on this node: %s", msg ? msg : "out of memory");
		free(msg);
		goto out;
	}
	st->have_eff = 1;
	/* Nothing asked, nothing set: keep steps without a policy cheap. */
	if (!have_user && st->eff.set == 0 && st->eff.sections == 0)
		goto out;

	memset(&node, 0, sizeof(node));
	ngpu_env = gpumem_gpus_from_env(job_getenv, sp, list, GPUMEM_MAX_GPUS, &src);
	/* Helpers run in the step's devices cgroup: they get the tasks' numbering. */
	if (ngpu_env > 0)
		gpumem_gpus_for_tasks(job_getenv, sp, src, list, ngpu_env, tlist, GPUMEM_MAX_GPUS);
	has_dev = access(st->args.nvidia_dev, F_OK) == 0;
	st->has_dev = has_dev;
	node.ngpus = 0;
	if (has_dev && ngpu_env != 0 && (st->eff.set & GPUMEM_K_L2_LIMIT))
		probe(&st->args, uid, gid, tlist, ngpu_env, &node);
	st->ngpus = node.ngpus;
	if (ngpu_env > 0) {
		st->step_gpus = join_list(list, ngpu_env, GPUMEM_GPU_MIG + 100);
		st->task_gpus = join_list(tlist, ngpu_env, GPUMEM_GPU_MIG + 100);
		st->l2_gpus = join_list(tlist, ngpu_env, GPUMEM_GPU_MIG);
		mig_notes(st, list, tlist, ngpu_env, job, step);
	}
	if (access(st->args.um_library, R_OK) == 0)
		node.um_library = st->args.um_library;

	if (st->eff.mps.daemon == GPUMEM_DAEMON_JOB) {
		struct gpumem_diags quiet = { 0 };
		const char *l2 = NULL;
		char *err = NULL;

		/* The MPS server takes its L2 limit from its own environment. */
		if (gpumem_policy_env(&st->eff, &node, &env, &quiet) == 0)
			for (int i = 0; i < env.n; i++)
				if (!strcmp(env.var[i].name, GPUMEM_ENV_L2_PCT))
					l2 = env.var[i].value;
		gpumem_diags_free(&quiet);
		control = gpumem_mps_find(st->args.mps_control);
		if (!has_dev || control == NULL) {
			gpumem_info("gpumem: job %s: mps.daemon=job skipped: %s", step_name(job, step),
				   !has_dev ? "no GPU on this node" :
				   "nvidia-cuda-mps-control not found");
		} else if (gpumem_mps_start(control, uid, gid, st->task_gpus,
					    l2 && !st->mig ? atoi(l2) : -1, job, step,
					    st->args.timeout, &st->mps_dir, &err) < 0) {
			defer("cannot start the per-job MPS daemon: %s", err ? err : "error");
			free(err);
			goto out;
		} else {
			static char pipe_dir[4200], log_dir[4200];

			snprintf(pipe_dir, sizeof(pipe_dir), "%s/pipe", st->mps_dir);
			snprintf(log_dir, sizeof(log_dir), "%s/log", st->mps_dir);
			node.mps_pipe_dir = pipe_dir;
			node.mps_log_dir = log_dir;
		}
	}
	if (gpumem_policy_env(&st->eff, &node, &env, &envd) < 0 ||
	    (st->mig && drop_l2(&env)) || set_env(sp, &env) < 0) {
		defer("%s", "cannot build the task environment");
		goto out;
	}
	/*
	 * What only the node can know (the GPU's own L2 maximum, a missing
	 * library) is shown to the user too, from task_init, whose stderr
	 * is the task's.
	 */
	st->user_notes = gpumem_diags_join(&envd, 0);
	if (st->mig_notes) {
		char *all = NULL;

		if (asprintf(&all, "%s%s%s", st->user_notes ? st->user_notes : "",
			     st->user_notes && *st->user_notes ? "\n" : "", st->mig_notes) >= 0) {
			free(st->user_notes);
			st->user_notes = all;
		}
	}
	spank_setenv(sp, "GPUMEM_POLICY", have_user ? name : "site defaults", 1);
	if (st->eff.check.before || st->eff.check.after)
		before_check(sp, have_user ? name : "site defaults", uid, gid, job, step);
	log_diags(&d, job, step);
	log_diags(&envd, job, step);
	for (int i = 0; i < env.n && off < (int)sizeof(summary) - 1; i++)
		off += snprintf(summary + off, sizeof(summary) - (size_t)off, " %s=%s",
				env.var[i].name, env.var[i].value);
	if (off == 0)
		snprintf(summary, sizeof(summary), " (nothing to set)");
	gpumem_info("gpumem: job %s: policy %s; GPUs %s%s; set%s", step_name(job, step),
		   have_user ? name : "site defaults", src ? src : "none",
		   has_dev ? "" : " (no GPU device on this node: probe, MPS daemon, check "
		   "and L2 reset skipped)", summary);
out:
	gpumem_diags_free(&d);
	gpumem_diags_free(&envd);
	free(name);
	return 0;
}

int gpumem_remote_task_init(spank_t sp)
{
	uint32_t task = 0;

	if (gpumem_state.deferred_error) {
		/* Escaped when deferred: one log line per line, nothing raw. */
		for (char *l = gpumem_state.deferred_error, *nl; l && *l; l = nl ? nl + 1 : NULL) {
			nl = strchr(l, '\n');
			slurm_error("gpumem: %.*s", nl ? (int)(nl - l) : (int)strlen(l), l);
		}
		return -1;
	}
	/* Once per node: the first local task says what the node adjusted. */
	if (gpumem_state.user_notes && spank_get_item(sp, S_TASK_ID, &task) == ESPANK_SUCCESS &&
	    task == 0) {
		char host[64] = "";

		gethostname(host, sizeof(host) - 1);
		for (char *l = gpumem_state.user_notes, *nl; l && *l; l = nl ? nl + 1 : NULL) {
			nl = strchr(l, '\n');
			fprintf(stderr, "gpumem: %s: %.*s\n", host, nl ? (int)(nl - l) : (int)strlen(l), l);
		}
	}
	return 0;
}

static void l2_reset(const struct gpumem_state *st, uid_t uid, gid_t gid)
{
	char path[4200], gpus[GPUMEM_GPU_LIST_MAX + 32], timeout[32];
	char *argv[] = { path, "--timeout", timeout, NULL };
	char *envp[] = { "PATH=/usr/bin:/bin", gpus, NULL };
	struct gpumem_proc p = { 0 };

	snprintf(path, sizeof(path), "%s/gpumem-l2reset", st->args.libexecdir);
	snprintf(timeout, sizeof(timeout), "%d", st->args.timeout);
	snprintf(gpus, sizeof(gpus), "CUDA_VISIBLE_DEVICES=%s", st->l2_gpus ? st->l2_gpus : "");
	if (!st->l2_gpus)
		envp[1] = NULL;
	if (st->l2_gpus && !st->l2_gpus[0]) {
		slurm_info("gpumem: L2 reset skipped: the step's GPUs are all MIG instances");
		return;
	}
	if (access(path, X_OK) != 0) {
		gpumem_info("gpumem: L2 reset skipped: %s not installed", path);
		return;
	}
	gpumem_proc_as_user(&p, path, argv, envp, uid, gid, st->args.timeout + 5);
	if (gpumem_proc_run(&p) == 0)
		gpumem_info("gpumem: L2 reset (exit %d): %s", p.status, p.out);
	gpumem_proc_free(&p);
}

/*
 * The end of the step on this node: stop the MPS daemon, run the after
 * check, reset L2, write the reports.  Run when the last local task has
 * exited, while the step is still alive: at slurm_spank_exit the job may
 * already be ending, and Slurm then signals every process it left,
 * helpers included (an srun-only job's after-check was killed within
 * 20 ms that way).  The step waits for this, as long as the check takes.
 */
static void teardown(spank_t sp)
{
	struct gpumem_state *st = &gpumem_state;
	uid_t uid = 0;
	gid_t gid = 0;

	if (st->torn_down)
		return;
	st->torn_down = 1;
	spank_get_item(sp, S_JOB_UID, &uid);
	spank_get_item(sp, S_JOB_GID, &gid);
	if (st->mps_dir) {
		gpumem_mps_stop(gpumem_mps_find(st->args.mps_control), uid, gid, st->mps_dir,
				st->args.timeout);
		free(st->mps_dir);
		st->mps_dir = NULL;
	}
	/* After the tasks, on the whole GPU: the job's share no longer applies. */
	if (st->checks && st->eff.check.after)
		gpumem_jobcheck_run(st, st->ji, "after", st->has_dev, 0, st->after);
	if (st->have_eff && (st->eff.set & GPUMEM_K_L2_LIMIT) && st->eff.l2.reset_at_exit &&
	    st->has_dev)
		l2_reset(st, uid, gid);
	if (st->ji) {
		gpumem_jobcheck_report(st, st->ji, st->before);
		gpumem_jobcheck_report(st, st->ji, st->after);
	}
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

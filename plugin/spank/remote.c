/*
 * slurmstepd (remote context).  user_init runs once per step and node with
 * the user's effective ids: it re-validates the forwarded policy, merges it
 * with this node's site file, learns the step's GPUs from a forked probe
 * (no CUDA in slurmstepd), starts a per-job MPS daemon if asked, and sets
 * the tasks' environment.  Its errors are kept for task_init, because an
 * error returned from user_init does not fail an srun.
 *
 * GPU work is the job's, not the step's (prolog.c, epilog.c): a step reads
 * the GPUs from the probe cache, joins the job's MPS daemon and learns
 * whether the job's before-check failed, all from root's state_dir; it
 * runs gpumem-probe or an MPS daemon of its own only when its own policy
 * asks for what the job's did not.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pwd.h>
#include "gpus.h"
#include "jobcheck.h"
#include "jobstate.h"
#include "log.h"
#include "mps.h"
#include "perjob.h"
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

/* The job's GPUs from root's probe cache (no CUDA): 0 when all are there. */
static int cached_gpus(char list[][64], int n, struct gpumem_node *node)
{
	char err[4400], *cache = NULL;
	int dfd = gpumem_state_open(gpumem_state.args.state_dir, 0, err, sizeof(err)), rv = -1;

	if (dfd >= 0 && n > 0)
		cache = gpumem_state_read(dfd, GPUMEM_PROBE_CACHE, 256 * 1024);
	if (cache && gpumem_gpus_match(cache, list, n, node) == n)
		rv = 0;
	else
		memset(node, 0, sizeof(*node));
	free(cache);
	if (dfd >= 0)
		close(dfd);
	return rv;
}

/*
 * check.before ran once for the job, in the job prolog; when it failed and
 * the policy says fail or drain, the prolog left the reason for every step
 * of the job on this node to fail with (from task_init).
 */
static void before_failed(uint32_t job)
{
	char err[4400], name[64], *msg;
	int dfd = gpumem_state_open(gpumem_state.args.state_dir, 0, err, sizeof(err));

	if (dfd < 0)
		return;
	snprintf(name, sizeof(name), GPUMEM_STATE_BEFORE, job);
	msg = gpumem_state_read(dfd, name, 4096);
	close(dfd);
	if (msg == NULL)
		return;
	msg[strcspn(msg, "\n")] = '\0';
	defer("%s", msg);
	free(msg);
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

/* The step's GPUs: Slurm's list, the tasks' numbering of it, what the node knows of them. */
static void step_gpus(spank_t sp, struct gpumem_state *st, struct gpumem_node *node,
		      uid_t uid, gid_t gid, uint32_t job, uint32_t step, const char **src)
{
	char list[GPUMEM_MAX_GPUS][64], tlist[GPUMEM_MAX_GPUS][64];
	int ngpu_env = gpumem_gpus_from_env(job_getenv, sp, list, GPUMEM_MAX_GPUS, src);

	/* Helpers run in the step's devices cgroup: they get the tasks' numbering. */
	if (ngpu_env > 0)
		gpumem_gpus_for_tasks(job_getenv, sp, *src, list, ngpu_env, tlist, GPUMEM_MAX_GPUS);
	st->has_dev = access(st->args.nvidia_dev, F_OK) == 0;
	node->ngpus = 0;
	if (st->has_dev && ngpu_env != 0 && (st->eff.set & GPUMEM_K_L2_LIMIT) &&
	    cached_gpus(list, ngpu_env, node) < 0)
		probe(&st->args, uid, gid, tlist, ngpu_env, node);
	st->ngpus = node->ngpus;
	if (ngpu_env > 0) {
		st->step_gpus = join_list(list, ngpu_env, GPUMEM_GPU_MIG + 100);
		st->task_gpus = join_list(tlist, ngpu_env, GPUMEM_GPU_MIG + 100);
		st->l2_gpus = join_list(list, ngpu_env, GPUMEM_GPU_MIG);
		mig_notes(st, list, tlist, ngpu_env, job, step);
	}
	if (access(st->args.um_library, R_OK) == 0)
		node->um_library = st->args.um_library;
}

/*
 * The job's daemon is started by a child of the job prolog (prolog.c): no
 * task starts before it is up, or CUDA would run without it.  -1 (deferred)
 * when it did not start.
 */
static int job_mps_ready(struct gpumem_state *st, uint32_t job)
{
	char err[512], why[2100] = "";
	int dfd = gpumem_state_open(st->args.state_dir, 0, err, sizeof(err)), rc = -2;

	if (dfd >= 0) {
		rc = gpumem_state_mps_wait(dfd, job, st->args.timeout * 1000L, why, sizeof(why));
		close(dfd);
	} else {
		snprintf(why, sizeof(why), "state directory: %s", err);
	}
	if (rc == 0)
		return 0;
	defer("the job's MPS daemon did not start: %s", rc == -2 && dfd >= 0 ?
	      "not up within the timeout" : why);
	return -1;
}

/*
 * mps.daemon=job: the job's daemon (started by the job prolog), else one
 * started for this step; its directories into node.  -1 (deferred) when
 * it cannot start.
 */
static int step_mps(struct gpumem_state *st, struct gpumem_node *node, uid_t uid, gid_t gid,
		    uint32_t job, uint32_t step)
{
	static char pipe_dir[4300], log_dir[4300];
	struct gpumem_diags quiet = { 0 };
	struct gpumem_env env;
	const char *l2 = NULL, *control, *dir;
	char job_mps[4200], *err = NULL;

	/* The MPS server takes its L2 limit from its own environment. */
	if (gpumem_policy_env(&st->eff, node, &env, &quiet) == 0)
		for (int i = 0; i < env.n; i++)
			if (!strcmp(env.var[i].name, GPUMEM_ENV_L2_PCT))
				l2 = env.var[i].value;
	gpumem_diags_free(&quiet);
	control = gpumem_mps_find(st->args.mps_control);
	if (st->has_dev && gpumem_state_mps_find(st->args.state_dir, job, uid, job_mps,
						 sizeof(job_mps)) == 0) {
		dir = job_mps;          /* the job's own, stopped by the job epilog */
		if (job_mps_ready(st, job) < 0)
			return -1;
	} else if (!st->has_dev || control == NULL) {
		gpumem_info("gpumem: job %s: mps.daemon=job skipped: %s", step_name(job, step),
			   !st->has_dev ? "no GPU on this node" : "nvidia-cuda-mps-control not found");
		return 0;
	} else if (gpumem_mps_start(control, uid, gid, st->task_gpus,
				    l2 && !st->mig ? atoi(l2) : -1, job, step,
				    st->args.timeout, &st->mps_dir, &err) < 0) {
		defer("cannot start the per-job MPS daemon: %s", err ? err : "error");
		free(err);
		return -1;
	} else {
		dir = st->mps_dir;
	}
	snprintf(pipe_dir, sizeof(pipe_dir), "%s/pipe", dir);
	snprintf(log_dir, sizeof(log_dir), "%s/log", dir);
	node->mps_pipe_dir = pipe_dir;
	node->mps_log_dir = log_dir;
	return 0;
}

/*
 * What only the node can know (the GPU's own L2 maximum, a missing
 * library) is shown to the user too, from task_init, whose stderr is the
 * task's.
 */
static void keep_user_notes(struct gpumem_state *st, struct gpumem_diags *envd)
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
	gpumem_info("gpumem: job %s: policy %s; GPUs %s%s; set%s", step_name(job, step), policy,
		   src ? src : "none", has_dev ? "" : " (no GPU device on this node: probe, MPS "
		   "daemon, check and L2 reset skipped)", summary);
}

int gpumem_remote_user_init(spank_t sp)
{
	struct gpumem_state *st = &gpumem_state;
	struct gpumem_diags d = { 0 }, envd = { 0 };
	struct gpumem_policy user;
	struct gpumem_node node;
	struct gpumem_env env;
	const char *src = NULL;
	char *name = NULL;
	uint32_t job = 0, step = 0;
	uid_t uid = 0;
	gid_t gid = 0;
	int have_user;

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
	step_gpus(sp, st, &node, uid, gid, job, step, &src);
	if (st->eff.mps.daemon == GPUMEM_DAEMON_JOB && step_mps(st, &node, uid, gid, job, step) < 0)
		goto out;
	if (gpumem_policy_env(&st->eff, &node, &env, &envd) < 0 ||
	    (st->mig && drop_l2(&env)) || set_env(sp, &env) < 0) {
		defer("%s", "cannot build the task environment");
		goto out;
	}
	keep_user_notes(st, &envd);
	spank_setenv(sp, "GPUMEM_POLICY", have_user ? name : "site defaults", 1);
	before_failed(job);
	log_diags(&d, job, step);
	log_diags(&envd, job, step);
	log_step(&env, job, step, have_user ? name : "site defaults", src, st->has_dev);
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

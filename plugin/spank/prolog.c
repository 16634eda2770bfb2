/*
 * The job prolog (slurm_spank_job_prolog): once per job and node, as root,
 * in Slurm's separate "slurmstepd spank prolog" process, before any step of
 * the job starts there.  It does the job's GPU work that used to run in
 * every step: learns the GPUs (gpumem-probe, cached in state_dir), starts
 * the per-job MPS daemon (as the user), runs check.before (as the user)
 * and writes its report at once.  What a step must know (a failed check)
 * is left in state_dir for the steps (remote.c) and the epilog (epilog.c).
 *
 * What this context gives (tests/slurm/prolog-facts.sh): slurm_spank_init
 * is not called, so the arguments are parsed here; spank_getenv fails, the
 * environment is getenv's; only S_JOB_UID/GID/ID are items; the user's
 * policy comes as SPANK_GPUMEM_POLICY_DATA (spank_job_control_setenv in
 * srun/sbatch/salloc) or as the option (spank_option_getopt), and is
 * validated again here exactly as a step does; the GPUs are physical
 * indexes (SLURM_JOB_GPUS), the prolog being outside the job's cgroup.
 */
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "gpus.h"
#include "jobcheck.h"
#include "jobstate.h"
#include "log.h"
#include "mps.h"
#include "perjob.h"
#include "proc.h"

/* A forwarded name goes into logs and reports: escaped (trust.h). */
static void plain(char *s, size_t len)
{
	char raw[256];

	snprintf(raw, sizeof(raw), "%s", s);
	gpumem_escape(s, len, raw);
}

/* The user's policy file, read as the user (never with root's rights). */
static char *read_as_user(const char *path, uid_t uid, gid_t gid, int timeout)
{
	char *argv[] = { "/bin/cat", "--", (char *)path, NULL };
	char *envp[] = { "PATH=/usr/bin:/bin", NULL };
	struct gpumem_proc p = { 0 };
	char *out = NULL;

	gpumem_proc_as_user(&p, argv[0], argv, envp, uid, gid, timeout);
	p.drop_stderr = 1;
	p.out_max = GPUMEM_MAX_FILE_BYTES + 1;
	if (gpumem_proc_run(&p) == 0 && p.status == 0 && !p.timed_out &&
	    strlen(p.out) <= GPUMEM_MAX_FILE_BYTES) {
		out = p.out;
		p.out = NULL;
	}
	gpumem_proc_free(&p);
	return out;
}

/* 1: a user policy, 0: none, -1: errors in d. */
static int job_policy(spank_t sp, struct gpumem_jobctx *c, struct gpumem_policy *p,
		      struct gpumem_diags *d)
{
	struct gpumem_state *st = &gpumem_state;
	const char *data = getenv("SPANK_" GPUMEM_FWD_DATA);
	const char *fwd = getenv("SPANK_" GPUMEM_FWD_NAME);
	char *opt = NULL, *path, *text;
	int rv;

	if (data) {
		snprintf(c->policy, sizeof(c->policy), "%.200s (as forwarded)", fwd ? fwd : "policy");
		plain(c->policy, sizeof(c->policy));
		if (strlen(data) > GPUMEM_MAX_FILE_BYTES) {
			gpumem_diag_add(d, GPUMEM_SEV_ERROR, c->policy, 0, 0,
				    "forwarded policy over %d bytes", GPUMEM_MAX_FILE_BYTES);
			return -1;
		}
		return gpumem_policy_parse(data, strlen(data), c->policy, p, d) < 0 ? -1 : 1;
	}
	if (spank_option_getopt(sp, &gpumem_policy_option, &opt) != ESPANK_SUCCESS || !opt)
		return 0;
	path = gpumem_policy_resolve(st->have_site ? &st->site : NULL, opt, d);
	if (path == NULL)
		return -1;
	snprintf(c->policy, sizeof(c->policy), "%s", path);
	plain(c->policy, sizeof(c->policy));
	text = read_as_user(path, c->uid, c->gid, st->args.timeout);
	free(path);
	if (text == NULL) {
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, c->policy, 0, 0, "cannot read it as the job's user");
		return -1;
	}
	rv = gpumem_policy_parse(text, strlen(text), c->policy, p, d);
	free(text);
	return rv < 0 ? -1 : 1;
}

static int env_get(void *ctx, const char *name, char *buf, int len)
{
	const char *v = getenv(name);

	(void)ctx;
	if (v == NULL || (int)strlen(v) >= len)
		return -1;
	snprintf(buf, (size_t)len, "%s", v);
	return 0;
}

static void fill_jobinfo(struct gpumem_jobctx *c, const char *step)
{
	struct gpumem_jobinfo *ji = &c->ji;
	struct passwd pw, *res = NULL;
	char buf[4096];
	size_t o = 0;

	memset(ji, 0, sizeof(*ji));
	ji->job = c->job;
	snprintf(ji->step, sizeof(ji->step), "%s", step);
	if (getenv("SLURMD_NODENAME"))
		snprintf(ji->node, sizeof(ji->node), "%s", getenv("SLURMD_NODENAME"));
	else
		gethostname(ji->node, sizeof(ji->node) - 1);
	if (getpwuid_r(c->uid, &pw, buf, sizeof(buf), &res) == 0 && res)
		snprintf(ji->user, sizeof(ji->user), "%s", pw.pw_name);
	else
		snprintf(ji->user, sizeof(ji->user), "%u", (unsigned)c->uid);
	ji->uid = c->uid;
	ji->gid = c->gid;
	snprintf(ji->policy, sizeof(ji->policy), "%s", c->policy);
	for (int i = 0; i < c->ngpus && o < sizeof(ji->gpus); i++)
		o += (size_t)snprintf(ji->gpus + o, sizeof(ji->gpus) - o, "%s%s", i ? "," : "",
				      c->list[i]);
}

int gpumem_jobctx_init(spank_t sp, int ac, char **av, const char *step,
		       struct gpumem_jobctx *c)
{
	struct gpumem_state *st = &gpumem_state;
	struct gpumem_diags d = { 0 };
	struct gpumem_policy user;
	const char *src;
	int have_user, rv = -1;

	memset(c, 0, sizeof(*c));
	c->dfd = -1;
	snprintf(c->policy, sizeof(c->policy), "site defaults");
	/* slurm_spank_init is not called in this context: set up here. */
	memset(st, 0, sizeof(*st));
	gpumem_site_init(&st->site);
	spank_get_item(sp, S_JOB_ID, &c->job);
	spank_get_item(sp, S_JOB_UID, &c->uid);
	spank_get_item(sp, S_JOB_GID, &c->gid);
	if (gpumem_args_parse(&st->args, ac, av) < 0)
		return -1;
	if (st->args.site) {
		if (gpumem_site_load(st->args.site, &st->site, &d) < 0)
			goto fail;
		st->have_site = 1;
	}
	have_user = job_policy(sp, c, &user, &d);
	if (have_user < 0 ||
	    gpumem_policy_effective(st->have_site ? &st->site : NULL, have_user ? &user : NULL,
				    c->policy, &st->eff, &d) < 0)
		goto fail;
	st->have_eff = 1;
	c->ngpus = gpumem_gpus_from_env(env_get, NULL, c->list, GPUMEM_MAX_GPUS, &src);
	st->has_dev = access(st->args.nvidia_dev, F_OK) == 0;
	fill_jobinfo(c, step);
	rv = 0;
fail:
	if (rv < 0) {
		char *msg = gpumem_diags_join(&d, 1);

		/* The steps fail with this reason too (their own validation). */
		gpumem_error("gpumem: job %u %s: policy rejected: %.600s", c->job, step,
			    msg ? msg : "out of memory");
		free(msg);
	}
	gpumem_diags_free(&d);
	return rv;
}

void gpumem_jobctx_free(struct gpumem_jobctx *c)
{
	struct gpumem_state *st = &gpumem_state;

	if (c->dfd >= 0)
		close(c->dfd);
	c->dfd = -1;
	free(st->mps_dir);
	gpumem_site_free(&st->site);
	gpumem_args_free(&st->args);
	memset(st, 0, sizeof(*st));
}

/* Run gpumem-probe as root (forked, never in slurmstepd) on the job's GPUs. */
static void probe_to_cache(struct gpumem_jobctx *c)
{
	struct gpumem_state *st = &gpumem_state;
	char path[4200], gpus[GPUMEM_GPU_LIST_MAX + 32];
	char *argv[] = { path, NULL };
	char *envp[] = { "PATH=/usr/bin:/bin", gpus, NULL };
	struct gpumem_proc p = { 0 };

	snprintf(path, sizeof(path), "%s/gpumem-probe", st->args.libexecdir);
	snprintf(gpus, sizeof(gpus), "CUDA_VISIBLE_DEVICES=%s", c->ji.gpus);
	/*
	 * As root, not as the user: the cache serves every later job, so no
	 * user may have had a hand in what it says.
	 */
	gpumem_proc_as_user(&p, path, argv, envp, 0, 0, st->args.timeout);
	if (gpumem_proc_run(&p) < 0 || p.status != 0) {
		gpumem_info("gpumem: job %u: %s: %s", c->job, path,
			   p.timed_out ? "timed out" : p.out ? p.out : "cannot run");
	} else if (gpumem_probe_cache_merge(c->dfd, p.out, c->list, c->ngpus) < 0) {
		gpumem_error("gpumem: job %u: cannot write the probe cache in %s", c->job,
			    st->args.state_dir);
	} else {
		gpumem_info("gpumem: job %u: probed GPUs %s, cached in %s/%s", c->job, c->ji.gpus,
			   st->args.state_dir, GPUMEM_PROBE_CACHE);
	}
	gpumem_proc_free(&p);
}

int gpumem_jobctx_gpus(struct gpumem_jobctx *c, struct gpumem_node *node, int may_probe)
{
	char *cache = NULL;

	memset(node, 0, sizeof(*node));
	if (c->ngpus <= 0 || c->dfd < 0)
		return 0;
	for (int pass = 0; pass < 2; pass++) {
		cache = gpumem_state_read(c->dfd, GPUMEM_PROBE_CACHE, 256 * 1024);
		if (cache && gpumem_gpus_match(cache, c->list, c->ngpus, node) == c->ngpus) {
			free(cache);
			return 1;
		}
		free(cache);
		memset(node, 0, sizeof(*node));
		if (!may_probe || pass)
			break;
		probe_to_cache(c);
	}
	return 0;
}

void gpumem_perjob_check(struct gpumem_jobctx *c, const struct gpumem_node *node,
			 const char *phase, int with_share, struct gpumem_checkrun *r)
{
	struct gpumem_state *st = &gpumem_state;
	char when[32];

	if (st->has_dev && gpumem_interval_passed(c, node, when, sizeof(when))) {
		memset(r, 0, sizeof(*r));
		r->done = 1;
		r->exit_code = -1;
		snprintf(r->phase, sizeof(r->phase), "%s", phase);
		{
			time_t t = time(NULL);
			struct tm tm;

			gmtime_r(&t, &tm);
			strftime(r->time, sizeof(r->time), "%Y-%m-%dT%H:%M:%SZ", &tm);
		}
		snprintf(r->status, sizeof(r->status), "skipped");
		snprintf(r->verdict, sizeof(r->verdict), "skipped");
		snprintf(r->reason, sizeof(r->reason), "passed at %s", when);
	} else {
		gpumem_jobcheck_run(st, &c->ji, phase, st->has_dev, with_share, r);
	}
	gpumem_jobcheck_report(st, &c->ji, r);
}

/* The child's outcome, for the steps and the epilog (gpumem_state_mps_record). */
static void mps_outcome(const struct gpumem_jobctx *c, const char *dir, int ok, const char *why)
{
	if (ok)
		gpumem_info("gpumem: job %u: per-job MPS daemon started in %s", c->job, dir);
	else
		gpumem_error("gpumem: job %u: per-job MPS daemon not started: %.500s", c->job, why);
	if (gpumem_state_mps_record(c->dfd, c->job, ok ? NULL : why) < 0)
		gpumem_error("gpumem: job %u: cannot record the MPS daemon's start", c->job);
}

/*
 * nvidia-cuda-mps-control -d returns once its daemon is up, 19-21 ms on
 * an H100 (tests/gpu/results/2026-11-24-h100-b), time Slurm spends
 * launching the job's first step anyway.  So the prolog returns at once and
 * a child of it (its own session: nothing of the prolog's end reaches it)
 * starts the daemon and records the outcome in root's state directory;
 * the steps wait for that record before their tasks start (remote.c), the
 * epilog before it stops the daemon (epilog.c).  Where no child can be
 * made, the prolog starts the daemon itself.
 */
static void start_mps_child(const struct gpumem_jobctx *c, const char *control, const char *dir,
			    int l2)
{
	struct gpumem_state *st = &gpumem_state;
	char *why = NULL;
	pid_t pid = fork();
	int fd;

	if (pid > 0)
		return;
	if (pid == 0) {
		setsid();
		fd = open("/dev/null", O_RDWR | O_CLOEXEC);
		for (int i = 0; fd >= 0 && i < 3; i++)
			dup2(fd, i);
	}
	if (gpumem_mps_start_in(control, c->uid, c->gid, c->ji.gpus, l2, dir, st->args.timeout,
				&why) < 0)
		mps_outcome(c, dir, 0, why ? why : "error");
	else
		mps_outcome(c, dir, 1, NULL);
	free(why);
	if (pid == 0)
		_exit(0);
}

/* The per-job MPS daemon: root makes its directory, the user runs it. */
static void start_mps(struct gpumem_jobctx *c, const struct gpumem_node *node)
{
	struct gpumem_state *st = &gpumem_state;
	struct gpumem_diags quiet = { 0 };
	struct gpumem_env env;
	const char *control = gpumem_mps_find(st->args.mps_control), *l2 = NULL;
	char dir[4200], err[4400];

	if (!st->has_dev || control == NULL || c->dfd < 0) {
		gpumem_info("gpumem: job %u: mps.daemon=job skipped: %s", c->job,
			   !st->has_dev ? "no GPU on this node" : control == NULL ?
			   "nvidia-cuda-mps-control not found" : "no state directory");
		return;
	}
	/* The MPS server takes its L2 limit from its own environment. */
	if (gpumem_policy_env(&st->eff, node, &env, &quiet) == 0)
		for (int i = 0; i < env.n; i++)
			if (!strcmp(env.var[i].name, GPUMEM_ENV_L2_PCT))
				l2 = env.var[i].value;
	gpumem_diags_free(&quiet);
	if (gpumem_state_mps_dir(c->dfd, st->args.state_dir, c->job, c->uid, c->gid, dir,
				 sizeof(dir), err, sizeof(err)) < 0) {
		gpumem_error("gpumem: job %u: per-job MPS daemon not started: %s", c->job, err);
		return;
	}
	start_mps_child(c, control, dir, l2 ? atoi(l2) : -1);
	st->mps_dir = strdup(dir);
}

/*
 * A check that started but did not finish (killed by a signal, timed out):
 * the job's user may have killed it, so with on_fail fail it never counts
 * as a pass; it fails the steps, and never drains (a user could drain
 * nodes at will).  A check that could not start (not installed) is no such.
 */
static int unfinished_check(const struct gpumem_checkrun *r)
{
	return !strcmp(r->status, "timed_out") || (!strcmp(r->status, "failed") && r->exit_code > 128);
}

int gpumem_job_prolog(spank_t sp, int ac, char **av)
{
	struct gpumem_state *st = &gpumem_state;
	struct gpumem_jobctx c;
	struct gpumem_node node;
	struct gpumem_checkrun r;
	char err[4400];
	int gpu_work;

	if (gpumem_jobctx_init(sp, ac, av, "prolog", &c) < 0)
		goto out;       /* every step fails with the reason */
	gpu_work = st->has_dev && ((st->eff.set & GPUMEM_K_L2_LIMIT) ||
				   st->eff.mps.daemon == GPUMEM_DAEMON_JOB || st->eff.check.before ||
				   st->eff.check.after);
	if (!gpu_work && !st->eff.check.before)
		goto out;       /* nothing asked, nothing done */
	c.dfd = gpumem_state_open(st->args.state_dir, 1, err, sizeof(err));
	if (c.dfd < 0)
		gpumem_error("gpumem: job %u: state directory unusable: %s", c.job, err);
	memset(&node, 0, sizeof(node));
	if (st->has_dev && (st->eff.set & GPUMEM_K_L2_LIMIT))
		gpumem_jobctx_gpus(&c, &node, 1);
	if (st->eff.mps.daemon == GPUMEM_DAEMON_JOB && c.ngpus >= 0)
		start_mps(&c, &node);
	else if (st->eff.mps.daemon == GPUMEM_DAEMON_JOB)
		gpumem_info("gpumem: job %u: Slurm gave the job no GPU list: each step starts "
			   "its own MPS daemon on the GPUs it names", c.job);
	if (st->eff.check.before) {
		gpumem_perjob_check(&c, &node, "before", 1, &r);
		int unfinished = unfinished_check(&r);

		if ((!strcmp(r.verdict, "fail") || unfinished) &&
		    st->eff.check.on_fail != GPUMEM_ONFAIL_WARN) {
			char name[64], msg[700];

			/* The steps fail with this (remote.c); the epilog removes it. */
			snprintf(name, sizeof(name), GPUMEM_STATE_BEFORE, c.job);
			snprintf(msg, sizeof(msg), "GPU check before the job %s on %s: %s\n",
				 unfinished ? "did not finish (counted as failed)" : "failed",
				 c.ji.node, r.reason);
			if (c.dfd < 0 || gpumem_state_write(c.dfd, name, msg) < 0)
				gpumem_error("gpumem: job %u: cannot record the failed check for the "
					    "steps", c.job);
		}
		gpumem_jobcheck_free(&r);
	}
out:
	gpumem_jobctx_free(&c);
	return 0;       /* a failing prolog would drain the node: never for this */
}

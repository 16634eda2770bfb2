/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the job prolog and the job epilog share (jobctx.h): both run as root
 * in "slurmstepd spank prolog|epilog", a process of their own outside the
 * job's cgroup, where Slurm gives only the job id, uid and gid as items,
 * the rest through the Prolog environment (getenv) and the option
 * (spank_option_getopt; tests/slurm/prolog-facts.sh).  The job's policy is
 * decided once, by the prolog, from the user's and the site file (read by
 * the prolog only), and recorded with that file's text for the steps and
 * the epilog (jobpolicy.c): the epilog never reads the site file, and a
 * node without the record (no prolog ran there, or it failed) gets only
 * the cleanup, logged.
 */
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core_policy.h"
#include "evidence.h"
#include "gpustate.h"
#include "history.h"
#include "jobctx.h"
#include "jobreport.h"
#include "jobpolicy.h"
#include "log.h"
#include "mps.h"
#include "core_base.h"
#include "slurmconf.h"

void gpumem_stdio_open(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) < 0)
			break;
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
	if (getenv(GPUMEM_ENV_NODENAME))
		snprintf(ji->node, sizeof(ji->node), "%s", getenv(GPUMEM_ENV_NODENAME));
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

/* Root's empty mps_dir/nomps, else a path no one can make (mps_dir is unusable). */
static char *nomps(const char *mps_dir)
{
	char path[4200];

	if (gpumem_mps_nomps(mps_dir, path, sizeof(path)) < 0)
		snprintf(path, sizeof(path), "%s", GPUMEM_MPS_NOMPS_NONE);
	return strdup(path);
}

/* The plugstack arguments (the one setup, setup.c) and, in the prolog only, the site file. */
static int setup(struct gpumem_jobctx *c, int ac, char **av, int prolog)
{
	int rv = -1;

	gpumem_site_init(&c->site);
	/* Even when they are wrong: the epilog still cleans up with what they say. */
	c->args = &gpumem_plugin.args;
	if (gpumem_plugin_setup(ac, av, S_CTX_JOB_SCRIPT) < 0)
		goto fail;
	c->has_dev = gpumem_plugin.has_dev;
	/* Only the prolog reads the site file: the epilog has the job's record. */
	if (prolog) {
		int have = gpumem_plugin_site(c->args->site, 0, &c->site, &c->site_text,
					    &c->site_error);

		if (have < 0)
			goto fail;      /* out of memory: no record, every step fails */
		c->have_site = have > 0;
	}
	rv = 0;
fail:
	return rv;
}

int gpumem_jobctx_init(spank_t sp, int ac, char **av, const char *step, int create,
		       struct gpumem_jobctx *c)
{
	long started = gpumem_mono_ms();
	const char *src;

	memset(c, 0, sizeof(*c));
	c->dfd = -1;
	snprintf(c->policy, sizeof(c->policy), "site defaults");
	gpumem_stdio_open();
	spank_get_item(sp, S_JOB_ID, &c->job);
	spank_get_item(sp, S_JOB_UID, &c->uid);
	spank_get_item(sp, S_JOB_GID, &c->gid);
	if (setup(c, ac, av, !strcmp(step, "prolog")) < 0)
		return -1;
	c->dfd = gpumem_state_open(c->args->state_dir, create, c->dir_err, sizeof(c->dir_err));
	/* Everything the hook runs ends before Slurm's own limit would kill it. */
	gpumem_hook_deadline(!strcmp(step, "epilog"), started, c->dfd);
	c->nomps = nomps(c->args->mps_dir);
	c->ngpus = gpumem_gpus_from_env(env_get, NULL, c->list, GPUMEM_MAX_GPUS, &src);
	/* No list where Slurm allocates the GPUs (gpus=gres): the job has none here. */
	if (c->ngpus < 0 && !c->args->all_gpus)
		c->ngpus = 0;
	fill_jobinfo(c, step);
	return 0;
}

int gpumem_jobctx_has_gpus(const struct gpumem_jobctx *c)
{
	return c->ngpus != 0;
}

/* The user's policy as Slurm hands it to this process (jobpolicy.c). */
static int user_policy(spank_t sp, const struct gpumem_jobctx *c, struct gpumem_policy *p,
		       char *name, size_t nlen, struct gpumem_diags *d)
{
	struct gpumem_policy_src src = {
		.data = getenv("SPANK_" GPUMEM_FWD_DATA), .fwd_name = getenv("SPANK_" GPUMEM_FWD_NAME),
		.as_root = 1, .uid = c->uid, .gid = c->gid, .timeout = c->args->timeout,
	};
	char *opt = NULL;

	if (src.data && strlen(src.data) > GPUMEM_MAX_FILE_BYTES) {
		src.data = NULL;
		src.data_too_big = 1;
	}
	if (src.data == NULL && !src.data_too_big &&
	    spank_option_getopt(sp, &gpumem_policy_option, &opt) == ESPANK_SUCCESS)
		src.option = opt;
	return gpumem_policy_of_job(c->have_site ? &c->site : NULL, &src, p, name, nlen, d);
}

/* The merge's warnings (clamps), said once for the job: every step applies its result. */
static void log_warnings(const struct gpumem_jobctx *c, const struct gpumem_diags *d)
{
	char *all = gpumem_diags_join(d, 0);
	int n = 0;

	for (char *l = all, *nl; l && *l && n < 20; l = nl ? nl + 1 : NULL, n++) {
		nl = strchr(l, '\n');
		gpumem_info("gpumem: job %u: %.*s", c->job, nl ? (int)(nl - l) : (int)strlen(l), l);
	}
	free(all);
}

/* The policy decided (c->eff) and the site file it was decided under, into the record. */
static int record_policy(struct gpumem_jobctx *c, struct gpumem_diags *d)
{
	return gpumem_jobpolicy_record(&c->eff, c->site_text, c->have_site ? c->args->site : NULL,
				       &c->rec, d);
}

/* The site's defaults in full, for a job whose own policy was refused. */
static int site_defaults(struct gpumem_jobctx *c)
{
	struct gpumem_diags d = { 0 };
	int rv = gpumem_policy_effective(c->have_site ? &c->site : NULL, NULL, "site defaults",
					 &c->eff, &d);

	if (rv == 0)
		rv = record_policy(c, &d);
	gpumem_diags_free(&d);
	c->have_eff = rv == 0;
	snprintf(c->policy, sizeof(c->policy), "site defaults");
	snprintf(c->ji.policy, sizeof(c->ji.policy), "%s", c->policy);
	return rv;
}

/* Why the user's policy was refused, for the record: at most 16 KiB, whole lines. */
static char *refusal(const struct gpumem_diags *d)
{
	char *msg = gpumem_diags_join(d, 1), *cut;

	if (msg == NULL)
		return strdup("out of memory");
	if (strlen(msg) > 16384) {
		msg[16384] = '\0';
		if ((cut = strrchr(msg, '\n')) != NULL)
			strcpy(cut, "\n... (more errors in the job prolog's log)");
	}
	return msg;
}

static int decide(spank_t sp, struct gpumem_jobctx *c)
{
	struct gpumem_diags d = { 0 };
	struct gpumem_policy user;
	char name[4200] = "";
	char *msg;
	int have;

	if (c->site_error) {            /* the site file: nothing applies, every step fails */
		c->rec.rejected = strdup(c->site_error);
		return -1;
	}
	have = user_policy(sp, c, &user, name, sizeof(name), &d);
	if (have >= 0 && gpumem_policy_effective(c->have_site ? &c->site : NULL,
						  have ? &user : NULL, name, &c->eff, &d) == 0 &&
	    record_policy(c, &d) == 0) {
		c->have_eff = 1;
		log_warnings(c, &d);
		if (have) {
			c->rec.name = strdup(name);
			c->rec.policy = gpumem_policy_format(&user, GPUMEM_FMT_JSON, 1);
			gpumem_escape(c->policy, sizeof(c->policy), name);
			snprintf(c->ji.policy, sizeof(c->ji.policy), "%s", c->policy);
		}
		gpumem_diags_free(&d);
		return 0;
	}
	/* Refused: the steps fail with the reason; the site's defaults still apply in full. */
	gpumem_jobrec_free(&c->rec);
	msg = gpumem_diags_join(&d, 1);
	gpumem_error("gpumem: job %u: policy rejected, the site's defaults apply and every step "
		     "fails: %.600s", c->job, msg ? msg : "out of memory");
	free(msg);
	c->rec.rejected = refusal(&d);
	gpumem_diags_free(&d);
	return site_defaults(c);
}

static int recall(spank_t sp, struct gpumem_jobctx *c)
{
	struct gpumem_diags d = { 0 };
	char why[256];
	int have;

	(void)sp;
	if (gpumem_jobrec_read(c->dfd, c->job, c->ji.node, &c->rec, why, sizeof(why)) < 0) {
		/* Fail closed: without the prolog's record none of the job's steps ran here. */
		gpumem_info("gpumem: job %u: epilog: %s (the job prolog did not run on this node, "
			    "or failed: no step of the job ran here): cleanup only, no after-check",
			    c->job, why);
		return -1;
	}
	have = gpumem_jobpolicy_recall(&c->rec, &c->eff, &c->site, &c->have_site, &d);
	if (have < 0) {
		char *msg = gpumem_diags_join(&d, 1);

		gpumem_error("gpumem: job %u: epilog: the job's record does not read back, cleanup "
			     "only, no after-check: %.600s", c->job, msg ? msg : "out of memory");
		free(msg);
	}
	gpumem_diags_free(&d);
	/* What gpumem-check gets as its site file: the recorded one. */
	if (have >= 0 && c->rec.site)
		c->site_text = strdup(c->rec.site);
	if (have <= 0)
		return -1;      /* the site file was unusable at the prolog: nothing applied */
	c->have_eff = 1;
	gpumem_escape(c->policy, sizeof(c->policy), c->rec.policy == NULL ? "site defaults" :
		      c->rec.name ? c->rec.name : "policy");
	snprintf(c->ji.policy, sizeof(c->ji.policy), "%s", c->policy);
	return 0;
}

/*
 * The check's contract (check_ctx.h), made once the policy is settled:
 * the job, its node and GPUs (c->ji), check_user, the site's check, drain
 * and report settings as the job's record holds them (none without a site
 * file), the job's check, and root's state directory.  The check's files
 * take only this.
 */
static void make_check(struct gpumem_jobctx *c)
{
	struct gpumem_check_ctx *k = &c->check;
	const struct gpumem_site *s = c->have_site ? &c->site : NULL;

	memset(k, 0, sizeof(*k));
	k->job.id = c->job;
	k->job.uid = c->uid;
	k->job.gid = c->gid;
	snprintf(k->job.user, sizeof(k->job.user), "%s", c->ji.user);
	snprintf(k->job.hook, sizeof(k->job.hook), "%s", c->ji.step);
	snprintf(k->job.policy, sizeof(k->job.policy), "%s", c->ji.policy);
	k->job.eff = c->have_eff ? &c->eff : NULL;
	snprintf(k->node.name, sizeof(k->node.name), "%s", c->ji.node);
	k->node.has_dev = c->has_dev;
	k->node.nvidia_dev = c->args->nvidia_dev;
	memcpy(k->gpus.list, c->list, sizeof(k->gpus.list));
	k->gpus.n = c->ngpus;
	snprintf(k->gpus.text, sizeof(k->gpus.text), "%s", c->ji.gpus);
	k->as.check = c->args->check;
	k->as.libexecdir = c->args->libexecdir;
	k->as.uid = c->args->check_uid;
	k->as.gid = c->args->check_gid;
	k->as.missing = gpumem_args_check_missing(c->args);
	k->as.nomps = c->nomps ? c->nomps : GPUMEM_MPS_NOMPS_NONE;
	k->check.site_text = s ? c->site_text : NULL;
	k->check.timeout_s = s ? s->check_timeout_s : c->args->timeout;
	k->check.min_interval_min = s ? s->check_min_interval_min : 0;
	k->check.warm_s = s ? s->check_warm_s : 0;
	k->check.warm_min_gpus = s ? s->check_warm_min_gpus : 1;
	gpumem_pass_refs(s, k->check.refs);
	k->check.min_fraction = c->eff.check.min_fraction;
	k->check.strict = gpumem_check_strict(&c->eff, s);
	k->check.l2_ab = c->eff.check.l2_ab;
	k->check.on_fail = c->eff.check.on_fail;
	k->drain.enabled = s && s->drain.enabled;
	k->drain.reason = s ? s->drain.reason : NULL;
	k->report.dir = s ? s->report.dir : NULL;
	k->report.textfile_dir = s ? s->report.textfile_dir : NULL;
	k->state.dfd = c->dfd;
	k->state.dir = c->args->state_dir;
}

int gpumem_jobctx_decide(spank_t sp, struct gpumem_jobctx *c)
{
	int rv = decide(sp, c);

	make_check(c);
	return rv;
}

int gpumem_jobctx_recall(spank_t sp, struct gpumem_jobctx *c)
{
	int rv = recall(sp, c);

	make_check(c);
	return rv;
}

void gpumem_jobctx_free(struct gpumem_jobctx *c)
{
	if (c->dfd >= 0)
		close(c->dfd);
	c->dfd = -1;
	gpumem_jobrec_free(&c->rec);
	gpumem_site_free(&c->site);
	free(c->site_text);
	free(c->site_error);
	free(c->nomps);
	free(c->profile);
	c->args = NULL;
	gpumem_plugin_teardown();
}

static void probe_to_cache(struct gpumem_jobctx *c)
{
	const struct gpumem_args *a = c->args;
	struct gpumem_proc p = { 0 };

	/*
	 * As root, not as the user: the cache serves every later job, so no
	 * user may have had a hand in what it says.
	 */
	if (gpumem_probe_run(&p, a->libexecdir, c->nomps ? c->nomps : GPUMEM_MPS_NOMPS_NONE,
			     c->ji.gpus, 0, 0, a->timeout) < 0) {
		gpumem_info("gpumem: job %u: %s/gpumem-probe: %s", c->job, a->libexecdir,
			   p.timed_out ? "timed out" : p.out ? p.out : "cannot run");
	} else if (gpumem_probe_cache_merge(c->dfd, p.out, c->list, c->ngpus) < 0) {
		gpumem_error("gpumem: job %u: cannot write the probe cache in %s", c->job,
			    a->state_dir);
	} else {
		gpumem_info("gpumem: job %u: probed GPUs %s, cached in %s/%s", c->job, c->ji.gpus,
			   a->state_dir, GPUMEM_SF_PROBE_CACHE);
	}
	gpumem_proc_free(&p);
}

int gpumem_jobctx_gpus(struct gpumem_jobctx *c, struct gpumem_node *node, int may_probe)
{
	memset(node, 0, sizeof(*node));
	if (c->ngpus <= 0 || c->dfd < 0)
		return 0;
	if (gpumem_probe_cache_lookup(c->dfd, c->list, c->ngpus, node))
		return 1;
	if (!may_probe)
		return 0;
	probe_to_cache(c);
	return gpumem_probe_cache_lookup(c->dfd, c->list, c->ngpus, node);
}

int gpumem_jobctx_l2_pct(const struct gpumem_jobctx *c, const struct gpumem_node *node)
{
	struct gpumem_diags quiet = { 0 };
	struct gpumem_env env;
	int pct = -1;

	if (gpumem_policy_env(&c->eff, node, &env, &quiet) == 0)
		for (int i = 0; i < env.n; i++)
			if (!strcmp(env.var[i].name, GPUMEM_ENV_L2_PCT))
				pct = atoi(env.var[i].value);
	gpumem_diags_free(&quiet);
	return pct;
}

/* A result with no check run: STATUS and verdict alike, WHY, now. */
static void no_check(struct gpumem_checkrun *r, const char *phase, const char *status,
		     const char *why)
{
	time_t t = time(NULL);
	struct tm tm;

	memset(r, 0, sizeof(*r));
	r->done = 1;
	r->exit_code = -1;
	snprintf(r->phase, sizeof(r->phase), "%s", phase);
	gmtime_r(&t, &tm);
	strftime(r->time, sizeof(r->time), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(r->status, sizeof(r->status), "%s", status);
	snprintf(r->verdict, sizeof(r->verdict), "%s", status);
	snprintf(r->reason, sizeof(r->reason), "%s", why);
}

/*
 * The job's persisting-L2 set-aside, for the check's L2 A/B to measure
 * (gpumem-check --l2-setaside): the percent its tasks get on NODE; where
 * the node knows no L2 size to make a limit in bytes a percent (no probe of
 * its GPUs), the bytes, which the check turns into its GPU's share.  ""
 * when the policy sets none, or asks for no A/B.
 */
static void check_setaside(struct gpumem_jobctx *c, const struct gpumem_node *node)
{
	const uint64_t max_bytes = 1024ull * 1024 * 1024;
	char *sa = c->check.check.l2_setaside;
	const size_t len = sizeof(c->check.check.l2_setaside);
	int pct;

	sa[0] = '\0';
	if (!c->have_eff || !c->eff.check.l2_ab || !(c->eff.set & GPUMEM_K_L2_LIMIT))
		return;
	pct = gpumem_jobctx_l2_pct(c, node);
	if (pct > 0)
		snprintf(sa, len, "%d%%", pct > 100 ? 100 : pct);
	else if (pct < 0 && !c->eff.l2.limit_is_percent && c->eff.l2.limit_bytes)
		snprintf(sa, len, "%llu", (unsigned long long)
			 (c->eff.l2.limit_bytes < max_bytes ? c->eff.l2.limit_bytes : max_bytes));
}

void gpumem_perjob_check(struct gpumem_jobctx *c, const struct gpumem_node *node,
			 const char *phase, int forced, int l2_reset, struct gpumem_checkrun *r)
{
	const struct gpumem_check_ctx *k = &c->check;
	struct gpumem_evidence *ev = calloc(1, sizeof(*ev));

	check_setaside(c, node);
	/*
	 * Measured unless every GPU's evidence holds (evidence.c); never when
	 * forced.  Where check_user is the job's own user, neither: the
	 * check (gpumem_jobcheck_run) says "not run", counted as failed, and
	 * no gpumem-health runs within the job's reach to rest on a pass.
	 */
	if (ev && k->node.has_dev && k->job.uid != k->as.uid &&
	    gpumem_evidence_decide(k, phase, forced, ev)) {
		/* The reason: what it rests on, without the "reused: " the status says. */
		no_check(r, phase, "reused", ev->basis + strlen("reused: "));
		gpumem_evidence_reused(ev, r);
	} else {
		gpumem_jobcheck_run(k, phase, l2_reset, r);
		if (k->node.has_dev) {
			gpumem_history_judge(k, r);
			gpumem_suspect_update(k, node, r);
			if (ev)
				gpumem_evidence_record(k, ev, r);
		}
	}
	free(ev);
	gpumem_jobreport_check(k, r, c->profile);
}

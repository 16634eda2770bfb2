/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The GPU check of a job, run by the job prolog (check.before) and the job
 * epilog (check.after): gpumem-check runs as the site's check_user (never
 * the job's user, never root: plugstack check_user=, default nobody), with
 * no groups, in a session of its own, on the job's bare GPUs (never through
 * the job's MPS daemon), bounded by the site's timeout, with a fixed
 * environment (never the job's; an MPS pipe directory always named: root's
 * empty mps_dir/nomps, statefiles.h).  Its JSON is parsed, never trusted blindly (a broken GPU or
 * driver could make it print anything), and wrapped into a
 * gpumem-report/1 document that root writes atomically as soon as the check
 * ends (jobreport.c, not here).  It is read with the reports' JSON module under its
 * caps for check documents (report.h): a document grows with the node's
 * GPUs, a few KiB each, well past what the policy parser takes.  Whether a
 * check runs is the job's effective policy's, never the job's environment;
 * every line logged is escaped (log.h).  Where the site runs a warm check
 * server (check.warm), the check is asked of it first (checkserve.c) and
 * its reply read exactly as a finished check's output.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core_policy.h"
#include "checkserve.h"
#include "jobcheck.h"
#include "log.h"
#include "core_base.h"
#include "core_record.h"

static const char *const verdict_of_exit[] = { "pass", "warn", "fail", "skipped", "unusable" };

/* Slurm's special step ids (slurm/slurm.h), where these headers lack them. */
#ifndef SLURM_BATCH_SCRIPT
#define SLURM_BATCH_SCRIPT 0xfffffffbu
#endif
#ifndef SLURM_EXTERN_CONT
#define SLURM_EXTERN_CONT 0xfffffffcu
#endif

static void iso_now(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The text of member KEY of OBJ, as the check wrote it (see gpumem_json_text). */
static const char *member_text(struct json_object *obj, const char *key)
{
	return gpumem_json_text(gpumem_json_get(obj, key));
}

/* The text of metrics.NAME.best_gbps of device DEV, or NULL. */
static const char *best_gbps(struct json_object *dev, const char *name)
{
	return member_text(gpumem_json_get(gpumem_json_get(dev, "metrics"), name), "best_gbps");
}

/*
 * The check numbers the GPUs it was given from 0 (CUDA ordinals, inside
 * the step's devices cgroup); the node calls device I by entry I of the
 * step's list ('gpus', as in SLURM_STEP_GPUS), so that the job on GPU 1
 * is never reported as GPU 0.  Without a list, the check's own number.
 */
const char *gpumem_jobcheck_node_index(const char *gpus, const char *idx, char *out, size_t len)
{
	char *end;
	long i;

	if (!gpus || !gpus[0] || !idx)
		return idx;
	i = strtol(idx, &end, 10);
	if (*idx == '\0' || *end || i < 0)
		return idx;
	for (const char *p = gpus; *p; p++) {
		const char *c = strchr(p, ',');
		size_t l = c ? (size_t)(c - p) : strlen(p);

		if (i-- == 0) {
			snprintf(out, len, "%.*s", (int)(l < len ? l : len - 1), p);
			return out;
		}
		if (!c)
			break;
		p = c;
	}
	return idx;
}

/*
 * The L2 set-aside's own cost device DEV measured (l2_ab.setaside), appended
 * to BUF at OFF: " l2 set-aside 50% triad 0.75x"; the new offset.
 */
static size_t setaside_text(struct json_object *dev, char *buf, size_t len, size_t off)
{
	struct json_object *sa = gpumem_json_get(gpumem_json_get(dev, "l2_ab"), "setaside");
	const char *pct = member_text(sa, "percent"), *ratio = member_text(sa, "ratio");

	if (off >= len || !pct || !ratio)
		return off;
	return off + (size_t)snprintf(buf + off, len - off, " l2 set-aside %.0f%% triad %.2fx",
				      atof(pct), atof(ratio));
}

/*
 * Per device: "gpu0 pass read 3010 copy 2750 ..." for the log line, as far
 * as it holds; and the reason, from whichever device has one.
 */
static void figures(struct json_object *doc, struct gpumem_checkrun *r, const char *gpus)
{
	static const char *const names[] = { "read", "copy", "triad", "h2d", "d2h" };
	struct json_object *devs = gpumem_json_get(doc, "devices");
	size_t off = 0;

	r->figures[0] = '\0';
	for (size_t i = 0; i < gpumem_json_len(devs); i++) {
		struct json_object *d = gpumem_json_at(devs, i);
		struct json_object *why = gpumem_json_get(d, "reasons");
		char nbuf[64], basis[400];
		const char *idx = gpumem_jobcheck_node_index(gpus, member_text(d, "index"), nbuf, sizeof(nbuf));
		const char *v = member_text(d, "verdict");

		if (off < sizeof(r->figures)) {
			off += (size_t)snprintf(r->figures + off, sizeof(r->figures) - off,
						"%sgpu%s %s", i ? "; " : "", idx ? idx : "?",
						v ? v : "?");
			for (size_t m = 0; m < 5 && off < sizeof(r->figures); m++) {
				const char *b = best_gbps(d, names[m]);

				if (b)
					off += (size_t)snprintf(r->figures + off,
								sizeof(r->figures) - off,
								" %s %.0f", names[m], atof(b));
			}
			if (off < sizeof(r->figures))
				off += (size_t)snprintf(r->figures + off, sizeof(r->figures) - off,
							" GB/s");
			gpumem_report_basis(d, names, 5, basis, sizeof(basis));
			if (basis[0] && off < sizeof(r->figures))
				off += (size_t)snprintf(r->figures + off, sizeof(r->figures) - off,
							" (%s)", basis);
			off = setaside_text(d, r->figures, sizeof(r->figures), off);
		}
		/*
		 * The first reason of a device that did not pass explains the
		 * verdict, even on a node with more GPUs than the figures hold.
		 */
		if (gpumem_json_len(why) && r->reason[0] == '\0') {
			const char *first = gpumem_json_text(gpumem_json_at(why, 0));

			if (first)
				snprintf(r->reason, sizeof(r->reason), "gpu%s: %s", idx ? idx : "?",
					 first);
		}
		if (off >= sizeof(r->figures) && r->reason[0])
			break;
	}
}

/* A result without a document: status, verdict and why. */
static void set_result(struct gpumem_checkrun *r, const char *status, const char *verdict,
		       const char *reason)
{
	snprintf(r->status, sizeof(r->status), "%s", status);
	snprintf(r->verdict, sizeof(r->verdict), "%s", verdict);
	snprintf(r->reason, sizeof(r->reason), "%s", reason);
}

/* The check's fixed argument vector (16 slots); frac, tmo and sa (32 bytes each) hold its values. */
static void check_argv(const struct gpumem_check_ctx *c, char **argv, char *frac, char *tmo,
		       char *sa, int timeout, int l2_reset)
{
	int a = 0;

	snprintf(frac, 32, "%g", c->check.min_fraction);
	snprintf(tmo, 32, "%d", timeout);
	argv[a++] = (char *)c->as.check;
	argv[a++] = "--json";
	argv[a++] = "-";
	argv[a++] = "--min-fraction";
	argv[a++] = frac;
	argv[a++] = "--timeout";
	argv[a++] = tmo;
	/* The site file as the job prolog read it (the job's record), on stdin: never the file. */
	if (c->check.site_text) {
		argv[a++] = "--site";
		argv[a++] = "-";
	}
	if (c->check.l2_ab)
		argv[a++] = "--l2-ab";
	/* The job's set-aside: its own cost measured, and the window A/B run at it. */
	if (c->check.l2_ab && c->check.l2_setaside[0]) {
		snprintf(sa, 32, "%s", c->check.l2_setaside);
		argv[a++] = "--l2-setaside";
		argv[a++] = sa;
	}
	if (l2_reset)
		argv[a++] = "--l2-reset";
	argv[a] = NULL;
}

/*
 * The check's fixed environment: never the job's.  Always on the
 * bare GPU, never through the job's MPS daemon: that daemon is the user's,
 * and an MPS control daemon serves clients of its own uid only (one of
 * another uid waits until it exits), so its pipe directory is root's empty
 * nomps (without one CUDA tries /tmp/nvidia-mps, where any user may run a
 * daemon), and the thresholds are the whole GPU's, not the job's share.
 */
static void check_env(const struct gpumem_check_ctx *c, struct gpumem_henv *env)
{
	gpumem_henv_init(env);
	/* Which node this is, for the check's own messages. */
	gpumem_henv_set(env, GPUMEM_ENV_NODENAME, "%s", c->node.name);
	/* The job's GPUs in the node's numbering (none: all, gpus=all). */
	if (c->gpus.text[0])
		gpumem_henv_set(env, GPUMEM_ENV_VISIBLE, "%s", c->gpus.text);
	gpumem_henv_set(env, GPUMEM_ENV_MPS_PIPE, "%s", c->as.nomps);
}

/* What the finished check said: its exit status, then its document. */
static void read_result(struct gpumem_proc *p, const char *gpus,
			struct gpumem_checkrun *r)
{
	struct json_object *doc = NULL;
	char err[300], why[128];

	r->exit_code = p->status;
	if (p->status < 0 || p->status > 4) {
		if (p->status > 128)
			snprintf(why, sizeof(why), "gpumem-check was killed by signal %d",
				 p->status - 128);
		else
			snprintf(why, sizeof(why), "gpumem-check exited %d", p->status);
		set_result(r, "failed", "error", why);
		return;
	}
	snprintf(r->status, sizeof(r->status), p->status == 3 ? "skipped" : "ran");
	snprintf(r->verdict, sizeof(r->verdict), "%s", verdict_of_exit[p->status]);
	if (gpumem_json_parse_check(p->out, strlen(p->out), &doc, err, sizeof(err)) == 0) {
		const char *reason;

		r->json = p->out;
		p->out = NULL;
		r->doc = doc;           /* kept for the report, textfiles and drain */
		figures(doc, r, gpus);
		reason = member_text(gpumem_json_get(doc, "overall"), "reason");
		if (r->reason[0] == '\0' && reason)
			snprintf(r->reason, sizeof(r->reason), "%s", reason);
	} else {
		snprintf(r->reason, sizeof(r->reason), "gpumem-check printed no valid report");
	}
}

void gpumem_jobcheck_run(const struct gpumem_check_ctx *c, const char *phase, int l2_reset,
			 struct gpumem_checkrun *r)
{
	char frac[32], tmo[32], sa[32], why[4200];
	char *argv[16];
	struct gpumem_henv env;
	struct gpumem_proc p = { 0 };
	int timeout = c->check.timeout_s;
	long left;

	memset(r, 0, sizeof(*r));
	r->done = 1;
	r->exit_code = -1;
	snprintf(r->phase, sizeof(r->phase), "%s", phase);
	iso_now(r->time, sizeof(r->time));
	if (!c->node.has_dev) {
		set_result(r, "skipped", "skipped", "no GPU device on this node");
		return;
	}
	if (access(c->as.check, X_OK) != 0) {
		snprintf(why, sizeof(why), "gpumem-check not installed at %s", c->as.check);
		set_result(r, "not_run", "error", why);
		return;
	}
	if (c->as.missing) {
		snprintf(why, sizeof(why), "check_user: %s: the check is not run (counted as "
			 "failed)", c->as.missing);
		gpumem_error("gpumem: job %u: %s", c->job.id, why);
		set_result(r, "not_run", "error", why);
		return;
	}
	if (c->job.uid == c->as.uid) {
		snprintf(why, sizeof(why), "check_user (uid %u) is the job's own user: the check "
			 "would be within the job's reach, not run", (unsigned)c->job.uid);
		gpumem_error("gpumem: job %u: %s", c->job.id, why);
		set_result(r, "not_run", "error", why);
		return;
	}
	/* Within the hook's own limit (slurmconf.c): the check's watchdog first, then the kill. */
	left = gpumem_proc_left_ms((timeout + 5) * 1000L) / 1000;
	if (left < timeout + 5)
		timeout = left > 3 ? (int)left - 2 : 1;
	/* The node's warm server first, where the site runs one (checkserve.c). */
	switch (gpumem_checkserve_run(c, timeout, l2_reset, &p, r->ran_by, sizeof(r->ran_by))) {
	case 1:
		gpumem_info("gpumem: check %s job %u: served by the %s", phase, c->job.id,
			    r->ran_by);
		read_result(&p, c->gpus.text, r);
		gpumem_proc_free(&p);
		return;
	case -1:
		gpumem_error("gpumem: check %s job %u: %s", phase, c->job.id, r->ran_by);
		set_result(r, "failed", "error", r->ran_by);
		r->broken = 1;
		gpumem_proc_free(&p);
		return;
	}
	snprintf(r->ran_by, sizeof(r->ran_by), "one-shot");
	check_argv(c, argv, frac, tmo, sa, timeout, l2_reset);
	check_env(c, &env);
	/* As the site's check_user: out of the job's user's reach (signals, ptrace, /proc). */
	gpumem_proc_as_site(&p, c->as.check, argv, gpumem_henv_envp(&env), c->as.uid,
			    c->as.gid, timeout + 5);
	/* The site file as the job's record holds it (gpumem-check --site -). */
	p.input = c->check.site_text;
	p.drop_stderr = 1;
	/* One byte over the cap: more output than that is refused, not cut. */
	p.out_max = GPUMEM_CHECK_MAX_BYTES + 1;
	if (gpumem_proc_run(&p) < 0) {
		snprintf(why, sizeof(why), "cannot run %s", c->as.check);
		set_result(r, "failed", "error", why);
	} else if (p.cut) {
		snprintf(why, sizeof(why), "stopped at the job %s's time limit (%s, less a margin)",
			 phase[0] == 'a' ? "epilog" : "prolog", gpumem_proc_deadline_what());
		set_result(r, "timed_out", "error", why);
		r->cut = 1;
	} else if (p.timed_out) {
		snprintf(why, sizeof(why), "killed: no answer within %d s", timeout + 5);
		set_result(r, "timed_out", "error", why);
	} else {
		read_result(&p, c->gpus.text, r);
	}
	gpumem_proc_free(&p);
}

int gpumem_jobcheck_l2_reset_done(const struct gpumem_checkrun *r)
{
	struct json_object *devs = gpumem_json_get(r->doc, "devices");
	size_t n = gpumem_json_len(devs);

	for (size_t i = 0; i < n; i++) {
		struct json_object *l2 = gpumem_json_get(gpumem_json_at(devs, i), "l2_reset");

		if (!gpumem_json_is(gpumem_json_get(l2, "done"), json_type_boolean) ||
		    !json_object_get_boolean(gpumem_json_get(l2, "done")))
			return 0;
	}
	return n > 0;
}

const char *gpumem_jobcheck_no_verdict(const struct gpumem_checkrun *r)
{
	if (!strcmp(r->status, "timed_out") || r->broken ||
	    (!strcmp(r->status, "failed") && r->exit_code > 128))
		return "did not finish (counted as failed)";
	if (!strcmp(r->status, "failed") || !strcmp(r->status, "not_run"))
		return "could not run (counted as failed)";
	if (!strcmp(r->status, "ran") && r->doc == NULL)
		return "gave no valid report (counted as failed)";
	return NULL;
}

void gpumem_jobcheck_free(struct gpumem_checkrun *r)
{
	free(r->json);
	r->json = NULL;
	json_object_put(r->doc);
	r->doc = NULL;
	r->done = 0;
}

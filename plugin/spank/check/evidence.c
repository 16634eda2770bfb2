/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reuse that rests on evidence (doc/admin/checks.md, "Reuse: a check
 * that rests on evidence"), replacing check.min_interval's blind reuse.
 * With the site's check.min_interval above 0, a check of the job's GPUs
 * (before or after the job) measures their bandwidth only when it is due;
 * it rests on each GPU's last measured pass when all of these hold, for
 * every GPU of the job:
 *   - the GPU is not suspect (a forced check is always measured);
 *   - gpumem-health (run now, as the site's check_user, like the check:
 *     out of the user's reach), or the node's warm check server (site
 *     check.warm: the same document, NVML already started there;
 *     checkserve.c, the check's socket and credentials) answered for it,
 *     with no alarm;
 *   - a measured pass is on record (gpus/pass.NODE.GPU), less than
 *     check.min_interval minutes old, and the NVML evidence kept with it
 *     (ECC, remapped rows, retired pages, PCIe maximum, NVLink, UUID) is
 *     the same now;
 *   - that pass was measured at a check.bandwidth.min_fraction at least
 *     this check's, against the same site references (a pass that does
 *     not say, an older gpumem's, answers nothing: evidence_rules.c);
 *   - no job's profile since showed the GPU streaming at a low ceiling
 *     (gpus/hbmlow.NODE.GPU, gpumem_evidence_profile);
 *   - for an after-check: that pass is not the job's own before-check.
 * A measured check that passes on every GPU of the job keeps each one's
 * pass there with the health read before it and what it was judged at;
 * any other outcome forgets them all.  Only a check at least as strict as
 * the site's default min_fraction clears a GPU's marks (here the low-HBM
 * one; gpustate.c the suspect one).  Every GPU of the
 * node (plugstack gpus=all) is always measured.  The files are root's
 * (gpustate.c's directory); only root's hooks and check_user's programs
 * decide what they hold.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core_health.h"
#include "core_policy.h"
#include "evidence.h"
#include "jobcheck.h"
#include "core_base.h"
#include "log.h"
#include "core_record.h"
#include "checkserve.h"
#include "gpustate.h"
#include "statedir.h"

#define HEALTH_TIMEOUT_S 10
#define HEALTH_NO_NVML 3                /* gpumem-health's exit: no NVML here */
#define HEALTH_MAX_BYTES GPUMEM_CW_HEALTH_DOC_MAX    /* the warm server's cap too */

/*
 * The gpumem-health/1 document in OUT (gpumem-health's exit STATUS), from
 * FROM; NULL with why when it is none.  Fail closed: a document that does
 * not parse, or is no gpumem-health/1, is no evidence (the check measures).
 */
static struct json_object *health_doc(int status, const char *out, const char *from, char *why,
				      size_t len)
{
	static const struct gpumem_json_caps caps = { HEALTH_MAX_BYTES, 8, 20000,
						      "a gpumem-health document" };
	struct json_object *doc = NULL;
	const char *schema;
	char err[300];

	if (status == HEALTH_NO_NVML)
		snprintf(why, len, "no NVML evidence: no NVML on this node (%s)", from);
	else if (status != 0 || !out)
		snprintf(why, len, "no NVML evidence: %s failed", from);
	else if (gpumem_json_parse(out, strlen(out), &caps, &doc, err, sizeof(err)) < 0)
		snprintf(why, len, "no NVML evidence: %s gave no valid document: %.200s", from, err);
	else if (!(schema = gpumem_json_str(doc, "schema")) || strcmp(schema, "gpumem-health/1")) {
		snprintf(why, len, "no NVML evidence: %s gave no gpumem-health/1 document", from);
		json_object_put(doc);
		doc = NULL;
	}
	return doc;
}

/*
 * The NVML health of the job's GPUs: from the warm check server where the
 * site runs one (check.warm; NVML already started there), else, or when it
 * does not answer, from gpumem-health run now as check_user.  Its
 * document, or NULL with why; *WARM: it came from the server.
 */
static struct json_object *run_health(const struct gpumem_check_ctx *c, int *warm, char *why,
				      size_t len)
{
	char path[4200], *argv[] = { path, "--gpus", (char *)c->gpus.text, NULL };
	char *text = NULL;
	struct gpumem_henv env;
	struct gpumem_proc p = { 0 };
	struct json_object *doc;
	int rc, code = 0;

	*warm = gpumem_checkserve_health(c, &text, &code) == 1;
	if (*warm) {
		doc = health_doc(code, text, "the warm check server", why, len);
		free(text);
		return doc;
	}
	snprintf(path, sizeof(path), "%s/gpumem-health", c->as.libexecdir);
	if (access(path, X_OK) != 0) {
		snprintf(why, len, "no NVML evidence: gpumem-health is not installed (libexecdir)");
		return NULL;
	}
	gpumem_henv_init(&env);
	gpumem_proc_as_site(&p, path, argv, gpumem_henv_envp(&env), c->as.uid, c->as.gid,
			    HEALTH_TIMEOUT_S);
	p.drop_stderr = 1;
	p.out_max = HEALTH_MAX_BYTES;
	rc = gpumem_proc_run(&p);
	if (p.timed_out) {
		snprintf(why, len, "no NVML evidence: gpumem-health timed out");
		doc = NULL;
	} else {
		doc = health_doc(rc < 0 ? -1 : p.status, p.out, "gpumem-health", why, len);
	}
	gpumem_proc_free(&p);
	return doc;
}

/* EV->now[j] for each GPU of the job; 0, or -1 with why (an alarm, a GPU not found). */
static int read_health(const struct gpumem_check_ctx *c, struct gpumem_evidence *ev, char *why,
		       size_t len)
{
	struct json_object *doc, *devs;
	int rv = 0, warm = 0;

	doc = run_health(c, &warm, why, len);
	ev->warm = warm;
	if (doc == NULL)
		return -1;
	devs = gpumem_json_get(doc, "devices");
	/* Only an explicit false: a missing or null member (an older gpumem-health) is doubt. */
	if (gpumem_json_is(gpumem_json_get(doc, "node_held"), json_type_boolean) &&
	    !json_object_get_boolean(gpumem_json_get(doc, "node_held"))) {
		ev->node_free = 1;
		snprintf(ev->node_why, sizeof(ev->node_why), "%.100s (%s)",
			 gpumem_json_str(doc, "node_held_why") ? gpumem_json_str(doc, "node_held_why") :
			 "no process holds any GPU of the node (NVML)",
			 warm ? "the warm check server" : "gpumem-health");
	}
	for (int j = 0; j < c->gpus.n && rv == 0; j++) {
		struct json_object *d = gpumem_json_at(devs, (size_t)j), *alarms;
		const char *gpu = gpumem_json_str(d, "gpu"), *e = gpumem_json_str(d, "evidence");

		alarms = gpumem_json_get(d, "alarms");
		if (!gpu || strcmp(gpu, c->gpus.list[j]) || !e || strlen(e) >= GPUMEM_EVIDENCE_MAX) {
			snprintf(why, len, "gpu%s: no NVML evidence", c->gpus.list[j]);
			rv = -1;
		} else if (gpumem_json_len(alarms)) {
			snprintf(why, len, "gpu%s: NVML: %.200s", c->gpus.list[j],
				 gpumem_json_text(gpumem_json_at(alarms, 0)));
			rv = -1;
		} else {
			snprintf(ev->now[j], GPUMEM_EVIDENCE_MAX, "%s", e);
		}
	}
	json_object_put(doc);
	return rv;
}

/* The first field that differs between two evidence strings: "ecc.volatile.corrected 0 -> 3". */
static void first_change(const char *was, const char *now, char *out, size_t len)
{
	char a[GPUMEM_EVIDENCE_MAX], b[GPUMEM_EVIDENCE_MAX], *sa = NULL, *sb = NULL;
	char *ta, *tb;

	snprintf(a, sizeof(a), "%s", was);
	snprintf(b, sizeof(b), "%s", now);
	snprintf(out, len, "changed");
	for (ta = strtok_r(a, " ", &sa), tb = strtok_r(b, " ", &sb); ta || tb;
	     ta = strtok_r(NULL, " ", &sa), tb = strtok_r(NULL, " ", &sb)) {
		char *ea = ta ? strchr(ta, '=') : NULL, *eb = tb ? strchr(tb, '=') : NULL;

		if (ta && tb && !strcmp(ta, tb))
			continue;
		if (ea && eb && ea - ta == eb - tb && !strncmp(ta, tb, (size_t)(ea - ta)))
			snprintf(out, len, "%.*s %.60s -> %.60s", (int)(ea - ta), ta, ea + 1, eb + 1);
		return;
	}
}

/* GPU J's last measured pass; 0, or -1 when none is on record. */
static int pass_read(const struct gpumem_check_ctx *c, int fd, int j, struct gpumem_pass *p)
{
	char name[160], *text;
	int rv;

	gpumem_gpu_name(c, GPUMEM_SF_PASS, j, name, sizeof(name));
	text = gpumem_state_read(fd, name, 4096);
	rv = gpumem_pass_parse(text, p);
	free(text);
	return rv;
}

/* Is GPU J's pass P good for this check?  1, or 0 with why (for "measured: WHY"). */
static int pass_holds(const struct gpumem_check_ctx *c, int fd, int j, const char *phase,
		      const struct gpumem_evidence *ev, const struct gpumem_pass *p, char *why,
		      size_t len)
{
	char name[160], change[200], what[200], *low;
	long age = (long)(time(NULL) - p->sec);

	if (age < 0) {
		snprintf(why, len, "gpu%s: the pass is dated in the future (the clock went back)",
			 c->gpus.list[j]);
		return 0;
	}
	if (age > 60L * ev->limit_min) {
		snprintf(why, len, "gpu%s: bandwidth last measured %ld min ago (check.min_interval "
			 "%d)", c->gpus.list[j], age / 60, ev->limit_min);
		return 0;
	}
	/* Measured at a threshold at least this check's, against the same references. */
	if (!gpumem_pass_answers(p, ev->asked, ev->refs, what, sizeof(what))) {
		snprintf(why, len, "gpu%s: %s", c->gpus.list[j], what);
		return 0;
	}
	if (strcmp(p->evidence, ev->now[j])) {
		first_change(p->evidence, ev->now[j], change, sizeof(change));
		snprintf(why, len, "gpu%s: NVML health changed since job %lld's pass (%s)",
			 c->gpus.list[j], p->job, change);
		return 0;
	}
	gpumem_gpu_name(c, GPUMEM_SF_HBMLOW, j, name, sizeof(name));
	if ((low = gpumem_state_read(fd, name, 4096))) {
		long long job = 0;
		double p95 = 0, mean = 0;

		sscanf(low, "%lld %lf %lf", &job, &p95, &mean);
		free(low);
		snprintf(why, len, "gpu%s: job %lld's profile streamed HBM at a low ceiling "
			 "(DRAM p95 %.0f%%, mean %.0f%% of peak)", c->gpus.list[j], job, p95, mean);
		return 0;
	}
	if (!strcmp(phase, "after") && p->job == (long long)c->job.id && !strcmp(p->phase, "before")) {
		snprintf(why, len, "the job's own before-check is never reused for its after-check");
		return 0;
	}
	return 1;
}

int gpumem_evidence_decide(const struct gpumem_check_ctx *c, const char *phase, int forced,
			   struct gpumem_evidence *ev)
{
	char why[300] = "", derr[600];
	struct gpumem_pass p, oldest = { .sec = -1 };
	int fd = -1, reuse = 0;

	memset(ev, 0, sizeof(*ev));
	ev->limit_min = c->check.min_interval_min;
	ev->asked = c->check.min_fraction;
	snprintf(ev->refs, sizeof(ev->refs), "%s", c->check.refs);
	if (ev->limit_min <= 0) {
		snprintf(ev->basis, sizeof(ev->basis), "measured: check.min_interval is 0");
		return 0;
	}
	if (c->gpus.n <= 0) {
		snprintf(why, sizeof(why), "every GPU of the node (gpus=all) is always measured");
	} else {
		/* Read even when forced: the pass this check may give keeps it. */
		ev->have = read_health(c, ev, why, sizeof(why)) == 0;
		if (forced)
			snprintf(why, sizeof(why), "forced: a GPU is suspect");
		else if (ev->have && (fd = gpumem_gpudir_open(c, derr, sizeof(derr))) < 0)
			snprintf(why, sizeof(why), "no state: %.200s", derr);
	}
	for (int j = 0; fd >= 0 && j < c->gpus.n; j++) {
		reuse = pass_read(c, fd, j, &p) == 0;
		if (!reuse)
			snprintf(why, sizeof(why), "gpu%s: no measured pass on record", c->gpus.list[j]);
		else
			reuse = pass_holds(c, fd, j, phase, ev, &p, why, sizeof(why));
		if (!reuse)
			break;
		if (oldest.sec < 0 || p.sec < oldest.sec)
			oldest = p;
	}
	if (fd >= 0)
		close(fd);
	if (!reuse) {
		snprintf(ev->basis, sizeof(ev->basis), "measured: %s", why);
		return 0;
	}
	ev->pass_job = oldest.job;
	snprintf(ev->pass_phase, sizeof(ev->pass_phase), "%s", oldest.phase);
	ev->pass_age_s = (long)(time(NULL) - oldest.sec);
	snprintf(ev->basis, sizeof(ev->basis), "reused: bandwidth measured %ld min ago %s job "
		 "%lld, NVML health unchanged since%s", ev->pass_age_s / 60,
		 !strcmp(oldest.phase, "after") ? "after" : "before", oldest.job,
		 ev->warm ? " (NVML health from the warm server)" : "");
	return 1;
}

void gpumem_evidence_reused(const struct gpumem_evidence *ev, struct gpumem_checkrun *r)
{
	snprintf(r->verdict, sizeof(r->verdict), "pass");
	snprintf(r->basis, sizeof(r->basis), "%s", ev->basis);
	r->pass_job = ev->pass_job;
	snprintf(r->pass_phase, sizeof(r->pass_phase), "%s", ev->pass_phase);
	r->pass_age_s = ev->pass_age_s;
	r->node_free = ev->node_free;
	snprintf(r->node_why, sizeof(r->node_why), "%s", ev->node_why);
}

/*
 * Did the check pass on every GPU of the job?  Its devices are the job's
 * GPUs in CUDA's order, which need not be NVML's (Slurm's): a pass is kept
 * only when every device passed, so no GPU keeps another's pass.
 */
static int all_passed(const struct gpumem_check_ctx *c, const struct gpumem_checkrun *r)
{
	struct json_object *devs = gpumem_json_get(r->doc, "devices");
	size_t n = gpumem_json_len(devs);

	if (n != (size_t)c->gpus.n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const char *v = gpumem_json_str(gpumem_json_at(devs, i), "verdict");

		if (!v || strncmp(v, "pass", 4))
			return 0;
	}
	return 1;
}

void gpumem_evidence_record(const struct gpumem_check_ctx *c, const struct gpumem_evidence *ev,
			    struct gpumem_checkrun *r)
{
	char name[160], text[GPUMEM_EVIDENCE_MAX + 200], derr[600];
	struct gpumem_pass p = { .sec = (long long)time(NULL), .min_fraction = ev->asked };
	int fd, keep, long_rec;

	if (!strcmp(r->status, "skipped") || !strcmp(r->status, "not_run"))
		return;         /* no check ran: nothing learnt of the GPU */
	snprintf(r->basis, sizeof(r->basis), "%s", ev->basis);
	if (ev->limit_min <= 0 || c->gpus.n <= 0)
		return;         /* nothing is reused: nothing to keep */
	fd = gpumem_gpudir_open(c, derr, sizeof(derr));
	if (fd < 0)
		return;
	keep = ev->have && all_passed(c, r);
	p.job = c->job.id;
	snprintf(p.phase, sizeof(p.phase), "%s", r->phase);
	snprintf(p.refs, sizeof(p.refs), "%s", ev->refs);
	for (int j = 0; j < c->gpus.n; j++) {
		gpumem_gpu_name(c, GPUMEM_SF_PASS, j, name, sizeof(name));
		if (!keep) {
			unlinkat(fd, name, 0);
			continue;
		}
		/* The pass with what it was judged at: it answers no stricter check. */
		snprintf(p.evidence, sizeof(p.evidence), "%s", ev->now[j]);
		long_rec = gpumem_pass_format(&p, text, sizeof(text)) < 0;
		if (long_rec)
			errno = EOVERFLOW;
		if (long_rec || gpumem_state_write(fd, name, text) < 0)
			gpumem_error("gpumem: job %u: cannot keep GPU %s's pass in %s/gpus: %s",
				     c->job.id, c->gpus.list[j], c->state.dir,
				     strerror(errno));
		/* A measured pass answers a low profile, when at least as strict as the site's. */
		gpumem_gpu_name(c, GPUMEM_SF_HBMLOW, j, name, sizeof(name));
		if (c->check.strict)
			unlinkat(fd, name, 0);
	}
	if (keep && !c->check.strict)
		gpumem_info("gpumem: job %u: check %s passed at min_fraction %g, below the site's "
			    "default: its pass answers no stricter check and clears no mark", c->job.id,
			    r->phase, ev->asked);
	close(fd);
}

/* The source of GPU row I's DRAM figure in profile DOC (its GPU INDEX), or NULL. */
static const char *dram_source(struct json_object *doc, size_t i, long index)
{
	struct json_object *g = gpumem_json_at(gpumem_json_get(doc, "gpus"), i);
	double at = -1;

	if (gpumem_json_num(g, "index", &at) < 0 || (long)at != index)
		return NULL;
	return gpumem_json_str(gpumem_json_get(gpumem_json_get(g, "metrics"), "dram_bw_util"),
			       "source");
}

void gpumem_evidence_profile(const struct gpumem_check_ctx *c, const char *profile)
{
	struct json_object *doc = NULL, *compact = NULL, *rows;
	char err[300], name[160], text[160];
	int fd = -1;

	if (!profile || c->gpus.n <= 0 || c->check.min_interval_min <= 0 ||
	    gpumem_profile_parse(profile, strlen(profile), &doc, err, sizeof(err)) < 0)
		goto out;
	compact = gpumem_profile_compact(doc);
	rows = gpumem_json_get(compact, "g");
	if (!gpumem_json_len(rows) || (fd = gpumem_gpudir_open(c, err, sizeof(err))) < 0)
		goto out;
	for (size_t i = 0; i < gpumem_json_len(rows); i++) {
		struct gpumem_prof_gpu g;
		int cls;

		if (gpumem_prof_gpu_of(gpumem_json_at(rows, i), &g) < 0 ||
		    !(cls = gpumem_hbm_class(&g, dram_source(doc, i, g.index))))
			continue;
		for (int j = 0; j < c->gpus.n; j++) {
			if (atol(c->gpus.list[j]) != g.index)
				continue;
			gpumem_gpu_name(c, GPUMEM_SF_HBMLOW, j, name, sizeof(name));
			if (cls < 0) {
				unlinkat(fd, name, 0);
				continue;
			}
			snprintf(text, sizeof(text), "%u %.0f %.0f %.0f\n", c->job.id, g.dram_p95,
				 g.dram_mean, g.sm_mean);
			gpumem_info("gpumem: job %u: GPU %s streamed HBM at a low ceiling (DRAM p95 "
				    "%.0f%%, mean %.0f%%): its next check is measured", c->job.id,
				    c->gpus.list[j], g.dram_p95, g.dram_mean);
			gpumem_state_write(fd, name, text);
		}
	}
out:
	if (fd >= 0)
		close(fd);
	json_object_put(compact);
	json_object_put(doc);
}

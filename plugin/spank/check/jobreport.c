/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The job prolog's and epilog's reports (jobreport.h), as root.  Of a check
 * (jobcheck.c runs it), as soon as it ends: the gpumem-report/1 document
 * (doc/REPORT-JSON.md) written atomically into the site's report.dir, one
 * node_exporter textfile per GPU, one summary line in the slurmd log, and
 * the drain (or resume) the policy and the site ask for.  Of a job whose
 * epilog ran no check but took its profile: a document of phase "job"
 * with the same head and the profile, no check, no drain, no textfile.  The check's own output is
 * never trusted: a GPU whose UUID or index is not a plain token gets no
 * textfile, a figure that is not a plain number is left out.  The
 * directories root writes into are opened without following links
 * (gpumem_dir_open_safe); every line logged is escaped (log.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "checkserve.h"
#include "drain.h"
#include "evidence_rules.h"
#include "core_base.h"
#include "jobreport.h"
#include "log.h"
#include "core_record.h"
#include "statefiles.h"

/*
 * Write BUF to NAME in the directory open at DFD (see gpumem_dir_open_safe)
 * through a temporary file and rename: never half a file, never through a
 * link.  SHOWN names the directory in messages.
 */
static int write_atomic(int dfd, const char *shown, const char *name, const char *buf,
			char *err, size_t elen)
{
	char tmp[300];
	size_t len = strlen(buf);
	int fd, rv = -1;

	if (gpumem_sf_tmp(tmp, sizeof(tmp), name) < 0) {
		snprintf(err, elen, "%s/%s: name too long", shown, name);
		return -1;
	}
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, elen, "%s/%s: %s", shown, tmp, strerror(errno));
		return -1;
	}
	if (write(fd, buf, len) != (ssize_t)len || fsync(fd) < 0) {
		snprintf(err, elen, "%s/%s: %s", shown, tmp, strerror(errno));
		goto fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		snprintf(err, elen, "%s/%s: %s", shown, tmp, strerror(errno));
		goto fail;
	}
	fd = -1;
	if (renameat(dfd, tmp, dfd, name) < 0) {
		snprintf(err, elen, "%s/%s: %s", shown, name, strerror(errno));
		goto fail;
	}
	rv = 0;
fail:
	if (fd >= 0)
		close(fd);
	if (rv < 0)
		unlinkat(dfd, tmp, 0);
	return rv;
}

/*
 * The check reads a GPU and driver that could make it print anything: only a
 * plain token goes into a node_exporter label, only a plain number into a
 * sample, so no output can add lines or labels to the textfile.
 */
static int prom_token(const char *s)
{
	return s && *s && strlen(s) < 64 &&
		strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") ==
		strlen(s);
}

static int prom_number(const char *s)
{
	return s && *s && strspn(s, "0123456789.eE+-") == strlen(s);
}

/* What the verdict rests on (evidence.c), or NULL where no check ran. */
static struct json_object *evidence_json(const struct gpumem_checkrun *r)
{
	struct json_object *o;
	int reused = !strcmp(r->status, "reused");

	if (!r->basis[0] || !(o = json_object_new_object()))
		return NULL;
	gpumem_json_add(o, "basis", gpumem_json_string(reused ? "reused" : "measured"));
	gpumem_json_add(o, "text", gpumem_json_string(r->basis));
	gpumem_json_add(o, "pass_job", reused ? gpumem_json_int(r->pass_job) : NULL);
	gpumem_json_add(o, "pass_phase", reused ? gpumem_json_string(r->pass_phase) : NULL);
	gpumem_json_add(o, "pass_age_s", reused ? gpumem_json_int(r->pass_age_s) : NULL);
	return o;
}

/*
 * The report's head (doc/REPORT-JSON.md): the job, its node and GPUs, the
 * policy's name, PHASE and TIME; the status, reason, verdict and drain
 * are the caller's.
 */
static struct json_object *report_head(const struct gpumem_check_ctx *c, const char *phase,
				       const char *time)
{
	struct json_object *o = json_object_new_object();

	if (o == NULL)
		return NULL;
	gpumem_json_add(o, "schema", gpumem_json_string("gpumem-report/1"));
	gpumem_json_add(o, "job", gpumem_json_int(c->job.id));
	gpumem_json_add(o, "step", gpumem_json_string(c->job.hook));
	gpumem_json_add(o, "node", gpumem_json_string(c->node.name));
	gpumem_json_add(o, "user", gpumem_json_string(c->job.user));
	gpumem_json_add(o, "uid", gpumem_json_int(c->job.uid));
	gpumem_json_add(o, "policy", gpumem_json_string(c->job.policy));
	gpumem_json_add(o, "phase", gpumem_json_string(phase));
	gpumem_json_add(o, "time", gpumem_json_string(time));
	gpumem_json_add(o, "gpus", gpumem_json_string(c->gpus.text));
	return o;
}

/*
 * The whole document from its head O (consumed): the head line
 * (report_head.c), then the policy the job ran under, after the site's
 * clamps (for the accounting record), written by the JSON module
 * (format.c), the check's text CHECK and the job's profile PROFILE, both
 * taken as they are.
 */
static char *report_text(const struct gpumem_check_ctx *c, struct json_object *o, const char *check,
			 struct json_object *check_doc, const char *profile)
{
	char *text, *eff;

	if (o == NULL)
		return NULL;
	eff = c->job.eff ? gpumem_policy_format(c->job.eff, GPUMEM_FMT_JSON, 0) : NULL;
	if (eff)
		eff[strcspn(eff, "\n")] = '\0';
	text = gpumem_report_text(o, eff && eff[0] ? eff : NULL, check, check_doc, profile);
	free(eff);
	json_object_put(o);
	return text;
}

/* The report of check R, the check's text inside as it came. */
static char *check_json(const struct gpumem_check_ctx *c, const struct gpumem_checkrun *r,
			const char *profile)
{
	struct json_object *o = report_head(c, r->phase, r->time);

	if (o == NULL)
		return NULL;
	/* Which process ran the check: "one-shot", "warm server pid N" (checkserve.c); null: none. */
	gpumem_json_add(o, "ran_by", gpumem_json_string(r->ran_by[0] ? r->ran_by : NULL));
	gpumem_json_add(o, "status", gpumem_json_string(r->status));
	gpumem_json_add(o, "reason", gpumem_json_string(r->reason[0] ? r->reason : NULL));
	gpumem_json_add(o, "exit_code", r->exit_code >= 0 ? gpumem_json_int(r->exit_code) : NULL);
	gpumem_json_add(o, "verdict", gpumem_json_string(r->verdict));
	gpumem_json_add(o, "drained", gpumem_json_bool(r->drained));
	gpumem_json_add(o, "evidence", evidence_json(r));
	/* The job's profile goes with the epilog's report (the after-check's). */
	return report_text(c, o, r->json, r->doc, strcmp(r->phase, "before") ? profile : NULL);
}

/* One node_exporter textfile per GPU, so steps on other GPUs never clash. */
static void textfiles(const char *dir, const struct gpumem_check_ctx *c,
		      const struct gpumem_checkrun *r)
{
	static const char *const metrics[] = { "read", "write", "copy", "triad", "d2d", "h2d",
					       "d2h" };
	struct json_object *devs;
	char why[600];
	int dfd = -1;

	if (r->doc == NULL)
		goto out;
	dfd = gpumem_dir_open_safe(dir, why, sizeof(why));
	if (dfd < 0) {
		gpumem_error("gpumem: node_exporter textfile directory %s: refused, nothing "
			     "written: %s", dir, why);
		goto out;
	}
	devs = gpumem_json_get(r->doc, "devices");
	for (size_t i = 0; i < gpumem_json_len(devs); i++) {
		struct json_object *dev = gpumem_json_at(devs, i);
		char nbuf[64];
		const char *uuid = gpumem_json_text(gpumem_json_get(dev, "uuid"));
		const char *idx = gpumem_json_text(gpumem_json_get(dev, "index"));
		const char *nidx = gpumem_jobcheck_node_index(c->gpus.text, idx, nbuf, sizeof(nbuf));
		const char *v = gpumem_json_text(gpumem_json_get(dev, "verdict"));
		char name[160], labels[512], err[4400];
		char *buf = NULL;
		size_t len = 0;
		FILE *f;
		int code;

		if (prom_token(nidx))
			idx = nidx;
		if (!prom_token(uuid) || (idx && !prom_token(idx)))
			continue;
		snprintf(labels, sizeof(labels), "node=\"%s\",gpu=\"%s\",uuid=\"%s\"", c->node.name,
			 idx ? idx : "", uuid);
		f = open_memstream(&buf, &len);
		if (f == NULL)
			continue;
		fprintf(f, "# HELP gpumem_bandwidth_gbps Best bandwidth of the last gpumem check, GB/s.\n"
			"# TYPE gpumem_bandwidth_gbps gauge\n");
		for (size_t m = 0; m < sizeof(metrics) / sizeof(metrics[0]); m++) {
			const char *b = gpumem_json_text(gpumem_json_get(gpumem_json_get(gpumem_json_get(dev, "metrics"), metrics[m]), "best_gbps"));

			if (prom_number(b))
				fprintf(f, "gpumem_bandwidth_gbps{%s,metric=\"%s\"} %s\n", labels,
					metrics[m], b);
		}
		code = !v ? 2 : !strncmp(v, "pass", 4) ? 0 :
			!strcmp(v, "warn") ? 1 : !strcmp(v, "unusable") ? 4 : 2;
		fprintf(f, "# HELP gpumem_check_verdict 0 pass, 1 warn, 2 fail, 3 skipped, 4 unusable.\n"
			"# TYPE gpumem_check_verdict gauge\ngpumem_check_verdict{%s} %d\n"
			"# HELP gpumem_check_timestamp_seconds When the last check ran.\n"
			"# TYPE gpumem_check_timestamp_seconds gauge\n"
			"gpumem_check_timestamp_seconds{%s} %lld\n", labels, code, labels,
			(long long)time(NULL));
		if (fclose(f) != 0) {
			free(buf);
			continue;
		}
		snprintf(name, sizeof(name), "gpumem_%s.prom", uuid);
		gpumem_safe_name(name);
		if (write_atomic(dfd, dir, name, buf, err, sizeof(err)) < 0)
			gpumem_error("gpumem: node_exporter textfile: %s", err);
		free(buf);
	}
out:
	if (dfd >= 0)
		close(dfd);
}

/*
 * UUIDs of the check's devices, comma-separated, into OUT: with FAILED, of
 * those not passing (all of them when none is singled out), else of those
 * passing.  Empty without a document.
 */
static void check_uuids(const struct gpumem_checkrun *r, int failed, char *out, size_t len)
{
	struct json_object *devs = gpumem_json_get(r->doc, "devices");
	size_t o = 0;

	out[0] = '\0';
	for (int pass = 0; pass < 2 && o == 0; pass++)
		for (size_t i = 0; i < gpumem_json_len(devs); i++) {
			const char *u = gpumem_json_str(gpumem_json_at(devs, i), "uuid");
			const char *v = gpumem_json_str(gpumem_json_at(devs, i), "verdict");
			int ok = v && (!strcmp(v, "pass") || !strcmp(v, "warn"));

			if (!u || strncmp(u, "GPU-", 4) || strpbrk(u, ",{} ") ||
			    (pass == 0 && ok == failed) || o + strlen(u) + 2 >= len)
				continue;
			o += (size_t)snprintf(out + o, len - o, "%s%s", o ? "," : "", u);
		}
}

/* Drain on a failed check (naming the failed GPUs), resume on a pass. */
static void drain_or_resume(const struct gpumem_check_ctx *c,
			    struct gpumem_checkrun *r)
{
	char msg[1200], uuids[512];

	if (!strcmp(r->verdict, "fail") && c->check.on_fail == GPUMEM_ONFAIL_DRAIN &&
	    c->drain.enabled && c->node.name[0]) {
		char reason[1400], cause[204], gpus[520];

		/* The cause comes from the check's output: escaped. */
		gpumem_escape(cause, sizeof(cause), r->reason[0] ? r->reason : r->verdict);
		check_uuids(r, 1, uuids, sizeof(uuids));
		snprintf(gpus, sizeof(gpus), uuids[0] ? " {%s}" : "", uuids);
		snprintf(reason, sizeof(reason), "%s%s (job %u.%s %s: %s)",
			 c->drain.reason ? c->drain.reason : "gpumem: GPU check failed",
			 gpus, c->job.id, c->job.hook, r->phase, cause);
		r->drained = gpumem_drain(c->node.name, reason, msg, sizeof(msg)) == 1;
		gpumem_info("gpumem: %s", msg);
		if (r->drained)
			gpumem_checkserve_stop(c);
	} else if (!strncmp(r->verdict, "pass", 4) && strcmp(r->status, "reused") &&
		   c->check.strict &&
		   c->drain.enabled && c->node.name[0]) {
		/*
		 * Only a measured pass resumes, at least as strict as the site's
		 * default: a reused one rests on an older check, a laxer one
		 * asked the GPU for less than the site does.
		 */
		check_uuids(r, 0, uuids, sizeof(uuids));
		if (gpumem_resume(c->node.name, uuids, msg, sizeof(msg)) != 0)
			gpumem_info("gpumem: %s", msg);
	}
}

/* Write the report TEXT of PHASE (malloc'd, freed here) into report.dir, when the site has one. */
static void write_report(const struct gpumem_check_ctx *c, const char *phase, char *text)
{
	const char *dir = c->report.dir;
	char name[256], err[4400], why[600];
	int dfd;

	if (dir == NULL)
		goto out;
	dfd = gpumem_dir_open_safe(dir, why, sizeof(why));
	if (dfd < 0) {
		gpumem_error("gpumem: report directory %s: refused, no report written: %s", dir, why);
		goto out;
	}
	snprintf(name, sizeof(name), "job%u.%s.%s.%s.json", c->job.id, c->job.hook, c->node.name,
		 phase);
	gpumem_safe_name(name);
	if (text == NULL || write_atomic(dfd, dir, name, text, err, sizeof(err)) < 0)
		gpumem_error("gpumem: report not written: %s", text ? err : "out of memory");
	close(dfd);
out:
	free(text);
}

void gpumem_jobreport_check(const struct gpumem_check_ctx *c, struct gpumem_checkrun *r,
			    const char *profile)
{
	if (!r->done)
		return;
	/* Drain first, so the report can say so. */
	drain_or_resume(c, r);
	gpumem_info("gpumem: check %s job %u.%s node %s GPUs %s: %s%s%s%s", r->phase, c->job.id,
		    c->job.hook, c->node.name, c->gpus.text[0] ? c->gpus.text : "(not set)", r->verdict,
		    r->reason[0] ? " (" : "", r->reason, r->reason[0] ? ")" : "");
	if (r->figures[0])
		gpumem_info("gpumem: check %s job %u.%s node %s: %s", r->phase, c->job.id,
			    c->job.hook, c->node.name, r->figures);
	write_report(c, r->phase, check_json(c, r, profile));
	if (c->report.textfile_dir)
		textfiles(c->report.textfile_dir, c, r);
}

void gpumem_jobreport_profile(const struct gpumem_check_ctx *c, const char *profile)
{
	struct json_object *o;
	char now[32];
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
	o = report_head(c, "job", now);
	if (o) {
		gpumem_json_add(o, "status", gpumem_json_string("not_run"));
		gpumem_json_add(o, "reason", gpumem_json_string("no check at the job's end: the "
								"report carries the job's profile"));
		gpumem_json_add(o, "exit_code", NULL);
		gpumem_json_add(o, "verdict", gpumem_json_string("not_run"));
		gpumem_json_add(o, "drained", gpumem_json_bool(0));
	}
	write_report(c, "job", report_text(c, o, NULL, NULL, profile));
}

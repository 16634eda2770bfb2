/*
 * The GPU check around a step.  gpumem-check runs as the job's user, with
 * the step's GPUs and MPS share, bounded by the site's timeout; its JSON
 * is parsed (never trusted blindly: the user could tamper with a process
 * running as them) and wrapped into a gpumem-report/1 document that root
 * writes atomically at the end of the step.  It is read with the reports'
 * JSON reader under its caps for check documents (report.h): a document
 * grows with the node's GPUs, a few KiB each, well past what the policy
 * parser takes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "drain.h"
#include "jobcheck.h"
#include "proc.h"
#include "report.h"

static const char *const verdict_of_exit[] = { "pass", "warn", "fail", "skipped", "unusable" };

int gpumem_jobcheck_applies(spank_t sp, const struct gpumem_jobinfo *ji)
{
	char env[32];

	if (strcmp(ji->step, "batch") == 0)
		return 1;
	/* Steps inside a batch job are checked once, by the batch step. */
	return !(spank_getenv(sp, "ENVIRONMENT", env, sizeof(env)) == ESPANK_SUCCESS &&
		 strcmp(env, "BATCH") == 0);
}

static void iso_now(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The text of member KEY of OBJ, as the check wrote it (see gpumem_report_jtext). */
static const char *member_text(const char *text, const struct gpumem_report_jval *obj,
			       const char *key, char *tmp, size_t len)
{
	return gpumem_report_jtext(text, gpumem_report_jget(obj, key), tmp, len);
}

/* The text of metrics.NAME.best_gbps of device DEV, or NULL. */
static const char *best_gbps(const char *text, const struct gpumem_report_jval *dev,
			     const char *name, char *tmp, size_t len)
{
	return member_text(text, gpumem_report_jget(gpumem_report_jget(dev, "metrics"), name),
			   "best_gbps", tmp, len);
}

/*
 * The check numbers the GPUs it was given from 0 (CUDA ordinals, inside
 * the step's devices cgroup); the node calls device I by entry I of the
 * step's list ('gpus', as in SLURM_STEP_GPUS), so that the job on GPU 1
 * is never reported as GPU 0.  Without a list, the check's own number.
 */
static const char *node_index(const char *gpus, const char *idx, char *out, size_t len)
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
 * Per device: "gpu0 pass read 3010 copy 2750 ..." for the log line, as far
 * as it holds; and the reason, from whichever device has one.
 */
static void figures(const char *text, const struct gpumem_report_jval *doc,
		    struct gpumem_checkrun *r, const char *gpus)
{
	static const char *const names[] = { "read", "copy", "triad", "h2d", "d2h" };
	const struct gpumem_report_jval *devs = gpumem_report_jget(doc, "devices");
	size_t off = 0;

	r->figures[0] = '\0';
	for (size_t i = 0; devs && devs->type == GPUMEM_REPORT_JARR && i < devs->n; i++) {
		const struct gpumem_report_jval *d = &devs->items[i];
		const struct gpumem_report_jval *why = gpumem_report_jget(d, "reasons");
		char ibuf[64], vbuf[64], wbuf[64], nbuf[64];
		const char *idx = node_index(gpus, member_text(text, d, "index", ibuf, sizeof(ibuf)),
					     nbuf, sizeof(nbuf));
		const char *v = member_text(text, d, "verdict", vbuf, sizeof(vbuf));

		if (off < sizeof(r->figures)) {
			off += (size_t)snprintf(r->figures + off, sizeof(r->figures) - off,
						"%sgpu%s %s", i ? "; " : "", idx ? idx : "?",
						v ? v : "?");
			for (size_t m = 0; m < 5 && off < sizeof(r->figures); m++) {
				char bbuf[64];
				const char *b = best_gbps(text, d, names[m], bbuf, sizeof(bbuf));

				if (b && strcmp(b, "null"))
					off += (size_t)snprintf(r->figures + off,
								sizeof(r->figures) - off,
								" %s %.0f", names[m], atof(b));
			}
			if (off < sizeof(r->figures))
				off += (size_t)snprintf(r->figures + off, sizeof(r->figures) - off,
							" GB/s");
		}
		/*
		 * The first reason of a device that did not pass explains the
		 * verdict, even on a node with more GPUs than the figures hold.
		 */
		if (why && why->type == GPUMEM_REPORT_JARR && why->n && r->reason[0] == '\0') {
			const char *first = gpumem_report_jtext(text, &why->items[0], wbuf,
								sizeof(wbuf));

			if (first)
				snprintf(r->reason, sizeof(r->reason), "gpu%s: %s", idx ? idx : "?",
					 first);
		}
		if (off >= sizeof(r->figures) && r->reason[0])
			break;
	}
}

void gpumem_jobcheck_run(const struct gpumem_state *st, const struct gpumem_jobinfo *ji,
			 const char *phase, int has_gpu, int with_share, struct gpumem_checkrun *r)
{
	char frac[32], tmo[32], gpus[1100], pct[64], pipe[4200], logd[4200], node[96];
	char *argv[16], *envp[10];
	struct gpumem_proc p = { 0 };
	struct gpumem_report_jval doc = { 0 };
	char err[300];
	int a = 0, e = 0;
	int timeout = st->have_site ? st->site.check_timeout_s : st->args.timeout;

	memset(r, 0, sizeof(*r));
	r->done = 1;
	r->exit_code = -1;
	snprintf(r->phase, sizeof(r->phase), "%s", phase);
	iso_now(r->time, sizeof(r->time));
	if (!has_gpu) {
		snprintf(r->status, sizeof(r->status), "skipped");
		snprintf(r->verdict, sizeof(r->verdict), "skipped");
		snprintf(r->reason, sizeof(r->reason), "no GPU device on this node");
		return;
	}
	if (access(st->args.check, X_OK) != 0) {
		snprintf(r->status, sizeof(r->status), "not_run");
		snprintf(r->verdict, sizeof(r->verdict), "error");
		snprintf(r->reason, sizeof(r->reason), "gpumem-check not installed at %s",
			 st->args.check);
		return;
	}
	snprintf(frac, sizeof(frac), "%g", st->eff.check.min_fraction);
	snprintf(tmo, sizeof(tmo), "%d", timeout);
	argv[a++] = st->args.check;
	argv[a++] = "--json";
	argv[a++] = "-";
	argv[a++] = "--min-fraction";
	argv[a++] = frac;
	argv[a++] = "--timeout";
	argv[a++] = tmo;
	if (st->have_site && st->site.path) {
		argv[a++] = "--site";
		argv[a++] = st->site.path;
	}
	if (st->eff.check.l2_ab)
		argv[a++] = "--l2-ab";
	argv[a] = NULL;
	envp[e++] = "PATH=/usr/bin:/bin";
	/* Which node this is, for the check's own messages. */
	snprintf(node, sizeof(node), "SLURMD_NODENAME=%s", ji->node);
	envp[e++] = node;
	/* The tasks' numbering: the check runs in the step's devices cgroup. */
	if (st->task_gpus && st->task_gpus[0]) {
		snprintf(gpus, sizeof(gpus), "CUDA_VISIBLE_DEVICES=%s", st->task_gpus);
		envp[e++] = gpus;
	} else if (ji->gpus[0]) {
		snprintf(gpus, sizeof(gpus), "CUDA_VISIBLE_DEVICES=%s", ji->gpus);
		envp[e++] = gpus;
	}
	/* The check runs with the job's share, so its thresholds scale. */
	if (with_share && (st->eff.set & GPUMEM_K_MPS_PCT)) {
		snprintf(pct, sizeof(pct), "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d",
			 st->eff.mps.active_thread_percentage);
		envp[e++] = pct;
	}
	if (with_share && st->mps_dir) {
		snprintf(pipe, sizeof(pipe), "CUDA_MPS_PIPE_DIRECTORY=%s/pipe", st->mps_dir);
		snprintf(logd, sizeof(logd), "CUDA_MPS_LOG_DIRECTORY=%s/log", st->mps_dir);
		envp[e++] = pipe;
		envp[e++] = logd;
	}
	envp[e] = NULL;
	gpumem_proc_as_user(&p, st->args.check, argv, envp, ji->uid, ji->gid, timeout + 5);
	p.drop_stderr = 1;
	/* One byte over the cap: more output than that is refused, not cut. */
	p.out_max = GPUMEM_CHECK_MAX_BYTES + 1;
	if (gpumem_proc_run(&p) < 0) {
		snprintf(r->status, sizeof(r->status), "failed");
		snprintf(r->verdict, sizeof(r->verdict), "error");
		snprintf(r->reason, sizeof(r->reason), "cannot run %s", st->args.check);
		return;
	}
	if (p.timed_out) {
		snprintf(r->status, sizeof(r->status), "timed_out");
		snprintf(r->verdict, sizeof(r->verdict), "error");
		snprintf(r->reason, sizeof(r->reason), "killed: no answer within %d s", timeout + 5);
		goto out;
	}
	r->exit_code = p.status;
	if (p.status < 0 || p.status > 4) {
		snprintf(r->status, sizeof(r->status), "failed");
		snprintf(r->verdict, sizeof(r->verdict), "error");
		if (p.status > 128)
			snprintf(r->reason, sizeof(r->reason), "gpumem-check was killed by signal %d",
				 p.status - 128);
		else
			snprintf(r->reason, sizeof(r->reason), "gpumem-check exited %d", p.status);
		goto out;
	}
	snprintf(r->status, sizeof(r->status), p.status == 3 ? "skipped" : "ran");
	snprintf(r->verdict, sizeof(r->verdict), "%s", verdict_of_exit[p.status]);
	if (gpumem_check_json_parse(p.out, strlen(p.out), &doc, err, sizeof(err)) == 0) {
		char tmp[64];
		const char *why;

		r->json = p.out;
		p.out = NULL;
		figures(r->json, &doc, r, ji->gpus);
		why = member_text(r->json, gpumem_report_jget(&doc, "overall"), "reason", tmp,
				  sizeof(tmp));
		if (r->reason[0] == '\0' && why && strcmp(why, "null"))
			snprintf(r->reason, sizeof(r->reason), "%s", why);
	} else {
		snprintf(r->reason, sizeof(r->reason), "gpumem-check printed no valid report");
	}
out:
	gpumem_report_json_free(&doc);
	gpumem_proc_free(&p);
}

/* Write BUF to DIR/NAME through a temporary file and rename: never half a file. */
static int write_atomic(const char *dir, const char *name, const char *buf, char *err, size_t elen)
{
	char tmp[4200], dst[4200];
	size_t len = strlen(buf);
	int fd, rv = -1;

	snprintf(dst, sizeof(dst), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.%d.tmp", dir, name, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, elen, "%s: %s", tmp, strerror(errno));
		return -1;
	}
	if (write(fd, buf, len) != (ssize_t)len || fsync(fd) < 0) {
		snprintf(err, elen, "%s: %s", tmp, strerror(errno));
		goto fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		snprintf(err, elen, "%s: %s", tmp, strerror(errno));
		goto fail;
	}
	fd = -1;
	if (rename(tmp, dst) < 0) {
		snprintf(err, elen, "%s: %s", dst, strerror(errno));
		goto fail;
	}
	rv = 0;
fail:
	if (fd >= 0)
		close(fd);
	if (rv < 0)
		unlink(tmp);
	return rv;
}

/* File names: only [A-Za-z0-9._-] from things a node or GPU is called. */
static void safe_name(char *s)
{
	for (; *s; s++)
		if (!(*s >= 'a' && *s <= 'z') && !(*s >= 'A' && *s <= 'Z') &&
		    !(*s >= '0' && *s <= '9') && *s != '.' && *s != '-' && *s != '_')
			*s = '_';
}

/*
 * The check runs as the user, who could make it print anything: only a
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

static char *report_json(const struct gpumem_jobinfo *ji, const struct gpumem_checkrun *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL)
		return NULL;
	fprintf(f, "{\"schema\": \"gpumem-report/1\", \"job\": %u, \"step\": ", ji->job);
	gpumem_report_json_str(f, ji->step);
	fprintf(f, ", \"node\": ");
	gpumem_report_json_str(f, ji->node);
	fprintf(f, ", \"user\": ");
	gpumem_report_json_str(f, ji->user);
	fprintf(f, ", \"uid\": %u, \"policy\": ", (unsigned)ji->uid);
	gpumem_report_json_str(f, ji->policy);
	fprintf(f, ", \"phase\": ");
	gpumem_report_json_str(f, r->phase);
	fprintf(f, ", \"time\": ");
	gpumem_report_json_str(f, r->time);
	fprintf(f, ", \"gpus\": ");
	gpumem_report_json_str(f, ji->gpus);
	fprintf(f, ", \"status\": ");
	gpumem_report_json_str(f, r->status);
	fprintf(f, ", \"reason\": ");
	gpumem_report_json_str(f, r->reason[0] ? r->reason : NULL);
	if (r->exit_code >= 0)
		fprintf(f, ", \"exit_code\": %d", r->exit_code);
	else
		fprintf(f, ", \"exit_code\": null");
	fprintf(f, ", \"verdict\": ");
	gpumem_report_json_str(f, r->verdict);
	fprintf(f, ", \"drained\": %s, \"check\": %s}\n", r->drained ? "true" : "false",
		r->json ? r->json : "null");
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* One node_exporter textfile per GPU, so steps on other GPUs never clash. */
static void textfiles(const char *dir, const struct gpumem_jobinfo *ji,
		      const struct gpumem_checkrun *r)
{
	static const char *const metrics[] = { "read", "write", "copy", "triad", "d2d", "h2d",
					       "d2h" };
	struct gpumem_report_jval doc = { 0 };
	const struct gpumem_report_jval *devs;
	char perr[300];

	if (r->json == NULL ||
	    gpumem_check_json_parse(r->json, strlen(r->json), &doc, perr, sizeof(perr)) < 0)
		goto out;
	devs = gpumem_report_jget(&doc, "devices");
	for (size_t i = 0; devs && devs->type == GPUMEM_REPORT_JARR && i < devs->n; i++) {
		const struct gpumem_report_jval *dev = &devs->items[i];
		char ubuf[64], ibuf[64], vbuf[64], nbuf[64];
		const char *uuid = member_text(r->json, dev, "uuid", ubuf, sizeof(ubuf));
		const char *idx = member_text(r->json, dev, "index", ibuf, sizeof(ibuf));
		const char *nidx = node_index(ji->gpus, idx, nbuf, sizeof(nbuf));
		const char *v = member_text(r->json, dev, "verdict", vbuf, sizeof(vbuf));
		char name[160], labels[512], err[4400];
		char *buf = NULL;
		size_t len = 0;
		FILE *f;
		int code;

		if (prom_token(nidx))
			idx = nidx;
		if (!prom_token(uuid) || (idx && !prom_token(idx)))
			continue;
		snprintf(labels, sizeof(labels), "node=\"%s\",gpu=\"%s\",uuid=\"%s\"", ji->node,
			 idx ? idx : "", uuid);
		f = open_memstream(&buf, &len);
		if (f == NULL)
			continue;
		fprintf(f, "# HELP gpumem_bandwidth_gbps Best bandwidth of the last gpumem check, GB/s.\n"
			"# TYPE gpumem_bandwidth_gbps gauge\n");
		for (size_t m = 0; m < sizeof(metrics) / sizeof(metrics[0]); m++) {
			char bbuf[64];
			const char *b = best_gbps(r->json, dev, metrics[m], bbuf, sizeof(bbuf));

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
		safe_name(name);
		if (write_atomic(dir, name, buf, err, sizeof(err)) < 0)
			slurm_error("gpumem: node_exporter textfile: %s", err);
		free(buf);
	}
out:
	gpumem_report_json_free(&doc);
}

void gpumem_jobcheck_report(const struct gpumem_state *st, const struct gpumem_jobinfo *ji,
			    struct gpumem_checkrun *r)
{
	const char *dir = st->have_site ? st->site.report.dir : NULL;
	char name[256], err[4400], msg[1200];
	char *json;

	if (!r->done)
		return;
	/* Drain first, so the report can say so. */
	if (!strcmp(r->verdict, "fail") && st->eff.check.on_fail == GPUMEM_ONFAIL_DRAIN &&
	    st->have_site && st->site.drain.enabled && ji->node[0]) {
		char reason[400];

		snprintf(reason, sizeof(reason), "%s (job %u.%s %s: %.200s)",
			 st->site.drain.reason ? st->site.drain.reason : "gpumem: GPU check failed",
			 ji->job, ji->step, r->phase, r->reason[0] ? r->reason : r->verdict);
		r->drained = gpumem_drain(ji->node, reason, msg, sizeof(msg)) == 1;
		slurm_info("gpumem: %s", msg);
	} else if (!strncmp(r->verdict, "pass", 4) && st->have_site && st->site.drain.enabled &&
		   ji->node[0] && gpumem_resume(ji->node, msg, sizeof(msg)) != 0) {
		slurm_info("gpumem: %s", msg);
	}
	slurm_info("gpumem: check %s job %u.%s node %s GPUs %s: %s%s%s%s%s", r->phase, ji->job,
		   ji->step, ji->node, ji->gpus[0] ? ji->gpus : "(not set)", r->verdict,
		   r->reason[0] ? " (" : "", r->reason, r->reason[0] ? ")" : "",
		   r->figures[0] ? "" : "");
	if (r->figures[0])
		slurm_info("gpumem: check %s job %u.%s node %s: %s", r->phase, ji->job, ji->step,
			   ji->node, r->figures);
	if (dir) {
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			slurm_error("gpumem: report directory %s: %s", dir, strerror(errno));
		snprintf(name, sizeof(name), "job%u.%s.%s.%s.json", ji->job, ji->step, ji->node,
			 r->phase);
		safe_name(name);
		json = report_json(ji, r);
		if (json == NULL || write_atomic(dir, name, json, err, sizeof(err)) < 0)
			slurm_error("gpumem: report not written: %s", json ? err : "out of memory");
		free(json);
	}
	if (st->have_site && st->site.report.textfile_dir)
		textfiles(st->site.report.textfile_dir, ji, r);
}

void gpumem_jobcheck_free(struct gpumem_checkrun *r)
{
	free(r->json);
	r->json = NULL;
	r->done = 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem job --report FILE --svg OUT: the job's picture.  FILE is one of
 * the job's report files; every node's newest report of that job with a
 * profile ("after", or "job" where no after-check ran) in FILE's directory
 * is drawn: per node a head (policy, what was in force, how long it was
 * sampled), per GPU a caption with the advice and three plots of its
 * timelines (job_svg_plot.c).  The timelines exist only in the reports
 * (gpumem-profile/1, up to 120 points a figure): the accounting record
 * keeps a summary per GPU within AdminComment's segment cap (acct.h), so
 * `gpumem job JOBID --svg` says it needs --report (job.c).  Each profile
 * is checked (gpumem_profile_check) before a figure of it is drawn, and
 * the advice is the accounting record's (gpumem_profile_compact, advise.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core_record.h"
#include "core_base.h"
#include "job_cli.h"
#include "job_svg.h"
#include "core_policy.h"
#include "report_svg.h"

#define MAX_NODES 64
#define MAX_FILES 100000

struct node {
	struct json_object *rep;        /* the report */
	struct json_object *eff;        /* its "effective" in short (acct.h), or NULL */
	struct json_object *compact;    /* its profile's summary (profile.h) */
	int ok;                         /* the profile ran and was not refused */
};

struct job {
	struct node nodes[MAX_NODES];
	size_t n, more;                 /* drawn; left out past MAX_NODES */
	double id;
};

/* Report NAME in DFD, parsed under the report caps, or NULL; never through a link. */
static struct json_object *load(int dfd, const char *name, char *err, size_t elen)
{
	struct json_object *doc = NULL;
	char *buf = malloc(GPUMEM_REPORT_MAX_FILE_BYTES + 2);
	struct stat st;
	size_t len = 0;
	int fd = openat(dfd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);

	if (fd < 0 || buf == NULL || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    gpumem_read_fd(fd, buf, GPUMEM_REPORT_MAX_FILE_BYTES + 1, &len) < 0 ||
	    len > GPUMEM_REPORT_MAX_FILE_BYTES) {
		const char *why = fd < 0 ? strerror(errno) :
				  len > GPUMEM_REPORT_MAX_FILE_BYTES ? "larger than a report may be" :
				  "not a readable regular file";

		/* The name is a report's file name: cut to fit, never overrun. */
		if (snprintf(err, elen, "%s: %s", name, why) >= (int)elen && elen > 4)
			memcpy(err + elen - 4, "...", 4);
	} else {
		buf[len] = '\0';
		if (gpumem_json_parse_report(buf, len, &doc, err, elen) < 0)
			doc = NULL;
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	return doc;
}

/* Keep REP (which this takes) as its node's, if it has a profile and is the newest. */
static void keep(struct job *j, struct json_object *rep)
{
	const char *node = gpumem_json_str(rep, "node"), *t = gpumem_json_str(rep, "time");
	double id;
	size_t i;

	if (node == NULL || t == NULL || gpumem_json_get(rep, "profile") == NULL ||
	    gpumem_json_num(rep, "job", &id) < 0 || id != j->id) {
		json_object_put(rep);
		return;
	}
	for (i = 0; i < j->n && strcmp(gpumem_json_str(j->nodes[i].rep, "node"), node); i++)
		;
	if (i == j->n && j->n == MAX_NODES) {
		j->more++;
		json_object_put(rep);
		return;
	}
	if (i < j->n && strcmp(gpumem_json_str(j->nodes[i].rep, "time"), t) >= 0) {
		json_object_put(rep);
		return;
	}
	if (i == j->n)
		j->n++;
	json_object_put(j->nodes[i].rep);
	j->nodes[i].rep = rep;
}

/* Every "job<ID>.*.after.json" and "job<ID>.*.job.json" in DIR. */
static void scan(struct job *j, const char *dir, int dfd)
{
	char pre[48], err[256];
	size_t pl = (size_t)snprintf(pre, sizeof(pre), "job%.0f.", j->id), seen = 0;
	DIR *d = fdopendir(dup(dfd));
	struct dirent *e;

	if (d == NULL) {
		fprintf(stderr, "gpumem: job: --svg: %s: cannot list (%s): this report alone\n",
			gpumem_job_text(dir), strerror(errno));
		return;
	}
	while ((e = readdir(d)) != NULL && seen++ < MAX_FILES) {
		size_t len = strlen(e->d_name);

		if (strncmp(e->d_name, pre, pl) != 0 ||
		    !((len > 11 && !strcmp(e->d_name + len - 11, ".after.json")) ||
		      (len > 9 && !strcmp(e->d_name + len - 9, ".job.json"))))
			continue;
		struct json_object *rep = load(dfd, e->d_name, err, sizeof(err));

		if (rep)
			keep(j, rep);
		else
			fprintf(stderr, "gpumem: job: --svg: skipped: %s\n", gpumem_job_text(err));
	}
	closedir(d);
}

static int by_node(const void *a, const void *b)
{
	return strcmp(gpumem_json_str(((const struct node *)a)->rep, "node"),
		      gpumem_json_str(((const struct node *)b)->rep, "node"));
}

/* After the scan: some node's report had a profile; sorted.  0, or -1 (said why). */
static int found(struct job *j, const char *dir)
{
	if (j->n == 0) {
		fprintf(stderr, "gpumem: job: --svg: no report of job %.0f in %s has a profile (the "
			"epilog's report holds it: job<JOB>.<HOOK>.<NODE>.after.json or .job.json; "
			"profile.enabled off, or no GPU on the node?)\n", j->id,
			gpumem_job_text(dir));
		return -1;
	}
	qsort(j->nodes, j->n, sizeof(j->nodes[0]), by_node);
	return 0;
}

/* Job ID's reports in DIR (gpumem job JOBID --svg: the site's report.dir). */
static int gather_dir(struct job *j, const char *dir, double id)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rv;

	if (dfd < 0) {
		fprintf(stderr, "gpumem: job: --svg: the report directory %s: %s (the picture is "
			"drawn from the job's report files, read with your rights; --site FILE "
			"names the site file whose report.dir holds them)\n", gpumem_job_text(dir),
			strerror(errno));
		return -1;
	}
	j->id = id;
	scan(j, dir, dfd);
	close(dfd);
	rv = found(j, dir);
	return rv;
}

/* FILE, then the job's other reports beside it, as root with the directory's
 * owner's rights (callerfile.h); 0, or -1 (said why). */
static int gather(struct job *j, const char *path)
{
	char err[512], *copy = strdup(path);
	const char *dir = copy ? dirname(copy) : NULL;
	struct json_object *first = NULL;
	struct gpumem_fs_ids ids = { 0 };
	int dfd = dir ? gpumem_caller_dir_open(dir, err, sizeof(err)) : -1, rv = -1;

	if (dfd < 0 || gpumem_fs_as_owner(dfd, &ids, err, sizeof(err)) < 0) {
		fprintf(stderr, "gpumem: job: --report %s: its directory: %s\n",
			gpumem_job_text(path), dir ? gpumem_job_text(err) : "out of memory");
		goto fail;
	}
	if ((first = gpumem_job_load_report(path, err, sizeof(err))) == NULL) {
		fprintf(stderr, "gpumem: job: --report %s\n", gpumem_job_text(err));
		goto fail;
	}
	if (gpumem_json_num(first, "job", &j->id) < 0 || j->id < 0 || j->id > 9e15 ||
	    gpumem_json_str(first, "node") == NULL) {
		fprintf(stderr, "gpumem: job: --report %s: not a gpumem report (no job or node)\n",
			gpumem_job_text(path));
		goto fail;
	}
	keep(j, first);
	first = NULL;
	scan(j, dir, dfd);
	rv = found(j, dir);
fail:
	gpumem_fs_restore(&ids);
	json_object_put(first);
	if (dfd >= 0)
		close(dfd);
	free(copy);
	return rv;
}

/* "L2 25%, MPS 50% (daemon job), UM pl=gpu ab=cpu" from a short "effective". */
static void in_force(struct json_object *eff, char *b, size_t len)
{
	const char *l2 = gpumem_json_str(eff, "l2"), *um = gpumem_json_str(eff, "um");
	const char *daemon = gpumem_json_str(eff, "daemon");
	double mps;

	if (eff == NULL) {
		snprintf(b, len, "not recorded");
		return;
	}
	snprintf(b, len, "L2 persisting %s, MPS ", l2 ? l2 : "none");
	if (gpumem_json_num(eff, "mps", &mps) == 0)
		snprintf(b + strlen(b), len - strlen(b), "%.0f%%", mps);
	else
		snprintf(b + strlen(b), len - strlen(b), "none");
	snprintf(b + strlen(b), len - strlen(b), " (daemon %.32s), unified memory %.80s",
		 daemon ? daemon : "none", um && *um ? um : "as the job does");
}

/* Node N's head at y: its name and policy, then what was in force and how
 * long it was sampled; returns its height. */
static double node_head(FILE *f, struct node *n, double y, int draw)
{
	struct json_object *r = n->rep, *c = n->compact, *prof = gpumem_json_get(r, "profile");
	const char *st = gpumem_json_str(c, "st"), *why = gpumem_json_str(c, "why");
	const char *policy = gpumem_json_str(r, "policy"), *started = gpumem_json_str(prof, "started");
	double w = JSVG_PAGE_W - 2 * JSVG_MARGIN, s;
	char line[1400], eff[300];
	int lines;

	snprintf(line, sizeof(line), "Node %.64s, policy %.200s", gpumem_json_str(r, "node"),
		 policy ? policy : "none (the site's defaults)");
	lines = gpumem_svg_wrapped(f, JSVG_MARGIN, y + 16, 14, w, "#263238", line, draw);
	in_force(n->eff, eff, sizeof(eff));
	snprintf(line, sizeof(line), "In force: %s. ", eff);
	if (!n->ok)
		snprintf(line + strlen(line), sizeof(line) - strlen(line), "Profile %s%s%.400s: no "
			 "figure to draw.", st ? st : "none", why ? ": " : "", why ? why : "");
	else if (gpumem_json_num(prof, "seconds", &s) == 0)
		snprintf(line + strlen(line), sizeof(line) - strlen(line), "Sampled %.0f s from "
			 "%.40s.", s, started ? started : "an unknown time");
	lines += gpumem_svg_wrapped(f, JSVG_MARGIN, y + 16 + lines * 14 * 1.35, 12, w, "#37474f",
				    line, draw);
	return 10 + lines * 14 * 1.35 + 8;
}

/* Node N's GPUs at y: returns their height; counts them. */
static double node_gpus(FILE *f, struct node *n, double y, int draw, size_t *ngpus)
{
	struct json_object *gpus = gpumem_json_get(gpumem_json_get(n->rep, "profile"), "gpus");
	struct json_object *rows = gpumem_json_get(n->compact, "g");
	double h = 0;

	for (size_t i = 0; n->ok && i < gpumem_json_len(gpus); i++) {
		struct gpumem_jsvg_gpu g = { .node = gpumem_json_str(n->rep, "node"),
					      .gpu = gpumem_json_at(gpus, i) };
		struct gpumem_prof_gpu pg;

		if (gpumem_prof_gpu_of(gpumem_json_at(rows, i), &pg) == 0) {
			gpumem_advise_with(gpumem_job_rules(), &pg, n->eff, &g.adv);
			g.advised = 1;
		}
		h += gpumem_jsvg_gpu(f, &g, y + h, draw) + JSVG_GAP;
		(*ngpus)++;
	}
	return h;
}

static void head(FILE *f, const struct job *j, double h, size_t ngpus)
{
	const char *user = gpumem_json_str(j->nodes[0].rep, "user");
	char sub[400];

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
		"height=\"%.0f\" viewBox=\"0 0 %d %.0f\" font-family=\"%s\">\n<style>"
		".tick{font-size:9px;fill:#607d8b}.pnote text{paint-order:stroke;stroke:#fff;"
		"stroke-width:3px;stroke-linejoin:round}</style>\n<rect width=\"%d\" height=\"%.0f\" "
		"fill=\"#f5f7f8\"/>\n", JSVG_PAGE_W, h, JSVG_PAGE_W, h, FONT, JSVG_PAGE_W, h);
	fprintf(f, "<text x=\"%d\" y=\"30\" font-size=\"17\" font-weight=\"bold\" fill=\"#263238\">"
		"Job %.0f: what its GPUs did, and the advice</text>\n", JSVG_MARGIN, j->id);
	snprintf(sub, sizeof(sub), "user %.64s; %zu node%s, %zu GPU%s%s. Each line is named at "
		 "its right end, with its mean; time from the start of sampling; a break in a line: "
		 "no sample there.", user ? user : "?", j->n, j->n == 1 ? "" : "s", ngpus,
		 ngpus == 1 ? "" : "s", j->more ? " (more nodes left out)" : "");
	gpumem_svg_wrapped(f, JSVG_MARGIN, 50, 11.5, JSVG_PAGE_W - 2 * JSVG_MARGIN, "#546e7a", sub,
			   1);
}

/* The page into F; the number of GPUs drawn. */
static size_t page(FILE *f, struct job *j)
{
	double y = 76, h;
	size_t ngpus = 0;

	for (int draw = 0; draw < 2; draw++) {
		if (draw)
			head(f, j, h, ngpus);
		y = 76;
		ngpus = 0;
		for (size_t i = 0; i < j->n; i++) {
			if (draw)
				fputs("<g class=\"node\">\n", f);
			y += node_head(f, &j->nodes[i], y, draw);
			y += node_gpus(f, &j->nodes[i], y, draw, &ngpus);
			if (draw)
				fputs("</g>\n", f);
		}
		h = y + JSVG_MARGIN;
	}
	fputs("</svg>\n", f);
	return ngpus;
}

int gpumem_job_svg(const char *report, const char *dir, double id, const char *out)
{
	struct job *j = calloc(1, sizeof(*j));
	int to_stdout = !strcmp(out, "-"), rv = 2;
	struct gpumem_out o;
	char why[600];
	size_t ngpus;

	if (j == NULL || (report ? gather(j, report) : gather_dir(j, dir, id)) < 0)
		goto fail;
	for (size_t i = 0; i < j->n; i++) {
		struct node *n = &j->nodes[i];

		n->eff = gpumem_acct_effective(gpumem_json_get(n->rep, "effective"));
		n->compact = gpumem_profile_compact(gpumem_json_get(n->rep, "profile"));
		n->ok = n->compact && !strcmp(gpumem_json_str(n->compact, "st") ?
					      gpumem_json_str(n->compact, "st") : "", "ran");
	}
	if (gpumem_out_open(&o, out, why, sizeof(why)) < 0) {
		fprintf(stderr, "gpumem: job: --svg %s: %s\n", gpumem_job_text(out),
			gpumem_job_text(why));
		goto fail;
	}
	ngpus = page(o.f, j);
	if (gpumem_out_commit(&o, 1, why, sizeof(why)) < 0) {
		fprintf(stderr, "gpumem: job: --svg: writing %s failed: %s\n",
			gpumem_job_text(out), gpumem_job_text(why));
		goto fail;
	}
	fprintf(stderr, "gpumem: job: wrote %s: job %.0f, %zu GPU%s on %zu node%s%s\n",
		to_stdout ? "the picture" : gpumem_job_text(out), j->id, ngpus,
		ngpus == 1 ? "" : "s", j->n, j->n == 1 ? "" : "s",
		j->more ? " (more nodes than a picture holds left out)" : "");
	rv = 0;
fail:
	for (size_t i = 0; j && i < j->n; i++) {
		json_object_put(j->nodes[i].rep);
		json_object_put(j->nodes[i].eff);
		json_object_put(j->nodes[i].compact);
	}
	free(j);
	return rv;
}

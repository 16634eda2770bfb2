/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem job JOBID [--json]: what a job got on each node (policy, check
 * verdicts and figures, drain, GPU memory profile and the advice from it),
 * read from Slurm's accounting: sacct's AdminComment, where gpumem-acct
 * left one record per node (acct.h).  gpumem advise JOBID [--json]: the
 * same records, the advice alone (the profile block: job_profile.c);
 * gpumem advise --rules: the advice table in force (job_rules.c);
 * --mine, the caller's recent jobs by name (advise_mine.c).
 * No report directory is read, except with --report FILE or --svg: the record
 * gpumem-acct would build from the reports beside that file (a node
 * without accounting, or before gpumem-acct ran); with --svg OUT, the job's
 * picture from the reports (job_svg.c): beside FILE, or for JOBID in the
 * site file's report.dir, read with the caller's rights.  sacct runs as the caller, so Slurm decides
 * which jobs they may see (PrivateData=jobs: only their own).  Records are
 * read, and --json written, with the JSON module (json.h, libjson-c).
 *
 * Builds: gpumem (plugin/cli/cli.am).  Includes plugin/core's headers.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core_record.h"
#include "core_policy.h"
#include "advise_mine.h"
#include "core_base.h"
#include "job_cli.h"
#include "job_svg.h"

#define SACCT_CAP (1024 * 1024)
#define MAX_RECORDS 4096

enum { JOB_OK = 0, JOB_NONE = 1, JOB_BAD = 2, JOB_USAGE = 64 };

struct seg {
	struct json_object *rec; /* the decoded, checked record, or NULL */
	char err[320];          /* why it could not be read */
};

struct walk {
	struct seg *segs;
	size_t n;
};

static void collect(const char *data, size_t len, size_t at, void *arg)
{
	struct walk *w = arg;
	struct seg *s;
	char *json;

	(void)at;
	if (w->n >= MAX_RECORDS)
		return;
	s = &w->segs[w->n++];
	json = gpumem_acct_decode(data, len, s->err, sizeof(s->err));
	if (json && gpumem_acct_parse(json, &s->rec, s->err, sizeof(s->err)) < 0)
		s->rec = NULL;
	if (json == NULL && data[len] == '\0')
		strncat(s->err, " (the segment is not closed: truncated?)",
			sizeof(s->err) - strlen(s->err) - 1);
	free(json);
}

/* A number or "-" for a GPU figure. */
static void fig(char *buf, size_t len, struct json_object *v)
{
	if (gpumem_json_is(v, json_type_int) || gpumem_json_is(v, json_type_double))
		snprintf(buf, len, "%.0f", json_object_get_double(v));
	else
		snprintf(buf, len, "-");
}

/*
 * Strings in a record may come from a check's output: shown through the
 * one terminal cleaner (trust.h: C0, C1, bidi as '?'), "-" when absent.
 * A copy in one of a few rotating buffers, so one printf may take several.
 */
const char *gpumem_job_text(const char *s)
{
	static char bufs[8][512];
	static unsigned next;
	char *b = bufs[next++ % 8];

	if (s == NULL || *s == '\0')
		return "-";
	gpumem_term_clean(s, b, sizeof(bufs[0]), sizeof(bufs[0]));
	return b;
}

static const char *or_dash(const char *s)
{
	return gpumem_job_text(s);
}

static void print_check(struct json_object *c)
{
	struct json_object *gpus = gpumem_json_get(c, "gpus"), *sa = gpumem_json_get(c, "sa");
	const char *reason = gpumem_json_str(c, "reason"), *ev = gpumem_json_str(c, "ev");
	const char *jb = gpumem_json_str(c, "jb");

	printf("  check %-6s %-8s %s%s%s\n", or_dash(gpumem_json_str(c, "phase")),
	       or_dash(gpumem_json_str(c, "verdict")), or_dash(gpumem_json_str(c, "status")),
	       reason ? ": " : "", reason ? or_dash(reason) : "");
	/* What the verdict rests on: measured now, or an earlier pass (evidence.c). */
	if (ev)
		printf("    evidence: %s\n", or_dash(ev));
	/* What the figures were judged against: the site's reference, or the GPU's peak. */
	if (jb)
		printf("    judged against: %s\n", or_dash(jb));
	for (size_t k = 0; k < gpumem_json_len(gpus); k++) {
		struct json_object *g = gpumem_json_at(gpus, k);
		int has_reason = gpumem_json_len(g) > 6;
		char f[4][32];

		for (int m = 0; m < 4; m++)
			fig(f[m], sizeof(f[m]), gpumem_json_at(g, 2 + (size_t)m));
		printf("    gpu %-3.0f %-8s read %s triad %s h2d %s d2h %s GB/s%s%s\n",
		       json_object_get_double(gpumem_json_at(g, 0)),
		       or_dash(json_object_get_string(gpumem_json_at(g, 1))), f[0], f[1], f[2], f[3],
		       has_reason ? "  " : "",
		       has_reason ? or_dash(json_object_get_string(gpumem_json_at(g, 6))) : "");
	}
	/* The L2 set-aside's own cost, where the check measured it (records since it does). */
	if (gpumem_json_len(sa) == 2)
		printf("    l2 set-aside %.0f%% of L2: triad at %.2fx of none (check.l2_ab)\n",
		       json_object_get_double(gpumem_json_at(sa, 0)),
		       json_object_get_double(gpumem_json_at(sa, 1)));
}

/* REC was checked by gpumem_acct_parse: the fields have their types.  ADVISE:
 * the node line and the advice alone. */
static void print_record(struct json_object *rec, int advise)
{
	struct json_object *eff = gpumem_json_get(rec, "eff");
	struct json_object *checks = gpumem_json_get(rec, "checks");
	double mps;

	printf("node %s  policy %s", or_dash(gpumem_json_str(rec, "node")),
	       or_dash(gpumem_json_str(rec, "policy")));
	if (gpumem_json_is(eff, json_type_object)) {
		printf("  l2 %s  mps ", or_dash(gpumem_json_str(eff, "l2")));
		if (gpumem_json_num(eff, "mps", &mps) == 0)
			printf("%.0f%%", mps);
		else
			printf("-");
		printf(" (daemon %s)  um %s", or_dash(gpumem_json_str(eff, "daemon")),
		       or_dash(gpumem_json_str(eff, "um")));
	}
	printf("%s\n", json_object_get_boolean(gpumem_json_get(rec, "drained")) ?
	       "  DRAINED by gpumem" : "");
	if (advise) {
		gpumem_job_print_advice(rec);
		return;
	}
	for (size_t i = 0; i < gpumem_json_len(checks); i++)
		print_check(gpumem_json_at(checks, i));
	gpumem_job_print_profile(rec);
}

/*
 * What --json gives of REC (which it takes): the record with its "advice"
 * (gpumem job), or (ADVISE) {"node", "policy", "profile", "why", "advice"}.
 */
static struct json_object *json_of(struct json_object *rec, int advise)
{
	struct json_object *adv = gpumem_job_advice(rec), *prof = gpumem_json_get(rec, "prof");
	struct json_object *o;

	if (adv == NULL) {
		json_object_put(rec);
		return NULL;
	}
	if (!advise) {
		gpumem_json_add(rec, "advice", adv);
		return rec;
	}
	o = json_object_new_object();
	if (o) {
		gpumem_json_add(o, "node", gpumem_json_string(gpumem_json_str(rec, "node")));
		gpumem_json_add(o, "policy", gpumem_json_string(gpumem_json_str(rec, "policy")));
		gpumem_json_add(o, "profile", gpumem_json_string(prof ? gpumem_json_str(prof, "st") :
								 "none"));
		gpumem_json_add(o, "why", gpumem_json_string(gpumem_json_str(prof, "why")));
		gpumem_json_add(o, "advice", adv);
	} else {
		json_object_put(adv);
	}
	json_object_put(rec);
	return o;
}

/*
 * One line of sacct: JobIDRaw|User|State|AdminComment.  Printed, or with
 * --json added to OUT (an array) as {"job", "user", "state", "nodes": [the
 * records], "refused": N}.  Returns the number of bad records.
 */
static int one_job(char *line, struct json_object *out, int *first, int advise)
{
	char *id = line, *user, *state, *comment;
	struct walk w = { calloc(MAX_RECORDS, sizeof(struct seg)), 0 };
	struct json_object *o = NULL, *nodes = NULL;
	int bad = 0;

	if (w.segs == NULL)
		return 1;
	user = strchr(id, '|');
	state = user ? strchr(user + 1, '|') : NULL;
	comment = state ? strchr(state + 1, '|') : NULL;
	if (comment == NULL) {
		fprintf(stderr, "gpumem: job: unexpected line from sacct: %.80s\n", or_dash(line));
		free(w.segs);
		return 1;
	}
	*user++ = *state++ = *comment++ = '\0';
	gpumem_acct_segments(comment, collect, &w);
	if (out) {
		o = json_object_new_object();
		nodes = json_object_new_array();
		if (o == NULL || nodes == NULL || json_object_array_add(out, o) < 0) {
			json_object_put(o);
			json_object_put(nodes);
			fprintf(stderr, "gpumem: job %s: out of memory\n", id);
			o = nodes = NULL;
			bad++;
		} else {
			gpumem_json_add(o, "job", gpumem_json_string(id));
			gpumem_json_add(o, "user", gpumem_json_string(user));
			gpumem_json_add(o, "state", gpumem_json_string(state));
			gpumem_json_add(o, "nodes", nodes);
		}
	} else {
		printf("%sjob %s  user %s  %s: %zu node record%s\n", *first ? "" : "\n",
		       or_dash(id), or_dash(user), or_dash(state), w.n, w.n == 1 ? "" : "s");
		if (w.n == 0)
			printf("  (no gpumem record: no check ran, or gpumem-acct is not in the "
			       "Epilog; see gpumem(1))\n");
	}
	*first = 0;
	for (size_t i = 0; i < w.n; i++) {
		if (w.segs[i].rec == NULL) {
			fprintf(stderr, "gpumem: job %s: record %zu refused: %s\n", or_dash(id), i + 1,
				or_dash(w.segs[i].err));
			bad++;
		} else if (out) {
			struct json_object *n = json_of(w.segs[i].rec, advise);

			w.segs[i].rec = NULL;           /* json_of took it */
			if (n == NULL || nodes == NULL || json_object_array_add(nodes, n) < 0) {
				json_object_put(n);
				fprintf(stderr, "gpumem: job %s: out of memory\n", or_dash(id));
				bad++;
			}
		} else {
			print_record(w.segs[i].rec, advise);
		}
		json_object_put(w.segs[i].rec);
	}
	if (o)
		gpumem_json_add(o, "refused", gpumem_json_int(bad));
	free(w.segs);
	return bad;
}

struct json_object *gpumem_job_load_report(const char *path, char *err, size_t elen)
{
	struct json_object *doc = NULL;
	char *buf = malloc(GPUMEM_REPORT_MAX_FILE_BYTES + 2), why[400];
	struct stat st;
	size_t len = 0;
	int fd = gpumem_caller_file_open(path, why, sizeof(why));

	if (fd < 0)
		snprintf(err, elen, "%s: %s", path, why);
	else if (buf == NULL || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
		 gpumem_read_fd(fd, buf, GPUMEM_REPORT_MAX_FILE_BYTES + 1, &len) < 0 ||
		 len > GPUMEM_REPORT_MAX_FILE_BYTES)
		snprintf(err, elen, "%s: %s", path, len > GPUMEM_REPORT_MAX_FILE_BYTES ?
			 "larger than a report may be" : "not a readable regular file");
	else {
		buf[len] = '\0';
		if (gpumem_json_parse_report(buf, len, &doc, err, elen) < 0) {
			doc = NULL;
			/* The parser's detail may quote the file: root is told no byte of it. */
			if (geteuid() == 0)
				snprintf(err, elen, "%s: not a valid gpumem report", path);
		}
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	return doc;
}

/* The record gpumem-acct would build from the reports beside report file PATH, or NULL (ERR). */
static struct json_object *report_record(const char *path, char *err, size_t elen)
{
	struct json_object *doc = NULL, *rec = NULL;
	struct gpumem_fs_ids ids = { 0 };
	char *copy = strdup(path), *json = NULL, why[400];
	const char *node, *dir = copy ? dirname(copy) : NULL;
	double job;
	int n = 0, dfd = dir ? gpumem_caller_dir_open(dir, why, sizeof(why)) : -1;

	/* As root, the directory is read with its owner's rights (callerfile.h). */
	if (dfd < 0 || gpumem_fs_as_owner(dfd, &ids, why, sizeof(why)) < 0) {
		snprintf(err, elen, "%s: its directory: %s", path, dir ? why : "out of memory");
		goto fail;
	}
	if ((doc = gpumem_job_load_report(path, err, elen)) == NULL)
		goto fail;
	node = gpumem_json_str(doc, "node");
	if (gpumem_json_num(doc, "job", &job) < 0 || job < 0 || job > 9e15 || node == NULL) {
		snprintf(err, elen, "%s: not a gpumem report (no job or node)", path);
		goto fail;
	}
	err[0] = '\0';
	json = gpumem_acct_build(dir, (long long)job, node, &n, err, elen);
	if (json && gpumem_acct_parse(json, &rec, err, elen) < 0)
		rec = NULL;
	else if (json == NULL && (n == 0 || !err[0]))
		snprintf(err, elen, "%s: no report of job %.0f on %s under its own name in %s "
			 "(job<JOB>.<HOOK>.<NODE>.<PHASE>.json)", path, job, node, dir);
fail:
	gpumem_fs_restore(&ids);
	if (dfd >= 0)
		close(dfd);
	json_object_put(doc);
	free(json);
	free(copy);
	return rec;
}

/* --report FILE: one record, printed or (JSON) as the only node of one job. */
static int from_report(const char *cmd, const char *path, int json, int advise)
{
	struct json_object *rec, *arr, *n;
	char err[512];
	int rv = JOB_BAD;

	rec = report_record(path, err, sizeof(err));
	if (rec == NULL) {
		fprintf(stderr, "gpumem: %s: %s\n", cmd, gpumem_job_text(err));
		return JOB_BAD;
	}
	if (!json) {
		print_record(rec, advise);
		json_object_put(rec);
		return JOB_OK;
	}
	arr = json_object_new_array();
	n = json_of(rec, advise);
	if (arr == NULL || n == NULL || json_object_array_add(arr, n) < 0) {
		json_object_put(n);
		fprintf(stderr, "gpumem: %s: out of memory\n", cmd);
	} else if (gpumem_json_write(stdout, arr, GPUMEM_JSON_SPACED) == 0 && putchar('\n') != EOF) {
		rv = JOB_OK;
	}
	json_object_put(arr);
	return rv;
}

/* gpumem job (ADVISE 0) and gpumem advise (1): the same reading, two outputs. */
static int job_or_advise(int argc, char **argv, int advise)
{
	const char *cmd = advise ? "advise" : "job";
	static char out[SACCT_CAP];
	char err[512], *line, *save = NULL, user[72];
	int json = 0, first = 1, bad = 0, rc, rules = 0;
	struct json_object *arr = NULL;
	const char *job = NULL, *report = NULL, *site = NULL, *svg = NULL, *since = NULL, *u;
	int mine = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--report") && i + 1 < argc && report == NULL)
			report = argv[++i];
		else if (!strcmp(argv[i], "--site") && i + 1 < argc && site == NULL)
			site = argv[++i];
		else if (!strcmp(argv[i], "--rules") && advise)
			rules = 1;
		else if (!advise && !strcmp(argv[i], "--svg") && i + 1 < argc && svg == NULL)
			svg = argv[++i];
		else if (advise && !strcmp(argv[i], "--mine"))
			mine = 1;
		else if (advise && !strcmp(argv[i], "--since") && i + 1 < argc && since == NULL)
			since = argv[++i];
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("Usage: gpumem %s JOBID [--json]\n"
			       "       gpumem %s --report FILE [--json]\n", cmd, cmd);
			if (!advise)
				printf("       gpumem job JOBID --svg OUT.svg, gpumem job --report FILE "
				       "--svg OUT.svg (OUT - : stdout)\n");
			else
				printf("       gpumem advise --rules [--json]: the rules in force\n"
				       "       gpumem advise --mine [--since TIME] [--json]\n");
			printf("  --site FILE  the site file whose advice: rules apply (default "
			       "$GPUMEM_SITE, else the installed one)\n");
			return JOB_OK;
		} else if (job == NULL && argv[i][0] != '-')
			job = argv[i];
		else {
			fprintf(stderr, "gpumem: %s: unexpected argument '%s'\n", cmd, argv[i]);
			return JOB_USAGE;
		}
	}
	/* The advice table in force: the site file's advice: section, else built in. */
	if (gpumem_job_rules_load(cmd, site) < 0)
		return JOB_BAD;
	if (rules && job == NULL && report == NULL && !mine && !since && !svg)
		return gpumem_job_rules_print(json) < 0 ? JOB_BAD : JOB_OK;
	if (mine || since) {
		if (mine && !job && !report && !rules)
			return gpumem_advise_mine(since, json);
		fprintf(stderr, "gpumem: advise: %s\n", mine ? "--mine takes no JOBID, --report "
			"nor --rules" : "--since goes with --mine");
		return JOB_USAGE;
	}
	if (svg && (json || rules || (job == NULL) == (report == NULL) ||
		    (job && (!*job || strspn(job, "0123456789") != strlen(job) || strlen(job) > 15)))) {
		fprintf(stderr, "gpumem: job: --svg draws a job's timelines from its report files "
			"(the accounting record keeps a summary per GPU, within AdminComment's %d-byte "
			"segment): gpumem job JOBID --svg OUT.svg (JOBID the job's own number, as in "
			"the report files' names: for an array task sacct -j ID -o JobIDRaw; the site "
			"file's report.dir) or gpumem job --report FILE --svg OUT.svg%s\n",
			GPUMEM_ACCT_MAX_SEGMENT, json ? " (without --json)" : "");
		return JOB_USAGE;
	}
	if (svg)
		return gpumem_job_svg(report, gpumem_job_report_dir(), job ? strtod(job, NULL) : 0,
				      svg);
	if (report && job == NULL && !rules)
		return from_report(cmd, report, json, advise);
	if (rules) {
		fprintf(stderr, "gpumem: advise: --rules prints the rules; it takes no JOBID or "
			"--report\n");
		return JOB_USAGE;
	}
	if (job == NULL || strspn(job, "0123456789_") != strlen(job) || !*job) {
		fprintf(stderr, "gpumem: %s: give one job ID (digits, or ARRAYID_TASK), or --report "
			"FILE\n", cmd);
		return JOB_USAGE;
	}
	char *sargv[] = { "sacct", "-X", "-n", "-P", "-j", (char *)job, "-o",
			  "JobIDRaw,User,State,AdminComment", NULL };
	rc = gpumem_run_capture(sargv, out, sizeof(out), err, sizeof(err), 60);
	if (rc != 0) {
		fprintf(stderr, "gpumem: %s: sacct failed: %s\n", cmd,
			err[0] ? or_dash(err) : "(no message)");
		return JOB_BAD;
	}
	if (out[0] == '\0') {
		fprintf(stderr, "gpumem: job %s: not in accounting, or not yours to see (Slurm shows "
			"users only their own jobs where PrivateData=jobs)\n", job);
		return JOB_NONE;
	}
	if (json && (arr = json_object_new_array()) == NULL) {
		fprintf(stderr, "gpumem: %s: out of memory\n", cmd);
		return JOB_BAD;
	}
	/* gpumem advise: the name's history needs the job's user (the first line's). */
	u = strchr(out, '|');
	snprintf(user, sizeof(user), "%.*s", u ? (int)strcspn(u + 1, "|\n") : 0, u ? u + 1 : "");
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		bad += one_job(line, arr, &first, advise);
	if (advise && !json)
		gpumem_job_print_history(job, user);
	if (advise && json && gpumem_json_len(arr) > 0)
		gpumem_json_add(gpumem_json_at(arr, 0), "history", gpumem_job_history_json(job, user));
	if (json) {
		if (gpumem_json_write(stdout, arr, GPUMEM_JSON_SPACED) < 0 || putchar('\n') == EOF)
			bad++;
		json_object_put(arr);
	}
	return bad ? JOB_BAD : JOB_OK;
}

int gpumem_job_main(int argc, char **argv)
{
	return job_or_advise(argc, argv, 0);
}

int gpumem_advise_main(int argc, char **argv)
{
	return job_or_advise(argc, argv, 1);
}

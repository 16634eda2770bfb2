/*
 * gpumem job JOBID [--json]: what a job got on each node (policy, check
 * verdicts and figures, drain), read from Slurm's accounting: sacct's
 * AdminComment, where gpumem-acct left one record per node (acct.h).
 * No report directory is read.  sacct runs as the caller, so Slurm decides
 * which jobs they may see (PrivateData=jobs: only their own).
 *
 * Builds: gpumem (plugin/cli/cli.am).  Includes plugin/core's headers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "acct.h"
#include "report.h"

#define SACCT_CAP (1024 * 1024)
#define MAX_RECORDS 4096

enum { JOB_OK = 0, JOB_NONE = 1, JOB_BAD = 2, JOB_USAGE = 64 };

struct seg {
	char *json;             /* decoded record, or NULL */
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

	(void)at;
	if (w->n >= MAX_RECORDS)
		return;
	s = &w->segs[w->n++];
	s->json = gpumem_acct_decode(data, len, s->err, sizeof(s->err));
	if (s->json == NULL && data[len] == '\0')
		strncat(s->err, " (the segment is not closed: truncated?)",
			sizeof(s->err) - strlen(s->err) - 1);
}

/* A number or "-" for a GPU figure. */
static void fig(char *buf, size_t len, const struct gpumem_report_jval *v)
{
	if (v->type == GPUMEM_REPORT_JNUM)
		snprintf(buf, len, "%.0f", v->num);
	else
		snprintf(buf, len, "-");
}

/*
 * Strings in a record may come from a check's output: control characters
 * are shown as '?' (as `gpumem report` does), in place.
 */
static const char *or_dash(const char *s)
{
	if (s == NULL || *s == '\0')
		return "-";
	for (char *p = (char *)s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return s;
}

static void print_check(const struct gpumem_report_jval *c)
{
	const struct gpumem_report_jval *gpus = gpumem_report_jget(c, "gpus");
	const char *reason = gpumem_report_jstr(c, "reason");

	printf("  check %-6s %-8s %s%s%s\n", or_dash(gpumem_report_jstr(c, "phase")),
	       or_dash(gpumem_report_jstr(c, "verdict")), or_dash(gpumem_report_jstr(c, "status")),
	       reason ? ": " : "", reason ? or_dash(reason) : "");
	for (size_t k = 0; k < gpus->n; k++) {
		const struct gpumem_report_jval *g = gpus->items[k].items;
		char f[4][32];

		for (int m = 0; m < 4; m++)
			fig(f[m], sizeof(f[m]), &g[2 + m]);
		printf("    gpu %-3.0f %-8s read %s triad %s h2d %s d2h %s GB/s%s%s\n", g[0].num,
		       or_dash(g[1].str), f[0], f[1], f[2], f[3], gpus->items[k].n > 6 ? "  " : "",
		       gpus->items[k].n > 6 ? or_dash(g[6].str) : "");
	}
}

static void print_record(const char *json)
{
	struct gpumem_report_jval v = { 0 };
	const struct gpumem_report_jval *eff, *checks, *dr;
	char err[256];
	double mps;

	if (gpumem_report_json_parse(json, strlen(json), &v, err, sizeof(err)) < 0)
		return;         /* cannot happen: decode checked it */
	eff = gpumem_report_jget(&v, "eff");
	checks = gpumem_report_jget(&v, "checks");
	dr = gpumem_report_jget(&v, "drained");
	printf("node %s  policy %s", or_dash(gpumem_report_jstr(&v, "node")),
	       or_dash(gpumem_report_jstr(&v, "policy")));
	if (eff && eff->type == GPUMEM_REPORT_JOBJ) {
		printf("  l2 %s  mps ", or_dash(gpumem_report_jstr(eff, "l2")));
		if (gpumem_report_jnum(eff, "mps", &mps) == 0)
			printf("%.0f%%", mps);
		else
			printf("-");
		printf(" (daemon %s)  um %s", or_dash(gpumem_report_jstr(eff, "daemon")),
		       or_dash(gpumem_report_jstr(eff, "um")));
	}
	printf("%s\n", dr->boolean ? "  DRAINED by gpumem" : "");
	for (size_t i = 0; i < checks->n; i++)
		print_check(&checks->items[i]);
	gpumem_report_json_free(&v);
}

/* One line of sacct: JobIDRaw|User|State|AdminComment.  The number of bad records. */
static int one_job(char *line, int json, int *first)
{
	char *id = line, *user, *state, *comment;
	struct walk w = { calloc(MAX_RECORDS, sizeof(struct seg)), 0 };
	int bad = 0;

	if (w.segs == NULL)
		return 1;
	user = strchr(id, '|');
	state = user ? strchr(user + 1, '|') : NULL;
	comment = state ? strchr(state + 1, '|') : NULL;
	if (comment == NULL) {
		fprintf(stderr, "gpumem: job: unexpected line from sacct: %.80s\n", line);
		free(w.segs);
		return 1;
	}
	*user++ = *state++ = *comment++ = '\0';
	gpumem_acct_segments(comment, collect, &w);
	if (json) {
		printf("%s{\"job\": ", *first ? "" : ",\n ");
		gpumem_report_json_str(stdout, id);
		printf(", \"user\": ");
		gpumem_report_json_str(stdout, user);
		printf(", \"state\": ");
		gpumem_report_json_str(stdout, state);
		printf(", \"nodes\": [");
	} else {
		printf("%sjob %s  user %s  %s: %zu node record%s\n", *first ? "" : "\n", id, user,
		       state, w.n, w.n == 1 ? "" : "s");
		if (w.n == 0)
			printf("  (no gpumem record: no check ran, or gpumem-acct is not in the "
			       "Epilog; see gpumem(1))\n");
	}
	*first = 0;
	for (size_t i = 0, k = 0; i < w.n; i++) {
		if (w.segs[i].json == NULL) {
			fprintf(stderr, "gpumem: job %s: record %zu refused: %s\n", id, i + 1,
				w.segs[i].err);
			bad++;
		} else if (json) {
			printf("%s%s", k++ ? ", " : "", w.segs[i].json);
		} else {
			print_record(w.segs[i].json);
		}
		free(w.segs[i].json);
	}
	if (json)
		printf("], \"refused\": %d}", bad);
	free(w.segs);
	return bad;
}

int gpumem_job_main(int argc, char **argv)
{
	static char out[SACCT_CAP];
	char err[512], *line, *save = NULL;
	int json = 0, first = 1, bad = 0, rc;
	const char *job = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("Usage: gpumem job JOBID [--json]\n");
			return JOB_OK;
		} else if (job == NULL && argv[i][0] != '-')
			job = argv[i];
		else {
			fprintf(stderr, "gpumem: job: unexpected argument '%s'\n", argv[i]);
			return JOB_USAGE;
		}
	}
	if (job == NULL || strspn(job, "0123456789_") != strlen(job) || !*job) {
		fprintf(stderr, "gpumem: job: give one job ID (digits, or ARRAYID_TASK)\n");
		return JOB_USAGE;
	}
	char *sargv[] = { "sacct", "-X", "-n", "-P", "-j", (char *)job, "-o",
			  "JobIDRaw,User,State,AdminComment", NULL };
	rc = gpumem_run_capture(sargv, out, sizeof(out), err, sizeof(err), 60);
	if (rc != 0) {
		fprintf(stderr, "gpumem: job: sacct failed: %s\n", err[0] ? err : "(no message)");
		return JOB_BAD;
	}
	if (out[0] == '\0') {
		fprintf(stderr, "gpumem: job %s: not in accounting, or not yours to see (Slurm shows "
			"users only their own jobs where PrivateData=jobs)\n", job);
		return JOB_NONE;
	}
	if (json)
		printf("[");
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		bad += one_job(line, json, &first);
	if (json)
		printf("]\n");
	return bad ? JOB_BAD : JOB_OK;
}

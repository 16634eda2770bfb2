/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem report's command line: the options and their checks (a usage
 * error names the option), the filters they build, and which directory is
 * read (DIR, else the site file's report.dir).  report.c acts on them.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "core_policy.h"
#include "report_cli.h"
#include "report_opts.h"

#define DEFAULT_SITE GPUMEM_SYSCONFDIR "/slurm/gpumem.yaml"
#define WORST_DEFAULT 10

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: gpumem report [--site FILE] [FILTERS] [--summary|--rows] [--json] [--limit N] [DIR]\n"
		"       gpumem report --svg FILE [--metric NAME] [FILTERS] [--limit N] [DIR]\n"
		"       gpumem report --prometheus [FILTERS] [DIR]\n"
		"       gpumem report --profiles [--sort KEY] [FILTERS] [--json] [--limit N] [DIR]\n"
		"\n"
		"The gpumem check reports of every node: a summary of the fleet (rows by\n"
		"verdict, GPUs by model, each model's figures as a fraction of the site's\n"
		"reference, nodes gpumem drained, the worst GPUs), then one row per report\n"
		"and GPU, worst first (fail, unusable, error, warn, skipped/not_run, pass),\n"
		"then newest.  Each GPU is compared with its model's other GPUs (the\n"
		"fleet) and its node's: a figure under %.2fx of their median (HBM; host\n"
		"links %.2fx) is marked \"slow vs fleet\" and listed right after the\n"
		"warnings.  Filters by job and node read only the files named for them.\n"
		"DIR defaults to the site file's report.dir, else %s.\n"
		"\n"
		"Filters:\n"
		"  --node NAME      node name or glob (gpu0*); repeatable, or NAME,NAME\n"
		"  --user NAME      the job's user, or a glob; repeatable, or NAME,NAME\n"
		"  --since TIME     2026-11-22, 2026-11-22T03:00[:00][Z], or an age: 90m, 2h, 7d, 2w\n"
		"  --verdict V,...  pass, warn, fail, unusable, error, skipped, not_run\n"
		"  --job ID[.STEP]  repeatable, or ID,ID\n"
		"Output:\n"
		"  --summary        the summary only (with --json: one object)\n"
		"  --rows           the rows only\n"
		"  --worst N        GPUs in the summary's worst list (default %d)\n"
		"  --json           the rows as a JSON array (fields: see REPORT-JSON.md)\n"
		"  --limit N        at most N rows (with --svg: N GPU panels, worst first;\n"
		"                   default %d panels)\n"
		"  --svg FILE       a picture per GPU of a metric over time ('-': stdout)\n"
		"  --prometheus     each GPU against its peers, worst first, in the\n"
		"                   Prometheus text format (gpumem_peer_slow, _ratio, _count)\n"
		"  --metric NAME    of the picture and the summary: read, write, copy,\n"
		"                   triad (default), d2d, h2d, d2h\n"
		"  --profiles       the jobs' GPU memory profiles (reports of phase after or\n"
		"                   job): a row per report and GPU, the most memory-bound\n"
		"                   first; --limit N or --worst N: the first N rows\n"
		"  --sort KEY       of --profiles, largest first: dram (p95, default), sm,\n"
		"                   rx, mem, time (newest)\n"
		"  --site FILE      site file for report.dir (default $GPUMEM_SITE, %s)\n"
		"  --no-cache       parse every file; neither read nor write the cache of the\n"
		"                   rows of files already read ($XDG_CACHE_HOME/gpumem, else\n"
		"                   ~/.cache/gpumem)\n"
		"In the table, a figure marked * is below its pass threshold; times are UTC.\n"
		"Exit status: 0 listed (even nothing), 1 DIR unreadable or output failed,\n"
		"64 usage error.\n", GPUMEM_PEER_MARGIN_HBM, GPUMEM_PEER_MARGIN_HOST, GPUMEM_REPORT_DEFAULT_DIR, WORST_DEFAULT, GPUMEM_REPORT_SVG_PANELS,
		DEFAULT_SITE);
}

void gpumem_report_opts_free(struct ropts *o)
{
	for (size_t i = 0; i < o->njobs; i++)
		free(o->jobs[i].step);
	free(o->jobs);
	free(o->nodes);
	free(o->users);
}

/* strtok on a copy: option values are lists "a,b,c". */
static char *next_item(char **s)
{
	char *item = *s, *comma;

	if (item == NULL)
		return NULL;
	comma = strchr(item, ',');
	if (comma) {
		*comma = '\0';
		*s = comma + 1;
	} else {
		*s = NULL;
	}
	return item;
}

/* --node, --user: names or globs, into LIST. */
static int add_globs(const char *opt, const char *what, char ***list, size_t *n, char *arg)
{
	size_t len = strlen(arg);

	/* Checked whole, before splitting, so the message quotes it intact. */
	if (len == 0 || arg[0] == ',' || arg[len - 1] == ',' || strstr(arg, ",,")) {
		fprintf(stderr, "gpumem: report: %s: '%s' has an empty %s name\n", opt, arg, what);
		return -1;
	}
	for (char *s = arg, *item; (item = next_item(&s)) != NULL;) {
		char **l = realloc(*list, (*n + 1) * sizeof(*l));

		if (l == NULL)
			return -1;
		*list = l;
		l[(*n)++] = item;
	}
	return 0;
}

static int add_jobs(struct ropts *o, char *arg)
{
	for (char *s = arg, *item; (item = next_item(&s)) != NULL;) {
		struct job_filter *jobs;
		char *end, *dot = strchr(item, '.');
		long long id;

		errno = 0;
		id = strtoll(item, &end, 10);
		if (end == item || errno || id < 0 || (*end && end != dot) ||
		    (dot && dot[1] == '\0')) {
			fprintf(stderr, "gpumem: report: --job: '%s' is not a job ID "
				"(ID or ID.STEP, e.g. 1234 or 1234.batch)\n", item);
			return -1;
		}
		jobs = realloc(o->jobs, (o->njobs + 1) * sizeof(*jobs));
		if (jobs == NULL)
			return -1;
		o->jobs = jobs;
		o->jobs[o->njobs].job = id;
		o->jobs[o->njobs].step = dot ? strdup(dot + 1) : NULL;
		if (dot && o->jobs[o->njobs].step == NULL)
			return -1;
		o->njobs++;
	}
	return 0;
}

static int add_verdicts(struct ropts *o, char *arg)
{
	for (char *s = arg, *item; (item = next_item(&s)) != NULL;) {
		int found = 0;

		if (!strcmp(item, "not-run"))
			item = "not_run";
		for (int v = 0; v < GPUMEM_REPORT_NV; v++) {
			if (!strcmp(item, gpumem_report_vclass_name((enum gpumem_report_vclass)v))) {
				o->verdicts |= 1u << v;
				found = 1;
			}
		}
		if (!found) {
			fprintf(stderr, "gpumem: report: --verdict: '%s' is not a verdict (pass, warn, "
				"fail, unusable, error, skipped, not_run)\n", item);
			return -1;
		}
	}
	return 0;
}

static int parse_since(struct ropts *o, const char *arg)
{
	if (gpumem_report_parse_since(arg, time(NULL), &o->since) == 0) {
		o->has_since = 1;
		return 0;
	}
	fprintf(stderr, "gpumem: report: --since: '%s' is neither a time (2026-11-22, "
		"2026-11-22T03:00, 2026-11-22T03:00:00Z) nor an age (90m, 2h, 7d, 2w)\n", arg);
	return -1;
}

/* --limit N, --worst N: a count 1..100000000. */
static int parse_count(const char *opt, const char *arg, size_t *out)
{
	char *end;
	long long n;

	errno = 0;
	n = strtoll(arg, &end, 10);
	if (end == arg || *end || errno || n < 1 || n > 100000000) {
		fprintf(stderr, "gpumem: report: %s: '%s' is not a count 1..100000000\n", opt, arg);
		return -1;
	}
	*out = (size_t)n;
	return 0;
}

/* --profiles lists profiles: none of the options of the check rows. */
static int profile_opts(struct ropts *o)
{
	if (!o->profiles) {
		if (o->sort < 0)
			return 0;
		fprintf(stderr, "gpumem: report: --sort: only with --profiles\n");
		return -1;
	}
	if (o->svg || o->summary || o->rows || o->verdicts || o->metric_given) {
		fprintf(stderr, "gpumem: report: --profiles lists the jobs' profiles: no --svg, "
			"--summary, --rows, --verdict or --metric\n");
		return -1;
	}
	if (o->worst_given && (o->limit == 0 || o->worst < o->limit))
		o->limit = o->worst;
	return 0;
}

/* What is left after the options: the checks between them, and DIR. */
static int finish_opts(int argc, char **argv, struct ropts *o)
{
	if (profile_opts(o) < 0)
		return -1;
	if (o->summary && o->rows) {
		fprintf(stderr, "gpumem: report: --summary and --rows: give one (neither: both)\n");
		return -1;
	}
	if (o->metric_given && o->svg == NULL && (o->rows || (o->json && !o->summary))) {
		fprintf(stderr, "gpumem: report: --metric: only with --svg or the summary "
			"(not with --rows, nor --json without --summary)\n");
		return -1;
	}
	if (o->prom && (o->svg || o->json || o->summary || o->rows || o->profiles)) {
		fprintf(stderr, "gpumem: report: --prometheus prints its own text: no --svg, --json, "
			"--summary, --rows or --profiles\n");
		return -1;
	}
	if (o->svg && (o->summary || o->rows)) {
		fprintf(stderr, "gpumem: report: --svg draws a picture: no --summary or --rows\n");
		return -1;
	}
	if (argc - optind > 1) {
		fprintf(stderr, "gpumem: report: give at most one DIR ('%s' is extra)\n",
			argv[optind + 1]);
		return -1;
	}
	if (argc - optind == 1)
		o->dir = argv[optind];
	return 0;
}

int gpumem_report_parse_opts(int argc, char **argv, struct ropts *o)
{
	static const struct option longopts[] = {
		{ "site", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "prometheus", no_argument, NULL, 'p' },
		{ "node", required_argument, NULL, 'n' },
		{ "since", required_argument, NULL, 'S' },
		{ "verdict", required_argument, NULL, 'V' },
		{ "job", required_argument, NULL, 'J' },
		{ "limit", required_argument, NULL, 'L' },
		{ "svg", required_argument, NULL, 'o' },
		{ "metric", required_argument, NULL, 'M' },
		{ "summary", no_argument, NULL, 'U' },
		{ "rows", no_argument, NULL, 'R' },
		{ "worst", required_argument, NULL, 'W' },
		{ "no-cache", no_argument, NULL, 'C' },
		{ "user", required_argument, NULL, 'u' },
		{ "profiles", no_argument, NULL, 'P' },
		{ "sort", required_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	/* The CLI may have run getopt already: 0 makes glibc start afresh. */
	optind = 0;
	opterr = 0;
	o->worst = WORST_DEFAULT;
	o->sort = -1;
	while ((c = getopt_long(argc, argv, "s:jh", longopts, NULL)) != -1) {
		switch (c) {
		case 's': o->site = optarg; break;
		case 'j': o->json = 1; break;
		case 'p': o->prom = 1; break;
		case 'o':
			if (optarg[0] == '\0') {
				fprintf(stderr, "gpumem: report: --svg: give a file name ('-': stdout)\n");
				return -1;
			}
			o->svg = optarg;
			break;
		case 'n':
			if (add_globs("--node", "node", &o->nodes, &o->nnodes, optarg) < 0)
				return -1;
			break;
		case 'u':
			if (add_globs("--user", "user", &o->users, &o->nusers, optarg) < 0)
				return -1;
			break;
		case 'P': o->profiles = 1; break;
		case 'O':
			if ((o->sort = gpumem_report_prof_key(optarg)) < 0) {
				fprintf(stderr, "gpumem: report: --sort: '%s' is not a key (dram, sm, "
					"rx, mem, time)\n", optarg);
				return -1;
			}
			break;
		case 'J':
			if (add_jobs(o, optarg) < 0)
				return -1;
			break;
		case 'V':
			if (add_verdicts(o, optarg) < 0)
				return -1;
			break;
		case 'S':
			if (parse_since(o, optarg) < 0)
				return -1;
			break;
		case 'L':
			if (parse_count("--limit", optarg, &o->limit) < 0)
				return -1;
			break;
		case 'W':
			if (parse_count("--worst", optarg, &o->worst) < 0)
				return -1;
			o->worst_given = 1;
			break;
		case 'U': o->summary = 1; break;
		case 'R': o->rows = 1; break;
		case 'C': o->no_cache = 1; break;
		case 'M':
			o->metric = gpumem_report_metric_id(optarg);
			o->metric_given = 1;
			if (o->metric < 0) {
				fprintf(stderr, "gpumem: report: --metric: '%s' is not a metric (read, "
					"write, copy, triad, d2d, h2d, d2h)\n", optarg);
				return -1;
			}
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			fprintf(stderr, "gpumem: report: unknown or incomplete option '%s'\n",
				argv[optind - 1]);
			return -1;
		}
	}
	return finish_opts(argc, argv, o);
}

/* DIR from the site file when not given: --site, $GPUMEM_SITE, installed. */
int gpumem_report_resolve_dir(const struct ropts *o, char **dirp)
{
	struct gpumem_diags d = { 0 };
	struct gpumem_site site;
	int rv = -1, have;

	*dirp = NULL;
	gpumem_site_init(&site);
	if (o->dir) {
		*dirp = strdup(o->dir);
		return *dirp ? 0 : -1;
	}
	if (gpumem_site_load_default(o->site, DEFAULT_SITE, &site, &have, &d) < 0) {
		gpumem_diags_print(&d, stderr);
		fprintf(stderr, "gpumem: report: cannot use the site file for report.dir "
			"(give DIR)\n");
		goto fail;
	}
	*dirp = strdup(site.report.dir ? site.report.dir : GPUMEM_REPORT_DEFAULT_DIR);
	if (*dirp == NULL)
		goto fail;
	rv = 0;
fail:
	gpumem_diags_free(&d);
	gpumem_site_free(&site);
	return rv;
}


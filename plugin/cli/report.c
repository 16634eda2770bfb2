/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem report: one table (or JSON, or a picture) across every node's
 * check reports, worst first, so an administrator sees the GPUs that need
 * attention before the thousands that passed; with --profiles, the jobs'
 * GPU memory profiles instead (report_profile.c).  Here: the options, the
 * filters, and which listing they ask for.
 */
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "config.h"
#include "policy.h"
#include "report_cli.h"

#define DEFAULT_SITE GPUMEM_SYSCONFDIR "/slurm/gpumem.yaml"
#define SVG_DEFAULT_PANELS 48
#define CLOCK_SLACK_S 3600
#define WORST_DEFAULT 10

enum { EXIT_OK = 0, EXIT_INVALID = 1, EXIT_USAGE = 64 };

struct job_filter {
	long long job;
	char *step;                     /* NULL: every step */
};

struct ropts {
	const char *site;
	const char *dir;
	const char *svg;
	int json;
	int metric;
	int metric_given;
	char **nodes, **users;
	size_t nnodes, nusers;
	struct job_filter *jobs;
	size_t njobs;
	unsigned verdicts;              /* bit per vclass; 0: all */
	int has_since;
	time_t since;
	size_t limit;                   /* 0: none */
	size_t worst;                   /* GPUs in the summary's worst list */
	int summary, rows;              /* what to print (table output) */
	int no_cache;
	int profiles;                   /* --profiles: the jobs' GPU memory profiles */
	int sort;                       /* their --sort key, -1: not given */
	int worst_given;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: gpumem report [--site FILE] [FILTERS] [--summary|--rows] [--json] [--limit N] [DIR]\n"
		"       gpumem report --svg FILE [--metric NAME] [FILTERS] [--limit N] [DIR]\n"
		"       gpumem report --profiles [--sort KEY] [FILTERS] [--json] [--limit N] [DIR]\n"
		"\n"
		"The gpumem check reports of every node: a summary of the fleet (rows by\n"
		"verdict, GPUs by model, each model's figures as a fraction of the site's\n"
		"reference, nodes gpumem drained, the worst GPUs), then one row per report\n"
		"and GPU, worst first (fail, unusable, error, warn, skipped/not_run, pass),\n"
		"then newest.  Filters by job and node read only the files named for them.\n"
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
		"64 usage error.\n", GPUMEM_REPORT_DEFAULT_DIR, WORST_DEFAULT, SVG_DEFAULT_PANELS,
		DEFAULT_SITE);
}

static void opts_free(struct ropts *o)
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

static int parse_opts(int argc, char **argv, struct ropts *o)
{
	static const struct option longopts[] = {
		{ "site", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
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
static int resolve_dir(const struct ropts *o, char **dirp)
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

/* --node: one of the globs matches. */
static int node_matches(const struct ropts *o, const char *node)
{
	for (size_t i = 0; i < o->nnodes; i++)
		if (fnmatch(o->nodes[i], node, 0) == 0)
			return 1;
	return o->nnodes == 0;
}

/* --job: one of the jobs (and its step, when given) matches. */
static int job_matches(const struct ropts *o, long long job, const char *step)
{
	for (size_t i = 0; i < o->njobs; i++)
		if (o->jobs[i].job == job && (o->jobs[i].step == NULL || !strcmp(o->jobs[i].step, step)))
			return 1;
	return o->njobs == 0;
}

/* The loader's file-name filter: a file named for another job or node is not read. */
static int name_wanted(long long job, const char *step, const char *node, void *arg)
{
	const struct ropts *o = arg;

	return job_matches(o, job, step) && node_matches(o, node);
}

/* --user: one of the globs matches (a report without a user matches none). */
static int user_matches(const struct ropts *o, const char *user)
{
	for (size_t i = 0; i < o->nusers; i++)
		if (user && fnmatch(o->users[i], user, 0) == 0)
			return 1;
	return o->nusers == 0;
}

/* The filters on what a file says (also the profiles' filter: report_profile.c). */
static int file_matches(const struct gpumem_report_file *f, const void *arg)
{
	const struct ropts *o = arg;

	if (o->has_since && f->time < o->since)
		return 0;
	return node_matches(o, f->node) && job_matches(o, f->job, f->step) &&
		user_matches(o, f->user);
}

static int row_matches(const struct ropts *o, const struct gpumem_report_row *r)
{
	if (o->verdicts && !(o->verdicts & (1u << r->vclass)))
		return 0;
	return file_matches(r->rep, o);
}

/* The summary, the rows, or both; a summary needs the rows as GPUs first. */
static int print_text(const struct ropts *o, const char *dir, struct gpumem_report_row **rows,
		      size_t n, size_t shown)
{
	struct gpumem_fleet fl;
	int metric = o->metric_given ? o->metric : GPUMEM_REPORT_M_TRIAD;

	if (o->json ? o->summary : !o->rows) {
		if (gpumem_fleet_build(rows, n, metric, &fl) < 0) {
			fprintf(stderr, "gpumem: report: out of memory\n");
			return -1;
		}
		if (o->json)
			gpumem_report_print_summary_json(stdout, &fl, o->worst);
		else
			gpumem_report_print_summary(stdout, &fl, dir, o->worst);
		gpumem_fleet_free(&fl);
		if (o->summary || o->json)
			return 0;
		putchar('\n');
	}
	if (o->json) {
		gpumem_report_print_json(stdout, rows, shown);
		return 0;
	}
	gpumem_report_print_table(rows, shown);
	if (shown < n)
		printf("(%zu of %zu rows; --limit)\n", shown, n);
	return 0;
}

/* The rows the filters keep, worst first; NULL when out of memory. */
static struct gpumem_report_row **select_rows(const struct ropts *o,
					      struct gpumem_report_set *set, size_t *np)
{
	struct gpumem_report_row **rows = calloc(set->nrows ? set->nrows : 1, sizeof(*rows));
	size_t n = 0;

	if (rows == NULL) {
		fprintf(stderr, "gpumem: report: out of memory\n");
		return NULL;
	}
	for (size_t i = 0; i < set->nrows; i++)
		if (row_matches(o, &set->rows[i]))
			rows[n++] = &set->rows[i];
	qsort(rows, n, sizeof(*rows), gpumem_report_cmp_rows);
	*np = n;
	return rows;
}

static int load(struct ropts *o, const char *dir, struct gpumem_report_set *set)
{
	struct gpumem_report_want want = { .name = name_wanted, .arg = o, .profiles = o->profiles };

	/* An hour's slack: the node that ran the check and the file server
	 * that stamped the file may disagree on the time. */
	if (o->has_since && o->since > CLOCK_SLACK_S)
		want.min_mtime = o->since - CLOCK_SLACK_S;
	return gpumem_report_load_dir(dir, &want, !o->no_cache, set);
}

/* Nothing to show: say why (on stderr with --json, whose stdout is data). */
static void say_empty(const struct ropts *o, const char *dir, const struct gpumem_report_set *set)
{
	int none = set->nlisted == set->nbad;

	if (o->json)
		fprintf(stderr, "gpumem: report: no reports in %s%s\n", dir,
			none ? "" : " match the filters");
	else if (none)
		printf("no reports in %s%s\n", dir, set->nbad ? " (bad files skipped: see the warnings)" : "");
	else
		printf("no reports in %s match the filters (%zu report%s in all)\n", dir,
		       set->nlisted, set->nlisted == 1 ? "" : "s");
}

/* The check reports' rows: the summary and the table, JSON, or the picture. */
static int list_rows(const struct ropts *o, const char *dir, struct gpumem_report_set *set)
{
	struct gpumem_report_row **rows;
	size_t n = 0, shown;
	int rv = -1;

	if ((rows = select_rows(o, set, &n)) == NULL)
		return -1;
	shown = o->limit && o->limit < n ? o->limit : n;
	if (o->svg) {
		struct gpumem_report_svg_opts so = {
			.metric = o->metric_given ? o->metric : GPUMEM_REPORT_M_TRIAD,
			.max_panels = o->limit ? o->limit : SVG_DEFAULT_PANELS, .source = dir };

		if (gpumem_report_write_svg(o->svg, rows, n, &so) < 0)
			goto fail;
	}
	if (o->json || o->svg == NULL) {
		if (n == 0 && !o->json)
			say_empty(o, dir, set);
		else if (print_text(o, dir, rows, n, shown) < 0)
			goto fail;
		if (n == 0 && o->json)
			say_empty(o, dir, set);
	}
	rv = 0;
fail:
	free(rows);
	return rv;
}

/* --profiles: the jobs' GPU memory profiles (report_profile.c), under the same filters. */
static int list_profiles(const struct ropts *o, const char *dir,
			 const struct gpumem_report_set *set)
{
	struct gpumem_report_prof_opts po = {
		.key = o->sort < 0 ? GPUMEM_REPORT_BY_DRAM : o->sort, .limit = o->limit,
		.json = o->json, .keep = file_matches, .arg = o };

	return gpumem_report_print_profiles(set, dir, &po);
}

int gpumem_report_main(int argc, char **argv)
{
	struct gpumem_report_set set = { 0 };
	struct ropts o = { 0 };
	char *dir = NULL;
	int rv = EXIT_USAGE, r;

	r = parse_opts(argc, argv, &o);
	if (r != 0) {
		rv = r > 0 ? EXIT_OK : EXIT_USAGE;
		goto fail;
	}
	rv = EXIT_INVALID;
	if (resolve_dir(&o, &dir) < 0)
		goto fail;
	/* "DIR/" and "DIR" name files alike in warnings. */
	for (size_t len = strlen(dir); len > 1 && dir[len - 1] == '/'; len--)
		dir[len - 1] = '\0';
	if (load(&o, dir, &set) < 0 ||
	    (o.profiles ? list_profiles(&o, dir, &set) : list_rows(&o, dir, &set)) < 0)
		goto fail;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "gpumem: report: writing the output failed: %s\n", strerror(errno));
		goto fail;
	}
	rv = EXIT_OK;
fail:
	gpumem_report_set_free(&set);
	free(dir);
	opts_free(&o);
	return rv;
}

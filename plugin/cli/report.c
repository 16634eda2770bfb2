/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem report: one table (or JSON, or a picture) across every node's
 * check reports, worst first, so an administrator sees the GPUs that need
 * attention before the thousands that passed; with --profiles, the jobs'
 * GPU memory profiles instead (report_profile.c).  Here: the filters and
 * which listing the options (report_opts.c) ask for.
 */
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "config.h"
#include "core_policy.h"
#include "report_cli.h"
#include "report_opts.h"

#define CLOCK_SLACK_S 3600

enum { EXIT_OK = 0, EXIT_INVALID = 1, EXIT_USAGE = 64 };


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

/* --verdict (the other filters are the file's). */
static int verdict_matches(const struct ropts *o, const struct gpumem_report_row *r)
{
	return !o->verdicts || (o->verdicts & (1u << r->vclass));
}

/* The summary, the rows, or both; a summary needs the rows as GPUs first. */
static int print_text(const struct ropts *o, const char *dir, struct gpumem_report_row **rows,
		      size_t n, size_t shown)
{
	struct gpumem_fleet fl;
	int metric = o->metric_given ? o->metric : GPUMEM_REPORT_M_TRIAD;

	if (o->prom || (o->json ? o->summary : !o->rows)) {
		if (gpumem_fleet_build(rows, n, metric, &fl) < 0) {
			fprintf(stderr, "gpumem: report: out of memory\n");
			return -1;
		}
		if (o->prom)
			gpumem_report_print_prom(stdout, &fl);
		else if (o->json)
			gpumem_report_print_summary_json(stdout, &fl, o->worst);
		else
			gpumem_report_print_summary(stdout, &fl, dir, o->worst);
		gpumem_fleet_free(&fl);
		if (o->summary || o->json || o->prom)
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

/*
 * The rows the filters keep, worst first; NULL when out of memory.  Each
 * GPU is compared with its peers among the rows of every verdict, so
 * --verdict narrows what is listed, not whom a GPU is compared with.
 */
static struct gpumem_report_row **select_rows(const struct ropts *o,
					      struct gpumem_report_set *set, size_t *np)
{
	struct gpumem_report_row **rows = calloc(set->nrows ? set->nrows : 1, sizeof(*rows));
	size_t n = 0, k = 0;

	if (rows == NULL)
		goto oom;
	for (size_t i = 0; i < set->nrows; i++)
		if (file_matches(set->rows[i].rep, o))
			rows[n++] = &set->rows[i];
	if (gpumem_report_peers(rows, n) < 0)
		goto oom;
	for (size_t i = 0; i < n; i++)
		if (verdict_matches(o, rows[i]))
			rows[k++] = rows[i];
	qsort(rows, k, sizeof(*rows), gpumem_report_cmp_rows);
	*np = k;
	return rows;
oom:
	fprintf(stderr, "gpumem: report: out of memory\n");
	free(rows);
	return NULL;
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

	if (o->json || o->prom)
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
			.max_panels = o->limit ? o->limit : GPUMEM_REPORT_SVG_PANELS, .source = dir };

		if (gpumem_report_write_svg(o->svg, rows, n, &so) < 0)
			goto fail;
	}
	if (o->json || o->svg == NULL) {
		if (n == 0 && !o->json && !o->prom)
			say_empty(o, dir, set);
		else if (print_text(o, dir, rows, n, shown) < 0)
			goto fail;
		if (n == 0 && (o->json || o->prom))
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

	r = gpumem_report_parse_opts(argc, argv, &o);
	if (r != 0) {
		rv = r > 0 ? EXIT_OK : EXIT_USAGE;
		goto fail;
	}
	rv = EXIT_INVALID;
	if (gpumem_report_resolve_dir(&o, &dir) < 0)
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
	gpumem_report_opts_free(&o);
	return rv;
}

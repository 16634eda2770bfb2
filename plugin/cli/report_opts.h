/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem report's command line (report_opts.c): what the options say, for
 * report.c's filters and listings.
 */
#ifndef GPUMEM_REPORT_OPTS_H
#define GPUMEM_REPORT_OPTS_H
#include <stddef.h>
#include <time.h>

#define GPUMEM_REPORT_SVG_PANELS 48     /* --svg's panels by default */

struct job_filter {
	long long job;
	char *step;                     /* NULL: every step */
};

struct ropts {
	const char *site;
	const char *dir;
	const char *svg;
	int json;
	int prom;                       /* --prometheus */
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

/*
 * ARGV -> *O: 0, 1 when --help was printed, -1 on a usage error (said on
 * stderr).  gpumem_report_opts_free: what parsing allocated.
 */
int gpumem_report_parse_opts(int argc, char **argv, struct ropts *o);
void gpumem_report_opts_free(struct ropts *o);
/* The report directory: DIR given, else the site file's report.dir (*DIRP malloc'd); 0 or -1. */
int gpumem_report_resolve_dir(const struct ropts *o, char **dirp);
#endif

/*
 * gpumem report: one table (or JSON, or a picture) across every node's
 * check reports, worst first, so an administrator sees the GPUs that need
 * attention before the thousands that passed.
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
#include "report.h"

#define DEFAULT_SITE GPUMEM_SYSCONFDIR "/slurm/gpumem.yaml"
#define SVG_DEFAULT_PANELS 48

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
	char **nodes;
	size_t nnodes;
	struct job_filter *jobs;
	size_t njobs;
	unsigned verdicts;              /* bit per vclass; 0: all */
	int has_since;
	time_t since;
	size_t limit;                   /* 0: none */
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: gpumem report [--site FILE] [FILTERS] [--json] [--limit N] [DIR]\n"
		"       gpumem report --svg FILE [--metric NAME] [FILTERS] [--limit N] [DIR]\n"
		"\n"
		"The gpumem check reports of every node, one row per report and GPU, worst\n"
		"first (fail, unusable, error, warn, skipped/not_run, pass), then newest.\n"
		"DIR defaults to the site file's report.dir, else %s.\n"
		"\n"
		"Filters:\n"
		"  --node NAME      node name or glob (gpu0*); repeatable, or NAME,NAME\n"
		"  --since TIME     2026-11-22, 2026-11-22T03:00[:00][Z], or an age: 90m, 2h, 7d, 2w\n"
		"  --verdict V,...  pass, warn, fail, unusable, error, skipped, not_run\n"
		"  --job ID[.STEP]  repeatable, or ID,ID\n"
		"Output:\n"
		"  --json           the rows as a JSON array (fields: see REPORT-JSON.md)\n"
		"  --limit N        at most N rows (with --svg: N GPU panels, worst first;\n"
		"                   default %d panels)\n"
		"  --svg FILE       a picture per GPU of a metric over time ('-': stdout)\n"
		"  --metric NAME    read, write, copy, triad (default), d2d, h2d, d2h\n"
		"  --site FILE      site file for report.dir (default $GPUMEM_SITE, %s)\n"
		"In the table, a figure marked * is below its pass threshold; times are UTC.\n"
		"Exit status: 0 listed (even nothing), 1 DIR unreadable or output failed,\n"
		"64 usage error.\n", GPUMEM_REPORT_DEFAULT_DIR, SVG_DEFAULT_PANELS, DEFAULT_SITE);
}

static void opts_free(struct ropts *o)
{
	for (size_t i = 0; i < o->njobs; i++)
		free(o->jobs[i].step);
	free(o->jobs);
	free(o->nodes);
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

static int add_nodes(struct ropts *o, char *arg)
{
	size_t len = strlen(arg);

	/* Checked whole, before splitting, so the message quotes it intact. */
	if (len == 0 || arg[0] == ',' || arg[len - 1] == ',' || strstr(arg, ",,")) {
		fprintf(stderr, "gpumem: report: --node: '%s' has an empty node name\n", arg);
		return -1;
	}
	for (char *s = arg, *item; (item = next_item(&s)) != NULL;) {
		char **nodes = realloc(o->nodes, (o->nnodes + 1) * sizeof(*nodes));

		if (nodes == NULL)
			return -1;
		o->nodes = nodes;
		o->nodes[o->nnodes++] = item;
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
	static const struct { char unit; long long secs; } units[] = {
		{ 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 }, { 'w', 7 * 86400 }
	};
	char *end;
	long long n;

	errno = 0;
	n = strtoll(arg, &end, 10);
	if (end != arg && arg[0] >= '0' && arg[0] <= '9' && end[0] && !end[1] && !errno &&
	    n <= 100LL * 366 * 86400) {
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			if (end[0] == units[i].unit && n <= 100LL * 366 * 86400 / units[i].secs) {
				o->since = time(NULL) - (time_t)(n * units[i].secs);
				o->has_since = 1;
				return 0;
			}
		}
	}
	if (gpumem_report_parse_time(arg, &o->since) == 0) {
		o->has_since = 1;
		return 0;
	}
	fprintf(stderr, "gpumem: report: --since: '%s' is neither a time (2026-11-22, "
		"2026-11-22T03:00, 2026-11-22T03:00:00Z) nor an age (90m, 2h, 7d, 2w)\n", arg);
	return -1;
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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	/* The CLI may have run getopt already: 0 makes glibc start afresh. */
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "s:jh", longopts, NULL)) != -1) {
		char *end;
		long long n;

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
			if (add_nodes(o, optarg) < 0)
				return -1;
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
			errno = 0;
			n = strtoll(optarg, &end, 10);
			if (end == optarg || *end || errno || n < 1 || n > 100000000) {
				fprintf(stderr, "gpumem: report: --limit: '%s' is not a count "
					"1..100000000\n", optarg);
				return -1;
			}
			o->limit = (size_t)n;
			break;
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
	if (o->metric_given && o->svg == NULL) {
		fprintf(stderr, "gpumem: report: --metric: only with --svg\n");
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

static int row_matches(const struct ropts *o, const struct gpumem_report_row *r)
{
	const struct gpumem_report_file *f = r->rep;

	if (o->verdicts && !(o->verdicts & (1u << r->vclass)))
		return 0;
	if (o->has_since && f->time < o->since)
		return 0;
	if (o->nnodes) {
		size_t i;

		for (i = 0; i < o->nnodes; i++)
			if (fnmatch(o->nodes[i], f->node, 0) == 0)
				break;
		if (i == o->nnodes)
			return 0;
	}
	if (o->njobs) {
		size_t i;

		for (i = 0; i < o->njobs; i++)
			if (o->jobs[i].job == f->job &&
			    (o->jobs[i].step == NULL || !strcmp(o->jobs[i].step, f->step)))
				break;
		if (i == o->njobs)
			return 0;
	}
	return 1;
}

static int gpu_index(const struct gpumem_report_row *r)
{
	return r->node_index >= 0 ? r->node_index : r->cuda_index;
}

/* Worst first, then newest; the rest only makes the order total. */
static int cmp_rows(const void *pa, const void *pb)
{
	const struct gpumem_report_row *a = *(const struct gpumem_report_row *const *)pa;
	const struct gpumem_report_row *b = *(const struct gpumem_report_row *const *)pb;
	int ra = gpumem_report_vclass_rank(a->vclass), rb = gpumem_report_vclass_rank(b->vclass);
	int c;

	if (ra != rb)
		return ra < rb ? -1 : 1;
	if (a->rep->time != b->rep->time)
		return a->rep->time > b->rep->time ? -1 : 1;
	if ((c = gpumem_report_natcmp(a->rep->node, b->rep->node)) != 0)
		return c;
	if (a->rep->job != b->rep->job)
		return a->rep->job > b->rep->job ? -1 : 1;
	if ((c = strcmp(a->rep->step, b->rep->step)) != 0)
		return c;
	if ((c = strcmp(a->rep->phase, b->rep->phase)) != 0)
		return c;
	if (gpu_index(a) != gpu_index(b))
		return gpu_index(a) < gpu_index(b) ? -1 : 1;
	return strcmp(a->rep->name, b->rep->name);
}

/*
 * Copy s for a terminal: control characters (C0, DEL and the C1 range,
 * which some terminals obey) become '?', so a hostile policy name or
 * reason cannot move the cursor or retitle the window.  At most max
 * characters; returns the number of characters (display columns).
 */
static size_t term_clean(const char *s, char *out, size_t outlen, size_t max)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t o = 0, chars = 0;

	while (*p && chars < max) {
		size_t n = *p >= 0xf0 ? 4 : *p >= 0xe0 ? 3 : *p >= 0xc0 ? 2 : 1, k;

		for (k = 1; k < n && (p[k] & 0xc0) == 0x80; k++)
			;
		if (o + n + 1 > outlen)
			break;
		if (k < n || (*p >= 0x80 && *p < 0xc0)) {
			out[o++] = '?';         /* a cut or stray byte of UTF-8 */
			n = 1;
		} else if (*p < 0x20 || *p == 0x7f || (*p == 0xc2 && p[1] < 0xa0)) {
			out[o++] = '?';
		} else {
			memcpy(out + o, p, n);
			o += n;
		}
		p += n;
		chars++;
	}
	out[o] = '\0';
	return chars;
}

static size_t utf8_chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

enum { C_TIME, C_NODE, C_JOB, C_PHASE, C_GPU, C_VERDICT, C_READ, C_COPY, C_TRIAD, C_H2D,
       C_D2H, C_REASON, NCOLS };
static const char *const col_names[NCOLS] = {
	"TIME (UTC)", "NODE", "JOB.STEP", "PHASE", "GPU", "VERDICT", "READ", "COPY", "TRIAD",
	"H2D", "D2H", "REASON"
};
static const int col_metric[NCOLS] = {
	[C_READ] = GPUMEM_REPORT_M_READ, [C_COPY] = GPUMEM_REPORT_M_COPY,
	[C_TRIAD] = GPUMEM_REPORT_M_TRIAD, [C_H2D] = GPUMEM_REPORT_M_H2D,
	[C_D2H] = GPUMEM_REPORT_M_D2H,
};
#define CELL 160

static void format_metric(const struct gpumem_report_metric *m, char *buf, size_t len)
{
	if (!m->present || !isfinite(m->best)) {
		snprintf(buf, len, "-");
		return;
	}
	/* Host links run at tens of GB/s, HBM at thousands: keep 3-4 digits. */
	snprintf(buf, len, m->best < 100 ? "%.1f%s" : "%.0f%s", m->best,
		 m->vclass == GPUMEM_REPORT_V_WARN || m->vclass == GPUMEM_REPORT_V_FAIL ||
		 (isfinite(m->threshold) && m->best < m->threshold) ? "*" : "");
}

static void row_cells(const struct gpumem_report_row *r, char cells[NCOLS][CELL],
		      size_t width[NCOLS])
{
	const struct gpumem_report_file *f = r->rep;
	char tmp[CELL * 2];
	struct tm tm;

	for (int c = 0; c < NCOLS; c++) {
		tmp[0] = '\0';
		switch (c) {
		case C_TIME:
			gmtime_r(&f->time, &tm);
			strftime(tmp, sizeof(tmp), "%Y-%m-%d %H:%M", &tm);
			break;
		case C_NODE:
			snprintf(tmp, sizeof(tmp), "%s", f->node);
			break;
		case C_JOB:
			snprintf(tmp, sizeof(tmp), "%lld.%s", f->job, f->step);
			break;
		case C_PHASE:
			snprintf(tmp, sizeof(tmp), "%s", f->phase);
			break;
		case C_GPU:
			if (!r->has_gpu) {
				snprintf(tmp, sizeof(tmp), "-");
				break;
			}
			/* "NVIDIA H200" is as clear as "H200" and takes a column. */
			snprintf(tmp, sizeof(tmp), "%d %s", gpu_index(r),
				 r->gpu_name ? (!strncmp(r->gpu_name, "NVIDIA ", 7) ?
						r->gpu_name + 7 : r->gpu_name) : "?");
			break;
		case C_VERDICT: {
			int not_ran = strcmp(f->status, "ran") &&
				strcmp(f->status, gpumem_report_vclass_name(r->vclass));

			snprintf(tmp, sizeof(tmp), "%s%s%s%s%s", gpumem_report_vclass_name(r->vclass),
				 not_ran || f->drained ? " (" : "", not_ran ? f->status : "",
				 not_ran && f->drained ? ", " : "",
				 f->drained ? "drained)" : not_ran ? ")" : "");
			break;
		}
		case C_REASON:
			snprintf(tmp, sizeof(tmp), "%s", r->vclass == GPUMEM_REPORT_V_PASS || !r->reason ?
				 "" : r->reason);
			break;
		default:
			format_metric(&r->m[col_metric[c]], tmp, sizeof(tmp));
			break;
		}
		width[c] = term_clean(tmp, cells[c], CELL, c == C_REASON ? CELL / 4 * 3 : 40);
		if (c == C_REASON && r->reason && strlen(r->reason) > width[c] &&
		    r->vclass != GPUMEM_REPORT_V_PASS) {
			/* Long reasons are cut; --json has them whole. */
			size_t n = strlen(cells[c]);

			if (n + 4 < CELL)
				memcpy(cells[c] + n, "...", 4);
		}
	}
}

static void print_table(struct gpumem_report_row *const *rows, size_t n)
{
	char (*cells)[NCOLS][CELL];
	size_t width[NCOLS], w[NCOLS];

	cells = calloc(n ? n : 1, sizeof(*cells));
	if (cells == NULL) {
		fprintf(stderr, "gpumem: report: out of memory\n");
		return;
	}
	for (int c = 0; c < NCOLS; c++)
		width[c] = strlen(col_names[c]);
	for (size_t i = 0; i < n; i++) {
		row_cells(rows[i], cells[i], w);
		for (int c = 0; c < NCOLS; c++)
			if (w[c] > width[c])
				width[c] = w[c];
	}
	/* Columns are separated before each cell so no line ends in blanks. */
	for (int c = 0; c < NCOLS; c++) {
		int right = c >= C_READ && c <= C_D2H;

		if (c == C_REASON)
			printf("  %s\n", col_names[c]);
		else
			printf(right ? "%s%*s" : "%s%-*s", c ? "  " : "", (int)width[c], col_names[c]);
	}
	for (size_t i = 0; i < n; i++) {
		for (int c = 0; c < NCOLS; c++) {
			const char *cell = cells[i][c];
			size_t pad = width[c] - utf8_chars(cell);
			int right = c >= C_READ && c <= C_D2H;

			if (c == C_REASON) {
				if (cell[0])
					printf("  %s", cell);
				putchar('\n');
				continue;
			}
			/* printf pads bytes, not characters: pad by hand for UTF-8. */
			if (c)
				fputs("  ", stdout);
			if (right)
				printf("%*s%s", (int)pad, "", cell);
			else
				printf("%s%*s", cell, (int)pad, "");
		}
	}
	free(cells);
}

static struct json_object *json_metric(const struct gpumem_report_metric *m)
{
	struct json_object *o;

	if (!m->present || (o = json_object_new_object()) == NULL)
		return NULL;
	gpumem_json_add(o, "verdict", gpumem_json_string(m->verdict));
	gpumem_json_add(o, "best_gbps", gpumem_json_number(m->best));
	gpumem_json_add(o, "median_gbps", gpumem_json_number(m->median));
	gpumem_json_add(o, "reference_gbps", gpumem_json_number(m->reference));
	gpumem_json_add(o, "threshold_gbps", gpumem_json_number(m->threshold));
	gpumem_json_add(o, "warn_floor_gbps", gpumem_json_number(m->warn_floor));
	return o;
}

/* One row as an object.  Field names here are an interface: REPORT-JSON.md documents each. */
static struct json_object *json_row(const struct gpumem_report_row *r)
{
	const struct gpumem_report_file *f = r->rep;
	struct json_object *o = json_object_new_object(), *metrics;

	if (o == NULL)
		return NULL;
	gpumem_json_add(o, "file", gpumem_json_string(f->name));
	gpumem_json_add(o, "time", gpumem_json_string(f->time_text));
	gpumem_json_add(o, "epoch", gpumem_json_int((long long)f->time));
	gpumem_json_add(o, "node", gpumem_json_string(f->node));
	gpumem_json_add(o, "job", gpumem_json_int(f->job));
	gpumem_json_add(o, "step", gpumem_json_string(f->step));
	gpumem_json_add(o, "phase", gpumem_json_string(f->phase));
	gpumem_json_add(o, "user", gpumem_json_string(f->user));
	gpumem_json_add(o, "uid", f->has_uid ? gpumem_json_int(f->uid) : NULL);
	gpumem_json_add(o, "policy", gpumem_json_string(f->policy));
	gpumem_json_add(o, "gpus", gpumem_json_string(f->gpus));
	gpumem_json_add(o, "status", gpumem_json_string(f->status));
	gpumem_json_add(o, "exit_code", f->has_exit_code ? gpumem_json_int(f->exit_code) : NULL);
	gpumem_json_add(o, "drained", gpumem_json_bool(f->drained));
	gpumem_json_add(o, "report_verdict", gpumem_json_string(f->verdict));
	gpumem_json_add(o, "gpu_index", r->has_gpu ? gpumem_json_int(gpu_index(r)) : NULL);
	gpumem_json_add(o, "gpu_cuda_index", r->has_gpu ? gpumem_json_int(r->cuda_index) : NULL);
	gpumem_json_add(o, "gpu_name", gpumem_json_string(r->gpu_name));
	gpumem_json_add(o, "gpu_uuid", gpumem_json_string(r->gpu_uuid));
	gpumem_json_add(o, "gpu_pci_bus_id", gpumem_json_string(r->gpu_pci));
	gpumem_json_add(o, "verdict", gpumem_json_string(gpumem_report_vclass_name(r->vclass)));
	gpumem_json_add(o, "verdict_text", gpumem_json_string(r->verdict));
	gpumem_json_add(o, "reason", gpumem_json_string(r->reason));
	metrics = json_object_new_object();
	for (int m = 0; metrics && m < GPUMEM_REPORT_NMETRICS; m++)
		gpumem_json_add(metrics, gpumem_report_metric_names[m],
				r->has_gpu ? json_metric(&r->m[m]) : NULL);
	gpumem_json_add(o, "metrics", metrics);
	return o;
}

/* The rows as a JSON array, one row a line. */
static void print_json(FILE *out, struct gpumem_report_row *const *rows, size_t n)
{
	fputc('[', out);
	for (size_t i = 0; i < n; i++) {
		struct json_object *o = json_row(rows[i]);

		fputs(i ? ",\n " : "\n ", out);
		gpumem_json_write(out, o, GPUMEM_JSON_SPACED);
		json_object_put(o);
	}
	fputs(n ? "\n]\n" : "]\n", out);
}

static int write_svg(const struct ropts *o, const char *dir, struct gpumem_report_row *const *rows,
		     size_t n)
{
	struct gpumem_report_svg_opts so = { 0 };
	int to_stdout = !strcmp(o->svg, "-");
	FILE *f = to_stdout ? stdout : fopen(o->svg, "w");
	size_t total = 0;
	int panels, bad;

	if (f == NULL) {
		fprintf(stderr, "gpumem: report: --svg: cannot write %s: %s\n", o->svg,
			strerror(errno));
		return -1;
	}
	so.metric = o->metric_given ? o->metric : GPUMEM_REPORT_M_TRIAD;
	so.max_panels = o->limit ? o->limit : SVG_DEFAULT_PANELS;
	so.source = dir;
	panels = gpumem_report_svg(f, rows, n, &so, &total);
	bad = ferror(f) != 0;
	if (to_stdout ? fflush(f) != 0 : fclose(f) != 0)
		bad = 1;
	if (panels < 0 || bad) {
		fprintf(stderr, "gpumem: report: --svg: writing %s failed: %s\n", o->svg,
			panels < 0 ? "out of memory" : strerror(errno));
		return -1;
	}
	fprintf(stderr, "gpumem: report: wrote %s: %s of %d GPU panel%s", o->svg,
		gpumem_report_metric_names[so.metric], panels, panels == 1 ? "" : "s");
	if ((size_t)panels < total)
		fprintf(stderr, " (the %d worst of %zu; --limit N for more)", panels, total);
	fputc('\n', stderr);
	return 0;
}

int gpumem_report_main(int argc, char **argv)
{
	struct gpumem_report_set set = { 0 };
	struct gpumem_report_row **rows = NULL;
	struct ropts o = { 0 };
	char *dir = NULL;
	size_t n = 0, shown;
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
	if (gpumem_report_load_dir(dir, &set) < 0)
		goto fail;
	rows = calloc(set.nrows ? set.nrows : 1, sizeof(*rows));
	if (rows == NULL) {
		fprintf(stderr, "gpumem: report: out of memory\n");
		goto fail;
	}
	for (size_t i = 0; i < set.nrows; i++)
		if (row_matches(&o, &set.rows[i]))
			rows[n++] = &set.rows[i];
	qsort(rows, n, sizeof(*rows), cmp_rows);
	shown = o.limit && o.limit < n ? o.limit : n;

	if (o.svg && write_svg(&o, dir, rows, n) < 0)
		goto fail;
	if (o.json) {
		print_json(stdout, rows, shown);
	} else if (o.svg == NULL && set.nfiles == 0) {
		printf("no reports in %s%s\n", dir, set.nbad ? " (bad files skipped: see the warnings)" : "");
	} else if (o.svg == NULL && n == 0) {
		printf("no reports in %s match the filters (%zu report%s in all)\n", dir,
		       set.nfiles, set.nfiles == 1 ? "" : "s");
	} else if (o.svg == NULL) {
		print_table(rows, shown);
		if (shown < n)
			printf("(%zu of %zu rows; --limit)\n", shown, n);
	}
	if (o.json && n == 0)
		fprintf(stderr, "gpumem: report: no reports in %s%s\n", dir,
			set.nfiles ? " match the filters" : "");
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "gpumem: report: writing the output failed: %s\n", strerror(errno));
		goto fail;
	}
	rv = EXIT_OK;
fail:
	free(rows);
	gpumem_report_set_free(&set);
	free(dir);
	opts_free(&o);
	return rv;
}

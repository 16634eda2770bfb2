/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem report --profiles: the jobs' GPU memory profiles across the
 * report directory, one row per (report, GPU), the most memory-bound
 * first, so an administrator finds the jobs a memory policy would help.
 * A report's "profile" (gpumem-profile/1, doc/REPORT-JSON.md) is checked,
 * compacted and advised on exactly as the accounting record is
 * (profile.h, advise.h): the figures here are those `gpumem job` shows.
 * The loader (report_load.c) hands each file's parsed document here from
 * its reader threads; everything else runs once the directory is read.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core_record.h"
#include "core_advice.h"
#include "report_cli.h"
#include "core_base.h"

/* One GPU of a profile and the advice for it (rule and policy point into adv). */
struct prof_gpu {
	struct gpumem_prof_gpu g;
	const char *rule, *policy;
	char *reason;
	struct gpumem_advice adv;       /* in place: the array is never moved */
};

struct gpumem_report_prof {
	int ran;                        /* usable: it ran and was not refused */
	struct prof_gpu *gpus;
	size_t ngpus;
};

/* A row of the listing, with its sort key ready (NaN: none, last). */
struct prow {
	const struct gpumem_report_file *f;
	const struct prof_gpu *pg;
	double key;
};

void gpumem_report_prof_free(struct gpumem_report_prof *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->ngpus; i++)
		free(p->gpus[i].reason);
	free(p->gpus);
	free(p);
}

/* The GPUs of a compact summary's ROWS (checked), each with its advice under EFF. */
static int add_gpus(struct gpumem_report_prof *p, struct json_object *rows,
		    struct json_object *eff)
{
	size_t n = gpumem_json_len(rows);

	p->gpus = calloc(n ? n : 1, sizeof(*p->gpus));
	if (p->gpus == NULL)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct prof_gpu *pg = &p->gpus[p->ngpus];

		if (gpumem_prof_gpu_of(gpumem_json_at(rows, i), &pg->g) < 0)
			continue;
		gpumem_advise(&pg->g, eff, &pg->adv);
		pg->rule = pg->adv.rule;
		pg->policy = pg->adv.policy;
		pg->reason = strdup(pg->adv.reason);
		if (pg->reason == NULL)
			return -1;
		p->ngpus++;
	}
	return 0;
}

int gpumem_report_keep_profile(struct gpumem_report_file *f, struct json_object *root)
{
	struct json_object *doc = gpumem_json_get(root, "profile"), *c = NULL, *eff = NULL;
	struct gpumem_report_prof *p;
	const char *st;
	char err[256];
	int rv = -1;

	if (doc == NULL)
		return 0;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return -1;
	/* A document is checked before use; {"state", "reason"} in its place is none. */
	if (gpumem_json_get(doc, "schema") && gpumem_profile_check(doc, err, sizeof(err)) < 0)
		goto keep;
	c = gpumem_profile_compact(doc);
	if (c == NULL)
		goto fail;
	st = gpumem_json_str(c, "st");
	if (gpumem_profile_compact_check(c, err, sizeof(err)) < 0 || st == NULL ||
	    strcmp(st, "ran") != 0)
		goto keep;
	eff = gpumem_acct_effective(gpumem_json_get(root, "effective"));
	if (add_gpus(p, gpumem_json_get(c, "g"), eff) < 0)
		goto fail;
	p->ran = 1;
keep:
	f->prof = p;
	p = NULL;
	rv = 0;
fail:
	gpumem_report_prof_free(p);
	json_object_put(c);
	json_object_put(eff);
	return rv;
}

int gpumem_report_prof_key(const char *name)
{
	static const char *const names[] = {
		[GPUMEM_REPORT_BY_DRAM] = "dram", [GPUMEM_REPORT_BY_SM] = "sm",
		[GPUMEM_REPORT_BY_RX] = "rx", [GPUMEM_REPORT_BY_MEM] = "mem",
		[GPUMEM_REPORT_BY_TIME] = "time",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(name, names[i]) == 0)
			return (int)i;
	return -1;
}

static double key_of(const struct prow *r, int key)
{
	switch (key) {
	case GPUMEM_REPORT_BY_SM: return r->pg->g.sm_mean;
	case GPUMEM_REPORT_BY_RX: return r->pg->g.rx_mean;
	case GPUMEM_REPORT_BY_MEM: return r->pg->g.mem_max;
	case GPUMEM_REPORT_BY_TIME: return (double)r->f->time;
	default: return r->pg->g.dram_p95;
	}
}

/* The key, largest first (a figure the GPU does not have: last), then newest. */
static int cmp_prows(const void *pa, const void *pb)
{
	const struct prow *a = pa, *b = pb;
	int na = isnan(a->key), nb = isnan(b->key), c;

	if (na != nb)
		return na ? 1 : -1;
	if (!na && a->key != b->key)
		return a->key > b->key ? -1 : 1;
	if (a->f->time != b->f->time)
		return a->f->time > b->f->time ? -1 : 1;
	if ((c = gpumem_report_natcmp(a->f->node, b->f->node)) != 0)
		return c;
	if (a->f->job != b->f->job)
		return a->f->job > b->f->job ? -1 : 1;
	if (a->pg->g.index != b->pg->g.index)
		return a->pg->g.index < b->pg->g.index ? -1 : 1;
	return strcmp(a->f->name, b->f->name);
}

/* The rows of the files the filters keep, sorted; *nbadp: those with an unusable profile. */
static struct prow *select_prows(const struct gpumem_report_set *set,
				 const struct gpumem_report_prof_opts *o, size_t *np,
				 size_t *nbadp)
{
	struct prow *rows;
	size_t n = 0, cap = 0;

	*nbadp = 0;
	for (size_t i = 0; i < set->nfiles; i++)
		if (set->files[i]->prof)
			cap += set->files[i]->prof->ngpus;
	rows = malloc((cap ? cap : 1) * sizeof(*rows));
	if (rows == NULL)
		return NULL;
	for (size_t i = 0; i < set->nfiles; i++) {
		const struct gpumem_report_file *f = set->files[i];

		if (f->prof == NULL || !o->keep(f, o->arg))
			continue;
		if (!f->prof->ran)
			(*nbadp)++;
		for (size_t k = 0; f->prof->ran && k < f->prof->ngpus; k++) {
			rows[n] = (struct prow){ .f = f, .pg = &f->prof->gpus[k] };
			rows[n].key = key_of(&rows[n], o->key);
			n++;
		}
	}
	qsort(rows, n, sizeof(*rows), cmp_prows);
	*np = n;
	return rows;
}

/* ------------------------------------------------------------ the table */
enum { P_TIME, P_NODE, P_JOB, P_USER, P_GPU, P_SAMPLES, P_DRAM, P_SM, P_RX, P_MEM, P_ADVICE,
       P_NCOLS };
static const char *const pcol_names[P_NCOLS] = {
	"TIME (UTC)", "NODE", "JOB", "USER", "GPU", "SAMPLES", "DRAM mean/p95 %", "SM mean %",
	"RX mean GB/s", "MEM max GiB", "ADVICE"
};
#define PCELL 96

static int right_aligned(int c)
{
	return c >= P_JOB && c <= P_MEM && c != P_USER;
}

/* V with DECIMALS, or "-" where the GPU has no such figure. */
static void figure(char *buf, size_t len, double v, int decimals)
{
	if (isfinite(v))
		snprintf(buf, len, "%.*f", decimals, v);
	else
		snprintf(buf, len, "-");
}

/* Without GPM, DRAM is the share of time memory was busy, not of bandwidth: marked "~". */
static int not_gpm(const struct gpumem_prof_gpu *g)
{
	return g->source[0] && strcmp(g->source, "gpm") != 0;
}

static void prow_cells(const struct prow *r, char cells[P_NCOLS][PCELL], size_t width[P_NCOLS])
{
	const struct gpumem_prof_gpu *g = &r->pg->g;
	char tmp[PCELL], a[32], b[32];

	for (int c = 0; c < P_NCOLS; c++) {
		switch (c) {
		case P_TIME: gpumem_report_utc(r->f->time, tmp, sizeof(tmp)); break;
		case P_NODE: snprintf(tmp, sizeof(tmp), "%s", r->f->node); break;
		case P_JOB: snprintf(tmp, sizeof(tmp), "%lld", r->f->job); break;
		case P_USER: snprintf(tmp, sizeof(tmp), "%s", r->f->user ? r->f->user : "-"); break;
		case P_GPU: snprintf(tmp, sizeof(tmp), "%ld", g->index); break;
		case P_SAMPLES: figure(tmp, sizeof(tmp), g->samples, 0); break;
		case P_DRAM:
			figure(a, sizeof(a), g->dram_mean, 0);
			figure(b, sizeof(b), g->dram_p95, 0);
			snprintf(tmp, sizeof(tmp), "%s/%s%s", a, b, not_gpm(g) ? "~" : "");
			break;
		case P_SM: figure(tmp, sizeof(tmp), g->sm_mean, 0); break;
		case P_RX: figure(tmp, sizeof(tmp), g->rx_mean, 1); break;
		case P_MEM: figure(tmp, sizeof(tmp), g->mem_max, 1); break;
		default: snprintf(tmp, sizeof(tmp), "%s", r->pg->policy ? r->pg->policy : "-"); break;
		}
		/* The file's words (node, user) are the writer's: cleaned, cut at 40. */
		width[c] = gpumem_term_clean(tmp, cells[c], PCELL, 40);
	}
}

static void print_line(const char *const cells[P_NCOLS], const size_t width[P_NCOLS],
		       const size_t shown[P_NCOLS])
{
	for (int c = 0; c < P_NCOLS; c++) {
		int pad = (int)(width[c] - shown[c]);

		if (c)
			fputs("  ", stdout);
		if (c == P_ADVICE)
			printf("%s\n", cells[c]);
		else if (right_aligned(c))
			printf("%*s%s", pad, "", cells[c]);
		else
			printf("%s%*s", cells[c], pad, "");
	}
}

/* Two passes: the widths, then the lines (printf pads bytes, not characters). */
static void print_table(const struct prow *rows, size_t n)
{
	char cells[P_NCOLS][PCELL];
	const char *ptrs[P_NCOLS];
	size_t width[P_NCOLS], w[P_NCOLS];
	size_t head[P_NCOLS];
	int marked = 0;

	for (int c = 0; c < P_NCOLS; c++) {
		width[c] = head[c] = strlen(pcol_names[c]);
		ptrs[c] = cells[c];
	}
	for (size_t i = 0; i < n; i++) {
		prow_cells(&rows[i], cells, w);
		marked |= not_gpm(&rows[i].pg->g);
		for (int c = 0; c < P_NCOLS; c++)
			width[c] = w[c] > width[c] ? w[c] : width[c];
	}
	print_line(pcol_names, width, head);
	for (size_t i = 0; i < n; i++) {
		prow_cells(&rows[i], cells, w);
		print_line(ptrs, width, w);
	}
	if (marked)
		printf("~: no GPM on that GPU: DRAM is the share of time memory was busy, "
		       "not of its bandwidth\n");
}

/* ------------------------------------------------------------ JSON */
/* One row as an object; the fields are an interface (REPORT-JSON.md). */
static struct json_object *prow_json(const struct prow *r)
{
	const struct gpumem_prof_gpu *g = &r->pg->g;
	struct json_object *o = json_object_new_object(), *a = json_object_new_object();

	if (o == NULL || a == NULL) {
		json_object_put(o);
		json_object_put(a);
		return NULL;
	}
	gpumem_json_add(o, "job", gpumem_json_int(r->f->job));
	gpumem_json_add(o, "node", gpumem_json_string(r->f->node));
	gpumem_json_add(o, "user", gpumem_json_string(r->f->user));
	gpumem_json_add(o, "time", gpumem_json_string(r->f->time_text));
	gpumem_json_add(o, "phase", gpumem_json_string(r->f->phase));
	gpumem_json_add(o, "gpu", gpumem_json_int(g->index));
	gpumem_json_add(o, "samples", gpumem_json_number(g->samples));
	gpumem_json_add(o, "source", gpumem_json_string(g->source[0] ? g->source : NULL));
	gpumem_json_add(o, "dram_mean", gpumem_json_number(g->dram_mean));
	gpumem_json_add(o, "dram_p95", gpumem_json_number(g->dram_p95));
	gpumem_json_add(o, "sm_mean", gpumem_json_number(g->sm_mean));
	gpumem_json_add(o, "sm_p95", gpumem_json_number(g->sm_p95));
	gpumem_json_add(o, "occ_mean", gpumem_json_number(g->occ_mean));
	gpumem_json_add(o, "rx_mean", gpumem_json_fixed(g->rx_mean, 1));
	gpumem_json_add(o, "rx_p95", gpumem_json_fixed(g->rx_p95, 1));
	gpumem_json_add(o, "tx_mean", gpumem_json_fixed(g->tx_mean, 1));
	gpumem_json_add(o, "mem_max", gpumem_json_fixed(g->mem_max, 1));
	gpumem_json_add(a, "rule", gpumem_json_string(r->pg->rule));
	gpumem_json_add(a, "policy", gpumem_json_string(r->pg->policy));
	gpumem_json_add(a, "reason", gpumem_json_string(r->pg->reason));
	gpumem_json_add(o, "advice", a);
	return o;
}

static int print_json(const struct prow *rows, size_t n)
{
	fputc('[', stdout);
	for (size_t i = 0; i < n; i++) {
		struct json_object *o = prow_json(&rows[i]);

		if (o == NULL)
			return -1;
		fputs(i ? ",\n " : "\n ", stdout);
		gpumem_json_write(stdout, o, GPUMEM_JSON_SPACED);
		json_object_put(o);
	}
	fputs(n ? "\n]\n" : "]\n", stdout);
	return 0;
}

/* ------------------------------------------------------------ the listing */
/* Nothing listed: say why (on stderr with --json, whose stdout is data). */
static void say_none(const struct gpumem_report_set *set, const char *dir, int json)
{
	char clean[512];
	int any = set->nskipped > 0;    /* files the filters did not even open */

	for (size_t i = 0; i < set->nfiles && !any; i++)
		any = set->files[i]->prof && set->files[i]->prof->ran;
	gpumem_term_clean(dir, clean, sizeof(clean), 200);
	fprintf(json ? stderr : stdout, "%sno job profiles in %s%s\n", json ? "gpumem: report: " : "",
		clean, any ? " match the filters" : "");
}

int gpumem_report_print_profiles(const struct gpumem_report_set *set, const char *dir,
				 const struct gpumem_report_prof_opts *o)
{
	size_t n = 0, nbad = 0, shown;
	struct prow *rows = select_prows(set, o, &n, &nbad);
	int rv = -1;

	if (rows == NULL)
		goto fail;
	shown = o->limit && o->limit < n ? o->limit : n;
	if (o->json && print_json(rows, shown) < 0)
		goto fail;
	if (!o->json && shown)
		print_table(rows, shown);
	if (n == 0)
		say_none(set, dir, o->json);
	else if (!o->json && shown < n)
		printf("(%zu of %zu rows; --limit)\n", shown, n);
	if (nbad)
		fprintf(stderr, "gpumem: report: %zu report%s without a usable profile (refused, "
			"skipped or not run)\n", nbad, nbad == 1 ? "" : "s");
	rv = 0;
fail:
	if (rv < 0)
		fprintf(stderr, "gpumem: report: out of memory\n");
	free(rows);
	return rv;
}

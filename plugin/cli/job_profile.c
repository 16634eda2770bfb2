/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The GPU memory profile of a job in `gpumem job` (a block per node, a few
 * plain lines per GPU) and the advice in `gpumem job` and `gpumem advise`,
 * from the compact summary an accounting record carries ("prof",
 * profile.h) and the advice table in force (job_rules.c, advise.h).
 * Every string of a record
 * reaches the terminal through gpumem_job_text (trust.h's cleaner).
 *
 * Builds: gpumem (plugin/cli/cli.am).  Includes plugin/core's headers.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "core_advice.h"
#include "job_cli.h"
#include "core_record.h"

/* A percent figure ("62%") or "-". */
static const char *pct(char *buf, size_t len, double v)
{
	if (isfinite(v))
		snprintf(buf, len, "%.0f%%", v);
	else
		snprintf(buf, len, "-");
	return buf;
}

/* A figure with one decimal and its unit ("7.5 GB/s") or "-". */
static const char *one(char *buf, size_t len, double v, const char *unit)
{
	if (isfinite(v))
		snprintf(buf, len, "%.1f %s", v, unit);
	else
		snprintf(buf, len, "-");
	return buf;
}

static void print_advice_of(const struct gpumem_advice *a, const char *indent)
{
	printf("%sadvice: %s%s%s\n", indent, a->policy ? a->policy : "",
	       a->policy ? ": " : "", gpumem_job_text(a->reason));
}

/* "skipped (why)" for a summary that did not run; 0 when it ran. */
static int not_ran(struct json_object *prof, const char *indent)
{
	const char *st = gpumem_json_str(prof, "st"), *why = gpumem_json_str(prof, "why");

	if (st && strcmp(st, "ran") == 0)
		return 0;
	printf("%sprofile: %s%s%s%s\n", indent, gpumem_job_text(st), why ? " (" : "",
	       why ? gpumem_job_text(why) : "", why ? ")" : "");
	return 1;
}

static void print_gpu(const struct gpumem_prof_gpu *g, struct json_object *eff)
{
	struct gpumem_advice a;
	char f[4][32];
	int gpm = strcmp(g->source, "gpm") == 0;

	gpumem_advise_with(gpumem_job_rules(), g, eff, &a);
	printf("    gpu %-3ld %.0f sample%s", g->index, isfinite(g->samples) ? g->samples : 0,
	       g->samples == 1 ? "" : "s");
	if (g->source[0] && !gpm)
		printf(" (source %s: no GPM on this GPU or driver)", gpumem_job_text(g->source));
	printf("\n");
	if (g->source[0] == '\0') {
		printf("      not sampled%s%s\n", g->note[0] ? ": " : "",
		       g->note[0] ? gpumem_job_text(g->note) : "");
		return;
	}
	if (gpm)
		printf("      HBM bandwidth: mean %s, p95 %s of what this GPU can do%s\n",
		       pct(f[0], 32, g->dram_mean), pct(f[1], 32, g->dram_p95),
		       strcmp(a.rule, "hbm-bound") == 0 ? ": memory-bound" : "");
	else
		printf("      HBM busy: mean %s, p95 %s of the time (a share of time, not of "
		       "bandwidth)%s\n", pct(f[0], 32, g->dram_mean), pct(f[1], 32, g->dram_p95),
		       strcmp(a.rule, "hbm-bound") == 0 ? ": memory-bound" : "");
	printf("      SM busy: mean %s, p95 %s", pct(f[0], 32, g->sm_mean), pct(f[1], 32, g->sm_p95));
	if (isfinite(g->occ_mean))
		printf("; occupancy mean %s", pct(f[2], 32, g->occ_mean));
	printf("\n      host link: rx mean %s, p95 %s; tx mean %s\n",
	       one(f[0], 32, g->rx_mean, "GB/s"), one(f[1], 32, g->rx_p95, "GB/s"),
	       one(f[2], 32, g->tx_mean, "GB/s"));
	if (isfinite(g->nvrx_mean) || isfinite(g->nvtx_mean))
		printf("      NVLink: rx mean %s, tx mean %s\n", one(f[0], 32, g->nvrx_mean, "GB/s"),
		       one(f[1], 32, g->nvtx_mean, "GB/s"));
	printf("      memory used: max %s\n", one(f[0], 32, g->mem_max, "GiB"));
	print_advice_of(&a, "      ");
}

void gpumem_job_print_profile(struct json_object *rec)
{
	struct json_object *prof = gpumem_json_get(rec, "prof"), *rows = gpumem_json_get(prof, "g");
	struct json_object *eff = gpumem_json_get(rec, "eff");
	const char *src = gpumem_json_str(prof, "src");
	double s;

	if (prof == NULL || not_ran(prof, "  "))
		return;
	printf("  profile: ");
	if (gpumem_json_num(prof, "s", &s) == 0)
		printf("%.0f s sampled", s);
	else
		printf("sampled");
	printf("%s%s, %zu GPU%s\n", src ? ", source " : "", src ? gpumem_job_text(src) : "",
	       gpumem_json_len(rows), gpumem_json_len(rows) == 1 ? "" : "s");
	for (size_t i = 0; i < gpumem_json_len(rows); i++) {
		struct gpumem_prof_gpu g;

		if (gpumem_prof_gpu_of(gpumem_json_at(rows, i), &g) == 0)
			print_gpu(&g, eff);
	}
}

void gpumem_job_print_advice(struct json_object *rec)
{
	struct json_object *prof = gpumem_json_get(rec, "prof"), *rows = gpumem_json_get(prof, "g");
	struct json_object *eff = gpumem_json_get(rec, "eff");

	if (prof == NULL) {
		printf("  (no profile in this record: gpumem-sample did not run, or an older "
		       "gpumem wrote it)\n");
		return;
	}
	if (not_ran(prof, "  "))
		return;
	if (gpumem_json_len(rows) == 0)
		printf("  (the profile has no GPU)\n");
	for (size_t i = 0; i < gpumem_json_len(rows); i++) {
		struct gpumem_prof_gpu g;
		struct gpumem_advice a;
		char head[32];

		if (gpumem_prof_gpu_of(gpumem_json_at(rows, i), &g) < 0)
			continue;
		gpumem_advise_with(gpumem_job_rules(), &g, eff, &a);
		snprintf(head, sizeof(head), "  gpu %-3ld ", g.index);
		print_advice_of(&a, head);
	}
}

struct json_object *gpumem_job_advice(struct json_object *rec)
{
	struct json_object *prof = gpumem_json_get(rec, "prof"), *rows = gpumem_json_get(prof, "g");
	struct json_object *eff = gpumem_json_get(rec, "eff"), *arr = json_object_new_array();
	const char *st = gpumem_json_str(prof, "st");
	int rv = -1;

	if (arr == NULL)
		goto fail;
	for (size_t i = 0; st && strcmp(st, "ran") == 0 && i < gpumem_json_len(rows); i++) {
		struct gpumem_prof_gpu g;
		struct gpumem_advice a;
		struct json_object *o;

		if (gpumem_prof_gpu_of(gpumem_json_at(rows, i), &g) < 0)
			continue;
		gpumem_advise_with(gpumem_job_rules(), &g, eff, &a);
		o = gpumem_advice_json(&a, g.index);
		if (o == NULL || json_object_array_add(arr, o) < 0) {
			json_object_put(o);
			goto fail;
		}
	}
	rv = 0;
fail:
	if (rv < 0) {
		json_object_put(arr);
		arr = NULL;
	}
	return arr;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A report's file and rows built from its fields as read: the one place
 * that says what a file and a row hold, for both readers of a report file,
 * json-c's (report_load.c) and the head line's scanner (report_scan.c),
 * so both give the same rows.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "report_cli.h"

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/*
 * The node's own index of CUDA ordinal 'cuda' from the step's "gpus" list
 * ("2,3" or "0-3"): the check sees the step's GPUs renumbered from 0, in
 * the order Slurm listed them.  -1 when the list does not say.
 */
static int node_index(const char *gpus, int cuda)
{
	const char *s = gpus;
	int k = 0;

	if (s == NULL || cuda < 0)
		return -1;
	while (*s) {
		char *end;
		long a = strtol(s, &end, 10), b;

		if (end == s || a < 0 || a > 4096)
			return -1;
		b = a;
		s = end;
		if (*s == '-') {
			b = strtol(s + 1, &end, 10);
			if (end == s + 1 || b < a || b > 4096)
				return -1;
			s = end;
		}
		if (*s == ',')
			s++;
		else if (*s)
			return -1;
		if (cuda - k <= b - a)
			return (int)(a + (cuda - k));
		k += (int)(b - a + 1);
	}
	return -1;
}

void gpumem_report_set_metric(struct gpumem_report_metric *rm, const char *verdict,
			      const double v[5])
{
	rm->present = 1;
	rm->verdict = dup_or_null(verdict);
	rm->vclass = gpumem_report_vclass_of(rm->verdict);
	rm->best = v[0];
	rm->median = v[1];
	rm->reference = v[2];
	rm->threshold = v[3];
	rm->warn_floor = v[4];
	/* gpumem-check writes 0 for a metric it did not measure: no line. */
	if (!(rm->threshold > 0))
		rm->threshold = NAN;
	if (!(rm->warn_floor > 0))
		rm->warn_floor = NAN;
}

struct gpumem_report_row *gpumem_report_gpu_row(struct gpumem_report_set *set,
						 const struct gpumem_report_file *f, int index,
						 const char *name, const char *uuid, const char *pci,
						 const char *verdict, char *reasons)
{
	struct gpumem_report_row *r;

	if (gpumem_report_add_row(set, &r) < 0) {
		free(reasons);
		return NULL;
	}
	r->rep = f;
	r->has_gpu = 1;
	r->cuda_index = index;
	r->node_index = node_index(f->gpus, r->cuda_index);
	r->gpu_name = dup_or_null(name);
	r->gpu_uuid = dup_or_null(uuid);
	r->gpu_pci = dup_or_null(pci);
	r->verdict = strdup(verdict ? verdict : "error");
	r->vclass = gpumem_report_vclass_of(verdict);
	if (r->vclass != GPUMEM_REPORT_V_PASS) {
		r->reason = reasons;
		reasons = NULL;
		if (r->reason == NULL && verdict == NULL)
			r->reason = strdup("the check document gives this GPU no verdict");
	}
	free(reasons);
	return r;
}

int gpumem_report_nogpu_row(struct gpumem_report_set *set, const struct gpumem_report_file *f,
			    const char *check_reason)
{
	const char *why = f->reason;
	struct gpumem_report_row *r;

	if (gpumem_report_add_row(set, &r) < 0)
		return -1;
	r->rep = f;
	r->cuda_index = r->node_index = -1;
	r->verdict = strdup(f->verdict);
	r->vclass = f->vclass;
	/*
	 * A check that never started (not installed) sorts with the skipped
	 * ones, whatever verdict the plugin gave it ("error" or "skipped").
	 */
	if (!strcmp(f->status, "not_run") &&
	    (r->vclass == GPUMEM_REPORT_V_SKIPPED || r->vclass == GPUMEM_REPORT_V_ERROR))
		r->vclass = GPUMEM_REPORT_V_NOT_RUN;
	if (why == NULL)
		why = check_reason;
	if (why == NULL && f->vclass != GPUMEM_REPORT_V_PASS && strcmp(f->status, "ran"))
		why = f->status;
	if (why == NULL && f->vclass != GPUMEM_REPORT_V_PASS)
		why = "the check reported no GPU";
	r->reason = dup_or_null(why);
	return 0;
}

struct gpumem_report_file *gpumem_report_file_of(const struct gpumem_report_fields *h)
{
	struct gpumem_report_file *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return NULL;
	f->time = h->t;
	f->job = h->job;
	f->step = strdup(h->step);
	f->name = strdup(h->name);
	f->node = strdup(h->node);
	f->phase = strdup(h->phase);
	f->time_text = strdup(h->time);
	f->status = strdup(h->status);
	f->verdict = strdup(h->verdict);
	f->user = dup_or_null(h->user);
	f->policy = dup_or_null(h->policy);
	f->gpus = dup_or_null(h->gpus);
	f->reason = dup_or_null(h->reason);
	f->vclass = gpumem_report_vclass_of(h->verdict);
	f->has_uid = h->has_uid;
	f->uid = h->uid;
	f->has_exit_code = h->has_exit_code;
	f->exit_code = h->exit_code;
	f->drained = h->drained;
	if (!f->step || !f->name || !f->node || !f->phase || !f->time_text || !f->status ||
	    !f->verdict) {
		gpumem_report_file_free(f);
		return NULL;
	}
	return f;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The judge of an advised run (judge.h): which runs under the site's
 * defaults are comparable with it, the reference and noise floor they
 * give, and the result, with the one sentence of figures or the reason it
 * was not judged.  Pure: the runs come from advised.c, which reads sacct.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "advise.h"
#include "judge.h"

int gpumem_judge_gain_rule(const struct gpumem_advice_table *t, const char *rule)
{
	return gpumem_advice_promise(t ? t : gpumem_advice_builtin(), rule) == GPUMEM_PROMISE_GAIN;
}

/* Why K and R cannot be compared, or NULL (judge.h: comparable). */
static const char *unlike(const struct gpumem_judge_run *k, const struct gpumem_judge_run *r)
{
	if (!r->completed)
		return "it did not complete";
	if (!r->profiled || r->nused == 0)
		return "no profile with a used GPU";
	if (r->samples < GPUMEM_JUDGE_MIN_SAMPLES)
		return "too few samples";
	if (r->ngpus != k->ngpus)
		return "another GPU count";
	if (strcmp(r->model, k->model) != 0)
		return "another GPU model";
	if (r->cmd && k->cmd && r->cmd != k->cmd)
		return "another command";
	if (r->work_s < 0)
		return "no step time in accounting";
	return NULL;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), by_value);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Why K itself cannot be judged, or NULL. */
static const char *unjudgeable(const struct gpumem_judge_run *k)
{
	static char why[120];

	if (k->profiled && k->samples < GPUMEM_JUDGE_MIN_SAMPLES) {
		snprintf(why, sizeof(why), "its profile has %.0f samples (fewer than %d)",
			 k->samples, GPUMEM_JUDGE_MIN_SAMPLES);
		return why;
	}
	if (!k->profiled || k->nused == 0)
		return "its profile shows no used GPU";
	if (k->work_s < 0)
		return "accounting has no step time for it";
	return NULL;
}

/* The reference from CANDS into OUT; the first candidate's reason when none is comparable. */
static void reference(const struct gpumem_judge_run *k, const struct gpumem_judge_run *const *c,
		      size_t n, struct gpumem_judgement *out, double *ref_busy, const char **why)
{
	double t[GPUMEM_JUDGE_MAX_REFS], b[GPUMEM_JUDGE_MAX_REFS], o[GPUMEM_JUDGE_MAX_REFS];

	*why = NULL;
	for (size_t i = 0; i < n && out->nrefs < GPUMEM_JUDGE_MAX_REFS; i++) {
		const char *u = unlike(k, c[i]);

		if (u) {
			if (*why == NULL)
				*why = u;
			continue;
		}
		t[out->nrefs] = (double)c[i]->work_s;
		b[out->nrefs] = c[i]->busy_s;
		o[out->nrefs++] = (double)(c[i]->job_s - c[i]->work_s);
	}
	if (out->nrefs == 0)
		return;
	out->ref_s = median(t, out->nrefs);
	*ref_busy = median(b, out->nrefs);
	out->ref_own_s = median(o, out->nrefs);
}

/* Did the default runs before K complete?  1 when the newest few did. */
static int defaults_completed(const struct gpumem_judge_run *const *c, size_t n)
{
	int seen = 0;

	for (size_t i = 0; i < n && i < GPUMEM_JUDGE_MAX_REFS; i++) {
		if (!c[i]->completed)
			return 0;
		seen = 1;
	}
	return seen;
}

static void not_judged(struct gpumem_judgement *out, const char *why)
{
	out->result = GPUMEM_J_NOT_JUDGED;
	snprintf(out->why, sizeof(out->why), "not judged: %s", why);
}

/* The time comparison, once K and its reference are comparable. */
static void timed(const struct gpumem_judge_run *k, int gain, const char *rule, double ref_busy,
		  struct gpumem_judgement *out)
{
	double w = (double)k->work_s;

	out->floor_s = fmax(2.0 * GPUMEM_JUDGE_TICK_S, GPUMEM_JUDGE_MARGIN * out->ref_s);
	if (out->nrefs == 1)
		out->floor_s *= 2;
	out->ratio = out->ref_s / w;
	out->busy_ratio = ref_busy > 0 ? k->busy_s / ref_busy : 0;
	if (out->ref_s >= GPUMEM_JUDGE_LONG_S && w > GPUMEM_JUDGE_HARM * out->ref_s)
		out->result = GPUMEM_J_HARM;
	else if (w >= out->ref_s + out->floor_s || (gain && k->symptom))
		out->result = GPUMEM_J_LOSS;
	else if (w < out->ref_s - out->floor_s)
		out->result = GPUMEM_J_GAINED;
	else
		out->result = GPUMEM_J_EVEN;
	snprintf(out->why, sizeof(out->why), "work %ld s against %.0f s (median of %d, noise "
		 "%.0f s)%s%s; gpumem's own time %.0f s against %.0f s", k->work_s, out->ref_s,
		 out->nrefs, out->floor_s, gain && k->symptom ? "; still " : "",
		 gain && k->symptom ? rule : "", out->own_s, out->ref_own_s);
}

void gpumem_judge(const struct gpumem_judge_run *k, const struct gpumem_judge_run *const *cands,
		  size_t ncands, const struct gpumem_advice_table *t, const char *rule,
		  struct gpumem_judgement *out)
{
	const char *why = NULL;
	double ref_busy = 0;
	char buf[160];

	memset(out, 0, sizeof(*out));
	out->own_s = k->work_s >= 0 ? (double)(k->job_s - k->work_s) : 0;
	if (!k->completed) {
		if (defaults_completed(cands, ncands)) {
			out->result = GPUMEM_J_HARM;
			snprintf(out->why, sizeof(out->why), "it failed where the runs under the "
				 "site's defaults completed");
		} else {
			not_judged(out, "it did not complete, and neither did runs under the "
				   "site's defaults");
		}
		return;
	}
	if ((why = unjudgeable(k)) != NULL) {
		not_judged(out, why);
		return;
	}
	if (ncands == 0) {
		not_judged(out, "no run under the site's defaults to compare with");
		return;
	}
	reference(k, cands, ncands, out, &ref_busy, &why);
	if (out->nrefs == 0) {
		snprintf(buf, sizeof(buf), "no comparable run under the site's defaults (%s)", why);
		not_judged(out, buf);
		return;
	}
	if (k->work_s < GPUMEM_JUDGE_MIN_WORK_S || out->ref_s < GPUMEM_JUDGE_MIN_WORK_S) {
		snprintf(buf, sizeof(buf), "%ld s against %.0f s is too short to time (under %d s)",
			 k->work_s, out->ref_s, GPUMEM_JUDGE_MIN_WORK_S);
		not_judged(out, buf);
		out->nrefs = 0;
		return;
	}
	/*
	 * Far less GPU work than the reference is other work, which could pass
	 * for a gain.  More is judged: a policy that slows the GPU (zero-copy
	 * reads over the host link) keeps it busy longer, and that is a loss.
	 */
	if (ref_busy > 0 && k->busy_s * GPUMEM_JUDGE_BUSY_BAND < ref_busy) {
		snprintf(buf, sizeof(buf), "other GPU work (%.0f GPU-busy s against %.0f s)",
			 k->busy_s, ref_busy);
		not_judged(out, buf);
		return;
	}
	timed(k, gpumem_judge_gain_rule(t, rule), rule, ref_busy, out);
}

const char *gpumem_judge_outcome(const struct gpumem_judgement *j, const struct gpumem_judge_run *k)
{
	switch (j->result) {
	case GPUMEM_J_GAINED:
		return "gained";
	case GPUMEM_J_EVEN:
		return "even";
	case GPUMEM_J_LOSS:
		return k->symptom && j->ratio >= 1 ? "still" : "slower";
	case GPUMEM_J_HARM:
		return k->completed ? "slower" : "failed";
	default:
		return "not judged";
	}
}

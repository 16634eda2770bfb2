/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The judge of an advised run (plugin/core/advice/judge.c), without
 * Slurm: what is comparable, the reference (a median of up to five runs
 * under the site's defaults), the noise floor, near-zero times, gained,
 * even, loss and harm, and what each kind of rule is judged on.
 * tests/slurm/advised.sh runs the same through the real Slurm.
 */
#include <stdio.h>
#include <string.h>
#include "core_advice.h"
#include "tap.h"

/* A completed, profiled run of one used H200 taking WORK seconds (job: one more). */
static struct gpumem_judge_run run(long long id, long work)
{
	struct gpumem_judge_run r = { .id = id, .completed = 1, .work_s = work, .job_s = work + 1,
		.profiled = 1, .samples = 100, .ngpus = 1, .nused = 1, .model = "NVIDIA H200",
		.busy_s = work * 0.5 };

	return r;
}

static struct gpumem_judgement j;

static const struct gpumem_judge_run *refs[8];

static struct gpumem_advice_table site;        /* the built-in rules, promises moved */

/* Judge K for RULE against the N runs in REFS. */
static enum gpumem_judge_result judge_n(const struct gpumem_judge_run *k, const char *rule, size_t n)
{
	gpumem_judge(k, refs, n, NULL, rule, &j);
	return j.result;
}

int main(void)
{
	struct gpumem_judge_run r[8], k;

	/* Comparable only. */
	r[0] = run(1, 26);
	refs[0] = &r[0];
	k = run(2, 0);
	k.samples = 0;
	k.busy_s = 0;
	is_int(judge_n(&k, "faulting", 1), GPUMEM_J_NOT_JUDGED, "`true` (0 samples) under advised: not judged");
	like(j.why, "not judged: its profile has 0 samples (fewer than 10)", "... and why");
	is_int((int)(j.ratio * 100), 0, "... no ratio made of a near-zero time");
	k = run(2, 20);
	k.nused = 0;
	is_int(judge_n(&k, "hbm-bound", 1), GPUMEM_J_NOT_JUDGED, "no used GPU: not judged");
	k = run(2, 20);
	k.ngpus = 2;
	is_int(judge_n(&k, "hbm-bound", 1), GPUMEM_J_NOT_JUDGED, "another GPU count: not judged");
	like(j.why, "no comparable run under the site's defaults (another GPU count)", "... and why");
	k = run(2, 20);
	snprintf(k.model, sizeof(k.model), "NVIDIA H100");
	is_int(judge_n(&k, "hbm-bound", 1), GPUMEM_J_NOT_JUDGED, "another GPU model: not judged");
	k = run(2, 20);
	k.work_s = -1;
	is_int(judge_n(&k, "hbm-bound", 1), GPUMEM_J_NOT_JUDGED, "no step time: not judged (never the job's wall)");
	k = run(2, 20);
	is_int(judge_n(&k, "hbm-bound", 0), GPUMEM_J_NOT_JUDGED, "no run under the defaults: not judged");
	r[0] = run(1, 26);
	r[0].completed = 0;
	k = run(2, 20);
	is_int(judge_n(&k, "hbm-bound", 1), GPUMEM_J_NOT_JUDGED, "the only default run failed: not judged");
	r[0] = run(1, 26);
	r[0].samples = 3;
	is_int(judge_n(&k, "hbm-bound", 1), GPUMEM_J_NOT_JUDGED, "a default run with 3 samples is no reference");
	r[0] = run(1, 3);
	k = run(2, 4);
	is_int(judge_n(&k, "hbm-bound", 1), GPUMEM_J_NOT_JUDGED, "3 s against 4 s: too short to time");
	like(j.why, "too short to time", "... and why");
	r[0] = run(1, 26);
	k = run(2, 20);
	k.busy_s = 1;
	is_int(judge_n(&k, "hbm-bound", 1), GPUMEM_J_NOT_JUDGED, "GPU work a tenth of the reference's: other work, not judged");
	like(j.why, "other GPU work", "... and why");
	k = run(2, 40);
	k.busy_s = 200;
	is_int(judge_n(&k, "faulting", 1), GPUMEM_J_LOSS,
	       "GPU busy 15x the reference's and slower (zero-copy over the host link): judged, a loss");

	/* The command, where accounting gives both sides one. */
	r[0] = run(1, 26);
	k = run(2, 26);
	r[0].cmd = 11;
	k.cmd = 12;
	is_int(judge_n(&k, "hbm-bound", 1), GPUMEM_J_NOT_JUDGED, "another command: not judged");
	like(j.why, "another command", "... and why");
	k.cmd = 0;
	is_int(judge_n(&k, "hbm-bound", 1), GPUMEM_J_EVEN, "a command unknown on one side: compared");

	/* The floor: two ticks, doubled with one reference; the median of up to five. */
	r[0] = run(1, 10);
	r[1] = run(2, 10);
	refs[1] = &r[1];
	k = run(3, 11);
	is_int(judge_n(&k, "hbm-bound", 2), GPUMEM_J_EVEN, "10 s -> 11 s, two references: one tick, even");
	k = run(3, 12);
	is_int(judge_n(&k, "hbm-bound", 2), GPUMEM_J_LOSS, "10 s -> 12 s, two references: two ticks slower, a (noisy) loss");
	k = run(3, 13);
	is_int(judge_n(&k, "hbm-bound", 2), GPUMEM_J_LOSS, "10 s -> 13 s, two references: a loss");
	like(j.why, "work 13 s against 10 s (median of 2, noise 2 s)", "... the figures");
	is_int(judge_n(&k, "hbm-bound", 1), GPUMEM_J_EVEN, "10 s -> 13 s, one reference: the floor doubled (4 s), even");
	k = run(3, 15);
	is_int(judge_n(&k, "hbm-bound", 1), GPUMEM_J_LOSS, "10 s -> 15 s, one reference: a loss");
	for (int i = 0; i < 7; i++) {
		r[i] = run(i + 1, i < 5 ? 100 + i : 1000);
		refs[i] = &r[i];
	}
	k = run(9, 110);
	is_int(judge_n(&k, "hbm-bound", 7), GPUMEM_J_LOSS, "median of the five newest (102 s), floor 5%% (5.1 s): 110 s a loss");
	ok(j.nrefs == 5 && j.ref_s == 102, "... five references, median 102 s");
	k = run(9, 106);
	is_int(judge_n(&k, "hbm-bound", 7), GPUMEM_J_EVEN, "106 s against 102 s: even");
	r[1].ngpus = 2;
	k = run(9, 106);
	judge_n(&k, "hbm-bound", 7);
	ok(j.nrefs == 5 && j.ref_s == 103, "an incomparable run is skipped, the next one taken (median 103 s)");

	/* What each rule promised. */
	r[0] = run(1, 30);
	r[1] = run(2, 30);
	refs[0] = &r[0];
	refs[1] = &r[1];
	k = run(3, 10);
	is_int(judge_n(&k, "faulting", 2), GPUMEM_J_GAINED, "faulting: 30 s -> 10 s, symptom gone: gained");
	ok(j.ratio == 3, "... ratio 3");
	k.symptom = 1;
	is_int(judge_n(&k, "faulting", 2), GPUMEM_J_LOSS, "faulting: fast, but the symptom is still there: a loss");
	like(j.why, "still faulting", "... and why");
	k = run(3, 29);
	is_int(judge_n(&k, "faulting", 2), GPUMEM_J_EVEN, "faulting: symptom gone, 29 s against 30 s: even (no gain beyond the noise)");
	k = run(3, 10);
	is_int(judge_n(&k, "hbm-bound", 2), GPUMEM_J_GAINED, "hbm-bound: faster too, still judged (the text says no N-times)");
	ok(gpumem_judge_gain_rule(NULL, "faulting") && !gpumem_judge_gain_rule(NULL, "hbm-bound") &&
	   !gpumem_judge_gain_rule(NULL, "idle") && !gpumem_judge_gain_rule(NULL, "link-bound"),
	   "built in, only faulting promises a gain");
	/* The promise is the rule table's own: a site table that moves it moves the judge. */
	site = *gpumem_advice_builtin();
	for (int i = 0; i < site.n; i++)
		site.r[i].promise = !strcmp(site.r[i].name, "hbm-bound") ? GPUMEM_PROMISE_GAIN :
			GPUMEM_PROMISE_NOT_SLOWER;
	ok(!gpumem_judge_gain_rule(&site, "faulting") && gpumem_judge_gain_rule(&site, "hbm-bound"),
	   "a table's promise decides (faulting not-slower, hbm-bound gain)");
	k.symptom = 1;
	gpumem_judge(&k, refs, 2, &site, "faulting", &j);
	is_int(j.result, GPUMEM_J_GAINED, "faulting promising no speed-up: its symptom is no loss");
	gpumem_judge(&k, refs, 2, &site, "hbm-bound", &j);
	is_int(j.result, GPUMEM_J_LOSS, "hbm-bound promising a gain: its symptom still there, a loss");
	ok(!gpumem_judge_gain_rule(&site, "no-such-rule"), "a rule the table lacks promises no gain");

	/* Harm. */
	k = run(3, 2);
	k.completed = 0;
	is_int(judge_n(&k, "hbm-bound", 2), GPUMEM_J_HARM, "failed where default runs completed: harm");
	is_str(gpumem_judge_outcome(&j, &k), "failed", "... outcome failed");
	r[0] = run(1, 400);
	r[1] = run(2, 400);
	k = run(3, 700);
	is_int(judge_n(&k, "hbm-bound", 2), GPUMEM_J_HARM, "a long run (400 s) 1.75x slower: harm");
	k = run(3, 560);
	is_int(judge_n(&k, "hbm-bound", 2), GPUMEM_J_LOSS, "400 s -> 560 s (1.4x): a loss, no harm");
	r[0] = run(1, 100);
	r[1] = run(2, 100);
	k = run(3, 200);
	is_int(judge_n(&k, "hbm-bound", 2), GPUMEM_J_LOSS, "a short run twice as slow: a loss, no harm");
	is_str(gpumem_judge_outcome(&j, &k), "slower", "... outcome slower");

	/* gpumem's own time apart. */
	r[0] = run(1, 10);
	r[1] = run(2, 10);
	k = run(3, 10);
	k.job_s = 14;
	is_int(judge_n(&k, "hbm-bound", 2), GPUMEM_J_EVEN, "a slow prolog (14 s job, 10 s work): even, not blamed on the policy");
	ok(j.own_s == 4 && j.ref_own_s == 1, "... gpumem's own time said apart (4 s against 1 s)");
	like(j.why, "gpumem's own time 4 s against 1 s", "... in the sentence");
	return tap_done();
}

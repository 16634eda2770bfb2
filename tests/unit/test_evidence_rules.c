/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * plugin/spank/check/evidence_rules.c: a pass carries what it was judged at and
 * answers no stricter check; a pass without it (an older gpumem's) answers
 * none; only a check at least as strict as the site's default clears
 * marks; a profile row at a low HBM ceiling marks the GPU, and only
 * GPM's DRAM bandwidth at 90% of peak clears the mark.
 */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "evidence_rules.h"
#include "tap.h"

#define EV "uuid=GPU-1 ecc.volatile.corrected=0 nvlink.active=0"

static void record_format(void)
{
	struct gpumem_pass p = { .job = 12, .sec = 1700000000, .min_fraction = 0.2 }, q;
	char text[1200], small[40];

	snprintf(p.phase, sizeof(p.phase), "after");
	snprintf(p.evidence, sizeof(p.evidence), EV);
	snprintf(p.refs, sizeof(p.refs), "0123456789abcdef");
	ok(gpumem_pass_format(&p, text, sizeof(text)) == 0, "a pass is formatted");
	is_str(text, "12 after 1700000000\n" EV "\njudged min_fraction=0.2 references=0123456789abcdef\n",
	       "... with what it was judged at on its third line");
	ok(gpumem_pass_format(&p, small, sizeof(small)) < 0, "... and refused where it does not fit");
	ok(gpumem_pass_parse(text, &q) == 0, "it reads back");
	ok(q.job == 12 && q.sec == 1700000000 && !strcmp(q.phase, "after") &&
	   !strcmp(q.evidence, EV), "... job, phase, time and evidence");
	ok(q.judged && fabs(q.min_fraction - 0.2) < 1e-12 && !strcmp(q.refs, "0123456789abcdef"),
	   "... and its min_fraction and references");

	p.min_fraction = 1.0 / 3;
	ok(gpumem_pass_format(&p, text, sizeof(text)) == 0 && gpumem_pass_parse(text, &q) == 0 &&
	   gpumem_pass_answers(&q, 1.0 / 3, q.refs, small, sizeof(small)) &&
	   !gpumem_pass_answers(&q, 1.0 / 3 + 1e-6, q.refs, small, sizeof(small)),
	   "a fraction of many digits reads back close enough to answer itself, not more");
	ok(gpumem_pass_parse("12 after 1700000000\n" EV "\n", &q) == 0 && !q.judged &&
	   !strcmp(q.evidence, EV), "an older gpumem's pass (two lines) reads, judged at nothing");
	ok(gpumem_pass_parse("12 after 1700000000\n" EV, &q) == 0 && !q.judged,
	   "... also without its last newline");
	ok(gpumem_pass_parse(NULL, &q) < 0 && gpumem_pass_parse("12 after\n", &q) < 0 &&
	   gpumem_pass_parse("nonsense", &q) < 0, "no file, a short or a bad first line: no pass");
	{
		static const char *const bad[] = {
			"judged min_fraction=1.5 references=0123456789abcdef",
			"judged min_fraction=-0.1 references=0123456789abcdef",
			"judged min_fraction=nan references=0123456789abcdef",
			"judged min_fraction= references=0123456789abcdef",
			"judged min_fraction=0.85 references=0123456789ABCDEF",
			"judged min_fraction=0.85 references=0123456789abcde",
			"judged min_fraction=0.85 references=0123456789abcdef0",
			"judged min_fraction=0.85",
			"judged references=0123456789abcdef min_fraction=0.85",
		};
		int judged = 0;

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			snprintf(text, sizeof(text), "1 before 2\n" EV "\n%s\n", bad[i]);
			judged += gpumem_pass_parse(text, &q) == 0 && q.judged;
		}
		is_int(judged, 0, "a third line out of range, short or malformed: judged at nothing "
		       "(%zu cases)", sizeof(bad) / sizeof(bad[0]));
	}
}

static void answers(void)
{
	struct gpumem_pass p = { .job = 5, .judged = 1, .min_fraction = 0.2 };
	char why[300] = "";

	snprintf(p.refs, sizeof(p.refs), "0123456789abcdef");
	ok(!gpumem_pass_answers(&p, 0.85, "0123456789abcdef", why, sizeof(why)),
	   "a pass measured at 0.2 does not answer a check asking 0.85");
	is_str(why, "job 5's pass was measured at min_fraction 0.2, this check asks 0.85",
	       "... and says why");
	ok(gpumem_pass_answers(&p, 0.2, "0123456789abcdef", why, sizeof(why)),
	   "... it answers one asking 0.2");
	ok(gpumem_pass_answers(&p, 0.1, "0123456789abcdef", why, sizeof(why)),
	   "... and one asking less");
	p.min_fraction = 0.85;
	ok(gpumem_pass_answers(&p, 0.85, "0123456789abcdef", why, sizeof(why)),
	   "a pass at 0.85 answers a check asking 0.85 (as written and read back)");
	ok(!gpumem_pass_answers(&p, 0.9, "0123456789abcdef", why, sizeof(why)),
	   "... not one asking 0.9");
	ok(!gpumem_pass_answers(&p, 0.85, "fedcba9876543210", why, sizeof(why)),
	   "a pass judged against other references answers nothing");
	like(why, "other references", "... and says why");
	p.judged = 0;
	ok(!gpumem_pass_answers(&p, 0.0, "0123456789abcdef", why, sizeof(why)),
	   "a pass that does not say what it was measured at answers nothing, even 0.0 (fail closed)");
	like(why, "older gpumem", "... and says why");
}

static void references(void)
{
	struct gpumem_site s;
	char a[GPUMEM_PASS_REFS_LEN], b[GPUMEM_PASS_REFS_LEN], none[GPUMEM_PASS_REFS_LEN];
	struct gpumem_diags d = { 0 };
	static const char site[] = "version: 1\nreferences:\n  NVIDIA H200:\n    triad: 4127\n";
	static const char site2[] = "version: 1\nreferences:\n  NVIDIA H200:\n    triad: 4000\n";

	gpumem_site_init(&s);
	gpumem_pass_refs(NULL, none);
	ok(strlen(none) == 16 && strspn(none, "0123456789abcdef") == 16,
	   "no site: a digest all the same (%s)", none);
	ok(gpumem_site_parse(site, sizeof(site) - 1, "site.yaml", &s, &d) == 0, "a site with a reference");
	gpumem_pass_refs(&s, a);
	ok(strcmp(a, none), "its references digest differently from none");
	gpumem_pass_refs(&s, b);
	is_str(b, a, "... the same each time");
	ok(gpumem_site_parse(site2, sizeof(site2) - 1, "site.yaml", &s, &d) == 0, "the same model, triad 4000");
	gpumem_pass_refs(&s, b);
	ok(strcmp(a, b), "... another digest: a pass judged against the first answers no check of the second");
	gpumem_site_free(&s);
	gpumem_diags_free(&d);
}

static void strictness(void)
{
	struct gpumem_policy eff;
	struct gpumem_site s;

	ok(gpumem_pass_strict(0.85, 0.85), "a check at the site's default may clear marks");
	ok(gpumem_pass_strict(0.9, 0.85), "... a stricter one too");
	ok(!gpumem_pass_strict(0.2, 0.85), "a laxer one may not");
	gpumem_policy_init(&eff);
	gpumem_site_init(&s);
	s.defaults.check.min_fraction = 0.9;
	ok(!gpumem_check_strict(&eff, &s), "the built-in 0.85 under a site default of 0.9: not strict");
	ok(gpumem_check_strict(&eff, NULL), "... with no site file, the built-in default is the bar");
	eff.check.min_fraction = 0.5;
	ok(!gpumem_check_strict(&eff, NULL), "... 0.5 is below it");
}

static void hbm(void)
{
	struct gpumem_prof_gpu hi = { .samples = 10, .dram_p95 = 95, .dram_mean = 90, .sm_mean = 40 };
	struct gpumem_prof_gpu lo = { .samples = 10, .dram_p95 = 45, .dram_mean = 45, .sm_mean = 20 };
	struct gpumem_prof_gpu sm = { .samples = 10, .dram_p95 = 45, .dram_mean = 45, .sm_mean = 60 };
	struct gpumem_prof_gpu few = { .samples = 2, .dram_p95 = 95, .dram_mean = 90, .sm_mean = 40 };

	is_int(gpumem_hbm_class(&hi, "gpm"), -1, "GPM's DRAM bandwidth at 95%% of peak: not slow (clears)");
	is_int(gpumem_hbm_class(&hi, "nvml-utilization"), 0,
	       "NVML's memory utilization at 95%%: no upward evidence");
	is_int(gpumem_hbm_class(&hi, NULL), 0, "... nor a figure of unknown source");
	is_int(gpumem_hbm_class(&lo, "gpm"), 1, "GPM at a low ceiling: low (marks)");
	is_int(gpumem_hbm_class(&lo, "nvml-utilization"), 1,
	       "NVML at a low ceiling marks too (a mark only makes the next check measured)");
	is_int(gpumem_hbm_class(&sm, "gpm"), 0, "the SMs the busier unit: says nothing");
	is_int(gpumem_hbm_class(&few, "gpm"), 0, "fewer than %d samples: nothing", GPUMEM_EVIDENCE_HBM_SAMPLES);
}

int main(void)
{
	record_format();
	answers();
	references();
	strictness();
	hbm();
	return tap_done();
}

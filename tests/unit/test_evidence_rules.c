/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * plugin/spank/evidence_rules.c: a pass's record reads back (and nothing
 * else reads as one); a profile row at a low HBM ceiling marks the GPU,
 * one that reached 90% of peak clears the mark.
 */
#include <stdio.h>
#include <string.h>
#include "evidence_rules.h"
#include "tap.h"

#define EV "uuid=GPU-1 ecc.volatile.corrected=0 nvlink.active=0"

static void record(void)
{
	struct gpumem_pass q;

	ok(gpumem_pass_parse("12 after 1700000000\n" EV "\n", &q) == 0, "a pass reads");
	ok(q.job == 12 && q.sec == 1700000000 && !strcmp(q.phase, "after") &&
	   !strcmp(q.evidence, EV), "... job, phase, time and evidence");
	ok(gpumem_pass_parse("12 after 1700000000\n" EV, &q) == 0 && !strcmp(q.evidence, EV),
	   "... also without its last newline");
	ok(gpumem_pass_parse(NULL, &q) < 0 && gpumem_pass_parse("12 after\n", &q) < 0 &&
	   gpumem_pass_parse("nonsense", &q) < 0 && gpumem_pass_parse("12 after 17", &q) < 0,
	   "no file, a short or a bad first line, no evidence line: no pass");
}

static void hbm(void)
{
	struct gpumem_prof_gpu hi = { .samples = 10, .dram_p95 = 95, .dram_mean = 90, .sm_mean = 40 };
	struct gpumem_prof_gpu lo = { .samples = 10, .dram_p95 = 45, .dram_mean = 45, .sm_mean = 20 };
	struct gpumem_prof_gpu sm = { .samples = 10, .dram_p95 = 45, .dram_mean = 45, .sm_mean = 60 };
	struct gpumem_prof_gpu few = { .samples = 2, .dram_p95 = 95, .dram_mean = 90, .sm_mean = 40 };

	is_int(gpumem_hbm_class(&hi), -1, "DRAM p95 at 95%% of peak: not slow (clears)");
	is_int(gpumem_hbm_class(&lo), 1, "HBM-bound, flat at 45%%: low (marks)");
	is_int(gpumem_hbm_class(&sm), 0, "the SMs the busier unit: says nothing");
	is_int(gpumem_hbm_class(&few), 0, "fewer than %d samples: nothing", GPUMEM_EVIDENCE_HBM_SAMPLES);
}

int main(void)
{
	record();
	hbm();
	return tap_done();
}

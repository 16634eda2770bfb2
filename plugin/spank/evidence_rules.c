/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The pure rules of reuse that rests on evidence (evidence_rules.h): the
 * pass record's text and how a profile row counts.  evidence.c applies
 * them in the job prolog and epilog; kept apart so that a unit test can
 * try every case without Slurm or a state directory.
 */
#include <stdio.h>
#include <string.h>
#include "evidence_rules.h"

int gpumem_pass_parse(const char *text, struct gpumem_pass *p)
{
	const char *ev;

	memset(p, 0, sizeof(*p));
	ev = text ? strchr(text, '\n') : NULL;
	if (!ev || sscanf(text, "%lld %7s %lld", &p->job, p->phase, &p->sec) != 3)
		return -1;
	ev++;
	snprintf(p->evidence, sizeof(p->evidence), "%.*s", (int)strcspn(ev, "\n"), ev);
	return 0;
}

int gpumem_hbm_class(const struct gpumem_prof_gpu *g)
{
	if (!(g->samples >= GPUMEM_EVIDENCE_HBM_SAMPLES) || !(g->dram_p95 >= 0))
		return 0;
	if (g->dram_p95 >= GPUMEM_EVIDENCE_HBM_OK_PCT)
		return -1;
	if (g->dram_p95 < GPUMEM_EVIDENCE_HBM_LOW_PCT &&
	    g->dram_mean >= GPUMEM_EVIDENCE_HBM_BOUND_PCT &&
	    g->dram_mean >= GPUMEM_EVIDENCE_HBM_FLAT * g->dram_p95 &&
	    !(g->sm_mean > g->dram_mean))
		return 1;
	return 0;
}

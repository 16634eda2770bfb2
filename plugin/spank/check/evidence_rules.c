/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The pure rules of reuse that rests on evidence (evidence_rules.h): the
 * pass record's text, what a pass answers, which check may clear marks,
 * and how a profile row counts.  evidence.c and gpustate.c apply them in
 * the job prolog and epilog; kept apart so that a unit test can try every
 * case without Slurm or a state directory.  Fail closed throughout: a
 * record that does not say what it was measured at answers no check.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "evidence_rules.h"
#include "core_base.h"

/* How far a fraction written with %.15g and read back may differ from itself. */
#define FRACTION_EPS 1e-9

/* The third line: "judged min_fraction=F references=HEX16"; 0, or -1. */
static int parse_judged(const char *line, struct gpumem_pass *p)
{
	static const char head[] = "judged min_fraction=", refs[] = " references=";
	const char *r;
	char *end;
	double f;

	if (strncmp(line, head, sizeof(head) - 1))
		return -1;
	f = strtod(line + sizeof(head) - 1, &end);
	if (end == line + sizeof(head) - 1 || !isfinite(f) || f < 0 || f > 1 ||
	    strncmp(end, refs, sizeof(refs) - 1))
		return -1;
	r = end + sizeof(refs) - 1;
	if (strspn(r, "0123456789abcdef") != GPUMEM_PASS_REFS_LEN - 1 ||
	    (r[GPUMEM_PASS_REFS_LEN - 1] && r[GPUMEM_PASS_REFS_LEN - 1] != '\n'))
		return -1;
	p->min_fraction = f;
	memcpy(p->refs, r, GPUMEM_PASS_REFS_LEN - 1);
	p->refs[GPUMEM_PASS_REFS_LEN - 1] = '\0';
	return 0;
}

int gpumem_pass_parse(const char *text, struct gpumem_pass *p)
{
	const char *ev, *judged;
	size_t n;

	memset(p, 0, sizeof(*p));
	ev = text ? strchr(text, '\n') : NULL;
	if (!ev || sscanf(text, "%lld %7s %lld", &p->job, p->phase, &p->sec) != 3)
		return -1;
	ev++;
	n = strcspn(ev, "\n");
	snprintf(p->evidence, sizeof(p->evidence), "%.*s", (int)n, ev);
	judged = ev[n] ? ev + n + 1 : ev + n;
	p->judged = parse_judged(judged, p) == 0;
	return 0;
}

int gpumem_pass_format(const struct gpumem_pass *p, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%lld %s %lld\n%s\njudged min_fraction=%.15g references=%s\n",
			 p->job, p->phase, p->sec, p->evidence, p->min_fraction, p->refs);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

void gpumem_pass_refs(const struct gpumem_site *s, char out[GPUMEM_PASS_REFS_LEN])
{
	uint64_t h = GPUMEM_FNV1A_BASIS;
	char fig[400];

	for (int i = 0; s && i < s->nrefs; i++) {
		const struct gpumem_ref *r = &s->refs[i];
		int n = snprintf(fig, sizeof(fig), "%s\n%.17g %.17g %.17g %.17g %.17g %.17g %.17g\n",
				 r->model ? r->model : "", r->read, r->write, r->copy, r->triad,
				 r->d2d, r->h2d, r->d2h);

		h = gpumem_fnv1a(h, fig, n > 0 && (size_t)n < sizeof(fig) ? (size_t)n : sizeof(fig) - 1);
	}
	snprintf(out, GPUMEM_PASS_REFS_LEN, "%016llx", (unsigned long long)h);
}

int gpumem_pass_answers(const struct gpumem_pass *p, double asked, const char *refs, char *why,
			size_t len)
{
	if (!p->judged) {
		snprintf(why, len, "job %lld's pass does not say what it was measured at "
			 "(kept by an older gpumem)", p->job);
		return 0;
	}
	if (asked > p->min_fraction + FRACTION_EPS) {
		snprintf(why, len, "job %lld's pass was measured at min_fraction %g, this check "
			 "asks %g", p->job, p->min_fraction, asked);
		return 0;
	}
	if (strcmp(p->refs, refs)) {
		snprintf(why, len, "job %lld's pass was judged against other references (the site "
			 "file's references changed since)", p->job);
		return 0;
	}
	return 1;
}

int gpumem_pass_strict(double asked, double site_default)
{
	return asked + FRACTION_EPS >= site_default;
}

int gpumem_check_strict(const struct gpumem_policy *eff, const struct gpumem_site *s)
{
	struct gpumem_policy builtin;

	gpumem_policy_init(&builtin);
	return gpumem_pass_strict(eff->check.min_fraction, s ? s->defaults.check.min_fraction :
				  builtin.check.min_fraction);
}

int gpumem_hbm_class(const struct gpumem_prof_gpu *g, const char *dram_source)
{
	if (!(g->samples >= GPUMEM_EVIDENCE_HBM_SAMPLES) || !(g->dram_p95 >= 0))
		return 0;
	if (g->dram_p95 >= GPUMEM_EVIDENCE_HBM_OK_PCT)
		return dram_source && !strcmp(dram_source, GPUMEM_EVIDENCE_DRAM_SOURCE) ? -1 : 0;
	if (g->dram_p95 < GPUMEM_EVIDENCE_HBM_LOW_PCT &&
	    g->dram_mean >= GPUMEM_EVIDENCE_HBM_BOUND_PCT &&
	    g->dram_mean >= GPUMEM_EVIDENCE_HBM_FLAT * g->dram_p95 &&
	    !(g->sm_mean > g->dram_mean))
		return 1;
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The advice (advise.h): one GPU's profile summary in, one piece of advice
 * out, under a table of rules, the first rule that matches winning.  The
 * built-in table is here, as data in the site file's own words (a site's
 * advice: section replaces it: advise_site.c); its thresholds are here and
 * nowhere else, and doc/admin/profile.md's table and etc/gpumem.yaml's commented
 * advice: section follow them (tests/cli/advise_rules.sh compares the
 * latter with `gpumem advise --rules`).  A figure the summary does not
 * have (null: NAN here) never makes a rule match, so a GPU sampled without
 * GPM or NVLink falls to a later rule, never to a wrong one.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "advise.h"
#include "core_policy.h"

/*
 * The built-in rules, in order.  short: fewer samples than 3 cannot tell a
 * pattern from a moment.  idle: SM and HBM below 10% and PCIe rx below
 * 1 GB/s: nothing ran.  faulting: managed memory migrated page by page:
 * steady host-link traffic (rx mean at least 1 GB/s) that never reaches
 * the link's speed (rx p95 below 30 GB/s), with traffic back to the host
 * of at least half of it (pages evicted as others fault in; a plain copy
 * in is one-way).  link-bound: rx p95 at least 30 GB/s, the host link ran
 * at full speed.  hbm-bound: HBM bandwidth p95 at least 80% or mean at
 * least 60% of the GPU's peak.  setaside (before hbm-bound, which its
 * jobs would meet too): a persisting-L2 set-aside in the job's effective
 * policy and HBM below 90% of peak at p95: a set-aside past a quarter of
 * L2 taxes every kernel that does not use it, and a job held below its
 * HBM's peak may be paying it.  underused: SM and HBM means below 30%,
 * room for another job.  compute-bound: none of the above.  The promise
 * (advise.h): faulting alone promises the job a gain (zero-copy ends the
 * page-by-page migration; doc/admin/profile.md has the measurements); every
 * other rule's policy promises no speed-up: the checks (hbm-bound,
 * setaside), a share (idle, underused), a prefetch that pays only for
 * managed memory read many times (link-bound), or no policy at all.
 */
#define GAIN GPUMEM_PROMISE_GAIN
#define NOT_SLOWER GPUMEM_PROMISE_NOT_SLOWER
static const struct builtin {
	const char *name, *when[4], *policy, *reason, *in_effect[2];
	int promise;            /* GPUMEM_PROMISE_* */
} builtin[] = {
	{ "short", { "samples < 3" }, NULL, "too short to tell ({samples} sample{samples:s})",
	  { NULL }, NOT_SLOWER },
	{ "idle", { "sm_util.mean < 10", "dram_bw_util.mean < 10", "pcie_rx.mean < 1" },
	  "mps-half.yaml", "the GPU was idle most of the time: share it (mps-half.yaml) or ask "
	  "for fewer GPUs (SM mean {sm_util.mean}%, DRAM mean {dram_bw_util.mean}%, PCIe rx "
	  "mean {pcie_rx.mean} GB/s)", { "eff.mps < 100" }, NOT_SLOWER },
	{ "faulting", { "pcie_rx.mean >= 1", "pcie_rx.p95 < 30",
			"pcie_tx.mean >= 0.5 * pcie_rx.mean" },
	  "zerocopy.yaml", "managed memory moved page by page over the host link: zerocopy.yaml "
	  "(data read once) or prefetch.yaml (read many times) (PCIe rx mean {pcie_rx.mean} "
	  "GB/s, p95 {pcie_rx.p95} GB/s, tx {pcie_tx.mean} GB/s)",
	  { "eff.um.pl has cpu and eff.um.ab has gpu or eff.um.pf has gpu" }, GAIN },
	{ "link-bound", { "pcie_rx.p95 >= 30" }, "prefetch.yaml",
	  "bound by the host link (rx p95 {pcie_rx.p95} GB/s): keep data on the GPU; for "
	  "managed memory read more than once, prefetch.yaml; zero-copy is already at the "
	  "link's speed, and host memory the program pinned itself needs a change in the "
	  "program (PCIe rx mean {pcie_rx.mean} GB/s)", { "eff.um.pf has gpu" }, NOT_SLOWER },
	{ "setaside", { "eff.l2 > 18", "dram_bw_util.p95 < 90" }, "stream.yaml",
	  "the job ran under a persisting-L2 set-aside (its policy's l2.persisting_limit) and "
	  "its HBM stayed below the GPU's peak (DRAM p95 {dram_bw_util.p95}%, mean "
	  "{dram_bw_util.mean}%): past 3/16 of L2 a set-aside slows every kernel that writes "
	  "(H200 triad: 0.94x at 31%, 0.73x at 50%, 0.40x at 62.5%): stream.yaml sets none",
	  { NULL }, NOT_SLOWER },
	{ "hbm-bound", { "dram_bw_util.p95 >= 80 or dram_bw_util.mean >= 60" }, "stream.yaml",
	  "memory-bound on HBM: stream.yaml keeps all of L2 for streaming and checks the GPU's "
	  "bandwidth before and after the job; no policy makes a healthy GPU's HBM faster "
	  "(DRAM mean {dram_bw_util.mean}%, p95 {dram_bw_util.p95}%)",
	  { "eff.l2 == 0" }, NOT_SLOWER },
	{ "underused", { "sm_util.mean < 30", "dram_bw_util.mean < 30" }, "mps-half.yaml",
	  "the GPU was mostly underused: an MPS share (mps-half.yaml) lets another job use the "
	  "rest (SM mean {sm_util.mean}%, DRAM mean {dram_bw_util.mean}%)",
	  { "eff.mps < 100" }, NOT_SLOWER },
	{ "compute-bound", { "always" }, NULL, "nothing to gain from a memory policy: "
	  "compute-bound (SM mean {sm_util.mean}%, DRAM mean {dram_bw_util.mean}%)",
	  { NULL }, NOT_SLOWER },
};

static struct gpumem_advice_table builtin_table;
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;

/* A built-in rule that does not compile is a bug (test_advise_rules, advise_rules.sh). */
static void compile_builtin(void)
{
	struct gpumem_advice_table *t = &builtin_table;
	char err[200];
	size_t at;

	snprintf(t->source, sizeof(t->source), "built-in");
	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++) {
		const struct builtin *b = &builtin[i];
		struct gpumem_advice_rule *r = &t->r[i];

		snprintf(r->name, sizeof(r->name), "%s", b->name);
		r->promise = b->promise;
		snprintf(r->policy, sizeof(r->policy), "%s", b->policy ? b->policy : "");
		snprintf(r->reason, sizeof(r->reason), "%s", b->reason);
		for (int k = 0; k < 4 && b->when[k]; k++)
			if (gpumem_advice_cond_add(&r->when, b->when[k], 0, err, sizeof(err), &at) < 0)
				fprintf(stderr, "gpumem: built-in advice rule %s: %s\n", b->name, err);
		for (int k = 0; k < 2 && b->in_effect[k]; k++)
			if (gpumem_advice_cond_add(&r->in_effect, b->in_effect[k], 1, err,
						   sizeof(err), &at) < 0)
				fprintf(stderr, "gpumem: built-in advice rule %s: %s\n", b->name, err);
	}
	t->n = (int)(sizeof(builtin) / sizeof(builtin[0]));
}

const char *const gpumem_advice_promises[] = { "not-slower", "gain", NULL };

/* Compiled once, on first use, whichever thread asks first. */
const struct gpumem_advice_table *gpumem_advice_builtin(void)
{
	pthread_once(&builtin_once, compile_builtin);
	return &builtin_table;
}

int gpumem_advice_promise(const struct gpumem_advice_table *t, const char *rule)
{
	for (int i = 0; t && rule && i < t->n; i++)
		if (!strcmp(t->r[i].name, rule))
			return t->r[i].promise;
	return -1;
}

int gpumem_advice_unasked(const struct gpumem_advice_table *t, int mode, const char *rule)
{
	if (mode == GPUMEM_BY_DEFAULT_GAIN)
		return gpumem_advice_promise(t, rule) == GPUMEM_PROMISE_GAIN;
	return mode == GPUMEM_BY_DEFAULT_ALL;
}

static void say(struct gpumem_advice *a, const char *rule, const char *policy)
{
	snprintf(a->rule_buf, sizeof(a->rule_buf), "%s", rule);
	a->rule = a->rule_buf;
	snprintf(a->policy_buf, sizeof(a->policy_buf), "%s", policy ? policy : "");
	a->policy = a->policy_buf[0] ? a->policy_buf : NULL;
}

void gpumem_advise_with(const struct gpumem_advice_table *t, const struct gpumem_prof_gpu *g,
			struct json_object *eff, struct gpumem_advice *out)
{
	const struct gpumem_advice_rule *r = NULL;
	char what[128];

	memset(out, 0, sizeof(*out));
	if (t == NULL)
		t = gpumem_advice_builtin();
	if (g->source[0] == '\0') {
		say(out, "unsampled", NULL);
		snprintf(out->reason, sizeof(out->reason), "not sampled%s%s",
			 g->note[0] ? ": " : "", g->note);
		return;
	}
	for (int i = 0; i < t->n && r == NULL; i++)
		if (gpumem_advice_cond_holds(&t->r[i].when, g, eff, NULL, 0))
			r = &t->r[i];
	if (r == NULL) {
		say(out, "unmatched", NULL);
		snprintf(out->reason, sizeof(out->reason), "no rule of the advice table (%.200s) "
			 "matched", t->source);
		return;
	}
	say(out, r->name, r->policy);
	gpumem_advice_reason(r->reason, g, out->reason, sizeof(out->reason));
	out->in_effect = out->policy && eff && r->in_effect.nitems &&
		gpumem_advice_cond_holds(&r->in_effect, g, eff, what, sizeof(what));
	if (out->in_effect) {
		size_t l = strlen(out->reason);

		snprintf(out->reason + l, sizeof(out->reason) - l,
			 "; this job already ran with that (%s)", what);
	}
}

void gpumem_advise(const struct gpumem_prof_gpu *g, struct json_object *eff,
		   struct gpumem_advice *out)
{
	gpumem_advise_with(NULL, g, eff, out);
}

void gpumem_advice_copy(struct gpumem_advice *dst, const struct gpumem_advice *src)
{
	*dst = *src;
	dst->rule = src->rule ? dst->rule_buf : NULL;
	dst->policy = src->policy ? dst->policy_buf : NULL;
}

struct json_object *gpumem_advice_json(const struct gpumem_advice *a, long index)
{
	struct json_object *o = json_object_new_object();

	if (o == NULL)
		return NULL;
	gpumem_json_add(o, "gpu", gpumem_json_int(index));
	gpumem_json_add(o, "rule", gpumem_json_string(a->rule));
	gpumem_json_add(o, "policy", gpumem_json_string(a->policy));
	gpumem_json_add(o, "in_effect", gpumem_json_bool(a->in_effect));
	gpumem_json_add(o, "reason", gpumem_json_string(a->reason));
	return o;
}

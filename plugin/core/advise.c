/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The advice rules (advise.h): one GPU's profile summary in, one piece of
 * advice out, the first rule that matches winning.  The thresholds are
 * here and nowhere else; doc/ADMIN.md's table follows them.  A figure the
 * summary does not have (null: NAN here) never makes a rule match, so a
 * GPU sampled without GPM or NVLink falls to a later rule, never to a
 * wrong one.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "advise.h"

/* unsampled: the GPU has no source (MIG mode: no per-instance sampling). */
/* short: fewer samples than this cannot tell a pattern from a moment. */
#define ADVISE_SHORT_SAMPLES 3
/* idle: SM and HBM below these (%) and PCIe rx below this (GB/s): nothing ran. */
#define ADVISE_IDLE_SM_PCT 10
#define ADVISE_IDLE_DRAM_PCT 10
#define ADVISE_IDLE_RX_GBPS 1.0
/*
 * faulting: managed memory migrated page by page.  Steady host-link
 * traffic (rx mean at least ADVISE_FAULT_RX_GBPS) that never reaches the
 * link's speed (rx p95 below ADVISE_FAULT_RX_P95_GBPS), with traffic back
 * to the host of at least ADVISE_FAULT_TX_RATIO of it (pages evicted as
 * others fault in; a plain copy in is one-way).
 */
#define ADVISE_FAULT_RX_GBPS 1.0
#define ADVISE_FAULT_RX_P95_GBPS 30.0
#define ADVISE_FAULT_TX_RATIO 0.5
/* link-bound: rx p95 at least this (GB/s): the host link ran at full speed. */
#define ADVISE_LINK_RX_P95_GBPS 30.0
/* hbm-bound: HBM bandwidth p95 or mean at least these (% of the GPU's peak). */
#define ADVISE_HBM_DRAM_P95_PCT 80
#define ADVISE_HBM_DRAM_MEAN_PCT 60
/* underused: SM and HBM means below these (%): room for another job. */
#define ADVISE_UNDER_SM_PCT 30
#define ADVISE_UNDER_DRAM_PCT 30
/* compute-bound: none of the above. */

/* A figure for a sentence: "7.5", "15" (one decimal, ".0" dropped), "-" when absent. */
static const char *fig(char *buf, size_t len, double v)
{
	if (!isfinite(v)) {
		snprintf(buf, len, "-");
		return buf;
	}
	snprintf(buf, len, "%.1f", v);
	if (strlen(buf) > 2 && strcmp(buf + strlen(buf) - 2, ".0") == 0)
		buf[strlen(buf) - 2] = '\0';
	return buf;
}

/* Is WORD one of UM's space-separated words ("pl=cpu ab=gpu rm")? */
static int um_has(const char *um, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = um; p && *p; p += strcspn(p, " "), p += *p == ' ') {
		if (strncmp(p, word, n) == 0 && (p[n] == ' ' || p[n] == '\0' || p[n] == ','))
			return 1;
	}
	return 0;
}

/* Does EFF already do what POLICY does?  The words of the record's "eff" (acct.h). */
static int in_effect(const char *policy, struct json_object *eff, char *what, size_t len)
{
	const char *um = gpumem_json_str(eff, "um"), *l2 = gpumem_json_str(eff, "l2");
	double mps;

	what[0] = '\0';
	if (policy == NULL || eff == NULL)
		return 0;
	if (!strcmp(policy, "zerocopy.yaml") && um &&
	    ((um_has(um, "pl=cpu") && (um_has(um, "ab=gpu") || strstr(um, "ab=cpu,gpu"))) ||
	     um_has(um, "pf=gpu"))) {
		snprintf(what, len, "um %.80s", um);
		return 1;
	}
	if (!strcmp(policy, "prefetch.yaml") && um && um_has(um, "pf=gpu")) {
		snprintf(what, len, "um %.80s", um);
		return 1;
	}
	if (!strcmp(policy, "stream.yaml") && l2 && !strcmp(l2, "0")) {
		snprintf(what, len, "l2 persisting limit 0");
		return 1;
	}
	if (!strcmp(policy, "mps-half.yaml") && gpumem_json_num(eff, "mps", &mps) == 0 &&
	    mps < 100) {
		snprintf(what, len, "mps %.0f%%", mps);
		return 1;
	}
	return 0;
}

static void say(struct gpumem_advice *a, const char *rule, const char *policy,
		const char *text)
{
	a->rule = rule;
	a->policy = policy;
	snprintf(a->reason, sizeof(a->reason), "%s", text);
}

void gpumem_advise(const struct gpumem_prof_gpu *g, struct json_object *eff,
		   struct gpumem_advice *out)
{
	char t[400], f[6][24], what[128];
	double n = isfinite(g->samples) ? g->samples : 0;

	memset(out, 0, sizeof(*out));
	if (g->source[0] == '\0') {
		snprintf(t, sizeof(t), "not sampled%s%s", g->note[0] ? ": " : "", g->note);
		say(out, "unsampled", NULL, t);
	} else if (n < ADVISE_SHORT_SAMPLES) {
		snprintf(t, sizeof(t), "too short to tell (%.0f sample%s)", n, n == 1 ? "" : "s");
		say(out, "short", NULL, t);
	} else if (g->sm_mean < ADVISE_IDLE_SM_PCT && g->dram_mean < ADVISE_IDLE_DRAM_PCT &&
		   g->rx_mean < ADVISE_IDLE_RX_GBPS) {
		snprintf(t, sizeof(t), "the GPU was idle most of the time: share it (mps-half.yaml) "
			 "or ask for fewer GPUs (SM mean %s%%, DRAM mean %s%%, PCIe rx mean %s GB/s)",
			 fig(f[0], 24, g->sm_mean), fig(f[1], 24, g->dram_mean),
			 fig(f[2], 24, g->rx_mean));
		say(out, "idle", "mps-half.yaml", t);
	} else if (g->rx_mean >= ADVISE_FAULT_RX_GBPS && g->rx_p95 < ADVISE_FAULT_RX_P95_GBPS &&
		   g->tx_mean >= ADVISE_FAULT_TX_RATIO * g->rx_mean) {
		snprintf(t, sizeof(t), "managed memory moved page by page over the host link: "
			 "zerocopy.yaml (data read once) or prefetch.yaml (read many times) "
			 "(PCIe rx mean %s GB/s, p95 %s GB/s, tx %s GB/s)",
			 fig(f[0], 24, g->rx_mean), fig(f[1], 24, g->rx_p95),
			 fig(f[2], 24, g->tx_mean));
		say(out, "faulting", "zerocopy.yaml", t);
	} else if (g->rx_p95 >= ADVISE_LINK_RX_P95_GBPS) {
		snprintf(t, sizeof(t), "bound by the host link (rx p95 %s GB/s): keep data on the "
			 "GPU; for managed memory read more than once, prefetch.yaml; zero-copy "
			 "is already at the link's speed, and host memory the program pinned "
			 "itself needs a change in the program (PCIe rx mean %s GB/s)", fig(f[0], 24, g->rx_p95),
			 fig(f[1], 24, g->rx_mean));
		say(out, "link-bound", "prefetch.yaml", t);
	} else if (g->dram_p95 >= ADVISE_HBM_DRAM_P95_PCT ||
		   g->dram_mean >= ADVISE_HBM_DRAM_MEAN_PCT) {
		snprintf(t, sizeof(t), "memory-bound on HBM: stream.yaml keeps all of L2 for "
			 "streaming and checks the GPU's bandwidth before and after the job; no "
			 "policy makes a healthy GPU's HBM faster (DRAM mean %s%%, p95 %s%%)",
			 fig(f[0], 24, g->dram_mean), fig(f[1], 24, g->dram_p95));
		say(out, "hbm-bound", "stream.yaml", t);
	} else if (g->sm_mean < ADVISE_UNDER_SM_PCT && g->dram_mean < ADVISE_UNDER_DRAM_PCT) {
		snprintf(t, sizeof(t), "the GPU was mostly underused: an MPS share (mps-half.yaml) "
			 "lets another job use the rest (SM mean %s%%, DRAM mean %s%%)",
			 fig(f[0], 24, g->sm_mean), fig(f[1], 24, g->dram_mean));
		say(out, "underused", "mps-half.yaml", t);
	} else {
		snprintf(t, sizeof(t), "nothing to gain from a memory policy: compute-bound "
			 "(SM mean %s%%, DRAM mean %s%%)", fig(f[0], 24, g->sm_mean),
			 fig(f[1], 24, g->dram_mean));
		say(out, "compute-bound", NULL, t);
	}
	out->in_effect = in_effect(out->policy, eff, what, sizeof(what));
	if (out->in_effect) {
		size_t l = strlen(out->reason);

		snprintf(out->reason + l, sizeof(out->reason) - l,
			 "; this job already ran with that (%s)", what);
	}
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

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The advice rules (plugin/core/advice/advise.c): every rule at its threshold and
 * just under it, the order (the first rule that matches wins), a figure
 * the summary lacks never making a rule match, the reasons with their
 * figures, and the job's effective policy already doing what is advised.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core_advice.h"
#include "tap.h"

static char *dump(struct json_object *o)
{
	char *s = gpumem_json_dump(o, GPUMEM_JSON_COMPACT);

	if (s)
		s[strcspn(s, "\n")] = '\0';
	return s;
}

static struct gpumem_prof_gpu base(void)
{
	struct gpumem_prof_gpu g = {
		.index = 0, .samples = 12, .source = "gpm", .dram_mean = 40, .dram_p95 = 70,
		.sm_mean = 80, .sm_p95 = 90, .occ_mean = 50, .rx_mean = 0.2, .rx_p95 = 0.5,
		.tx_mean = 0.1, .nvrx_mean = NAN, .nvtx_mean = NAN, .mem_max = 10,
	};
	return g;
}

static const char *rule(const struct gpumem_prof_gpu *g)
{
	static struct gpumem_advice a;

	gpumem_advise(g, NULL, &a);
	return a.rule;
}

#define RULE(field, v, want) do { struct gpumem_prof_gpu gx = g; gx.field = v; \
	is_str(rule(&gx), want, "%s = %g: %s", #field, (double)(v), want); } while (0)

static void advice(void)
{
	struct gpumem_prof_gpu g = base(), idle, fault;
	struct gpumem_advice a;
	struct json_object *eff;

	is_str(rule(&g), "compute-bound", "busy SMs, moderate HBM: compute-bound");
	gpumem_advise(&g, NULL, &a);
	is_str(a.reason, "nothing to gain from a memory policy: compute-bound (SM mean 80%, "
	       "DRAM mean 40%)", "  with its figures");
	ok(a.policy == NULL && !a.in_effect, "  and no policy");
	g.source[0] = '\0';
	strcpy(g.note, "MIG: per-instance sampling not supported");
	gpumem_advise(&g, NULL, &a);
	is_str(a.rule, "unsampled", "no source (MIG): unsampled");
	is_str(a.reason, "not sampled: MIG: per-instance sampling not supported", "  with its note");
	g = base();
	RULE(samples, 2, "short");
	RULE(samples, 3, "compute-bound");
	RULE(samples, NAN, "short");
	g.samples = 2;
	gpumem_advise(&g, NULL, &a);
	is_str(a.reason, "too short to tell (2 samples)", "  short: the samples");

	/* idle: SM < 10, DRAM < 10, rx < 1 */
	g = base();
	g.sm_mean = 9, g.dram_mean = 9, g.dram_p95 = 20, g.rx_mean = 0.9;
	idle = g;
	is_str(rule(&g), "idle", "SM 9, DRAM 9, rx 0.9: idle");
	RULE(sm_mean, 10, "underused");
	RULE(dram_mean, 10, "underused");
	RULE(rx_mean, 1.0, "underused");
	RULE(rx_mean, NAN, "underused");
	gpumem_advise(&g, NULL, &a);
	is_str(a.policy, "mps-half.yaml", "  idle: mps-half.yaml");
	like(a.reason, "idle most of the time: share it (mps-half.yaml) or ask for fewer GPUs "
	     "(SM mean 9%, DRAM mean 9%, PCIe rx mean 0.9 GB/s)", "  with its figures");

	/* faulting: rx >= 1, rx p95 < 30, tx >= 0.5 rx */
	g = base();
	g.rx_mean = 1.0, g.rx_p95 = 29.9, g.tx_mean = 0.5;
	fault = g;
	is_str(rule(&g), "faulting", "rx 1.0, p95 29.9, tx 0.5: faulting");
	RULE(rx_mean, 0.99, "compute-bound");
	RULE(rx_p95, 30, "link-bound");
	RULE(tx_mean, 0.49, "compute-bound");
	RULE(tx_mean, NAN, "compute-bound");
	g.rx_mean = 7.5, g.rx_p95 = 12, g.tx_mean = 15;
	gpumem_advise(&g, NULL, &a);
	is_str(a.policy, "zerocopy.yaml", "  faulting: zerocopy.yaml");
	is_str(a.reason, "managed memory moved page by page over the host link: zerocopy.yaml "
	       "(data read once) or prefetch.yaml (read many times) (PCIe rx mean 7.5 GB/s, "
	       "p95 12 GB/s, tx 15 GB/s)", "  with its figures");

	/* link-bound: rx p95 >= 30 */
	g = base();
	RULE(rx_p95, 30, "link-bound");
	RULE(rx_p95, 29.9, "compute-bound");
	g.rx_p95 = 52.3, g.rx_mean = 20;
	gpumem_advise(&g, NULL, &a);
	is_str(a.policy, "prefetch.yaml", "  link-bound: prefetch.yaml");
	like(a.reason, "bound by the host link (rx p95 52.3 GB/s): keep data on the GPU", "  with rx p95");

	/* hbm-bound: DRAM p95 >= 80 or mean >= 60 */
	g = base();
	RULE(dram_p95, 80, "hbm-bound");
	RULE(dram_p95, 79, "compute-bound");
	RULE(dram_mean, 60, "hbm-bound");
	RULE(dram_mean, 59, "compute-bound");
	g.dram_mean = 62, g.dram_p95 = 91;
	gpumem_advise(&g, NULL, &a);
	is_str(a.policy, "stream.yaml", "  hbm-bound: stream.yaml");
	like(a.reason, "memory-bound on HBM: stream.yaml keeps all of L2 for streaming and checks the "
	     "GPU's bandwidth before and after the job; no policy makes a healthy GPU's HBM faster "
	     "(DRAM mean 62%, p95 91%)", "  with its figures");

	/* underused: SM < 30 and DRAM < 30 */
	g = base();
	g.sm_mean = 29, g.dram_mean = 29;
	is_str(rule(&g), "underused", "SM 29, DRAM 29: underused");
	RULE(sm_mean, 30, "compute-bound");
	RULE(dram_mean, 30, "compute-bound");
	gpumem_advise(&g, NULL, &a);
	is_str(a.policy, "mps-half.yaml", "  underused: mps-half.yaml");

	/* order: the first rule that matches wins */
	g = idle;
	g.samples = 1;
	is_str(rule(&g), "short", "order: short before idle");
	g = idle;
	is_str(rule(&g), "idle", "order: idle before underused");
	g = fault;
	g.dram_p95 = 95;
	is_str(rule(&g), "faulting", "order: faulting before hbm-bound");
	g = base();
	g.rx_p95 = 40, g.dram_mean = 90;
	is_str(rule(&g), "link-bound", "order: link-bound before hbm-bound");
	g = base();
	g.dram_p95 = 85, g.sm_mean = 5, g.dram_mean = 20;
	is_str(rule(&g), "hbm-bound", "order: hbm-bound before underused");

	/* the effective policy: already in effect */
	eff = json_tokener_parse("{\"l2\":null,\"mps\":null,\"daemon\":null,\"um\":\"pl=cpu ab=gpu\"}");
	gpumem_advise(&fault, eff, &a);
	ok(a.in_effect, "faulting under zerocopy's um: in effect");
	like(a.reason, "; this job already ran with that (um pl=cpu ab=gpu)", "  said so");
	json_object_put(eff);
	eff = json_tokener_parse("{\"l2\":\"0\",\"mps\":50,\"daemon\":\"job\",\"um\":\"none\"}");
	gpumem_advise(&fault, eff, &a);
	ok(!a.in_effect, "faulting without UM advice: not in effect");
	g = base();
	g.dram_p95 = 90;
	gpumem_advise(&g, eff, &a);
	ok(a.in_effect && strstr(a.reason, "(l2 persisting limit 0)"), "hbm-bound under l2 0: in effect");
	gpumem_advise(&idle, eff, &a);
	ok(a.in_effect && strstr(a.reason, "(mps 50%)"), "idle under an MPS share: in effect");
	json_object_put(eff);
	{
		struct json_object *j = gpumem_advice_json(&a, 5);
		char *s = dump(j);

		like(s, "{\"gpu\":5,\"rule\":\"idle\",\"policy\":\"mps-half.yaml\",\"in_effect\":true,"
		     "\"reason\":\"the GPU was idle", "advice as JSON");
		free(s);
		json_object_put(j);
	}
}

int main(void)
{
	advice();
	return tap_done();
}

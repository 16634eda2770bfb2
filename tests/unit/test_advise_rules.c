/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The advice rules as data (plugin/core/advice/advise_rules.c,
 * advise_site.c): the built-in table, each of its rules hit at its
 * threshold and missed just past it, a NAN figure never matching whatever
 * the operator, the condition language's errors, reason templates, the
 * effective policy's words, and the site file's advice: section: a good
 * table in force, each bad one refused at its line:col, the cap, the
 * policies checked against policy_dir.  test_advise.c keeps the sentences.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core_advice.h"
#include "core_policy.h"
#include "tap.h"

static struct gpumem_prof_gpu base(void)
{
	struct gpumem_prof_gpu g = {
		.index = 0, .samples = 12, .source = "gpm", .dram_mean = 40, .dram_p95 = 70,
		.sm_mean = 80, .sm_p95 = 90, .occ_mean = 50, .rx_mean = 0.2, .rx_p95 = 0.5,
		.tx_mean = 0.1, .nvrx_mean = NAN, .nvtx_mean = NAN, .mem_max = 10,
	};
	return g;
}

static const char *rule_of(const struct gpumem_advice_table *t, const struct gpumem_prof_gpu *g)
{
	static struct gpumem_advice a;

	gpumem_advise_with(t, g, NULL, &a);
	return a.rule;
}

/* Each built-in rule: a GPU that meets it exactly, then one figure just past. */
static void builtin_thresholds(void)
{
	const struct gpumem_advice_table *t = gpumem_advice_builtin();
	static const struct {
		const char *rule, *past;        /* the rule at the threshold, the one past it */
		size_t off;
		double at, beyond;
	} cases[] = {
#define O(f) offsetof(struct gpumem_prof_gpu, f)
		{ "short", "compute-bound", O(samples), 2, 3 },
		{ "idle", "underused", O(sm_mean), 9.9, 10 },
		{ "idle", "underused", O(dram_mean), 9.9, 10 },
		{ "idle", "underused", O(rx_mean), 0.99, 1 },
		{ "faulting", "compute-bound", O(rx_mean), 1, 0.99 },
		{ "faulting", "link-bound", O(rx_p95), 29.9, 30 },
		{ "faulting", "compute-bound", O(tx_mean), 0.5, 0.49 },
		{ "link-bound", "compute-bound", O(rx_p95), 30, 29.9 },
		{ "hbm-bound", "compute-bound", O(dram_p95), 80, 79.9 },
		{ "hbm-bound", "compute-bound", O(dram_mean), 60, 59.9 },
		{ "underused", "compute-bound", O(sm_mean), 29.9, 30 },
		{ "underused", "compute-bound", O(dram_mean), 29.9, 30 },
	};

	is_int(t->n, 8, "the built-in table: 8 rules");
	is_str(t->source, "built-in", "  its source");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gpumem_prof_gpu g = base();
		double *f = (double *)((char *)&g + cases[i].off);

		/* A GPU that meets the rule with room, then the figure under test at its edge. */
		if (!strcmp(cases[i].rule, "idle"))
			g.sm_mean = 5, g.dram_mean = 5, g.rx_mean = 0.5;
		if (!strcmp(cases[i].rule, "faulting"))
			g.rx_mean = 5, g.rx_p95 = 10, g.tx_mean = 5;
		if (!strcmp(cases[i].rule, "underused"))
			g.sm_mean = 20, g.dram_mean = 20;
		if (cases[i].off == O(dram_mean) && !strcmp(cases[i].rule, "hbm-bound"))
			g.dram_p95 = 70;
		if (cases[i].off == O(tx_mean))
			g.rx_mean = 1;
		*f = cases[i].at;
		is_str(rule_of(t, &g), cases[i].rule, "%s at %g", cases[i].rule, cases[i].at);
		*f = cases[i].beyond;
		is_str(rule_of(t, &g), cases[i].past, "  %s past it (%g)", cases[i].past,
		       cases[i].beyond);
		*f = NAN;
		ok(strcmp(rule_of(t, &g), cases[i].rule) != 0 ||
		   !strcmp(cases[i].rule, "short") || !strcmp(cases[i].rule, "faulting"),
		   "  a NAN figure: not %s (%s)", cases[i].rule, rule_of(t, &g));
#undef O
	}
}

/* A table of one rule compiled from WHEN; ERR: the compile error, "" when none. */
static int one(struct gpumem_advice_table *t, const char *when, int eff, char *err, size_t len,
	       size_t *at)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->r[0].name, sizeof(t->r[0].name), "r");
	snprintf(t->r[0].reason, sizeof(t->r[0].reason), "why");
	t->n = 1;
	err[0] = '\0';
	return gpumem_advice_cond_add(eff ? &t->r[0].in_effect : &t->r[0].when, when, eff, err,
				      len, at);
}

static void language(void)
{
	static struct gpumem_advice_table t;
	struct gpumem_prof_gpu g = base();
	char err[400];
	size_t at;
	static const struct { const char *text; int eff; const char *why; size_t at; } bad[] = {
		{ "dram_bw_utl.mean < 10", 0, "unknown metric 'dram_bw_utl' (did you mean 'dram_bw_util'?)", 0 },
		{ "sm_util.avg < 10", 0, "unknown statistic 'avg' (mean, median, p95, max)", 0 },
		{ "sm_util.max < 10", 0, "keeps no sm_util.max (of sm_util it keeps sm_util.mean, sm_util.p95)", 0 },
		{ "sm_util.mean =< 10", 0, "bad operator '=<' after sm_util.mean", 13 },
		{ "sm_util.mean < 101", 0, "value 101 out of range for sm_util.mean (0 to 100 %)", 15 },
		{ "pcie_rx.mean < -1", 0, "value -1 out of range", 15 },
		{ "pcie_rx.mean < ten", 0, "expected a number, got 'ten'", 15 },
		{ "pcie_tx.mean >= 0.5 * sm_util.mean", 0, "the same unit on both sides", 22 },
		{ "sm_util.mean < 10 but dram_bw_util.mean < 5", 0, "expected 'and', 'or' or the end", 18 },
		{ "sm_util.mean < 10 and", 0, "a comparison is missing here", 21 },
		{ "sm_util.mean < 100", 1, "in_effect reads the job's effective policy", 0 },
		{ "eff.um.ab < 3", 1, "compared with 'has WORD'", 10 },
		{ "eff.mps has gpu", 1, "'has' compares", 8 },
		{ "eff.um.ab has GPU!", 1, "expected a word such as gpu", 14 },
		{ "eff.cpu == 1", 1, "unknown figure 'eff.cpu' of the effective policy", 0 },
		{ "always and sm_util.mean < 1", 0, "'always' stands alone", 7 },
		{ "samples > 1 and samples > 2 and samples > 3 and samples > 4 and samples > 5 and "
		  "samples > 6 and samples > 7 and samples > 8 and samples > 9", 0,
		  "more than 8 comparisons", 0 },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ok(one(&t, bad[i].text, bad[i].eff, err, sizeof(err), &at) < 0, "refused: %s",
		   bad[i].text);
		like(err, bad[i].why, "  why: %s", bad[i].why);
		if (bad[i].at)
			is_int((int)at, (int)bad[i].at, "  at byte %zu", bad[i].at);
	}

	/* "and" before "or"; each list item must hold. */
	ok(one(&t, "sm_util.mean < 10 or sm_util.mean > 50 and dram_bw_util.mean > 30", 0, err,
	       sizeof(err), &at) == 0, "and/or compiles");
	ok(gpumem_advice_cond_holds(&t.r[0].when, &g, NULL, NULL, 0), "  SM 80, DRAM 40: holds");
	g.dram_mean = 20;
	ok(!gpumem_advice_cond_holds(&t.r[0].when, &g, NULL, NULL, 0), "  DRAM 20: not");
	g.sm_mean = 5;
	ok(gpumem_advice_cond_holds(&t.r[0].when, &g, NULL, NULL, 0), "  SM 5: holds (or)");
	ok(gpumem_advice_cond_add(&t.r[0].when, "pcie_rx.mean > 1", 0, err, sizeof(err), &at) == 0,
	   "a second item");
	ok(!gpumem_advice_cond_holds(&t.r[0].when, &g, NULL, NULL, 0), "  both items must hold");

	/* A NAN figure never holds: not even with != */
	g = base();
	g.nvrx_mean = NAN;
	one(&t, "nvlink_rx.mean != 5", 0, err, sizeof(err), &at);
	ok(!gpumem_advice_cond_holds(&t.r[0].when, &g, NULL, NULL, 0), "NAN != 5: does not hold");
	one(&t, "pcie_tx.mean >= 0.5 * nvlink_rx.mean", 0, err, sizeof(err), &at);
	ok(!gpumem_advice_cond_holds(&t.r[0].when, &g, NULL, NULL, 0), "x >= 0.5 * NAN: does not hold");
	g.nvrx_mean = 4, g.tx_mean = 2;
	ok(gpumem_advice_cond_holds(&t.r[0].when, &g, NULL, NULL, 0), "2 >= 0.5 * 4: holds");
	one(&t, "mem_used.max >= 70", 0, err, sizeof(err), &at);
	g.mem_max = 70;
	ok(gpumem_advice_cond_holds(&t.r[0].when, &g, NULL, NULL, 0), "mem_used.max 70 >= 70");
	g.samples = NAN;
	one(&t, "samples == 0", 0, err, sizeof(err), &at);
	ok(gpumem_advice_cond_holds(&t.r[0].when, &g, NULL, NULL, 0), "samples absent: 0 (as before)");
}

static void effective(void)
{
	static struct gpumem_advice_table t;
	struct gpumem_prof_gpu g = base();
	struct json_object *eff;
	char err[300], what[128];
	size_t at;

	eff = json_tokener_parse("{\"l2\":\"25%\",\"mps\":null,\"daemon\":null,"
				 "\"um\":\"pl=gpu ab=cpu,gpu pf=gpu\"}");
	ok(one(&t, "eff.um.ab has gpu", 1, err, sizeof(err), &at) == 0, "eff.um.ab has gpu compiles");
	ok(gpumem_advice_cond_holds(&t.r[0].in_effect, &g, eff, what, sizeof(what)), "  ab=cpu,gpu has gpu");
	is_str(what, "um pl=gpu ab=cpu,gpu pf=gpu", "  the words said");
	one(&t, "eff.um.pl has cpu", 1, err, sizeof(err), &at);
	ok(!gpumem_advice_cond_holds(&t.r[0].in_effect, &g, eff, what, sizeof(what)), "  pl=gpu has no cpu");
	one(&t, "eff.l2 == 25", 1, err, sizeof(err), &at);
	ok(gpumem_advice_cond_holds(&t.r[0].in_effect, &g, eff, what, sizeof(what)),
	   "  l2 \"25%%\" is 25, percent of L2");
	is_str(what, "l2 persisting limit 25%", "  the words said");
	one(&t, "eff.mps < 100", 1, err, sizeof(err), &at);
	ok(!gpumem_advice_cond_holds(&t.r[0].in_effect, &g, eff, what, sizeof(what)), "  mps null: no");
	json_object_put(eff);
}

/* The setaside rule: a set-aside in the effective policy and HBM below peak; when reads eff. */
static void setaside_rule(void)
{
	static struct gpumem_advice_table t;
	const struct gpumem_advice_table *b = gpumem_advice_builtin();
	struct gpumem_prof_gpu g = base();
	struct gpumem_advice a;
	static const struct { const char *l2, *rule; } cases[] = {
		{ "\"50%\"", "setaside" }, { "\"40MiB\"", "setaside" }, { "\"19%\"", "setaside" },
		{ "\"18%\"", "compute-bound" }, { "\"1%\"", "compute-bound" },
		{ "\"0\"", "compute-bound" }, { "\"0%\"", "compute-bound" },
		{ "null", "compute-bound" }, { "\"lots\"", "compute-bound" },
	};
	struct json_object *eff;
	char err[300], json[160];
	size_t at;

	ok(one(&t, "eff.l2 > 18", 0, err, sizeof(err), &at) == 0, "when may name eff.l2");
	ok(one(&t, "eff.mps < 100 and sm_util.mean < 10", 0, err, sizeof(err), &at) == 0,
	   "when may join the effective policy and the profile");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(json, sizeof(json), "{\"l2\":%s,\"mps\":null,\"daemon\":null,\"um\":\"none\"}",
			 cases[i].l2);
		eff = json_tokener_parse(json);
		g = base();
		g.dram_p95 = 75;
		gpumem_advise_with(b, &g, eff, &a);
		is_str(a.rule, cases[i].rule, "l2 %s, DRAM p95 75%%: %s", cases[i].l2, cases[i].rule);
		json_object_put(eff);
	}
	eff = json_tokener_parse("{\"l2\":\"50%\",\"mps\":null,\"daemon\":null,\"um\":\"none\"}");
	g = base();
	g.dram_p95 = 89.9;
	g.dram_mean = 61;
	gpumem_advise_with(b, &g, eff, &a);
	is_str(a.rule, "setaside", "50%%, DRAM p95 89.9%%: setaside, before hbm-bound");
	is_str(a.policy, "stream.yaml", "  advises stream.yaml (no set-aside)");
	like(a.reason, "DRAM p95 89.9%, mean 61%", "  with the job's figures");
	like(a.reason, "0.73x at 50%", "  and the set-aside's measured cost");
	ok(!a.in_effect, "  not in effect: the job had a set-aside");
	g.dram_p95 = 90;
	gpumem_advise_with(b, &g, eff, &a);
	is_str(a.rule, "hbm-bound", "DRAM p95 90%%: the peak reached: hbm-bound");
	g = base();
	g.sm_mean = 5, g.dram_mean = 5;
	gpumem_advise_with(b, &g, eff, &a);
	is_str(a.rule, "idle", "an idle GPU under a set-aside: idle first");
	g = base();
	gpumem_advise_with(b, &g, NULL, &a);
	is_str(a.rule, "compute-bound", "no effective policy (no record): never setaside");
	json_object_put(eff);
}

static void reasons(void)
{
	struct gpumem_prof_gpu g = base();
	char out[400], err[300];
	size_t at;

	g.samples = 1;
	gpumem_advice_reason("{samples} sample{samples:s}, rx {pcie_rx.mean}, nv {nvlink_rx.mean}",
			     &g, out, sizeof(out));
	is_str(out, "1 sample, rx 0.2, nv -", "a reason: figures, plural, '-' when absent");
	g.samples = 4;
	gpumem_advice_reason("{samples} sample{samples:s}", &g, out, sizeof(out));
	is_str(out, "4 samples", "  plural");
	ok(gpumem_advice_reason_check("SM {sm_util.mean}%", err, sizeof(err), &at) == 0, "a good template");
	ok(gpumem_advice_reason_check("SM {sm_util.avg}%", err, sizeof(err), &at) < 0 && at == 3,
	   "{sm_util.avg} refused at byte 3");
	like(err, "'{sm_util.avg}' is no {FIGURE}", "  why");
	ok(gpumem_advice_reason_check("a } b", err, sizeof(err), &at) < 0 && at == 2, "a stray '}'");
	ok(gpumem_advice_reason_check("{eff.mps}", err, sizeof(err), &at) < 0, "no eff figure in a reason");
	ok(gpumem_advice_reason_check("a\tb", err, sizeof(err), &at) < 0, "no control character");
}

/* Parse a site file TEXT; the diagnostics joined (errors), or "" when it parsed. */
static char *site(const char *text, struct gpumem_site *s)
{
	struct gpumem_diags d = { 0 };
	char *msg;

	gpumem_site_init(s);
	if (gpumem_site_parse(text, strlen(text), "site.yaml", s, &d) == 0) {
		gpumem_diags_free(&d);
		return strdup("");
	}
	msg = gpumem_diags_join(&d, 1);
	gpumem_diags_free(&d);
	return msg;
}

#define HEAD "version: 1\nadvice:\n"
static void site_tables(void)
{
	struct gpumem_site s;
	struct gpumem_prof_gpu g = base();
	struct gpumem_advice a, b;
	struct gpumem_diags d = { 0 };
	char *msg, dir[] = "/tmp/gpumem-advice-XXXXXX", path[300], buf[8192];
	static const struct { const char *rules, *why; } bad[] = {
		{ "  - name: x\n    when: sm_util.max > 5\n    policy: none\n    reason: r\n",
		  "site.yaml:4:11: error: advice: when: the profile summary keeps no sm_util.max" },
		{ "  - name: x\n    when: \"sm_util.mean >> 5\"\n    policy: none\n    reason: r\n",
		  "site.yaml:4:25: error: advice: when: bad operator '>>'" },
		{ "  - name: x\n    when:\n      - sm_util.mean > 5\n      - dram.mean > 1\n"
		  "    policy: none\n    reason: r\n", "site.yaml:6:9: error: advice: when: unknown metric 'dram'" },
		{ "  - name: x\n    when: sm_util.mean > 500\n    policy: none\n    reason: r\n",
		  "site.yaml:4:26: error: advice: when: value 500 out of range" },
		{ "  - name: x\n    when: always\n    policy: ../etc/passwd\n    reason: r\n",
		  "site.yaml:5:13: error: advice: policy '../etc/passwd' is no policy name" },
		{ "  - name: x\n    when: always\n    policy: none\n    reason: \"SM {sm}\"\n",
		  "site.yaml:6:17: error: advice: reason: '{sm}' is no {FIGURE}" },
		{ "  - name: a\n    when: samples < 3\n    policy: none\n    reason: r\n"
		  "  - name: a\n    when: always\n    policy: none\n    reason: r\n",
		  "site.yaml:7:11: error: advice: rule name 'a' twice (first at line 3)" },
		{ "  - name: a\n    when: always\n    policy: none\n    reason: r\n"
		  "  - name: b\n    when: always\n    policy: none\n    reason: r\n",
		  "rule 'b' is never reached: rule 'a' before it matches always" },
		{ "  - name: unsampled\n    when: always\n    policy: none\n    reason: r\n",
		  "rule name 'unsampled' is gpumem's own" },
		{ "  - name: x\n    when: always\n    policy: none\n    reason: r\n    in_effect: eff.mps < 100\n",
		  "in_effect says when the job already does what the policy does, and the rule advises none" },
		{ "  - name: x\n    when: always\n    policy: none\n",
		  "site.yaml:3:5: error: missing required key 'advice[0].reason'" },
		{ "  - name: x\n    when: always\n    policy: none\n    reason: r\n    hint: y\n",
		  "site.yaml:7:5: error: unknown key 'advice[0].hint'" },
		{ "  name: x\n", "site.yaml:3:3: error: advice: a list of rules" },
		{ "  - [x]\n", "site.yaml:3:5: error: advice: each rule is a mapping" },
		{ "  - name: x\n    when: []\n    policy: none\n    reason: r\n",
		  "site.yaml:4:11: error: advice: when is a condition or a list of them, not an empty list" },
		{ "  - name: x\n    when: always\n    policy: none\n    reason: r\n    promise: faster\n",
		  "site.yaml:7:14: error: advice[0].promise: 'faster' is not one of: not-slower, gain" },
		{ "  - name: x\n    when: always\n    policy: none\n    reason: r\n    promise: [gain]\n",
		  "site.yaml:7:14: error: advice[0].promise: expected one word, got a list" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(buf, sizeof(buf), HEAD "%s", bad[i].rules);
		msg = site(buf, &s);
		like(msg, bad[i].why, "refused: %s", bad[i].why);
		free(msg);
		gpumem_site_free(&s);
	}

	/* The cap: 32 rules, not 33. */
	for (int n = 32; n <= 33; n++) {
		size_t o = (size_t)snprintf(buf, sizeof(buf), HEAD);

		for (int i = 0; i < n; i++)
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "  - {name: r%d, when: "
					      "samples > %d, policy: none, reason: r}\n", i, i);
		msg = site(buf, &s);
		if (n == 32)
			is_str(msg, "", "32 rules: taken");
		else
			like(msg, "site.yaml:35:5: error: advice: more than 32 rules", "33: refused");
		free(msg);
		gpumem_site_free(&s);
	}

	/* A good table: in force, in order, a built-in rule dropped. */
	msg = site(HEAD "  - name: hot\n    when: [\"sm_util.p95 >= 95\", \"mem_used.max > 70\"]\n"
		   "    policy: stream\n    reason: \"hot: SM p95 {sm_util.p95}%\"\n"
		   "    in_effect: eff.l2 == 0\n    promise: gain\n"
		   "  - name: rest\n    when: always\n    policy: none\n    reason: \"fine\"\n", &s);
	is_str(msg, "", "a site table parses");
	free(msg);
	is_int(s.advice ? s.advice->n : -1, 2, "  2 rules");
	ok(gpumem_site_advice(&s) == s.advice, "  the table in force");
	ok(gpumem_site_advice(NULL) == gpumem_advice_builtin(), "  no site: the built-in table");
	g.sm_p95 = 95, g.mem_max = 70.1;
	gpumem_advise_with(gpumem_site_advice(&s), &g, NULL, &a);
	is_str(a.rule, "hot", "  rule hot");
	is_str(a.policy, "stream.yaml", "  policy stream.yaml");
	is_str(a.reason, "hot: SM p95 95%", "  its reason");
	is_int(s.advice->r[0].promise, GPUMEM_PROMISE_GAIN, "  promise: gain, read");
	is_int(gpumem_advice_promise(s.advice, "rest"), GPUMEM_PROMISE_NOT_SLOWER,
	       "  a rule that says no promise: not-slower");
	is_int(gpumem_advice_promise(s.advice, "faulting"), -1, "  a rule not in the table: -1");
	gpumem_advice_copy(&b, &a);
	gpumem_site_free(&s);           /* the advice owns its strings */
	is_str(b.rule, "hot", "  a copy outlives the table");
	ok(b.policy == b.policy_buf, "  and points into itself");
	g.mem_max = 10;
	g.sm_mean = 5, g.dram_mean = 5, g.rx_mean = 0.1;
	msg = site(HEAD "  - name: rest\n    when: always\n    policy: none\n    reason: \"fine\"\n", &s);
	gpumem_advise_with(gpumem_site_advice(&s), &g, NULL, &a);
	is_str(a.rule, "rest", "an idle GPU under a table without idle: rest");
	ok(a.policy == NULL, "  no policy");
	free(msg);
	gpumem_site_free(&s);
	msg = site(HEAD "  []\n", &s);
	gpumem_advise_with(gpumem_site_advice(&s), &g, NULL, &a);
	is_str(a.rule, "unmatched", "an empty table: unmatched");
	free(msg);
	gpumem_site_free(&s);

	/* The policies against policy_dir. */
	if (mkdtemp(dir) == NULL)
		return;
	snprintf(path, sizeof(path), "%s/stream.yaml", dir);
	fclose(fopen(path, "w"));
	snprintf(buf, sizeof(buf), HEAD "  - name: hot\n    when: always\n    policy: stream\n"
		 "    reason: r\npolicy_dir: %s\n", dir);
	msg = site(buf, &s);
	ok(gpumem_advice_check_policies(&s, &d) == 0 && d.nerrors == 0, "stream.yaml in policy_dir: fine");
	free(msg);
	gpumem_site_free(&s);
	snprintf(buf, sizeof(buf), HEAD "  - name: hot\n    when: always\n    policy: nosuch.yaml\n"
		 "    reason: r\npolicy_dir: %s\n", dir);
	msg = site(buf, &s);
	free(msg);
	ok(gpumem_advice_check_policies(&s, &d) < 0, "nosuch.yaml: refused");
	msg = gpumem_diags_join(&d, 1);
	like(msg, "site.yaml:5:13: error: advice: rule 'hot' advises nosuch.yaml, which is not in "
	     "policy_dir", "  at the rule's policy");
	free(msg);
	gpumem_diags_free(&d);
	gpumem_site_free(&s);
	unlink(path);
	rmdir(dir);
}

/* Each built-in rule's declared promise: faulting alone promises a gain. */
static void promises(void)
{
	const struct gpumem_advice_table *t = gpumem_advice_builtin();
	char got[400] = "";

	for (int i = 0; i < t->n; i++)
		if (t->r[i].promise == GPUMEM_PROMISE_GAIN)
			snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s ", t->r[i].name);
	is_str(got, "faulting ", "built in: faulting alone promises a gain");
	is_int(gpumem_advice_promise(t, "hbm-bound"), GPUMEM_PROMISE_NOT_SLOWER,
	       "  hbm-bound: not-slower");
	is_int(gpumem_advice_promise(t, "nosuch"), -1, "  no such rule: -1");
	is_int(gpumem_advice_promise(t, NULL), -1, "  no rule: -1");
	ok(gpumem_advice_unasked(t, GPUMEM_BY_DEFAULT_GAIN, "faulting") &&
	   !gpumem_advice_unasked(t, GPUMEM_BY_DEFAULT_GAIN, "hbm-bound") &&
	   !gpumem_advice_unasked(t, GPUMEM_BY_DEFAULT_GAIN, "idle"),
	   "by_default gain: faulting applies unasked, hbm-bound and idle do not");
	ok(gpumem_advice_unasked(t, GPUMEM_BY_DEFAULT_ALL, "faulting") &&
	   gpumem_advice_unasked(t, GPUMEM_BY_DEFAULT_ALL, "hbm-bound"), "by_default all: both");
	ok(!gpumem_advice_unasked(t, GPUMEM_BY_DEFAULT_OFF, "faulting") &&
	   !gpumem_advice_unasked(t, GPUMEM_BY_DEFAULT_OFF, "hbm-bound"), "by_default off: none");
}

int main(void)
{
	promises();
	builtin_thresholds();
	language();
	effective();
	setaside_rule();
	reasons();
	site_tables();
	return tap_done();
}

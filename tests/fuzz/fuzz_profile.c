/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the per-job profile (plugin/core/record/profile.c) and the
 * advice drawn from it (plugin/core/advice/advise.c).
 *
 * The gpumem-profile/1 document comes from gpumem-sample, which runs as
 * nobody in the job's reach, and reports carrying it sit in a directory
 * jobs can influence, so it is read as a hostile file: bytes ->
 * gpumem_profile_parse; an error leaves *out NULL and a message; a document
 * passes gpumem_profile_check again; its compact summary (the accounting
 * record's "prof") is built, passes gpumem_profile_compact_check, says what
 * the document says (state, reason, seconds, source, one row per GPU with
 * its index, samples, source, note and every figure rounded within its
 * unit's range, null exactly where the document has none), and reads back
 * the same after the record's write and parse; every row gives a
 * gpumem_prof_gpu and gpumem_advise gives it a known rule, a known policy
 * and a reason that is text, the same twice.  Input that is JSON but no
 * profile (and its "profile" member, as a report holds it) goes through
 * gpumem_profile_compact as well: st "refused" with the reason, or the
 * stand-in's state ({"state":"skipped","reason":...}); and, when it is a
 * compact summary as the accounting record keeps it (or has one as "prof"),
 * its rows read back and get advice the same way.  A member "eff" of the
 * input, within the record's limits on it, is one more effective policy
 * for the advice.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"
#include "core_advice.h"
#include "core_record.h"

/* The record's eff (acct.h) as the tests and the sampler's runs write it. */
static const char *const fixed_effs[] = {
	"{\"l2\":\"0\",\"mps\":50,\"daemon\":\"job\",\"um\":\"pl=cpu ab=gpu rm pf=gpu stripe=auto\"}",
	"{\"l2\":\"25%\",\"mps\":null,\"daemon\":null,\"um\":\"none\"}",
	"{\"l2\":null,\"mps\":100,\"daemon\":\"node\",\"um\":\"pl=cpu ab=cpu,gpu\"}",
};
#define NFIXED (sizeof(fixed_effs) / sizeof(fixed_effs[0]))
static struct json_object *effs[NFIXED];

/*
 * The figures of a row: where each comes from, its range (profile.h's caps,
 * plus the compact row's rounding: whole percent, GB/s and GiB to 0.1),
 * decimals kept.
 */
#define PCT (GPUMEM_PROFILE_MAX_PCT + 0.5)
#define GBPS (GPUMEM_PROFILE_MAX_GBPS + 0.05)
#define GIB (GPUMEM_PROFILE_MAX_GIB + 0.05)
static const struct {
	const char *metric, *fig;
	size_t off;
	double max;
	int whole;
} figs[] = {
#define F(m, f, field, max, whole) { m, f, offsetof(struct gpumem_prof_gpu, field), max, whole }
	F("dram_bw_util", "mean", dram_mean, PCT, 1), F("dram_bw_util", "p95", dram_p95, PCT, 1),
	F("sm_util", "mean", sm_mean, PCT, 1), F("sm_util", "p95", sm_p95, PCT, 1),
	F("sm_occupancy", "mean", occ_mean, PCT, 1),
	F("pcie_rx", "mean", rx_mean, GBPS, 0), F("pcie_rx", "p95", rx_p95, GBPS, 0),
	F("pcie_tx", "mean", tx_mean, GBPS, 0), F("nvlink_rx", "mean", nvrx_mean, GBPS, 0),
	F("nvlink_tx", "mean", nvtx_mean, GBPS, 0), F("mem_used", "max", mem_max, GIB, 0),
#undef F
};

static double fig_of(const struct gpumem_prof_gpu *g, size_t k)
{
	return *(const double *)((const char *)g + figs[k].off);
}

/* A or B both NaN, or equal. */
static int same(double a, double b)
{
	return (isnan(a) && isnan(b)) || a == b;
}

static int is_rule(const char *r)
{
	static const char *const rules[] = { "unsampled", "short", "idle", "faulting",
					     "link-bound", "setaside", "hbm-bound", "underused",
					     "compute-bound" };

	for (size_t i = 0; r && i < sizeof(rules) / sizeof(rules[0]); i++)
		if (strcmp(r, rules[i]) == 0)
			return 1;
	return 0;
}

static int is_policy(const char *p)
{
	return p == NULL || !strcmp(p, "mps-half.yaml") || !strcmp(p, "zerocopy.yaml") ||
		!strcmp(p, "prefetch.yaml") || !strcmp(p, "stream.yaml");
}

/* NUL within LEN bytes, not empty, valid UTF-8. */
static void check_text(const char *s, size_t len, const char *what)
{
	FUZZ_CHECK(memchr(s, 0, len) != NULL, "%s: no NUL in %zu bytes", what, len);
	FUZZ_CHECK(s[0] != '\0', "%s: empty", what);
	FUZZ_CHECK(fuzz_utf8_ok((const unsigned char *)s), "%s: not UTF-8: %s", what, s);
}

/* The advice for G under EFF: a known rule and policy, a reason, the same twice. */
static void advise(const struct gpumem_prof_gpu *g, struct json_object *eff)
{
	struct gpumem_advice a, b;
	struct json_object *j;

	memset(&a, 'x', sizeof(a));
	gpumem_advise(g, eff, &a);
	FUZZ_CHECK(is_rule(a.rule), "rule '%s'", a.rule ? a.rule : "(null)");
	FUZZ_CHECK(is_policy(a.policy), "policy '%s'", a.policy);
	FUZZ_CHECK(a.in_effect == 0 || (a.in_effect == 1 && a.policy && eff),
		   "in_effect %d with policy %s", a.in_effect, a.policy ? a.policy : "none");
	check_text(a.reason, sizeof(a.reason), "advice reason");
	FUZZ_CHECK(!strcmp(a.rule, "unsampled") == (g->source[0] == '\0'),
		   "rule %s for source '%s'", a.rule, g->source);
	gpumem_advise(g, eff, &b);
	/* rule and policy point into each advice's own copies (advise.h): compare the text. */
	FUZZ_CHECK(!strcmp(a.rule, b.rule) && (a.policy == NULL) == (b.policy == NULL) &&
		   (a.policy == NULL || !strcmp(a.policy, b.policy)) &&
		   a.in_effect == b.in_effect && !strcmp(a.reason, b.reason),
		   "other advice the second time");
	j = gpumem_advice_json(&a, g->index);
	FUZZ_CHECK(j != NULL, "advice_json");
	json_object_put(j);
}

/*
 * The record's limits on its "eff" (acct_record.c, check_eff): an object
 * with strings l2 (32 bytes), daemon (16), um (80), or null, and mps a
 * number or null.  What the input carries as "eff" is fuzzed advice input
 * when it is one.
 */
static int eff_ok(struct json_object *eff)
{
	static const struct { const char *key; size_t max; } strs[] = {
		{ "l2", 32 }, { "daemon", 16 }, { "um", 80 } };
	struct json_object *m = gpumem_json_get(eff, "mps");

	if (!gpumem_json_is(eff, json_type_object))
		return 0;
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		struct json_object *v = gpumem_json_get(eff, strs[i].key);

		if (v && (!gpumem_json_is(v, json_type_string) ||
			  strlen(json_object_get_string(v)) > strs[i].max))
			return 0;
	}
	return m == NULL || gpumem_json_is(m, json_type_int) || gpumem_json_is(m, json_type_double);
}

/* S is the first characters of FULL (gpumem_json_string_cut to MAX), or both are NULL. */
static int cut_of(const char *s, const char *full, size_t max)
{
	size_t n = 0;

	if (s == NULL || full == NULL)
		return s == full;
	for (const char *p = s; *p; p++)
		n += ((unsigned char)*p & 0xc0) != 0x80;
	return n <= max && strncmp(s, full, strlen(s)) == 0 &&
		(strlen(s) == strlen(full) || n == max);
}

/* ROW (of the summary) says what GPU G of a checked document says. */
static void check_row(struct json_object *row, struct json_object *g, size_t i,
		      struct gpumem_prof_gpu *pg)
{
	struct json_object *ms = gpumem_json_get(g, "metrics");
	const char *src = gpumem_json_str(g, "source"), *note = gpumem_json_str(g, "note");
	double idx, n;

	FUZZ_CHECK(gpumem_prof_gpu_of(row, pg) == 0, "row %zu: gpumem_prof_gpu_of failed", i);
	FUZZ_CHECK(gpumem_json_num(g, "index", &idx) == 0 && pg->index == (long)idx &&
		   pg->index >= 0 && pg->index <= 4095, "row %zu: index %ld", i, pg->index);
	FUZZ_CHECK(gpumem_json_num(g, "samples", &n) == 0 && pg->samples == n && n >= 0 &&
		   n <= 1e12 && floor(n) == n, "row %zu: samples %.17g for %.17g", i,
		   pg->samples, n);
	FUZZ_CHECK(!strcmp(pg->source, src ? src : ""), "row %zu: source '%s' for '%s'", i,
		   pg->source, src ? src : "(null)");
	FUZZ_CHECK(memchr(pg->note, 0, sizeof(pg->note)) != NULL, "row %zu: note not ended", i);
	FUZZ_CHECK(fuzz_utf8_ok((const unsigned char *)pg->note), "row %zu: note not UTF-8", i);
	FUZZ_CHECK(gpumem_json_is(row, json_type_object) &&
		   json_object_object_get_ex(row, "note", NULL) == (note != NULL),
		   "row %zu: a named row with a note exactly where the GPU has one", i);
	FUZZ_CHECK(cut_of(pg->note, note ? note : "", GPUMEM_PROF_NOTE_CHARS),
		   "row %zu: note '%s' for '%s'", i, pg->note, note ? note : "(null)");
	for (size_t k = 0; k < sizeof(figs) / sizeof(figs[0]); k++) {
		double x = fig_of(pg, k), d;
		int has = gpumem_json_num(gpumem_json_get(ms, figs[k].metric), figs[k].fig, &d) == 0;

		FUZZ_CHECK(isnan(x) == !has, "row %zu: %s.%s is %g, the document %s it", i,
			   figs[k].metric, figs[k].fig, x, has ? "has" : "lacks");
		if (!has)
			continue;
		FUZZ_CHECK(isfinite(x) && x >= 0 && x <= figs[k].max,
			   "row %zu: %s.%s %.17g out of 0..%g", i, figs[k].metric, figs[k].fig, x,
			   figs[k].max);
		FUZZ_CHECK(fabs(x - d) <= (figs[k].whole ? 0.5 : 0.05) * (1 + 1e-9),
			   "row %zu: %s.%s %.17g for %.17g", i, figs[k].metric, figs[k].fig, x, d);
		if (figs[k].whole)
			FUZZ_CHECK(floor(x) == x, "row %zu: %s.%s %.17g not whole", i,
				   figs[k].metric, figs[k].fig, x);
	}
}

/*
 * Two summaries read the same: one as built, one as the accounting record
 * gives it back after gpumem_json_dump and a parse.
 */
static void check_same_summary(struct json_object *a, struct json_object *b)
{
	struct json_object *ga = gpumem_json_get(a, "g"), *gb = gpumem_json_get(b, "g");
	double sa = NAN, sb = NAN;

	FUZZ_CHECK(!strcmp(gpumem_json_str(a, "st"), gpumem_json_str(b, "st")), "st changed");
	FUZZ_CHECK((gpumem_json_str(a, "why") == NULL) == (gpumem_json_str(b, "why") == NULL) &&
		   (!gpumem_json_str(a, "why") ||
		    !strcmp(gpumem_json_str(a, "why"), gpumem_json_str(b, "why"))), "why changed");
	FUZZ_CHECK((gpumem_json_str(a, "src") == NULL) == (gpumem_json_str(b, "src") == NULL) &&
		   (!gpumem_json_str(a, "src") ||
		    !strcmp(gpumem_json_str(a, "src"), gpumem_json_str(b, "src"))), "src changed");
	gpumem_json_num(a, "s", &sa);
	gpumem_json_num(b, "s", &sb);
	FUZZ_CHECK(same(sa, sb), "s %.17g became %.17g", sa, sb);
	FUZZ_CHECK(gpumem_json_len(ga) == gpumem_json_len(gb), "rows changed");
	for (size_t i = 0; i < gpumem_json_len(ga); i++) {
		struct gpumem_prof_gpu x, y;

		FUZZ_CHECK(gpumem_prof_gpu_of(gpumem_json_at(ga, i), &x) == 0 &&
			   gpumem_prof_gpu_of(gpumem_json_at(gb, i), &y) == 0, "row %zu", i);
		FUZZ_CHECK(x.index == y.index && same(x.samples, y.samples) &&
			   !strcmp(x.source, y.source) && !strcmp(x.note, y.note),
			   "row %zu changed", i);
		for (size_t k = 0; k < sizeof(figs) / sizeof(figs[0]); k++)
			FUZZ_CHECK(same(fig_of(&x, k), fig_of(&y, k)), "row %zu: %s.%s %.17g became %.17g",
				   i, figs[k].metric, figs[k].fig, fig_of(&x, k), fig_of(&y, k));
	}
}

static int is_state(const char *s)
{
	return s && (!strcmp(s, "ran") || !strcmp(s, "skipped") || !strcmp(s, "refused") ||
		     !strcmp(s, "none"));
}

/*
 * The summary of DOC (any JSON value, NULL for null), and all it promises;
 * EFF: the input's own "eff", or NULL.
 */
static void check_compact(struct json_object *doc, struct json_object *eff)
{
	struct json_object *c = gpumem_profile_compact(doc), *back = NULL, *rows, *gpus;
	const char *state = gpumem_json_str(doc, "state"), *st, *src = NULL;
	struct json_object *reason = gpumem_json_get(doc, "reason");
	char err[256], err2[256];
	int standin, checked, mixed = 0;
	char *text;
	double s;

	FUZZ_CHECK(c != NULL, "gpumem_profile_compact gave NULL");
	memset(err, 'x', sizeof(err));
	if (gpumem_profile_compact_check(c, err, sizeof(err)) < 0)
		fprintf(stderr, "gpumem fuzz: %s\n", err);
	FUZZ_CHECK(gpumem_profile_compact_check(c, err, sizeof(err)) == 0,
		   "the summary fails its own check");
	st = gpumem_json_str(c, "st");
	rows = gpumem_json_get(c, "g");
	FUZZ_CHECK(gpumem_json_is(rows, json_type_array), "g is no array");
	standin = gpumem_json_get(doc, "schema") == NULL && is_state(state) &&
		strcmp(state, "ran") != 0 &&
		(reason == NULL || gpumem_json_is(reason, json_type_string));
	memset(err2, 'x', sizeof(err2));
	checked = !standin && gpumem_profile_check(doc, err2, sizeof(err2)) == 0;
	if (standin || checked) {
		FUZZ_CHECK(st && !strcmp(st, state), "st %s for state %s", st, state);
		FUZZ_CHECK(cut_of(gpumem_json_str(c, "why"), gpumem_json_str(doc, "reason"),
				  GPUMEM_PROF_WHY_CHARS), "why is not the reason");
	} else {
		FUZZ_CHECK(memchr(err2, 0, sizeof(err2)) && err2[0], "refused without a reason");
		FUZZ_CHECK(st && !strcmp(st, "refused"), "st %s for what the check refused", st);
		FUZZ_CHECK(cut_of(gpumem_json_str(c, "why"), err2, GPUMEM_PROF_WHY_CHARS),
			   "why '%s' is not the check's '%s'", gpumem_json_str(c, "why"), err2);
	}
	if (!checked) {
		FUZZ_CHECK(gpumem_json_len(rows) == 0 && gpumem_json_get(c, "s") == NULL &&
			   gpumem_json_get(c, "src") == NULL, "a summary of nothing has figures");
	} else {
		gpus = gpumem_json_get(doc, "gpus");
		FUZZ_CHECK(gpumem_json_len(rows) == gpumem_json_len(gpus), "%zu rows for %zu GPUs",
			   gpumem_json_len(rows), gpumem_json_len(gpus));
		for (size_t i = 0; i < gpumem_json_len(gpus); i++) {
			const char *gs = gpumem_json_str(gpumem_json_at(gpus, i), "source");

			if (gs && src && strcmp(gs, src))
				mixed = 1;
			if (gs && !src)
				src = gs;
		}
		src = mixed ? "mixed" : src;
		FUZZ_CHECK(cut_of(gpumem_json_str(c, "src"), src, 1000) &&
			   (src != NULL) == (gpumem_json_get(c, "src") != NULL),
			   "src %s for %s", gpumem_json_str(c, "src"), src);
		if (gpumem_json_num(doc, "seconds", &s) == 0) {
			double cs = -1;

			FUZZ_CHECK(gpumem_json_num(c, "s", &cs) == 0 && cs == round(s),
				   "s %.17g for %.17g seconds", cs, s);
		} else {
			FUZZ_CHECK(gpumem_json_get(c, "s") == NULL, "s without seconds");
		}
		for (size_t i = 0; i < gpumem_json_len(rows); i++) {
			struct gpumem_prof_gpu pg;

			check_row(gpumem_json_at(rows, i), gpumem_json_at(gpus, i), i, &pg);
			advise(&pg, NULL);
			for (size_t e = 0; e < NFIXED; e++)
				advise(&pg, effs[e]);
			if (eff_ok(eff))
				advise(&pg, eff);
		}
	}
	/* The accounting record keeps it as JSON; it must read back the same. */
	text = gpumem_json_dump(c, GPUMEM_JSON_COMPACT);
	FUZZ_CHECK(text != NULL, "gpumem_json_dump of the summary");
	if (gpumem_json_parse_report(text, strlen(text), &back, err, sizeof(err)) != 0)
		fprintf(stderr, "gpumem fuzz: %s\n%.2000s\n", err, text);
	FUZZ_CHECK(back != NULL, "the summary as written does not parse");
	FUZZ_CHECK(gpumem_profile_compact_check(back, err, sizeof(err)) == 0,
		   "the summary read back fails its check: %s", err);
	check_same_summary(c, back);
	free(text);
	json_object_put(back);
	json_object_put(c);
}

/*
 * V as the accounting record's "prof" read back (`gpumem job`, `gpumem
 * advise`): when gpumem_profile_compact_check takes it, every row gives a
 * gpumem_prof_gpu with figures within the check's range, and advice.
 */
static void check_record_prof(struct json_object *v, struct json_object *eff)
{
	struct json_object *rows = gpumem_json_get(v, "g");
	char err[256];

	memset(err, 'x', sizeof(err));
	if (gpumem_profile_compact_check(v, err, sizeof(err)) < 0) {
		FUZZ_CHECK(memchr(err, 0, sizeof(err)) && err[0], "refused without a reason");
		return;
	}
	FUZZ_CHECK(is_state(gpumem_json_str(v, "st")), "st");
	for (size_t i = 0; i < gpumem_json_len(rows); i++) {
		struct gpumem_prof_gpu pg;

		memset(&pg, 'x', sizeof(pg));
		FUZZ_CHECK(gpumem_prof_gpu_of(gpumem_json_at(rows, i), &pg) == 0,
			   "record row %zu: gpumem_prof_gpu_of failed", i);
		FUZZ_CHECK(pg.index >= 0 && pg.index <= 4095, "record row %zu: index %ld", i,
			   pg.index);
		FUZZ_CHECK(isnan(pg.samples) || (pg.samples >= 0 && pg.samples <= 1e12),
			   "record row %zu: samples %g", i, pg.samples);
		FUZZ_CHECK(memchr(pg.source, 0, sizeof(pg.source)) &&
			   memchr(pg.note, 0, sizeof(pg.note)), "record row %zu: unended text", i);
		for (size_t k = 0; k < sizeof(figs) / sizeof(figs[0]); k++)
			FUZZ_CHECK(isnan(fig_of(&pg, k)) ||
				   (fig_of(&pg, k) >= 0 && fig_of(&pg, k) <= 1e7),
				   "record row %zu: %s.%s %g", i, figs[k].metric, figs[k].fig,
				   fig_of(&pg, k));
		advise(&pg, NULL);
		if (eff_ok(eff))
			advise(&pg, eff);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char err[256];

	(void)argc;
	(void)argv;
	for (size_t i = 0; i < NFIXED; i++) {
		if (gpumem_json_parse_report(fixed_effs[i], strlen(fixed_effs[i]), &effs[i], err,
					     sizeof(err)) != 0 || !eff_ok(effs[i])) {
			fprintf(stderr, "gpumem fuzz: fixed eff %zu: %s\n", i, err);
			abort();
		}
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_object *doc = (struct json_object *)&doc;   /* not NULL before */
	struct json_object *v = NULL;
	char err[256], small[16];
	int rv;

	memset(err, 'x', sizeof(err));
	rv = gpumem_profile_parse((const char *)data, size, &doc, err, sizeof(err));
	if (rv == 0) {
		FUZZ_CHECK(doc != NULL, "a profile that is null");
		memset(err, 'x', sizeof(err));
		FUZZ_CHECK(gpumem_profile_check(doc, err, sizeof(err)) == 0,
			   "a parsed profile fails the check: %s", err);
		check_compact(doc, gpumem_json_get(doc, "eff"));
		json_object_put(doc);
		return 0;
	}
	FUZZ_CHECK(rv == -1, "rv %d", rv);
	FUZZ_CHECK(doc == NULL, "failed parse left a value");
	FUZZ_CHECK(memchr(err, 0, sizeof(err)) != NULL, "unterminated error message");
	FUZZ_CHECK(err[0] != '\0', "error without a message");
	/* A short buffer gets a cut message, still a string. */
	memset(small, 'x', sizeof(small));
	doc = (struct json_object *)&doc;
	FUZZ_CHECK(gpumem_profile_parse((const char *)data, size, &doc, small, sizeof(small)) ==
		   -1 && doc == NULL, "the second parse differs");
	FUZZ_CHECK(memchr(small, 0, sizeof(small)) != NULL && small[0], "short error message");
	/* JSON that is no profile: what a report may hold in its place. */
	if (gpumem_json_parse_report((const char *)data, size, &v, err, sizeof(err)) != 0)
		return 0;
	check_compact(v, gpumem_json_get(v, "eff"));
	if (gpumem_json_get(v, "profile"))
		check_compact(gpumem_json_get(v, "profile"), gpumem_json_get(v, "eff"));
	/* Or the accounting record's summary, whole or its member "prof". */
	check_record_prof(v, gpumem_json_get(v, "eff"));
	if (gpumem_json_get(v, "prof"))
		check_record_prof(gpumem_json_get(v, "prof"), gpumem_json_get(v, "eff"));
	json_object_put(v);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the site file (etc/gpumem.yaml).
 *
 * Only root writes it, but every node and submit host parses it on every
 * job, so a file that crashes or leaks the parser would take down srun or
 * slurmstepd for everyone.  bytes -> gpumem_site_parse, twice (into a fresh
 * site and into one that already holds a parsed site: the parser frees the
 * old contents itself); when valid, the limits, paths, drain reason and
 * reference table hold what the schema promises, gpumem_site_ref finds
 * every model (in any case) and nothing else, named policies resolve under
 * policy_dir, and the effective policy of a few fixed user policies keeps
 * to the fuzzed limits; an advice: table (advise_site.c) keeps to its caps,
 * gives every GPU of a few fixed ones advice from its own rules, and
 * printed as the site file's advice: section reads back the same.
 * gpumem_site_free releases everything, also after a failed parse.
 */
#include <ctype.h>
#include <strings.h>
#include "core_advice.h"
#include "fuzz.h"

static const char *const user_texts[] = {
	/* Asks for more than any site gives. */
	("version: 1\nl2:\n  persisting_limit: 100%\n  reset_at_exit: false\n"
	"mps:\n  active_thread_percentage: 100\n  pinned_device_mem_limit: 0\n  daemon: job\n"
	"unified_memory:\n  preferred_location: gpu\n  accessed_by: [cpu, gpu]\n"
	"  read_mostly: true\n  prefetch: gpu\n  min_bytes: 0\n"
	"check:\n  before: true\n  after: true\n  bandwidth:\n    min_fraction: 1\n"
	"  on_fail: drain\n  l2_ab: true\n"),
	/* Asks for less than any site allows. */
	("version: 1\nl2:\n  persisting_limit: 1MiB\nmps:\n  active_thread_percentage: 1\n"
	"  pinned_device_mem_limit: 1\n  daemon: site\ncheck:\n  on_fail: fail\n"),
	/* Asks for nothing. */
	"version: 1\n",
};
#define NUSERS (sizeof(user_texts) / sizeof(user_texts[0]))
static struct gpumem_policy users[NUSERS];

/* Parsed before each input into the reused site: its contents must go. */
static const char previous_site[] =
	"version: 1\npolicy_dir: /old/policies\nreport:\n  dir: /old/reports\n"
	"drain:\n  reason: 'gpumem: old'\nreferences:\n  Old GPU A: {read: 1}\n"
	"  Old GPU B: {copy: 2}\n";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	for (size_t i = 0; i < NUSERS; i++)
		fuzz_parse_fixed(user_texts[i], &users[i]);
	fuzz_nodes_init();
	return 0;
}

static int same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static void check_path(const char *what, const char *p)
{
	if (p == NULL)
		return;
	FUZZ_CHECK(p[0] == '/', "%s '%s' is not absolute", what, p);
	for (const char *c = p; *c; c++)
		FUZZ_CHECK((unsigned char)*c >= 0x20, "%s has a control character", what);
}

/* The same letters with their case swapped: lookups ignore case. */
static void swap_case(const char *in, char *out, size_t len)
{
	size_t i;

	for (i = 0; in[i] && i + 1 < len; i++) {
		unsigned char c = (unsigned char)in[i];

		out[i] = (char)(islower(c) ? toupper(c) : tolower(c));
	}
	out[i] = '\0';
}

static void check_refs(const struct gpumem_site *s)
{
	FUZZ_CHECK(s->nrefs >= 0 && s->nrefs <= GPUMEM_MAX_REFS, "%d references", s->nrefs);
	for (int i = 0; i < s->nrefs; i++) {
		const struct gpumem_ref *r = &s->refs[i];
		const double m[] = { r->read, r->write, r->copy, r->triad, r->d2d, r->h2d,
				     r->d2h };
		char other[GPUMEM_MAX_SCALAR + 1];

		FUZZ_CHECK(r->model != NULL, "reference %d has no model", i);
		for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++)
			FUZZ_CHECK(m[k] == 0 || (m[k] >= 0.001 && m[k] <= 1e6),
				   "%s: metric %zu = %g", r->model, k, m[k]);
		/* Models are unique ignoring case, so the lookup finds this one. */
		FUZZ_CHECK(gpumem_site_ref(s, r->model) == r, "lookup of '%s'", r->model);
		swap_case(r->model, other, sizeof(other));
		FUZZ_CHECK(gpumem_site_ref(s, other) == r, "lookup of '%s' as '%s'", r->model,
			   other);
	}
	/* A name the fuzzer is unlikely to build, and the empty name. */
	if (s->nrefs < GPUMEM_MAX_REFS) {
		const struct gpumem_ref *r = gpumem_site_ref(s, "gpumem fuzz: no such GPU");

		FUZZ_CHECK(r == NULL || strcasecmp(r->model, "gpumem fuzz: no such GPU") == 0,
			   "lookup found '%s'", r->model);
	}
	(void)gpumem_site_ref(s, "");
}

static void check_resolve(const struct gpumem_site *s)
{
	struct gpumem_diags d = { 0 };
	char *path;

	path = gpumem_policy_resolve(s, "stream", &d);
	if (s->policy_dir) {
		char want[GPUMEM_MAX_SCALAR + 32];

		snprintf(want, sizeof(want), "%s/stream.yaml", s->policy_dir);
		FUZZ_CHECK(path && strcmp(path, want) == 0, "resolved to '%s'",
			   path ? path : "(null)");
	} else {
		FUZZ_CHECK(path == NULL && d.nerrors == 1, "a name without policy_dir");
	}
	free(path);
	/* A hidden name is neither a path nor a policy name. */
	path = gpumem_policy_resolve(s, ".stream", &d);
	FUZZ_CHECK(path == NULL, "'.stream' resolved to '%s'", path);
	gpumem_diags_free(&d);
}

/* The advice table: caps, advice from its own rules, and a round trip through its YAML. */
static void check_advice(const struct gpumem_advice_table *t)
{
	static const struct gpumem_prof_gpu gpus[] = {
		{ .samples = 12, .source = "gpm", .dram_mean = 40, .dram_p95 = 95, .sm_mean = 80,
		  .sm_p95 = 90, .occ_mean = 50, .rx_mean = 7.5, .rx_p95 = 12, .tx_mean = 15,
		  .nvrx_mean = NAN, .nvtx_mean = NAN, .mem_max = 10 },
		{ .samples = NAN, .source = "nvml", .dram_mean = NAN, .dram_p95 = NAN,
		  .sm_mean = NAN, .sm_p95 = NAN, .occ_mean = NAN, .rx_mean = NAN, .rx_p95 = NAN,
		  .tx_mean = NAN, .nvrx_mean = NAN, .nvtx_mean = NAN, .mem_max = NAN },
		{ .samples = 1, .source = "", .note = "MIG" },
	};
	struct json_object *eff = json_tokener_parse("{\"l2\":\"0\",\"mps\":50,"
		"\"daemon\":\"job\",\"um\":\"pl=cpu ab=cpu,gpu rm pf=gpu\"}");
	struct gpumem_diags d = { 0 };
	struct gpumem_site back;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	FUZZ_CHECK(t->n >= 0 && t->n <= GPUMEM_ADVICE_MAX_RULES, "%d rules", t->n);
	for (size_t i = 0; i < sizeof(gpus) / sizeof(gpus[0]); i++) {
		struct gpumem_advice a;
		int found;

		gpumem_advise_with(t, &gpus[i], eff, &a);
		FUZZ_CHECK(a.rule && memchr(a.reason, '\0', sizeof(a.reason)), "advice");
		found = !strcmp(a.rule, "unsampled") || !strcmp(a.rule, "unmatched");
		for (int r = 0; r < t->n && !found; r++)
			found = !strcmp(a.rule, t->r[r].name) &&
				(a.policy == NULL) == (t->r[r].policy[0] == '\0');
		FUZZ_CHECK(found, "rule '%s' is not the table's", a.rule);
	}
	json_object_put(eff);
	f = open_memstream(&text, &len);
	FUZZ_CHECK(f != NULL, "memstream");
	fprintf(f, "version: 1\n");
	gpumem_advice_table_yaml(t, f);
	fclose(f);
	gpumem_site_init(&back);
	FUZZ_CHECK(gpumem_site_parse(text, len, "fuzz-site.yaml", &back, &d) == 0 && back.advice,
		   "the table printed does not read back:\n%s", text);
	FUZZ_CHECK(back.advice->n == t->n, "%d rules read back, %d printed", back.advice->n, t->n);
	for (int r = 0; r < t->n; r++) {
		const struct gpumem_advice_rule *x = &t->r[r], *y = &back.advice->r[r];

		FUZZ_CHECK(!strcmp(x->name, y->name) && !strcmp(x->policy, y->policy) &&
			   !strcmp(x->reason, y->reason) && x->when.nitems == y->when.nitems &&
			   x->when.nterms == y->when.nterms &&
			   x->in_effect.nitems == y->in_effect.nitems &&
			   x->in_effect.nterms == y->in_effect.nterms,
			   "rule %d reads back different:\n%s", r, text);
	}
	gpumem_site_free(&back);
	gpumem_diags_free(&d);
	free(text);
}

static void check_site(const struct gpumem_site *s)
{
	struct gpumem_policy eff;
	struct gpumem_diags d = { 0 };
	unsigned all3 = 7;
	int rv;

	FUZZ_CHECK(s->path && strcmp(s->path, "fuzz-site.yaml") == 0, "path");
	FUZZ_CHECK(s->limits.l2_max_percent >= 0 && s->limits.l2_max_percent <= 100,
		   "l2_max_percent %g", s->limits.l2_max_percent);
	FUZZ_CHECK(s->limits.mps_min_pct >= 1 && s->limits.mps_min_pct <= s->limits.mps_max_pct &&
		   s->limits.mps_max_pct <= 100, "MPS range %d..%d", s->limits.mps_min_pct,
		   s->limits.mps_max_pct);
	FUZZ_CHECK(s->limits.mps_max_pinned <= (uint64_t)1e15, "pinned cap");
	FUZZ_CHECK((s->limits.daemons_allowed & ~all3) == 0 &&
		   (s->limits.daemons_allowed & (1u << s->defaults.mps.daemon)),
		   "daemons 0x%x, default %d", s->limits.daemons_allowed, s->defaults.mps.daemon);
	FUZZ_CHECK((s->limits.onfail_allowed & ~all3) == 0 &&
		   (s->limits.onfail_allowed & (1u << s->defaults.check.on_fail)),
		   "on_fail 0x%x, default %d", s->limits.onfail_allowed, s->defaults.check.on_fail);
	FUZZ_CHECK((s->limits.sections_allowed & ~(unsigned)GPUMEM_S_ALL) == 0, "sections 0x%x",
		   s->limits.sections_allowed);
	FUZZ_CHECK((s->limits.strict & ~1) == 0 && (s->drain.enabled & ~1) == 0, "booleans");
	check_path("policy_dir", s->policy_dir);
	check_path("report.dir", s->report.dir);
	check_path("report.textfile_dir", s->report.textfile_dir);
	FUZZ_CHECK(s->drain.reason == NULL || strncmp(s->drain.reason, "gpumem:", 7) == 0,
		   "drain reason '%s'", s->drain.reason);
	FUZZ_CHECK(s->check_timeout_s >= 1 && s->check_timeout_s <= 3600, "timeout %d",
		   s->check_timeout_s);
	check_refs(s);
	check_resolve(s);
	if (s->advice)
		check_advice(s->advice);

	/* The site's defaults are a policy like any other. */
	fuzz_check_policy_sane(&s->defaults);
	fuzz_check_round_trip(&s->defaults, GPUMEM_FMT_JSON);
	fuzz_check_round_trip(&s->defaults, GPUMEM_FMT_YAML);

	/* No user policy: the site's own defaults, clamped to its own limits. */
	rv = gpumem_policy_effective(s, NULL, NULL, &eff, &d);
	fuzz_check_diags(&d, rv, 0);
	fuzz_check_policy_sane(&eff);
	gpumem_diags_free(&d);
	fuzz_check_env(&eff, &fuzz_node_two, s->limits.l2_max_percent);
	for (size_t i = 0; i < NUSERS; i++)
		fuzz_check_effective(s, &users[i]);
}

/* Two parses of the same bytes agree, whatever the struct held before. */
static void check_same_site(const struct gpumem_site *a, const struct gpumem_site *b)
{
	FUZZ_CHECK(same_str(a->path, b->path) && same_str(a->policy_dir, b->policy_dir) &&
		   same_str(a->report.dir, b->report.dir) &&
		   same_str(a->report.textfile_dir, b->report.textfile_dir) &&
		   same_str(a->drain.reason, b->drain.reason), "strings differ");
	FUZZ_CHECK(memcmp(&a->limits, &b->limits, sizeof(a->limits)) == 0, "limits differ");
	FUZZ_CHECK(a->drain.enabled == b->drain.enabled &&
		   a->check_timeout_s == b->check_timeout_s, "drain or timeout differ");
	fuzz_check_policy_equal(&a->defaults, &b->defaults, "site defaults");
	FUZZ_CHECK(a->nrefs == b->nrefs, "%d != %d references", a->nrefs, b->nrefs);
	for (int i = 0; i < a->nrefs; i++)
		FUZZ_CHECK(same_str(a->refs[i].model, b->refs[i].model) &&
			   memcmp(&a->refs[i].read, &b->refs[i].read, 7 * sizeof(double)) == 0,
			   "reference %d differs", i);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gpumem_diags d = { 0 }, d2 = { 0 };
	struct gpumem_site s, reused;
	int rv, rv2;

	gpumem_site_init(&s);
	rv = gpumem_site_parse((const char *)data, size, "fuzz-site.yaml", &s, &d);
	fuzz_check_diags(&d, rv, 0);
	FUZZ_CHECK(d.nwarnings == 0, "%d parse warnings", d.nwarnings);

	gpumem_site_init(&reused);
	fuzz_load_site(previous_site, &reused);
	rv2 = gpumem_site_parse((const char *)data, size, "fuzz-site.yaml", &reused, &d2);
	fuzz_check_diags(&d2, rv2, 0);
	FUZZ_CHECK(rv == rv2 && d.nerrors == d2.nerrors, "second parse: rv %d/%d, %d/%d errors",
		   rv, rv2, d.nerrors, d2.nerrors);
	if (rv == 0) {
		check_same_site(&s, &reused);
		check_site(&s);
	}
	gpumem_site_free(&reused);
	gpumem_site_free(&s);
	/* Freed means reset to the defaults: a second free is harmless. */
	gpumem_site_free(&s);
	FUZZ_CHECK(s.nrefs == 0 && s.path == NULL && s.policy_dir == NULL, "not reset");
	gpumem_diags_free(&d);
	gpumem_diags_free(&d2);
	return 0;
}

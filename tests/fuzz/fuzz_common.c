/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The checks both fuzz targets share: the effective policy under a site,
 * the task environment on fake nodes, the format/parse round trip.  Each
 * one aborts (FUZZ_CHECK) on the first broken promise of policy.h.
 */
#include <inttypes.h>
#include <math.h>
#include "fuzz.h"
#include "core_policy.h"
#include "um_config.h"

struct gpumem_node fuzz_node_two, fuzz_node_many, fuzz_node_noprobe;

void fuzz_load_site(const char *text, struct gpumem_site *s)
{
	struct gpumem_diags d = { 0 };
	int rv;

	gpumem_site_init(s);
	rv = gpumem_site_parse(text, strlen(text), "fixed-site.yaml", s, &d);
	if (rv != 0)
		gpumem_diags_print(&d, stderr);
	FUZZ_CHECK(rv == 0, "fixed site does not parse");
	gpumem_diags_free(&d);
}

static void fake_gpu(struct gpumem_gpu *g, int i, const char *name, uint64_t l2,
		     uint64_t pmax)
{
	g->index = i;
	snprintf(g->uuid, sizeof(g->uuid), "GPU-%08x-0000-0000-0000-000000000000", (unsigned)i);
	snprintf(g->pci_bus_id, sizeof(g->pci_bus_id), "00000000:%02X:00.0", i + 0x10);
	snprintf(g->name, sizeof(g->name), "%s", name);
	g->l2_bytes = l2;
	g->persisting_max_bytes = pmax;
}

/* The fake nodes every effective policy is turned into an environment on. */
void fuzz_nodes_init(void)
{
	/* Two Hopper GPUs of different L2 sizes, the UM library and a job MPS. */
	memset(&fuzz_node_two, 0, sizeof(fuzz_node_two));
	fake_gpu(&fuzz_node_two.gpus[0], 0, "NVIDIA H200", 62914560, 39321600);
	fake_gpu(&fuzz_node_two.gpus[1], 1, "NVIDIA H100 80GB HBM3", 52428800, 32768000);
	fuzz_node_two.ngpus = 2;
	fuzz_node_two.um_library = "/usr/lib/x86_64-linux-gnu/gpumem/libgpumem-um.so";
	fuzz_node_two.mps_pipe_dir = "/run/gpumem/mps/4242/pipe";
	fuzz_node_two.mps_log_dir = "/run/gpumem/mps/4242/log";

	/*
	 * As many GPUs as the engine takes, with odd sizes, one that did not
	 * report its L2 and one that allows no persisting lines: the longest
	 * per-GPU variables and the smallest hardware cap come from here.
	 */
	memset(&fuzz_node_many, 0, sizeof(fuzz_node_many));
	for (int i = 0; i < GPUMEM_MAX_GPUS; i++)
		fake_gpu(&fuzz_node_many.gpus[i], i, "Odd GPU",
			 i == 7 ? 0 : 4096u * 1000 + (uint64_t)i,
			 i == 3 ? 0 : 2000u * (uint64_t)(i + 1));
	fuzz_node_many.ngpus = GPUMEM_MAX_GPUS;

	/* No probe output at all. */
	memset(&fuzz_node_noprobe, 0, sizeof(fuzz_node_noprobe));
	fuzz_node_noprobe.ngpus = -1;
	fuzz_node_noprobe.um_library = "/opt/gpumem/libgpumem-um.so";
}

static const char *env_get(const struct gpumem_env *e, const char *name)
{
	for (int i = 0; i < e->n; i++)
		if (strcmp(e->var[i].name, name) == 0)
			return e->var[i].value;
	return NULL;
}


/* A fraction as the advice carries it: parts per million. */
static long fuzz_ppm(double f)
{
	long ppm = lround(f * 1e6);

	return ppm < 0 ? 0 : ppm > 1000000 ? 1000000 : ppm;
}

/*
 * The advice string: the version that um_advice.h says the policy needs,
 * and what libgpumem-um's own parser (kernels/um/um_config.c) reads from
 * it is the policy's unified_memory section, field by field.
 */
static void fuzz_check_um_advice(const struct gpumem_policy *p, const char *v)
{
	const int stripe = p->um.placement == GPUMEM_PLACE_STRIPE;
	struct gpumem_um_config c;
	char err[256];

	FUZZ_CHECK(gpumem_um_advice_version(v) == gpumem_um_advice_version_for(stripe),
		   "advice '%s': version %d, want %d", v, gpumem_um_advice_version(v),
		   gpumem_um_advice_version_for(stripe));
	FUZZ_CHECK(gpumem_um_config_parse(v, &c, err, sizeof(err)) == 0,
		   "libgpumem-um refuses the advice '%s': %s", v, err);
	FUZZ_CHECK((int)c.preferred == (int)p->um.preferred_location &&
		   c.accessed_by == p->um.accessed_by && c.read_mostly == !!p->um.read_mostly &&
		   (int)c.prefetch == (int)p->um.prefetch && c.min_bytes == p->um.min_bytes &&
		   c.verbose == 0, "advice '%s' is not the policy's advice", v);
	FUZZ_CHECK((c.placement == GPUMEM_UM_PLACE_STRIPE) == stripe, "advice '%s': placement", v);
	if (!stripe)
		return;
	FUZZ_CHECK(p->um.gpu_fraction == GPUMEM_FRACTION_AUTO ? c.gpu_ppm == GPUMEM_UM_AUTO :
		   c.gpu_ppm == fuzz_ppm(p->um.gpu_fraction), "advice '%s': gpu_fraction %g", v,
		   p->um.gpu_fraction);
	FUZZ_CHECK(c.max_ppm == fuzz_ppm(p->um.site_max_fraction) && c.reserve == p->um.reserve &&
		   c.granularity == p->um.granularity, "advice '%s': gpu_max, reserve or granularity",
		   v);
}

void fuzz_check_env(const struct gpumem_policy *p, const struct gpumem_node *node,
		    double site_l2_max)
{
	static const char *const allowed[] = {
		GPUMEM_ENV_L2_PCT, GPUMEM_ENV_MPS_PCT, GPUMEM_ENV_MPS_PINNED,
		GPUMEM_ENV_MPS_PIPE, GPUMEM_ENV_MPS_LOG, GPUMEM_ENV_UM, GPUMEM_ENV_PRELOAD,
	};
	struct gpumem_diags d = { 0 };
	struct gpumem_env env;
	const char *v;
	int rv;

	rv = gpumem_policy_env(p, node, &env, &d);
	fuzz_check_diags(&d, rv, 0);
	FUZZ_CHECK(rv == 0, "env failed for a valid policy");
	FUZZ_CHECK(env.n >= 0 && env.n <= GPUMEM_ENV_MAX, "%d variables", env.n);
	for (int i = 0; i < env.n; i++) {
		size_t k, nl = strnlen(env.var[i].name, sizeof(env.var[i].name));
		size_t vl = strnlen(env.var[i].value, sizeof(env.var[i].value));

		FUZZ_CHECK(nl < sizeof(env.var[i].name) && vl < sizeof(env.var[i].value),
			   "unterminated variable %d", i);
		for (k = 0; k < sizeof(allowed) / sizeof(allowed[0]); k++)
			if (strcmp(env.var[i].name, allowed[k]) == 0)
				break;
		FUZZ_CHECK(k < sizeof(allowed) / sizeof(allowed[0]), "variable '%s'",
			   env.var[i].name);
		for (int j = 0; j < i; j++)
			FUZZ_CHECK(strcmp(env.var[i].name, env.var[j].name) != 0,
				   "'%s' twice", env.var[i].name);
		/* Values reach the task's environ: no line breaks, no empties. */
		FUZZ_CHECK(vl > 0 && !strpbrk(env.var[i].value, "\n\r"), "%s='%s'",
			   env.var[i].name, env.var[i].value);
	}

	v = env_get(&env, GPUMEM_ENV_L2_PCT);
	if (v) {
		int hw = gpumem_l2_hw_max_percent(node);
		char *end;
		long pct = strtol(v, &end, 10);

		FUZZ_CHECK(p->set & GPUMEM_K_L2_LIMIT, "L2 variable without the key");
		FUZZ_CHECK(*end == '\0' && pct >= 0 && pct <= 100, "L2 '%s'", v);
		FUZZ_CHECK(hw < 0 ? pct <= 62 : pct <= hw, "L2 %ld%% above the GPU's %d%%",
			   pct, hw);
		/* However the limit was written, in percent or in bytes. */
#ifdef FUZZ_TOLERATE_L2_BYTES_SITE
		if (p->l2.limit_is_percent)
#endif
		FUZZ_CHECK(pct <= site_l2_max, "L2 %ld%% above the site's l2_max_percent %g",
			   pct, site_l2_max);
	} else {
		int known_l2 = 0;

		for (int i = 0; node && i < node->ngpus; i++)
			known_l2 |= node->gpus[i].l2_bytes != 0;
		/* Only a byte limit on a node that did not say its L2 size is skipped. */
		FUZZ_CHECK(!(p->set & GPUMEM_K_L2_LIMIT) ||
			   (!p->l2.limit_is_percent && p->l2.limit_bytes != 0 && !known_l2),
			   "L2 key set, no variable");
	}

	v = env_get(&env, GPUMEM_ENV_MPS_PCT);
	FUZZ_CHECK((v != NULL) == !!(p->set & GPUMEM_K_MPS_PCT), "MPS percentage presence");
	if (v)
		FUZZ_CHECK(atoi(v) == p->mps.active_thread_percentage, "MPS '%s'", v);

	v = env_get(&env, GPUMEM_ENV_MPS_PINNED);
	FUZZ_CHECK((v != NULL) == ((p->set & GPUMEM_K_MPS_PINNED) &&
				   p->mps.pinned_device_mem_limit != 0), "pinned presence");
	if (v) {
		/* One "ordinal=MiB M" per GPU, nothing cut off. */
		int n = node && node->ngpus > 0 ? node->ngpus : 1;
		uint64_t mib = p->mps.pinned_device_mem_limit >> 20;
		char want[1024];
		size_t off = 0;

		if (mib == 0)
			mib = 1;
		for (int i = 0; i < n; i++) {
			int w = snprintf(want + off, sizeof(want) - off, "%s%d=%" PRIu64 "M",
					 i ? "," : "", i, mib);

			FUZZ_CHECK(w > 0 && (size_t)w < sizeof(want) - off, "expected list too long");
			off += (size_t)w;
		}
		FUZZ_CHECK(strcmp(v, want) == 0, "pinned '%s', want '%s'", v, want);
	}

	v = env_get(&env, GPUMEM_ENV_MPS_PIPE);
	FUZZ_CHECK((v != NULL) == (p->mps.daemon == GPUMEM_DAEMON_JOB && node &&
				   node->mps_pipe_dir), "MPS pipe presence");
	FUZZ_CHECK((v != NULL) == (env_get(&env, GPUMEM_ENV_MPS_LOG) != NULL),
		   "pipe and log directories come together");

	v = env_get(&env, GPUMEM_ENV_UM);
	FUZZ_CHECK((v != NULL) == ((p->sections & GPUMEM_S_UM) && node && node->um_library),
		   "UM advice presence");
	FUZZ_CHECK((v != NULL) == (env_get(&env, GPUMEM_ENV_PRELOAD) != NULL),
		   "UM advice without its library, or the reverse");
	if (v) {
		fuzz_check_um_advice(p, v);
		/* LD_PRELOAD is only ever the node's own library. */
		FUZZ_CHECK(strcmp(env_get(&env, GPUMEM_ENV_PRELOAD), node->um_library) == 0,
			   "LD_PRELOAD '%s'", env_get(&env, GPUMEM_ENV_PRELOAD));
	}
	gpumem_diags_free(&d);
}

/* Keys a site lets through: those of the sections open to users. */
static unsigned open_keys(const struct gpumem_site *s)
{
	unsigned keys = 0;

	for (unsigned b = 1; b <= FUZZ_LAST_KEY; b <<= 1)
		if (s->limits.sections_allowed & fuzz_key_section(b))
			keys |= b;
	return keys;
}

void fuzz_check_effective(const struct gpumem_site *s, const struct gpumem_policy *user)
{
	struct gpumem_diags d = { 0 };
	struct gpumem_policy out, again;
	int rv;

	rv = gpumem_policy_effective(s, user, "fuzz.yaml", &out, &d);
	fuzz_check_diags(&d, rv, 0);
	fuzz_check_policy_sane(&out);
	if (s == NULL) {
		struct gpumem_policy want;

		/* No site: the user's keys over the built-in defaults, unchanged. */
		gpumem_policy_init(&want);
		gpumem_policy_overlay(&want, user);
		fuzz_check_policy_equal(&out, &want, "no site");
		FUZZ_CHECK(rv == 0 && d.head == NULL, "diagnostics without a site");
		gpumem_diags_free(&d);
		fuzz_check_env(&out, &fuzz_node_two, 100);
		return;
	}
	FUZZ_CHECK(out.set == (s->defaults.set | (user->set & open_keys(s))),
		   "set 0x%x from site 0x%x and user 0x%x", out.set, s->defaults.set, user->set);
	FUZZ_CHECK(!s->limits.strict ? rv == 0 && d.nerrors == 0 : rv == 0 || d.nerrors > 0,
		   "strict %d rv %d errors %d", s->limits.strict, rv, d.nerrors);
	if (out.l2.limit_is_percent)
		FUZZ_CHECK(out.l2.limit_percent <= s->limits.l2_max_percent,
			   "L2 %g%% above the site's %g%%", out.l2.limit_percent,
			   s->limits.l2_max_percent);
	if (out.set & GPUMEM_K_MPS_PCT)
		FUZZ_CHECK(out.mps.active_thread_percentage >= s->limits.mps_min_pct &&
			   out.mps.active_thread_percentage <= s->limits.mps_max_pct,
			   "MPS %d outside %d..%d", out.mps.active_thread_percentage,
			   s->limits.mps_min_pct, s->limits.mps_max_pct);
	if ((out.set & GPUMEM_K_MPS_PINNED) && s->limits.mps_max_pinned)
		FUZZ_CHECK(out.mps.pinned_device_mem_limit != 0 &&
			   out.mps.pinned_device_mem_limit <= s->limits.mps_max_pinned,
			   "pinned %" PRIu64 " with a cap of %" PRIu64,
			   out.mps.pinned_device_mem_limit, s->limits.mps_max_pinned);
	FUZZ_CHECK(s->limits.daemons_allowed & (1u << out.mps.daemon), "daemon %d",
		   out.mps.daemon);
	FUZZ_CHECK(s->limits.onfail_allowed & (1u << out.check.on_fail), "on_fail %d",
		   out.check.on_fail);
	/* What came out of the limits goes through them unchanged. */
	gpumem_policy_effective(s, &out, "fuzz.yaml", &again, &d);
	fuzz_check_policy_equal(&again, &out, "effective twice");
	gpumem_diags_free(&d);

	fuzz_check_env(&out, &fuzz_node_two, s->limits.l2_max_percent);
	fuzz_check_env(&out, &fuzz_node_many, s->limits.l2_max_percent);
	fuzz_check_env(&out, &fuzz_node_noprobe, s->limits.l2_max_percent);
	fuzz_check_env(&out, NULL, s->limits.l2_max_percent);
}

/*
 * Format 'p' (only the keys set: what the plugin forwards), parse it back,
 * compare, and format again: the text must be a fixed point too.
 */
void fuzz_check_round_trip(const struct gpumem_policy *p, enum gpumem_fmt fmt)
{
	const char *what = fmt == GPUMEM_FMT_JSON ? "JSON round trip" : "YAML round trip";
	struct gpumem_diags d = { 0 };
	struct gpumem_policy q;
	char *text, *again;
	int rv;

	text = gpumem_policy_format(p, fmt, 1);
	FUZZ_CHECK(text != NULL, "%s: format failed", what);
	/* JSON as the node reads a forwarded policy: through json-c. */
	rv = fmt == GPUMEM_FMT_JSON ?
		gpumem_policy_parse_json(text, strlen(text), "round-trip", &q, &d) :
		gpumem_policy_parse(text, strlen(text), "round-trip", &q, &d);
	if (rv != 0 || d.head) {
		fprintf(stderr, "gpumem fuzz: %s: the text was:\n%s\n", what, text);
		gpumem_diags_print(&d, stderr);
	}
	FUZZ_CHECK(rv == 0 && d.head == NULL, "%s: output does not parse cleanly", what);
	if (memcmp(p, &q, sizeof(q)) != 0)
		fprintf(stderr, "gpumem fuzz: %s: the text was:\n%s\n", what, text);
	fuzz_check_policy_equal(p, &q, what);
	again = gpumem_policy_format(&q, fmt, 1);
	FUZZ_CHECK(again && strcmp(text, again) == 0, "%s: not a fixed point:\n%s\n---\n%s",
		   what, text, again ? again : "(null)");
	free(again);
	free(text);
	gpumem_diags_free(&d);
}


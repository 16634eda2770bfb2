/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: a user's policy file, end to end through the engine.
 *
 * bytes -> gpumem_policy_parse; when the file is valid, every promise the
 * plugin relies on is checked: the values are in range, the JSON it
 * forwards to the nodes (and the YAML `gpumem show` prints) parse back to
 * the same policy, the effective policy under two sites respects their
 * limits, and the task environment holds only the allowed variables with
 * well-formed values.  The same bytes also go to the nodes' parser of a
 * forwarded policy (gpumem_policy_parse_json): what it accepts, the file
 * parser must accept too, as the same policy (one validation after every
 * parser).  Everything allocated is freed, so LeakSanitizer
 * sees any leak of the engine.
 */
#include "fuzz.h"

/* A site like etc/gpumem.yaml: everything open, moderate caps. */
static const char site_open_text[] =
	"version: 1\n"
	"defaults:\n  l2:\n    reset_at_exit: true\n  check:\n    bandwidth:\n"
	"      min_fraction: 0.85\n    on_fail: warn\n"
	"limits:\n  l2_max_percent: 50\n  mps_min_active_thread_percentage: 10\n"
	"  mps_max_active_thread_percentage: 100\n  mps_max_pinned_device_mem_limit: 80GiB\n"
	"  mps_daemons: [none, site, job]\n  on_fail: [warn, fail]\n"
	"  sections: [l2, mps, unified_memory, check]\n"
	"policy_dir: /usr/share/gpumem/policies\n";

/* A strict site that closes a section: every clamp must become an error. */
static const char site_strict_text[] =
	"version: 1\n"
	"defaults:\n  mps:\n    daemon: none\n    active_thread_percentage: 30\n"
	"  unified_memory:\n    preferred_location: gpu\n  check:\n    on_fail: drain\n"
	"limits:\n  l2_max_percent: 37.5%\n  mps_min_active_thread_percentage: 20\n"
	"  mps_max_active_thread_percentage: 60\n  mps_max_pinned_device_mem_limit: 1GiB\n"
	"  mps_daemons: none\n  on_fail: [warn, drain]\n  sections: [l2, mps, check]\n"
	"  strict: true\n";

static struct gpumem_site site_open, site_strict;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_load_site(site_open_text, &site_open);
	fuzz_load_site(site_strict_text, &site_strict);
	fuzz_nodes_init();
	return 0;
}

/*
 * The bytes as a forwarded policy (JSON, the nodes' parser): accepted
 * means the file parser accepts the same policy, written as YAML.
 */
static void check_forwarded_agrees(const uint8_t *data, size_t size)
{
	struct gpumem_diags d = { 0 };
	struct gpumem_policy p, q;
	char *yaml;
	int rv = gpumem_policy_parse_json((const char *)data, size, "fuzz.json", &p, &d);

	gpumem_diags_free(&d);
	if (rv != 0)
		return;
	yaml = gpumem_policy_format(&p, GPUMEM_FMT_YAML, 1);
	FUZZ_CHECK(yaml != NULL, "forwarded: YAML form");
	rv = gpumem_policy_parse(yaml, strlen(yaml), "as-yaml", &q, &d);
	if (rv != 0)
		gpumem_diags_print(&d, stderr);
	FUZZ_CHECK(rv == 0, "the forwarded policy's parser accepted what the file parser refuses:\n%s",
		   yaml);
	fuzz_check_policy_equal(&p, &q, "forwarded and file parser");
	gpumem_diags_free(&d);
	free(yaml);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gpumem_diags d = { 0 };
	struct gpumem_policy p, q;
	char *text, advice[512], tiny[8];
	int rv;

	check_forwarded_agrees(data, size);
	rv = gpumem_policy_parse((const char *)data, size, "fuzz.yaml", &p, &d);
	fuzz_check_diags(&d, rv, 0);
	/* Policies never warn while parsing: every problem fails the file. */
	FUZZ_CHECK(d.nwarnings == 0, "%d parse warnings", d.nwarnings);
	gpumem_diags_free(&d);
	if (rv != 0)
		return 0;

	fuzz_check_policy_sane(&p);
	/*
	 * Every field the file changed is flagged in p.set: overlaying p on
	 * the built-in defaults gives p back.  A value without its bit would
	 * be lost when the plugin forwards only the keys set.
	 */
	gpumem_policy_init(&q);
	gpumem_policy_overlay(&q, &p);
	fuzz_check_policy_equal(&q, &p, "overlay on the defaults");
	fuzz_check_round_trip(&p, GPUMEM_FMT_JSON);
	fuzz_check_round_trip(&p, GPUMEM_FMT_YAML);
	/* The full forms (`gpumem show`) are for people; they must just work. */
	text = gpumem_policy_format(&p, GPUMEM_FMT_JSON, 0);
	FUZZ_CHECK(text != NULL, "full JSON");
	free(text);
	text = gpumem_policy_format(&p, GPUMEM_FMT_YAML, 0);
	FUZZ_CHECK(text != NULL, "full YAML");
	free(text);
	FUZZ_CHECK(gpumem_um_format(&p, advice, sizeof(advice)) == 0, "advice");
	FUZZ_CHECK(gpumem_um_format(&p, tiny, sizeof(tiny)) == -1, "advice fits in 8 bytes");

	fuzz_check_effective(&site_open, &p);
	fuzz_check_effective(&site_strict, &p);
	fuzz_check_effective(NULL, &p);
	/* The raw user policy reaches env() too when the node has no site file. */
	fuzz_check_env(&p, &fuzz_node_two, 100);
	fuzz_check_env(&p, &fuzz_node_many, 100);
	fuzz_check_env(&p, &fuzz_node_noprobe, 100);
	return 0;
}

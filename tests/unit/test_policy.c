/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Policy parsing, overlay and the JSON round trip used for forwarding. */
#include <stdlib.h>
#include <string.h>
#include "core_policy.h"
#include "tap.h"

static int parse(const char *text, struct gpumem_policy *p, struct gpumem_diags *d)
{
	return gpumem_policy_parse(text, strlen(text), "t.yaml", p, d);
}

int main(void)
{
	struct gpumem_diags d = { 0 };
	struct gpumem_policy p, q, base;
	char *json, *msg;
	const char *lit;

	ok(parse("version: 1\n"
		 "l2:\n  persisting_limit: 62.5%\n  reset_at_exit: false\n"
		 "mps:\n  active_thread_percentage: 25\n  pinned_device_mem_limit: 40GiB\n"
		 "  daemon: job\n"
		 "unified_memory:\n  preferred_location: cpu\n  accessed_by: [gpu, cpu]\n"
		 "  read_mostly: true\n  prefetch: gpu\n  min_bytes: 2MiB\n"
		 "check:\n  before: true\n  after: false\n  bandwidth:\n    min_fraction: 0.9\n"
		 "  on_fail: fail\n  l2_ab: true\nprofile:\n  enabled: false\n", &p, &d) == 0,
	   "full policy parses");
	is_int(d.nerrors, 0, "no errors");
	ok(p.l2.limit_is_percent && p.l2.limit_percent == 62.5, "l2 limit 62.5%%");
	is_int(p.l2.reset_at_exit, 0, "reset_at_exit false");
	is_int(p.mps.active_thread_percentage, 25, "mps share");
	ok(p.mps.pinned_device_mem_limit == 40ULL << 30, "pinned 40GiB");
	is_int(p.mps.daemon, GPUMEM_DAEMON_JOB, "daemon job");
	is_int(p.um.preferred_location, GPUMEM_LOC_CPU, "preferred cpu");
	is_int(p.um.accessed_by, GPUMEM_ACCESS_CPU | GPUMEM_ACCESS_GPU, "accessed_by both");
	is_int(p.um.read_mostly, 1, "read_mostly");
	is_int(p.um.prefetch, GPUMEM_LOC_GPU, "prefetch gpu");
	ok(p.um.min_bytes == 2u << 20, "min_bytes 2MiB");
	ok(p.check.before && !p.check.after && p.check.l2_ab, "check flags");
	ok(p.check.min_fraction == 0.9, "min_fraction 0.9");
	is_int(p.check.on_fail, GPUMEM_ONFAIL_FAIL, "on_fail fail");
	ok(!p.profile.enabled && (p.set & GPUMEM_K_PROFILE), "profile.enabled false");
	is_int(p.sections, GPUMEM_S_ALL, "all five sections seen");

	/* Forwarding: JSON of the keys the user set parses back identically. */
	json = gpumem_policy_format(&p, GPUMEM_FMT_JSON, 1);
	ok(json != NULL, "format JSON");
	ok(gpumem_policy_parse(json, strlen(json), "fwd", &q, &d) == 0, "JSON parses back");
	is_int(q.set, p.set, "same keys set after the round trip");
	is_int(q.sections, p.sections, "same sections after the round trip");
	ok(q.l2.limit_percent == 62.5 && q.mps.pinned_device_mem_limit == p.mps.pinned_device_mem_limit &&
	   q.um.accessed_by == p.um.accessed_by && q.check.min_fraction == 0.9 &&
	   q.um.min_bytes == p.um.min_bytes, "same values after the round trip");
	free(json);

	/* Only what the user set travels; an empty section still counts. */
	ok(parse("version: 1\nunified_memory: {}\nl2:\n  persisting_limit: 3MiB\n", &p, &d) == 0,
	   "empty section and a byte limit");
	is_int(p.sections, GPUMEM_S_UM | GPUMEM_S_L2, "sections seen");
	is_int(p.set, GPUMEM_K_L2_LIMIT, "only the limit set");
	json = gpumem_policy_format(&p, GPUMEM_FMT_JSON, 1);
	is_str(json, "{\"version\": 1, \"l2\": {\"persisting_limit\": \"3MiB\"}, "
	       "\"unified_memory\": {}}\n", "forwarded JSON holds exactly that");
	ok(gpumem_policy_parse(json, strlen(json), "fwd", &q, &d) == 0 && q.sections == p.sections &&
	   !q.l2.limit_is_percent && q.l2.limit_bytes == 3u << 20, "and parses back");
	free(json);

	/* The node reads the forwarded JSON with json-c, through the same table. */
	gpumem_diags_free(&d);
	json = gpumem_policy_format(&p, GPUMEM_FMT_JSON, 1);
	ok(gpumem_policy_parse_json(json, strlen(json), "fwd", &q, &d) == 0 && d.head == NULL &&
	   q.sections == p.sections && q.set == p.set && q.l2.limit_bytes == 3u << 20,
	   "forwarded JSON: read back through json-c");
	free(json);
	ok(gpumem_policy_parse_json("version: 1\n", 11, "fwd", &q, &d) < 0 && d.head &&
	   strstr(d.head->msg, "not valid JSON: line 1, column 1"), "forwarded JSON: YAML is refused");
	gpumem_diags_free(&d);
	lit = "{\"version\": 1, \"mps\": {\"active_thread_percentage\": 500}, \"LD_PRELOAD\": \"x\"}";
	ok(gpumem_policy_parse_json(lit, strlen(lit), "fwd", &q, &d) < 0 && d.nerrors == 2 &&
	   strstr(d.head->msg, "active_thread_percentage") && strstr(d.head->next->msg, "LD_PRELOAD"),
	   "forwarded JSON: a bad value and an unknown key, both named");
	gpumem_diags_free(&d);
	lit = "{\"version\": 1, \"l2\": [1, 2]}";
	ok(gpumem_policy_parse_json(lit, strlen(lit), "fwd", &q, &d) < 0 && d.nerrors == 1,
	   "forwarded JSON: a list for a section is refused");
	gpumem_diags_free(&d);
	/* Placement by size: parsed, forwarded, merged, passed on. */
	{
		static const char site_txt[] = "version: 1\nlimits:\n  um_max_gpu_fraction: 0.5\n"
			"  um_min_reserve: 4GiB\n";
		struct gpumem_site site;
		struct gpumem_policy eff;
		char adv[512];

		ok(parse("version: 1\nunified_memory:\n  placement: stripe\n  gpu_fraction: 0.75\n"
			 "  reserve: 2GiB\n  granularity: 4MiB\n", &p, &d) == 0, "stripe policy parses");
		ok(p.um.placement == GPUMEM_PLACE_STRIPE && p.um.gpu_fraction == 0.75 &&
		   p.um.reserve == 2ull << 30 && p.um.granularity == 4u << 20, "  its values");
		json = gpumem_policy_format(&p, GPUMEM_FMT_JSON, 1);
		is_str(json, "{\"version\": 1, \"unified_memory\": {\"placement\": \"stripe\", "
		       "\"gpu_fraction\": 0.75, \"reserve\": \"2GiB\", \"granularity\": \"4MiB\"}}\n",
		       "  forwarded JSON");
		ok(gpumem_policy_parse(json, strlen(json), "fwd", &q, &d) == 0 && q.set == p.set &&
		   q.um.gpu_fraction == 0.75 && q.um.placement == GPUMEM_PLACE_STRIPE &&
		   q.um.reserve == p.um.reserve && q.um.granularity == p.um.granularity,
		   "  parses back the same");
		free(json);
		gpumem_site_init(&site);
		ok(gpumem_site_parse(site_txt, strlen(site_txt), "site.yaml", &site, &d) == 0, "a site capping it");
		gpumem_diags_free(&d);
		ok(gpumem_policy_effective(&site, &p, "u.yaml", &eff, &d) == 0, "  merge: warnings only");
		ok(eff.um.gpu_fraction == 0.5 && eff.um.reserve == 4ull << 30 && eff.um.site_max_fraction == 0.5,
		   "  gpu_fraction capped at 0.5, reserve raised to 4GiB, cap carried");
		msg = gpumem_diags_join(&d, 0);
		like(msg, "unified_memory.gpu_fraction: 0.75 is above the site limit of 0.5: using 0.5", "  said");
		like(msg, "unified_memory.reserve: 2GiB is below the site minimum of 4GiB: using 4GiB", "  said");
		free(msg);
		gpumem_diags_free(&d);
		ok(gpumem_um_format(&eff, adv, sizeof(adv)) == 0, "  GPUMEM_UM_ADVICE");
		is_str(adv, "v2;preferred=none;accessed_by=none;read_mostly=0;prefetch=none;min_bytes=1048576;"
		       "placement=stripe;gpu_fraction=0.5;gpu_max=0.5;reserve=4294967296;granularity=4194304",
		       "  is v2 with the placement");
		ok(parse("version: 1\nunified_memory:\n  placement: stripe\n", &p, &d) == 0, "stripe, auto");
		ok(gpumem_policy_effective(&site, &p, "u.yaml", &eff, &d) == 0 &&
		   gpumem_um_format(&eff, adv, sizeof(adv)) == 0, "  merged");
		like(adv, ";gpu_fraction=auto;gpu_max=0.5;reserve=4294967296;granularity=2097152", "  auto under the cap");
		gpumem_diags_free(&d);
		json = gpumem_policy_format(&p, GPUMEM_FMT_JSON, 1);
		ok(gpumem_policy_parse(json, strlen(json), "fwd", &q, &d) == 0 && q.set == p.set,
		   "  forwards (%s)", json);
		free(json);
		ok(parse("version: 1\nunified_memory:\n  preferred_location: cpu\n  min_bytes: 2MiB\n", &p, &d) == 0 &&
		   gpumem_policy_effective(&site, &p, "u.yaml", &eff, &d) == 0 &&
		   gpumem_um_format(&eff, adv, sizeof(adv)) == 0, "no placement");
		is_str(adv, "v1;preferred=cpu;accessed_by=none;read_mostly=0;prefetch=none;min_bytes=2097152",
		       "  the same v1 string as before placement");
		gpumem_site_free(&site);
		gpumem_diags_free(&d);
	}

	/*
	 * One validation after every parser: a rule that spans keys
	 * (stripe sets the preferred location itself) is refused alike by the
	 * file parser (srun, the job prolog) and the forwarded policy's parser
	 * (slurmstepd); both name the key.
	 */
	{
		static const char *const conflicts[][2] = {
			{ "version: 1\nunified_memory:\n  placement: stripe\n  preferred_location: gpu\n",
			  "{\"version\": 1, \"unified_memory\": {\"placement\": \"stripe\", \"preferred_location\": \"gpu\"}}" },
			{ "version: 1\nunified_memory:\n  placement: stripe\n  prefetch: cpu\n",
			  "{\"version\": 1, \"unified_memory\": {\"placement\": \"stripe\", \"prefetch\": \"cpu\"}}" },
			{ "version: 1\nunified_memory:\n  placement: stripe\n  read_mostly: true\n",
			  "{\"version\": 1, \"unified_memory\": {\"placement\": \"stripe\", \"read_mostly\": true}}" },
		};

		for (size_t i = 0; i < sizeof(conflicts) / sizeof(conflicts[0]); i++) {
			struct gpumem_diags dy = { 0 }, dj = { 0 };
			int ry = gpumem_policy_parse(conflicts[i][0], strlen(conflicts[i][0]), "f.yaml",
						     &p, &dy);
			int rj = gpumem_policy_parse_json(conflicts[i][1], strlen(conflicts[i][1]),
							  "fwd", &q, &dj);

			ok(ry < 0 && rj < 0 && dy.nerrors == 1 && dj.nerrors == 1,
			   "stripe conflict %zu: refused by the file parser and the forwarded one", i);
			like(dj.head ? dj.head->msg : NULL, "unified_memory.placement: stripe",
			     "  ... the forwarded one says why");
			gpumem_diags_free(&dy);
			gpumem_diags_free(&dj);
		}
	}

	/* Overlay: top's set keys win, others stay. */
	gpumem_policy_init(&base);
	parse("version: 1\ncheck:\n  after: true\n  on_fail: fail\n", &q, &d);
	gpumem_policy_overlay(&base, &q);
	parse("version: 1\ncheck:\n  on_fail: warn\n", &q, &d);
	gpumem_policy_overlay(&base, &q);
	ok(base.check.after == 1 && base.check.on_fail == GPUMEM_ONFAIL_WARN, "overlay order");
	/* The overlay follows the key table: every key a policy sets comes over. */
	{
		static const char *const every[] = {
			"version: 1\nl2:\n  persisting_limit: 30MiB\n  reset_at_exit: false\n"
			"mps:\n  active_thread_percentage: 25\n  pinned_device_mem_limit: 40GiB\n"
			"  daemon: job\nunified_memory:\n  preferred_location: cpu\n"
			"  accessed_by: [gpu]\n  read_mostly: true\n  prefetch: gpu\n"
			"  min_bytes: 2MiB\ncheck:\n  before: true\n  after: true\n"
			"  bandwidth:\n    min_fraction: 0.5\n  on_fail: drain\n  l2_ab: true\n"
			"profile:\n  enabled: false\n",
			"version: 1\nl2:\n  persisting_limit: 40%\nunified_memory:\n"
			"  placement: stripe\n  gpu_fraction: 0.25\n  reserve: 2GiB\n"
			"  granularity: 4MiB\n  min_bytes: 64MiB\n",
		};

		for (size_t i = 0; i < sizeof(every) / sizeof(every[0]); i++) {
			char *want, *got;

			gpumem_policy_init(&base);
			ok(parse(every[i], &q, &d) == 0, "policy %zu setting many keys parses", i);
			gpumem_policy_overlay(&base, &q);
			want = gpumem_policy_format(&q, GPUMEM_FMT_YAML, 0);
			got = gpumem_policy_format(&base, GPUMEM_FMT_YAML, 0);
			is_str(got, want, "overlay %zu over the defaults gives the policy itself", i);
			free(want);
			free(got);
		}
	}

	/* Every error is collected, each with its place. */
	gpumem_diags_free(&d);
	ok(parse("version: 1\nl2:\n  persisting_limit: x\n  reset: 1\nmps:\n  daemon: maybe\n",
		 &p, &d) < 0, "bad policy fails");
	is_int(d.nerrors, 3, "three errors");
	msg = gpumem_diags_join(&d, 1);
	like(msg, "t.yaml:3:21: error: l2.persisting_limit: 'x': expected a size", "first");
	like(msg, "t.yaml:4:3: error: unknown key 'l2.reset' (did you mean 'reset_at_exit'?)",
	     "second, with did-you-mean");
	like(msg, "t.yaml:6:11: error: mps.daemon: 'maybe' is not one of: none, site, job", "third");
	free(msg);
	gpumem_diags_free(&d);

	ok(parse("version: 1\nunified_memory:\n  accessed_by: [gpu, gpu]\n", &p, &d) < 0,
	   "a list item twice");
	msg = gpumem_diags_join(&d, 1);
	like(msg, "'gpu' is listed twice", "named");
	free(msg);
	gpumem_diags_free(&d);
	ok(parse("version: 1\nunified_memory:\n  accessed_by: gpu\n", &p, &d) == 0 &&
	   p.um.accessed_by == GPUMEM_ACCESS_GPU, "a single word is a one-item list");
	ok(parse("version: 1.0\n", &p, &d) == 0, "version 1.0 is version 1");
	ok(parse("[1, 2]\n", &p, &d) < 0, "a list is not a policy");
	msg = gpumem_diags_join(&d, 1);
	like(msg, "t.yaml:1:1: error: a policy is a mapping of keys, not a list", "said so");
	free(msg);
	gpumem_diags_free(&d);
	ok(parse("version: 1\n\"l2\": {\"reset_at_exit\": \"true\"}\n", &p, &d) == 0,
	   "quoted scalars are read like plain ones");
	return tap_done();
}

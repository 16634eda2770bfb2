/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Site file: limits, references, named policies, and the effective merge. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core_policy.h"
#include "tap.h"

/* limits.min_fraction: a floor under a user's check.bandwidth.min_fraction. */
static void floor_clamp(void)
{
	static const char site[] = "version: 1\nlimits:\n  min_fraction: 0.85\n";
	static const char bad[] = "version: 1\ndefaults:\n  check:\n    bandwidth:\n"
		"      min_fraction: 0.8\nlimits:\n  min_fraction: 0.85\n";
	static const char lax[] = "version: 1\ncheck:\n  bandwidth:\n    min_fraction: 0.2\n";
	struct gpumem_diags d = { 0 };
	struct gpumem_policy user, out;
	struct gpumem_site s;
	char *msg;

	gpumem_site_init(&s);
	ok(gpumem_site_parse(site, sizeof(site) - 1, "site.yaml", &s, &d) == 0 &&
	   fabs(s.limits.min_fraction - 0.85) < 1e-12, "limits.min_fraction is read");
	gpumem_policy_init(&user);
	ok(gpumem_policy_parse(lax, sizeof(lax) - 1, "lax.yaml", &user, &d) == 0, "a user asks 0.2");
	ok(gpumem_policy_effective(&s, &user, "lax.yaml", &out, &d) == 0 &&
	   fabs(out.check.min_fraction - 0.85) < 1e-12, "... and gets the floor, 0.85");
	msg = gpumem_diags_join(&d, 0);
	like(msg, "lax.yaml: warning: check.bandwidth.min_fraction: 0.2 is below the site minimum of "
	     "0.85: using 0.85", "... with a warning naming the key, the asked value and the floor");
	free(msg);
	gpumem_diags_free(&d);
	s.limits.strict = 1;
	ok(gpumem_policy_effective(&s, &user, "lax.yaml", &out, &d) < 0 && d.nerrors == 1,
	   "... an error where the site is strict");
	gpumem_diags_free(&d);
	ok(gpumem_site_parse(bad, sizeof(bad) - 1, "site.yaml", &s, &d) < 0,
	   "a site whose default is below its own floor is refused");
	msg = gpumem_diags_join(&d, 1);
	like(msg, "defaults.check.bandwidth.min_fraction 0.8 is below limits.min_fraction 0.85",
	     "... saying so");
	free(msg);
	gpumem_diags_free(&d);
	gpumem_site_free(&s);
}

/* advised.by_default: the three modes, the two older words, anything else at line:col. */
static void by_default(void)
{
	static const struct { const char *v; int mode; } good[] = {
		{ "gain", GPUMEM_BY_DEFAULT_GAIN }, { "all", GPUMEM_BY_DEFAULT_ALL },
		{ "off", GPUMEM_BY_DEFAULT_OFF }, { "true", GPUMEM_BY_DEFAULT_ALL },
		{ "false", GPUMEM_BY_DEFAULT_OFF },
	};
	struct gpumem_diags d = { 0 };
	struct gpumem_site s;
	char buf[128], *msg;

	gpumem_site_init(&s);
	is_int(s.advised.by_default, GPUMEM_BY_DEFAULT_OFF, "by_default not said: off");
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(buf, sizeof(buf), "version: 1\nadvised:\n  by_default: %s\n", good[i].v);
		gpumem_site_init(&s);
		ok(gpumem_site_parse(buf, strlen(buf), "s.yaml", &s, &d) == 0 &&
		   s.advised.by_default == good[i].mode, "by_default: %s is %s", good[i].v,
		   gpumem_by_default_names[good[i].mode]);
		gpumem_site_free(&s);
	}
	snprintf(buf, sizeof(buf), "version: 1\nadvised:\n  by_default: yes\n");
	gpumem_site_init(&s);
	ok(gpumem_site_parse(buf, strlen(buf), "s.yaml", &s, &d) < 0, "by_default: yes: refused");
	msg = gpumem_diags_join(&d, 1);
	like(msg, "s.yaml:3:15: error: advised.by_default: 'yes' is not one of: gain ",
	     "... at file:line:col");
	like(msg, ", all, off (true is all, false is off)", "... with the words it takes");
	free(msg);
	gpumem_diags_free(&d);
	gpumem_site_free(&s);
}

int main(void)
{
	static const char site_text[] =
		"version: 1\n"
		"defaults:\n  l2:\n    persisting_limit: 10%\n  check:\n    after: true\n"
		"limits:\n  l2_max_percent: 40\n  mps_min_active_thread_percentage: 20\n"
		"  mps_max_active_thread_percentage: 80\n  mps_daemons: [none, job]\n"
		"  on_fail: [warn, fail, drain]\n  sections: [l2, check]\n"
		"policy_dir: /etc/gpumem/policies\n"
		"references:\n  NVIDIA H200:\n    read: 4373\n    triad: 4127\n"
		"  NVIDIA H100 80GB HBM3: {read: 3000, h2d: 55}\n"
		"report:\n  dir: /var/lib/gpumem\n"
		"drain:\n  enabled: true\n  reason: 'gpumem: bad GPU'\n"
		"check:\n  timeout: 30\n  min_interval: 15\n";
	struct gpumem_diags d = { 0 };
	struct gpumem_site s;
	struct gpumem_policy u, eff;
	const struct gpumem_ref *r;
	char *path, *msg;

	gpumem_site_init(&s);
	ok(gpumem_site_parse(site_text, strlen(site_text), "site.yaml", &s, &d) == 0,
	   "site parses");
	is_int(d.nerrors, 0, "no errors");
	ok(s.limits.l2_max_percent == 40, "l2 limit");
	is_int(s.limits.mps_min_pct, 20, "mps min");
	is_int(s.limits.mps_max_pct, 80, "mps max");
	is_int(s.limits.daemons_allowed, (1 << GPUMEM_DAEMON_NONE) | (1 << GPUMEM_DAEMON_JOB),
	       "daemons");
	is_int(s.limits.sections_allowed, GPUMEM_S_L2 | GPUMEM_S_CHECK, "sections");
	is_str(s.policy_dir, "/etc/gpumem/policies", "policy_dir");
	is_int(s.nrefs, 2, "two reference models");
	r = gpumem_site_ref(&s, "nvidia h200");
	ok(r && r->read == 4373 && r->triad == 4127 && r->copy == 0, "H200 reference (case-insensitive)");
	r = gpumem_site_ref(&s, "NVIDIA H100 80GB HBM3");
	ok(r && r->h2d == 55, "H100 reference in flow style");
	ok(gpumem_site_ref(&s, "NVIDIA A100") == NULL, "unknown model: no reference");
	is_str(s.report.dir, "/var/lib/gpumem", "report dir");
	ok(s.drain.enabled && !strcmp(s.drain.reason, "gpumem: bad GPU"), "drain");
	is_int(s.check_timeout_s, 30, "check timeout");
	is_int(s.check_min_interval_min, 15, "check min_interval (minutes)");

	path = gpumem_policy_resolve(&s, "stream", &d);
	is_str(path, "/etc/gpumem/policies/stream.yaml", "named policy resolves into policy_dir");
	free(path);
	path = gpumem_policy_resolve(&s, "./mine.yaml", &d);
	is_str(path, "./mine.yaml", "paths stay paths");
	free(path);
	path = gpumem_policy_resolve(&s, "../etc", &d);
	ok(path != NULL, "a path with / is a path (read as the user)");
	free(path);
	ok(gpumem_policy_resolve(&s, ".hidden", &d) == NULL, "names cannot start with a dot");
	ok(gpumem_policy_resolve(NULL, "stream", &d) == NULL, "no site: no named policies");
	gpumem_diags_free(&d);

	/* Effective: defaults, then user, then clamps with warnings. */
	gpumem_policy_parse("version: 1\nl2:\n  persisting_limit: 60%\nmps:\n"
			    "  active_thread_percentage: 90\n", strlen("version: 1\nl2:\n  persisting_limit: 60%\nmps:\n"
			    "  active_thread_percentage: 90\n"), "u.yaml", &u, &d);
	gpumem_diags_free(&d);
	ok(gpumem_policy_effective(&s, &u, "u.yaml", &eff, &d) == 0, "effective (warnings only)");
	ok(eff.l2.limit_percent == 40, "L2 clamped to the site's 40%%");
	is_int(eff.mps.active_thread_percentage, 0, "mps section closed to users: not taken");
	ok(eff.check.after == 1, "site default check.after kept");
	msg = gpumem_diags_join(&d, 0);
	like(msg, "u.yaml: warning: section 'mps' is not open to users", "closed section warned");
	like(msg, "u.yaml: warning: l2.persisting_limit: 60% is above the site limit of 40%: using 40%",
	     "clamp warned");
	free(msg);
	gpumem_diags_free(&d);

	ok(gpumem_policy_effective(&s, NULL, NULL, &eff, &d) == 0 && eff.l2.limit_percent == 10,
	   "no user policy: the site defaults");

	gpumem_site_free(&s);
	ok(gpumem_site_parse("version: 1\nlimits:\n  mps_min_active_thread_percentage: 90\n"
			     "  mps_max_active_thread_percentage: 10\n", strlen("version: 1\nlimits:\n  mps_min_active_thread_percentage: 90\n"
			     "  mps_max_active_thread_percentage: 10\n"), "bad.yaml", &s, &d) < 0,
	   "min above max refused");
	msg = gpumem_diags_join(&d, 1);
	like(msg, "mps_min_active_thread_percentage 90 is above", "said so");
	free(msg);
	gpumem_diags_free(&d);
	gpumem_site_free(&s);
	ok(gpumem_site_parse("version: 1\n", strlen("version: 1\n"), "d.yaml", &s, &d) == 0 &&
	   s.check_min_interval_min == 60, "check.min_interval defaults to 60 minutes");
	gpumem_diags_free(&d);
	gpumem_site_free(&s);
	ok(gpumem_site_parse("version: 1\ncheck:\n  min_interval: -5\n", strlen("version: 1\ncheck:\n  min_interval: -5\n"),
			     "mi.yaml", &s, &d) < 0, "a negative check.min_interval refused");
	msg = gpumem_diags_join(&d, 1);
	like(msg, "mi.yaml:3:17", "... at file:line:col");
	free(msg);
	gpumem_diags_free(&d);
	/* The profile: on by default; users may turn it off only where the site lists the section. */
	gpumem_site_free(&s);
#define PROF_OFF "version: 1\nprofile:\n  enabled: false\n"
	gpumem_policy_parse(PROF_OFF, strlen(PROF_OFF), "off.yaml", &u, &d);
	gpumem_diags_free(&d);
	ok(gpumem_site_parse("version: 1\n", 11, "s.yaml", &s, &d) == 0 &&
	   s.profile_interval_ms == 1000, "site without profile: interval 1000 ms");
	ok(gpumem_policy_effective(&s, &u, "off.yaml", &eff, &d) == 0 && eff.profile.enabled == 1,
	   "profile.enabled: false refused by default: the profile stays on");
	msg = gpumem_diags_join(&d, 0);
	like(msg, "off.yaml: warning: section 'profile' is not open to users", "... and said so");
	free(msg);
	gpumem_diags_free(&d);
	gpumem_site_free(&s);
#define PROF_SITE "version: 1\nlimits:\n  sections: [profile]\nprofile:\n  interval_ms: 250\n"
	ok(gpumem_site_parse(PROF_SITE, strlen(PROF_SITE), "s.yaml", &s, &d) == 0 &&
	   s.profile_interval_ms == 250, "site profile.interval_ms 250");
	ok(gpumem_policy_effective(&s, &u, "off.yaml", &eff, &d) == 0 && eff.profile.enabled == 0,
	   "a site listing the section lets users turn the profile off");
	gpumem_diags_free(&d);
	gpumem_site_free(&s);
#define PROF_FAST "version: 1\nprofile:\n  interval_ms: 50\n"
	ok(gpumem_site_parse(PROF_FAST, strlen(PROF_FAST), "fast.yaml", &s, &d) < 0,
	   "profile.interval_ms under 100 refused (GPM needs 100 ms)");
	msg = gpumem_diags_join(&d, 1);
	like(msg, "fast.yaml:3:16", "... at file:line:col");
	free(msg);
	gpumem_diags_free(&d);
	gpumem_site_free(&s);
	ok(gpumem_site_parse("version: 1\npolicy_dir: relative/dir\n", strlen("version: 1\npolicy_dir: relative/dir\n"), "rel.yaml", &s, &d) < 0,
	   "relative policy_dir refused");
	gpumem_diags_free(&d);
	gpumem_site_free(&s);
	ok(gpumem_site_parse("version: 1\nreferences:\n  X: {read: 1}\n  X: {read: 2}\n", strlen("version: 1\nreferences:\n  X: {read: 1}\n  X: {read: 2}\n"),
			     "dupref.yaml", &s, &d) < 0, "a model listed twice refused");
	gpumem_diags_free(&d);
	gpumem_site_free(&s);
	/* A closed section drops every key of it: the bits come from the key table. */
	is_int(gpumem_section_key_bits(3), GPUMEM_K_CHECK_BEFORE | GPUMEM_K_CHECK_AFTER |
	       GPUMEM_K_CHECK_FRACTION | GPUMEM_K_CHECK_ONFAIL | GPUMEM_K_CHECK_L2AB,
	       "check's key bits, bandwidth.min_fraction (a sub-section) included");
	is_int(gpumem_section_key_bits(0), GPUMEM_K_L2_LIMIT | GPUMEM_K_L2_RESET, "l2's key bits");
	is_int(gpumem_section_key_bits(4), GPUMEM_K_PROFILE, "profile's key bits");
	is_str(gpumem_daemon_name(GPUMEM_DAEMON_JOB), "job", "enum names from the one list");
	is_str(gpumem_placement_name((enum gpumem_placement)7), "none", "... out of range: the first");
	floor_clamp();
	by_default();
	return tap_done();
}

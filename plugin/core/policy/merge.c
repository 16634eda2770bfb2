/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The effective policy: built-in defaults < site defaults < user policy,
 * then the site limits.  A user can ask for anything the format allows; the
 * site decides what it gets, and every adjustment is said out loud.
 */
#include <string.h>
#include "schema.h"

/* unified_memory.placement and its numbers, within the site's limits. */
static void um_limits(const struct gpumem_site *s, struct gpumem_policy *out, const char *name,
		      enum gpumem_sev sev, struct gpumem_diags *d)
{
	double cap = s->limits.um_max_gpu_fraction;

	out->um.site_max_fraction = cap;
	if (!(s->limits.placements_allowed & (1u << out->um.placement))) {
		gpumem_diag_add(d, sev, name, 0, 0,
				"unified_memory.placement: '%s' is not allowed on this site: using '%s'",
				gpumem_placement_name(out->um.placement),
				gpumem_placement_name(s->defaults.um.placement));
		out->um.placement = s->defaults.um.placement;
	}
	if (out->um.placement != GPUMEM_PLACE_STRIPE)
		return;
	if (out->um.gpu_fraction != GPUMEM_FRACTION_AUTO && out->um.gpu_fraction > cap) {
		gpumem_diag_add(d, sev, name, 0, 0,
				"unified_memory.gpu_fraction: %g is above the site limit of %g: "
				"using %g", out->um.gpu_fraction, cap, cap);
		out->um.gpu_fraction = cap;
	}
	if (out->um.reserve < s->limits.um_min_reserve) {
		char asked[32], lim[32];

		gpumem_format_size(out->um.reserve, asked, sizeof(asked));
		gpumem_format_size(s->limits.um_min_reserve, lim, sizeof(lim));
		gpumem_diag_add(d, sev, name, 0, 0,
				"unified_memory.reserve: %s is below the site minimum of %s: "
				"using %s", asked, lim, lim);
		out->um.reserve = s->limits.um_min_reserve;
	}
}

/* The user's policy over OUT, less the sections the site keeps closed. */
static void overlay_user(const struct gpumem_site *s, const struct gpumem_policy *user,
			 struct gpumem_policy *out, const char *name, enum gpumem_sev sev,
			 struct gpumem_diags *d)
{
	const char *site = s && s->path ? s->path : "the site file";
	struct gpumem_policy u = *user;
	unsigned denied = s ? u.sections & ~s->limits.sections_allowed : 0;

	for (unsigned i = 0; gpumem_section_names[i]; i++) {
		if (!(denied & (1u << i)))
			continue;
		gpumem_diag_add(d, sev, name, 0, 0,
				"section '%s' is not open to users on this site (%s): "
				"the site's settings are used instead", gpumem_section_names[i], site);
		u.set &= ~gpumem_section_key_bits(i);
		u.sections &= ~(1u << i);
	}
	gpumem_policy_overlay(out, &u);
}

/* The site's MPS limits: share range, pinned memory cap, allowed daemons. */
static void mps_limits(const struct gpumem_site *s, struct gpumem_policy *out, const char *name,
		       enum gpumem_sev sev, struct gpumem_diags *d)
{
	if (out->set & GPUMEM_K_MPS_PCT) {
		int pct = out->mps.active_thread_percentage;
		int lo = s->limits.mps_min_pct, hi = s->limits.mps_max_pct;

		if (pct < lo || pct > hi) {
			int to = pct < lo ? lo : hi;

			gpumem_diag_add(d, sev, name, 0, 0,
					"mps.active_thread_percentage: %d is outside the site "
					"range %d..%d: using %d", pct, lo, hi, to);
			out->mps.active_thread_percentage = to;
		}
	}
	if ((out->set & GPUMEM_K_MPS_PINNED) && s->limits.mps_max_pinned &&
	    (out->mps.pinned_device_mem_limit == 0 ||
	     out->mps.pinned_device_mem_limit > s->limits.mps_max_pinned)) {
		char asked[32], lim[32];

		gpumem_format_size(out->mps.pinned_device_mem_limit, asked, sizeof(asked));
		gpumem_format_size(s->limits.mps_max_pinned, lim, sizeof(lim));
		gpumem_diag_add(d, sev, name, 0, 0,
				"mps.pinned_device_mem_limit: %s is above the site limit of %s: "
				"using %s", out->mps.pinned_device_mem_limit ? asked : "0 (none)",
				lim, lim);
		out->mps.pinned_device_mem_limit = s->limits.mps_max_pinned;
	}
	if (!(s->limits.daemons_allowed & (1u << out->mps.daemon))) {
		gpumem_diag_add(d, sev, name, 0, 0,
				"mps.daemon: '%s' is not allowed on this site: using '%s'",
				gpumem_daemon_name(out->mps.daemon),
				gpumem_daemon_name(s->defaults.mps.daemon));
		out->mps.daemon = s->defaults.mps.daemon;
	}
}

int gpumem_policy_effective(const struct gpumem_site *s, const struct gpumem_policy *user,
			    const char *user_name, struct gpumem_policy *out,
			    struct gpumem_diags *d)
{
	enum gpumem_sev sev = s && s->limits.strict ? GPUMEM_SEV_ERROR : GPUMEM_SEV_WARNING;
	const char *name = user_name ? user_name : "policy";
	int before = d ? d->nerrors : 0;

	gpumem_policy_init(out);
	if (s)
		gpumem_policy_overlay(out, &s->defaults);
	if (user)
		overlay_user(s, user, out, name, sev, d);
	if (s == NULL)
		return 0;
	/* Byte limits become percentages only on the node: take the cap along. */
	out->l2.site_max_percent = s->limits.l2_max_percent;
	out->l2.site_caps = s->limits.l2_caps;

	if ((out->set & GPUMEM_K_L2_LIMIT) && out->l2.limit_is_percent &&
	    out->l2.limit_percent > s->limits.l2_max_percent) {
		gpumem_diag_add(d, sev, name, 0, 0,
				"l2.persisting_limit: %g%% is above the site limit of %g%%: "
				"using %g%%", out->l2.limit_percent, s->limits.l2_max_percent,
				s->limits.l2_max_percent);
		out->l2.limit_percent = s->limits.l2_max_percent;
	}
	mps_limits(s, out, name, sev, d);
	um_limits(s, out, name, sev, d);
	if (out->check.min_fraction < s->limits.min_fraction) {
		gpumem_diag_add(d, sev, name, 0, 0,
				"check.bandwidth.min_fraction: %g is below the site minimum of %g: "
				"using %g", out->check.min_fraction, s->limits.min_fraction,
				s->limits.min_fraction);
		out->check.min_fraction = s->limits.min_fraction;
	}
	if (!(s->limits.onfail_allowed & (1u << out->check.on_fail))) {
		gpumem_diag_add(d, sev, name, 0, 0,
				"check.on_fail: '%s' is not allowed on this site: using '%s'",
				gpumem_onfail_name(out->check.on_fail),
				gpumem_onfail_name(s->defaults.check.on_fail));
		out->check.on_fail = s->defaults.check.on_fail;
	}
	return d && d->nerrors > before ? -1 : 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The policy format, version 1: its keys, defaults and loading.  The key
 * tables and the enum names here are the one registry of the format: the
 * site file (site.c), merge (merge.c) and the docs test (tests/unit/list_keys.c,
 * tests/cli/docs.py) read them rather than keep lists of their own.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "schema.h"

#define P(field) offsetof(struct gpumem_policy, field)

const char *const gpumem_loc_names[] = { "none", "cpu", "gpu", NULL };
const char *const gpumem_access_names[] = { "cpu", "gpu", NULL };
const char *const gpumem_daemon_names[] = { "none", "site", "job", NULL };
const char *const gpumem_onfail_names[] = { "warn", "fail", "drain", NULL };
const char *const gpumem_placement_names[] = { "none", "stripe", NULL };
const char *const gpumem_section_names[] = { "l2", "mps", "unified_memory", "check", "profile",
					     NULL };

static const struct gpumem_key l2_keys[] = {
	{ .name = "persisting_limit", .type = GPUMEM_KT_L2LIMIT, .bit = GPUMEM_K_L2_LIMIT,
	  .max = 1e15, .unset = "CUDA's default" },
	{ .name = "reset_at_exit", .type = GPUMEM_KT_BOOL, .off = P(l2.reset_at_exit),
	  .bit = GPUMEM_K_L2_RESET },
	{ 0 }
};

static const struct gpumem_key mps_keys[] = {
	{ .name = "active_thread_percentage", .type = GPUMEM_KT_INT,
	  .off = P(mps.active_thread_percentage), .bit = GPUMEM_K_MPS_PCT, .min = 1, .max = 100,
	  .unset = "100" },
	{ .name = "pinned_device_mem_limit", .type = GPUMEM_KT_SIZE,
	  .off = P(mps.pinned_device_mem_limit), .bit = GPUMEM_K_MPS_PINNED, .max = 1e15 },
	{ .name = "daemon", .type = GPUMEM_KT_ENUM, .off = P(mps.daemon),
	  .bit = GPUMEM_K_MPS_DAEMON, .names = gpumem_daemon_names },
	{ 0 }
};

static const struct gpumem_key um_keys[] = {
	{ .name = "preferred_location", .type = GPUMEM_KT_ENUM,
	  .off = P(um.preferred_location), .bit = GPUMEM_K_UM_PREFERRED, .names = gpumem_loc_names },
	/* Bits follow access_names: cpu = 1, gpu = 2, as GPUMEM_ACCESS_*. */
	{ .name = "accessed_by", .type = GPUMEM_KT_ENUM_LIST, .off = P(um.accessed_by),
	  .bit = GPUMEM_K_UM_ACCESSED_BY, .names = gpumem_access_names },
	{ .name = "read_mostly", .type = GPUMEM_KT_BOOL, .off = P(um.read_mostly),
	  .bit = GPUMEM_K_UM_READ_MOSTLY },
	{ .name = "prefetch", .type = GPUMEM_KT_ENUM, .off = P(um.prefetch),
	  .bit = GPUMEM_K_UM_PREFETCH, .names = gpumem_loc_names },
	{ .name = "min_bytes", .type = GPUMEM_KT_SIZE, .off = P(um.min_bytes),
	  .bit = GPUMEM_K_UM_MIN_BYTES, .max = 1e15 },
	/* Placement by size; kernels/um/um_stripe.c says how. */
	{ .name = "placement", .type = GPUMEM_KT_ENUM, .off = P(um.placement),
	  .bit = GPUMEM_K_UM_PLACEMENT, .names = gpumem_placement_names, .pos_off = P(um.placement_pos) },
	{ .name = "gpu_fraction", .type = GPUMEM_KT_FRACTION_AUTO, .off = P(um.gpu_fraction),
	  .bit = GPUMEM_K_UM_FRACTION, .min = 0, .max = 1 },
	{ .name = "reserve", .type = GPUMEM_KT_SIZE, .off = P(um.reserve),
	  .bit = GPUMEM_K_UM_RESERVE, .max = 1e15 },
	{ .name = "granularity", .type = GPUMEM_KT_POW2SIZE, .off = P(um.granularity),
	  .bit = GPUMEM_K_UM_GRANULARITY, .min = 4096, .max = 1 << 30 },
	{ 0 }
};

static const struct gpumem_key bandwidth_keys[] = {
	{ .name = "min_fraction", .type = GPUMEM_KT_FRACTION, .off = P(check.min_fraction),
	  .bit = GPUMEM_K_CHECK_FRACTION, .min = 0, .max = 1 },
	{ 0 }
};

static const struct gpumem_key check_keys[] = {
	{ .name = "before", .type = GPUMEM_KT_BOOL, .off = P(check.before),
	  .bit = GPUMEM_K_CHECK_BEFORE },
	{ .name = "after", .type = GPUMEM_KT_BOOL, .off = P(check.after),
	  .bit = GPUMEM_K_CHECK_AFTER },
	{ .name = "bandwidth", .type = GPUMEM_KT_SECTION, .sub = bandwidth_keys },
	{ .name = "on_fail", .type = GPUMEM_KT_ENUM, .off = P(check.on_fail),
	  .bit = GPUMEM_K_CHECK_ONFAIL, .names = gpumem_onfail_names },
	{ .name = "l2_ab", .type = GPUMEM_KT_BOOL, .off = P(check.l2_ab),
	  .bit = GPUMEM_K_CHECK_L2AB },
	{ 0 }
};

static const struct gpumem_key profile_keys[] = {
	{ .name = "enabled", .type = GPUMEM_KT_BOOL, .off = P(profile.enabled),
	  .bit = GPUMEM_K_PROFILE },
	{ 0 }
};

/*
 * A policy's top level: its version, then its sections, in the order of the
 * GPUMEM_S_* bits (the site's `sections` list too).  The site's `defaults`
 * take the sections alone (gpumem_policy_sections): no version there.
 */
static const struct gpumem_key policy_top[] = {
	{ .name = "version", .type = GPUMEM_KT_CUSTOM, .custom = gpumem_walk_version, .required = 1 },
	{ .name = "l2", .type = GPUMEM_KT_SECTION, .bit = GPUMEM_S_L2, .sub = l2_keys },
	{ .name = "mps", .type = GPUMEM_KT_SECTION, .bit = GPUMEM_S_MPS, .sub = mps_keys },
	{ .name = "unified_memory", .type = GPUMEM_KT_SECTION, .bit = GPUMEM_S_UM,
	  .sub = um_keys, .unset = "no advice, no library" },
	{ .name = "check", .type = GPUMEM_KT_SECTION, .bit = GPUMEM_S_CHECK, .sub = check_keys },
	{ .name = "profile", .type = GPUMEM_KT_SECTION, .bit = GPUMEM_S_PROFILE,
	  .sub = profile_keys },
	{ 0 }
};
const struct gpumem_key *const gpumem_policy_sections = policy_top + 1;

void gpumem_policy_init(struct gpumem_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->l2.reset_at_exit = 1;
	p->l2.site_max_percent = 100;
	p->l2.site_caps.other = -1;
	p->um.accessed_by = 0;
	p->um.min_bytes = 1 << 20;
	p->um.placement = GPUMEM_PLACE_NONE;
	p->um.gpu_fraction = GPUMEM_FRACTION_AUTO;
	p->um.reserve = (uint64_t)1 << 30;
	p->um.granularity = 2u << 20;
	p->um.site_max_fraction = 1;
	p->check.min_fraction = 0.85;
	p->check.on_fail = GPUMEM_ONFAIL_WARN;
	p->profile.enabled = 1;
}

const char *gpumem_enum_name(const char *const *names, unsigned v)
{
	for (unsigned i = 0; names[i]; i++)
		if (i == v)
			return names[i];
	return names[0];
}

const char *gpumem_loc_name(enum gpumem_loc l)
{
	return gpumem_enum_name(gpumem_loc_names, l);
}

const char *gpumem_daemon_name(enum gpumem_daemon d)
{
	return gpumem_enum_name(gpumem_daemon_names, d);
}

const char *gpumem_onfail_name(enum gpumem_onfail f)
{
	return gpumem_enum_name(gpumem_onfail_names, f);
}

const char *gpumem_placement_name(enum gpumem_placement p)
{
	return gpumem_enum_name(gpumem_placement_names, p);
}

/* Every key bit under KEYS, sub-sections included. */
static unsigned key_bits(const struct gpumem_key *keys)
{
	unsigned bits = 0;

	for (const struct gpumem_key *k = keys; k->name; k++)
		bits |= k->type == GPUMEM_KT_SECTION ? key_bits(k->sub) : k->bit;
	return bits;
}

unsigned gpumem_section_key_bits(unsigned i)
{
	for (const struct gpumem_key *k = gpumem_policy_sections; k->name; k++)
		if (k->bit == 1u << i)
			return key_bits(k->sub);
	return 0;
}

void gpumem_keys_each(const struct gpumem_key *keys, const char *prefix,
		      void (*fn)(const char *name, const struct gpumem_key *k, void *arg), void *arg)
{
	for (const struct gpumem_key *k = keys; k->name; k++) {
		char name[256];

		snprintf(name, sizeof(name), "%s%s%s", prefix, *prefix ? "." : "", k->name);
		if (k->type == GPUMEM_KT_SECTION)
			gpumem_keys_each(k->sub, name, fn, arg);
		else
			fn(name, k, arg);
	}
}

/*
 * placement: stripe chooses the preferred location and the prefetch of
 * every allocation it places, and read-mostly copies would undo the CPU
 * part's zero-copy mapping: one file asking for both is a mistake.
 */
static int stripe_conflicts(const struct gpumem_policy *p, const char *name,
			    struct gpumem_diags *d)
{
	const char *what = NULL;

	if (!(p->set & GPUMEM_K_UM_PLACEMENT) || p->um.placement != GPUMEM_PLACE_STRIPE)
		return 0;
	if ((p->set & GPUMEM_K_UM_PREFERRED) && p->um.preferred_location != GPUMEM_LOC_NONE)
		what = "preferred_location";
	else if ((p->set & GPUMEM_K_UM_PREFETCH) && p->um.prefetch != GPUMEM_LOC_NONE)
		what = "prefetch";
	else if ((p->set & GPUMEM_K_UM_READ_MOSTLY) && p->um.read_mostly)
		what = "read_mostly";
	if (what == NULL)
		return 0;
	gpumem_diag_add(d, GPUMEM_SEV_ERROR, name, p->um.placement_pos[0], p->um.placement_pos[1],
			"unified_memory.placement: stripe sets the preferred location and the "
			"prefetch of each allocation it places itself: remove "
			"unified_memory.%s (or set it to %s)", what,
			what[0] == 'r' ? "false" : "none");
	return -1;
}

/*
 * What no single key can check (placement: stripe against the keys it sets
 * itself), run after every parser (YAML and JSON), so that srun, the job
 * prolog and slurmstepd refuse exactly the same policies: 0, or -1 with
 * errors in d.
 */
static int policy_validate(const struct gpumem_policy *p, const char *name,
			   struct gpumem_diags *d)
{
	return stripe_conflicts(p, name, d);
}

int gpumem_policy_parse(const char *buf, size_t len, const char *name,
			struct gpumem_policy *p, struct gpumem_diags *d)
{
	struct gpumem_walk w = { name, d, (char *)p, &p->set, &p->sections };

	gpumem_policy_init(p);
	if (gpumem_walk_buffer(buf, len, name, policy_top, &w, "policy") < 0)
		return -1;
	return policy_validate(p, name, d);
}

int gpumem_policy_parse_json(const char *buf, size_t len, const char *name,
			     struct gpumem_policy *p, struct gpumem_diags *d)
{
	struct gpumem_walk w = { name, d, (char *)p, &p->set, &p->sections };

	gpumem_policy_init(p);
	if (gpumem_walk_json_buffer(buf, len, name, policy_top, &w, "policy") < 0)
		return -1;
	return policy_validate(p, name, d);
}

int gpumem_policy_load(const char *path, struct gpumem_policy *p, struct gpumem_diags *d)
{
	char *buf;
	size_t len;
	int rv;

	gpumem_policy_init(p);
	if (gpumem_read_file(path, &buf, &len, d) < 0)
		return -1;
	rv = gpumem_policy_parse(buf, len, path, p, d);
	free(buf);
	return rv;
}

/* The bytes of a key's value in the policy, as schema_value.c writes it. */
static size_t value_size(enum gpumem_ktype t)
{
	switch (t) {
	case GPUMEM_KT_BOOL: case GPUMEM_KT_INT: case GPUMEM_KT_ENUM:
		return sizeof(int);
	case GPUMEM_KT_ENUM_LIST:
		return sizeof(unsigned);
	case GPUMEM_KT_SIZE: case GPUMEM_KT_POW2SIZE:
		return sizeof(uint64_t);
	case GPUMEM_KT_PERCENT: case GPUMEM_KT_FRACTION: case GPUMEM_KT_FRACTION_AUTO:
		return sizeof(double);
	default:
		return 0;
	}
}

/* Every key of KEYS set in SET, from T over B, by the table's offsets. */
static void overlay_keys(char *b, const char *t, const struct gpumem_key *keys, unsigned set)
{
	for (const struct gpumem_key *k = keys; k->name; k++) {
		if (k->type == GPUMEM_KT_SECTION)
			overlay_keys(b, t, k->sub, set);
		else if (set & k->bit)
			memcpy(b + k->off, t + k->off, value_size(k->type));
	}
}

void gpumem_policy_overlay(struct gpumem_policy *b, const struct gpumem_policy *t)
{
	/* l2.persisting_limit is three fields (a percent or a size), not one at its offset. */
	if (t->set & GPUMEM_K_L2_LIMIT) {
		b->l2.limit_is_percent = t->l2.limit_is_percent;
		b->l2.limit_percent = t->l2.limit_percent;
		b->l2.limit_bytes = t->l2.limit_bytes;
	}
	overlay_keys((char *)b, (const char *)t, gpumem_policy_sections, t->set & ~GPUMEM_K_L2_LIMIT);
	b->set |= t->set;
	b->sections |= t->sections;
}

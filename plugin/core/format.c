/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Writing a policy back out, as YAML for people (gpumem show) or JSON for
 * programs and for forwarding a user's policy to the nodes.  The JSON is
 * built with the JSON module (json.h) and read back on the node by
 * gpumem_policy_parse_json; it is also YAML, so `gpumem validate` takes it.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "json.h"
#include "policy.h"

struct emitter {
	FILE *f;                        /* YAML */
	struct json_object *root, *sec; /* JSON */
	int only_set;
	unsigned set;
	int nkey;                       /* keys written in this section */
};

static void sec_begin(struct emitter *e, const char *name)
{
	if (e->root) {
		e->sec = json_object_new_object();
		gpumem_json_add(e->root, name, e->sec);
	} else {
		fprintf(e->f, "%s:\n", name);
	}
	e->nkey = 0;
}

static void sec_end(struct emitter *e)
{
	if (!e->root && e->nkey == 0)
		fprintf(e->f, "  {}\n");
}

/* One key: TEXT for YAML, JV (taken, may be NULL: null) for JSON. */
static void key(struct emitter *e, unsigned bit, const char *k, const char *text,
		struct json_object *jv)
{
	if (e->only_set && !(e->set & bit)) {
		json_object_put(jv);
		return;
	}
	if (e->root) {
		gpumem_json_add(e->sec, k, jv);
	} else {
		fprintf(e->f, "  %s: %s\n", k, text);
		json_object_put(jv);
	}
	e->nkey++;
}

static const char *tf(int b)
{
	return b ? "true" : "false";
}

static void bool_key(struct emitter *e, unsigned bit, const char *k, int v)
{
	key(e, bit, k, tf(v), gpumem_json_bool(v));
}

static void str_key(struct emitter *e, unsigned bit, const char *k, const char *v)
{
	key(e, bit, k, v, gpumem_json_string(v));
}

static void l2_section(struct emitter *e, const struct gpumem_policy *p)
{
	char v[64];

	sec_begin(e, "l2");
	if (!(p->set & GPUMEM_K_L2_LIMIT)) {
		key(e, GPUMEM_K_L2_LIMIT, "persisting_limit", "null  # not set: CUDA's default",
		    NULL);
	} else {
		if (p->l2.limit_is_percent) {
			gpumem_format_double(p->l2.limit_percent, v, sizeof(v) - 1);
			strcat(v, "%");
		} else {
			gpumem_format_size(p->l2.limit_bytes, v, sizeof(v));
		}
		str_key(e, GPUMEM_K_L2_LIMIT, "persisting_limit", v);
	}
	bool_key(e, GPUMEM_K_L2_RESET, "reset_at_exit", p->l2.reset_at_exit);
	sec_end(e);
}

static void mps_section(struct emitter *e, const struct gpumem_policy *p)
{
	char v[64];

	sec_begin(e, "mps");
	if (p->set & GPUMEM_K_MPS_PCT) {
		snprintf(v, sizeof(v), "%d", p->mps.active_thread_percentage);
		key(e, GPUMEM_K_MPS_PCT, "active_thread_percentage", v,
		    gpumem_json_int(p->mps.active_thread_percentage));
	} else {
		key(e, GPUMEM_K_MPS_PCT, "active_thread_percentage", "null  # not set: 100", NULL);
	}
	gpumem_format_size(p->mps.pinned_device_mem_limit, v, sizeof(v));
	str_key(e, GPUMEM_K_MPS_PINNED, "pinned_device_mem_limit", v);
	str_key(e, GPUMEM_K_MPS_DAEMON, "daemon", gpumem_daemon_name(p->mps.daemon));
	sec_end(e);
}

static void um_section(struct emitter *e, const struct gpumem_policy *p)
{
	const unsigned a = p->um.accessed_by;
	struct json_object *list = e->root ? json_object_new_array() : NULL;
	char text[32], v[64];

	snprintf(text, sizeof(text), "[%s%s%s]", a & 1 ? "cpu" : "", a == 3 ? ", " : "",
		 a & 2 ? "gpu" : "");
	if (list && (a & 1))
		json_object_array_add(list, gpumem_json_string("cpu"));
	if (list && (a & 2))
		json_object_array_add(list, gpumem_json_string("gpu"));
	sec_begin(e, "unified_memory");
	if (!e->root && !(p->sections & GPUMEM_S_UM) && !e->only_set)
		fprintf(e->f, "  # no unified_memory section: no advice, no library\n");
	str_key(e, GPUMEM_K_UM_PREFERRED, "preferred_location",
		gpumem_loc_name(p->um.preferred_location));
	key(e, GPUMEM_K_UM_ACCESSED_BY, "accessed_by", text, list);
	bool_key(e, GPUMEM_K_UM_READ_MOSTLY, "read_mostly", p->um.read_mostly);
	str_key(e, GPUMEM_K_UM_PREFETCH, "prefetch", gpumem_loc_name(p->um.prefetch));
	gpumem_format_size(p->um.min_bytes, v, sizeof(v));
	str_key(e, GPUMEM_K_UM_MIN_BYTES, "min_bytes", v);
	str_key(e, GPUMEM_K_UM_PLACEMENT, "placement", gpumem_placement_name(p->um.placement));
	if (p->um.gpu_fraction == GPUMEM_FRACTION_AUTO) {
		str_key(e, GPUMEM_K_UM_FRACTION, "gpu_fraction", "auto");
	} else {
		gpumem_format_double(p->um.gpu_fraction, v, sizeof(v));
		key(e, GPUMEM_K_UM_FRACTION, "gpu_fraction", v,
		    json_object_new_double_s(p->um.gpu_fraction, v));
	}
	gpumem_format_size(p->um.reserve, v, sizeof(v));
	str_key(e, GPUMEM_K_UM_RESERVE, "reserve", v);
	gpumem_format_size(p->um.granularity, v, sizeof(v));
	str_key(e, GPUMEM_K_UM_GRANULARITY, "granularity", v);
	sec_end(e);
}

static void check_section(struct emitter *e, const struct gpumem_policy *p)
{
	char v[64];

	sec_begin(e, "check");
	bool_key(e, GPUMEM_K_CHECK_BEFORE, "before", p->check.before);
	bool_key(e, GPUMEM_K_CHECK_AFTER, "after", p->check.after);
	if (!e->only_set || (p->set & GPUMEM_K_CHECK_FRACTION)) {
		gpumem_format_double(p->check.min_fraction, v, sizeof(v));
		if (e->root) {
			struct json_object *bw = json_object_new_object();

			/* The number as gpumem_format_double spells it: it reads back the same. */
			gpumem_json_add(bw, "min_fraction",
					json_object_new_double_s(p->check.min_fraction, v));
			gpumem_json_add(e->sec, "bandwidth", bw);
		} else {
			fprintf(e->f, "  bandwidth:\n    min_fraction: %s\n", v);
		}
		e->nkey++;
	}
	str_key(e, GPUMEM_K_CHECK_ONFAIL, "on_fail", gpumem_onfail_name(p->check.on_fail));
	bool_key(e, GPUMEM_K_CHECK_L2AB, "l2_ab", p->check.l2_ab);
	sec_end(e);
}

static void profile_section(struct emitter *e, const struct gpumem_policy *p)
{
	sec_begin(e, "profile");
	bool_key(e, GPUMEM_K_PROFILE, "enabled", p->profile.enabled);
	sec_end(e);
}

char *gpumem_policy_format(const struct gpumem_policy *p, enum gpumem_fmt fmt, int only_set)
{
	struct emitter e = { NULL, NULL, NULL, only_set, p->set, 0 };
	char *out = NULL;
	size_t len = 0;

	if (fmt == GPUMEM_FMT_JSON) {
		e.root = json_object_new_object();
		if (e.root == NULL)
			return NULL;
		gpumem_json_add(e.root, "version", gpumem_json_int(1));
	} else {
		e.f = open_memstream(&out, &len);
		if (e.f == NULL)
			return NULL;
		fprintf(e.f, "version: 1\n");
	}
#define SECTION(bit) (!only_set || (p->sections & (bit)))
	if (SECTION(GPUMEM_S_L2))
		l2_section(&e, p);
	if (SECTION(GPUMEM_S_MPS))
		mps_section(&e, p);
	if (SECTION(GPUMEM_S_UM))
		um_section(&e, p);
	if (SECTION(GPUMEM_S_CHECK))
		check_section(&e, p);
	if (SECTION(GPUMEM_S_PROFILE))
		profile_section(&e, p);
#undef SECTION
	if (e.root) {
		out = gpumem_json_dump(e.root, GPUMEM_JSON_SPACED);
		json_object_put(e.root);
		return out;
	}
	if (fclose(e.f) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

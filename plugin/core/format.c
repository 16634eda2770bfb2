/*
 * Writing a policy back out, as YAML for people (gpumem show) or JSON for
 * programs and for forwarding a user's policy to the nodes.  JSON is also
 * YAML, so what we forward parses with the same parser on the node.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "policy.h"

struct emitter {
	FILE *f;
	enum gpumem_fmt fmt;
	int only_set;
	unsigned set;
	int nsec;       /* sections written (JSON commas) */
	int nkey;       /* keys written in this section */
};

static void sec_begin(struct emitter *e, const char *name)
{
	if (e->fmt == GPUMEM_FMT_JSON)
		fprintf(e->f, "%s\"%s\": {", e->nsec++ ? ", " : "", name);
	else
		fprintf(e->f, "%s:\n", name);
	e->nkey = 0;
}

static void sec_end(struct emitter *e)
{
	if (e->fmt == GPUMEM_FMT_JSON)
		fprintf(e->f, "}");
	else if (e->nkey == 0)
		fprintf(e->f, "  {}\n");
}

/* raw: the value is a JSON number/boolean; otherwise it is quoted in JSON. */
static void key(struct emitter *e, unsigned bit, const char *k, const char *v, int raw)
{
	if (e->only_set && !(e->set & bit))
		return;
	if (e->fmt == GPUMEM_FMT_JSON)
		fprintf(e->f, "%s\"%s\": %s%s%s", e->nkey ? ", " : "", k, raw ? "" : "\"", v,
			raw ? "" : "\"");
	else
		fprintf(e->f, "  %s: %s\n", k, v);
	e->nkey++;
}

static const char *tf(int b)
{
	return b ? "true" : "false";
}

char *gpumem_policy_format(const struct gpumem_policy *p, enum gpumem_fmt fmt, int only_set)
{
	struct emitter e = { NULL, fmt, only_set, p->set, 0, 0 };
	char *out = NULL, v[64];
	size_t len = 0;
	const int json = fmt == GPUMEM_FMT_JSON;

	e.f = open_memstream(&out, &len);
	if (e.f == NULL)
		return NULL;
	if (json) {
		fprintf(e.f, "{\"version\": 1");
		e.nsec = 1;
	} else {
		fprintf(e.f, "version: 1\n");
	}
#define SECTION(bit) (!only_set || (p->sections & (bit)))
	if (SECTION(GPUMEM_S_L2)) {
		sec_begin(&e, "l2");
		if (!(p->set & GPUMEM_K_L2_LIMIT))
			snprintf(v, sizeof(v), json ? "null" : "null  # not set: CUDA's default");
		else if (p->l2.limit_is_percent)
		{
			gpumem_format_double(p->l2.limit_percent, v, sizeof(v) - 1);
			strcat(v, "%");
		}
		else
			gpumem_format_size(p->l2.limit_bytes, v, sizeof(v));
		key(&e, GPUMEM_K_L2_LIMIT, "persisting_limit", v,
		    !(p->set & GPUMEM_K_L2_LIMIT));
		key(&e, GPUMEM_K_L2_RESET, "reset_at_exit", tf(p->l2.reset_at_exit), 1);
		sec_end(&e);
	}
	if (SECTION(GPUMEM_S_MPS)) {
		sec_begin(&e, "mps");
		if (p->set & GPUMEM_K_MPS_PCT)
			snprintf(v, sizeof(v), "%d", p->mps.active_thread_percentage);
		else
			snprintf(v, sizeof(v), json ? "null" : "null  # not set: 100");
		key(&e, GPUMEM_K_MPS_PCT, "active_thread_percentage", v, 1);
		gpumem_format_size(p->mps.pinned_device_mem_limit, v, sizeof(v));
		key(&e, GPUMEM_K_MPS_PINNED, "pinned_device_mem_limit", v, 0);
		key(&e, GPUMEM_K_MPS_DAEMON, "daemon", gpumem_daemon_name(p->mps.daemon), 0);
		sec_end(&e);
	}
	if (SECTION(GPUMEM_S_UM)) {
		const unsigned a = p->um.accessed_by;
		char list[32];

		if (json)
			snprintf(list, sizeof(list), "[%s%s%s]", a & 1 ? "\"cpu\"" : "",
				 a == 3 ? ", " : "", a & 2 ? "\"gpu\"" : "");
		else
			snprintf(list, sizeof(list), "[%s%s%s]", a & 1 ? "cpu" : "",
				 a == 3 ? ", " : "", a & 2 ? "gpu" : "");
		sec_begin(&e, "unified_memory");
		if (!json && !(p->sections & GPUMEM_S_UM) && !only_set)
			fprintf(e.f, "  # no unified_memory section: no advice, no library\n");
		key(&e, GPUMEM_K_UM_PREFERRED, "preferred_location",
		    gpumem_loc_name(p->um.preferred_location), 0);
		key(&e, GPUMEM_K_UM_ACCESSED_BY, "accessed_by", list, 1);
		key(&e, GPUMEM_K_UM_READ_MOSTLY, "read_mostly", tf(p->um.read_mostly), 1);
		key(&e, GPUMEM_K_UM_PREFETCH, "prefetch", gpumem_loc_name(p->um.prefetch), 0);
		gpumem_format_size(p->um.min_bytes, v, sizeof(v));
		key(&e, GPUMEM_K_UM_MIN_BYTES, "min_bytes", v, 0);
		key(&e, GPUMEM_K_UM_PLACEMENT, "placement", gpumem_placement_name(p->um.placement), 0);
		if (p->um.gpu_fraction == GPUMEM_FRACTION_AUTO)
			snprintf(v, sizeof(v), "auto");
		else
			gpumem_format_double(p->um.gpu_fraction, v, sizeof(v));
		key(&e, GPUMEM_K_UM_FRACTION, "gpu_fraction", v, p->um.gpu_fraction != GPUMEM_FRACTION_AUTO);
		gpumem_format_size(p->um.reserve, v, sizeof(v));
		key(&e, GPUMEM_K_UM_RESERVE, "reserve", v, 0);
		gpumem_format_size(p->um.granularity, v, sizeof(v));
		key(&e, GPUMEM_K_UM_GRANULARITY, "granularity", v, 0);
		sec_end(&e);
	}
	if (SECTION(GPUMEM_S_CHECK)) {
		sec_begin(&e, "check");
		key(&e, GPUMEM_K_CHECK_BEFORE, "before", tf(p->check.before), 1);
		key(&e, GPUMEM_K_CHECK_AFTER, "after", tf(p->check.after), 1);
		if (!only_set || (p->set & GPUMEM_K_CHECK_FRACTION)) {
			gpumem_format_double(p->check.min_fraction, v, sizeof(v));
			if (json)
				fprintf(e.f, "%s\"bandwidth\": {\"min_fraction\": %s}",
					e.nkey ? ", " : "", v);
			else
				fprintf(e.f, "  bandwidth:\n    min_fraction: %s\n", v);
			e.nkey++;
		}
		key(&e, GPUMEM_K_CHECK_ONFAIL, "on_fail", gpumem_onfail_name(p->check.on_fail), 0);
		key(&e, GPUMEM_K_CHECK_L2AB, "l2_ab", tf(p->check.l2_ab), 1);
		sec_end(&e);
	}
#undef SECTION
	if (json)
		fprintf(e.f, "}\n");
	if (fclose(e.f) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

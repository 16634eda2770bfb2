/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The cap on the persisting-L2 set-aside (l2.persisting_limit) per GPU
 * model.  On the GPUs measured, a set-aside past 3/16 of L2 slows every
 * kernel that writes and does not use it (doc/admin/lifecycle.md, "The L2
 * set-aside's cost"), so gpumem keeps it below that point unless the site
 * says otherwise.  The table below is data: each model's cap and the
 * measured points its messages quote (bench/results/gpu/ holds the runs).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "l2cap.h"
#include "core_base.h"

/*
 * Each figure's share kept, by the set-aside the driver grants: it grants
 * sixteenths of L2, rounding up, so a policy's 18% is 18.75% and 20% is
 * 25%.  Reads keep their bandwidth (they use the set-aside); writes may
 * use only the rest of L2, and what writes (copy, triad) slows in steps.
 */
static const struct gpumem_l2point h200_curve[] = {
	{ 18.75, 1.00, 1.00, 1.00, 1.00 },
	{ 25.00, 1.00, 0.91, 0.95, 0.99 },
	{ 31.25, 1.00, 0.68, 0.82, 0.94 },
	{ 37.50, 1.00, 0.69, 0.76, 0.87 },
	{ 43.75, 1.00, 0.69, 0.71, 0.80 },
	{ 50.00, 1.00, 0.69, 0.66, 0.73 },
	{ 56.25, 1.00, 0.38, 0.42, 0.49 },
	{ 62.50, 0.98, 0.35, 0.36, 0.40 },
};

#define CURVE(c) c, (int)(sizeof(c) / sizeof(c[0]))

/*
 * Measured models only: the cap is the largest set-aside whose every
 * figure is within 2% of none.  A model not listed (the H100 among them,
 * until it is measured) gets GPUMEM_L2CAP_UNMEASURED, the H200's cap.
 */
static const struct gpumem_l2model models[] = {
	{ "NVIDIA H200", 18, 100.0 / 16, CURVE(h200_curve) },
};

const struct gpumem_l2model *gpumem_l2cap_model(const char *model)
{
	for (size_t i = 0; model && i < sizeof(models) / sizeof(models[0]); i++)
		if (strcasecmp(models[i].model, model) == 0)
			return &models[i];
	return NULL;
}

const struct gpumem_l2model *gpumem_l2cap_reference(void)
{
	return &models[0];
}

static const char *site_cap_model(const struct gpumem_l2caps *site, const char *model,
				  double *cap)
{
	for (int i = 0; site && model && i < site->n; i++)
		if (strcasecmp(site->m[i].model, model) == 0) {
			*cap = site->m[i].percent;
			return site->m[i].model;
		}
	return NULL;
}

double gpumem_l2cap_for(const struct gpumem_l2caps *site, const char *model,
			enum gpumem_l2cap_src *src)
{
	const struct gpumem_l2model *m = model && *model ? gpumem_l2cap_model(model) : NULL;
	double cap;

	if (model && *model && site_cap_model(site, model, &cap)) {
		*src = GPUMEM_L2CAP_SITE;
		return cap;
	}
	if (m) {
		*src = GPUMEM_L2CAP_TABLE;
		return m->cap;
	}
	if (site && site->other >= 0) {
		*src = GPUMEM_L2CAP_SITE_OTHER;
		return site->other;
	}
	*src = GPUMEM_L2CAP_DEFAULT;
	return GPUMEM_L2CAP_UNMEASURED;
}

const struct gpumem_l2point *gpumem_l2cap_point(const struct gpumem_l2model *m, double percent)
{
	double granted = ceil(percent / m->granule - 1e-9) * m->granule;
	int i;

	for (i = 0; i + 1 < m->npoints; i++)
		if (granted <= m->curve[i].percent + 1e-9)
			break;
	return &m->curve[i];
}

void gpumem_l2cap_cost(const struct gpumem_l2model *m, double percent, char *buf, size_t len)
{
	const struct gpumem_l2point *p = gpumem_l2cap_point(m, percent);
	double triad = (1 - p->triad) * 100, write = (1 - p->write) * 100;

	if (triad < 0.5 && write < 0.5)
		snprintf(buf, len, "nothing measurable of its HBM bandwidth");
	else
		snprintf(buf, len, "%.0f%% of its triad bandwidth (%.0f%% of its write bandwidth)",
			 triad, write);
}

/* Why the cap is what it is, after "capped at N%". */
static const char *src_words(enum gpumem_l2cap_src src)
{
	switch (src) {
	case GPUMEM_L2CAP_SITE: return ", the site's cap for it (limits.l2_model_max_percent)";
	case GPUMEM_L2CAP_SITE_OTHER:
		return ", the site's cap for GPU models it does not name "
			"(limits.l2_model_max_percent.other)";
	case GPUMEM_L2CAP_DEFAULT: return ", gpumem's cap for GPU models it has not measured";
	case GPUMEM_L2CAP_TABLE: break;
	}
	return "";
}

static void say(const char *where, double asked, double cap, const char *model,
		enum gpumem_l2cap_src src, struct gpumem_diags *d)
{
	const struct gpumem_l2model *m = model && *model ? gpumem_l2cap_model(model) : NULL;
	const struct gpumem_l2model *ref = gpumem_l2cap_reference();
	const char *key = where ? "l2.persisting_limit: " : "";
	char cost[96], name[4 * 96];

	/* The name reaches slurmd's log: escaped, as the probe could have run as the user. */
	gpumem_escape(name, sizeof(name), model ? model : "");
	if (where == NULL)
		where = "l2.persisting_limit";
	if (m) {
		gpumem_l2cap_cost(m, asked, cost, sizeof(cost));
		gpumem_diag_add(d, GPUMEM_SEV_WARNING, where, 0, 0,
				"%s%g%% of L2 would cost this GPU (%s) %s: capped at %g%%%s",
				key, asked, m->model, cost, cap, src_words(src));
		return;
	}
	gpumem_l2cap_cost(ref, asked, cost, sizeof(cost));
	if (model && *model)
		gpumem_diag_add(d, GPUMEM_SEV_WARNING, where, 0, 0,
				"%s%g%% of L2 on this GPU (%s), whose set-aside cost gpumem has not "
				"measured (it would cost an %s %s): capped at %g%%%s",
				key, asked, name, ref->model, cost, cap, src_words(src));
	else
		gpumem_diag_add(d, GPUMEM_SEV_WARNING, where, 0, 0,
				"%s%g%% of L2 on a GPU model not known here (it would cost an %s %s): "
				"capped at %g%%%s",
				key, asked, ref->model, cost, cap, src_words(src));
}

double gpumem_l2cap_apply(const struct gpumem_l2caps *site, const char *const *names, int n,
			  double *percent, const char *where, struct gpumem_diags *d)
{
	enum gpumem_l2cap_src src, s;
	const char *model = NULL;
	double cap, c;

	cap = gpumem_l2cap_for(site, NULL, &src);
	for (int i = 0; i < n; i++) {
		c = gpumem_l2cap_for(site, names[i], &s);
		if (i == 0 || c < cap) {
			cap = c;
			src = s;
			model = names[i];
		}
	}
	if (*percent > cap) {
		say(where, round(*percent * 10) / 10, cap, model, src, d);
		*percent = cap;
	}
	return cap;
}

int gpumem_l2cap_walk(struct gpumem_walk *w, const struct gpumem_ynode *n)
{
	static const struct gpumem_key pct = { .name = "percent", .type = GPUMEM_KT_PERCENT,
					       .min = 0, .max = 100 };
	struct gpumem_site *s = (struct gpumem_site *)w->base;
	struct gpumem_l2caps *caps = &s->limits.l2_caps;
	int rv = 0;

	if (n->kind != GPUMEM_Y_MAP) {
		gpumem_walk_error(w, n, "limits.l2_model_max_percent: expected a mapping of GPU "
				  "model names (as the driver names them) to a percent of L2");
		return -1;
	}
	for (size_t i = 0; i + 1 < n->n; i += 2) {
		const struct gpumem_ynode *k = n->items[i];
		struct gpumem_walk one = *w;
		char key[160];
		double v;

		if (k->kind != GPUMEM_Y_SCALAR || !k->str[0] || strlen(k->str) >= sizeof(caps->m[0].model)) {
			gpumem_walk_error(w, k, "limits.l2_model_max_percent: each key is a GPU "
					  "model's name (1 to %zu characters) or 'other'",
					  sizeof(caps->m[0].model) - 1);
			rv = -1;
			continue;
		}
		snprintf(key, sizeof(key), "limits.l2_model_max_percent.%s", k->str);
		one.base = (char *)&v;
		if (gpumem_walk_value(&one, &pct, n->items[i + 1], key) < 0) {
			rv = -1;
			continue;
		}
		if (strcmp(k->str, "other") == 0) {
			if (caps->other >= 0)
				goto twice;
			caps->other = v;
			continue;
		}
		if (site_cap_model(caps, k->str, &(double){ 0 }))
			goto twice;
		if (caps->n >= GPUMEM_MAX_L2CAPS) {
			gpumem_walk_error(w, k, "limits.l2_model_max_percent: more than %d models",
					  GPUMEM_MAX_L2CAPS);
			return -1;
		}
		snprintf(caps->m[caps->n].model, sizeof(caps->m[0].model), "%s", k->str);
		caps->m[caps->n++].percent = v;
		continue;
twice:
		gpumem_walk_error(w, k, "limits.l2_model_max_percent: '%s' is listed twice",
				  k->str);
		rv = -1;
	}
	return rv;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The cap on the persisting-L2 set-aside per GPU model (l2cap.c): gpumem's
 * table of measured models, the site's limits.l2_model_max_percent over
 * it, and the words that tell a user what a larger set-aside would cost.
 */
#ifndef GPUMEM_L2CAP_H
#define GPUMEM_L2CAP_H
#include "policy.h"
#include "schema.h"

/* The cap of a model gpumem has not measured, in percent of L2. */
#define GPUMEM_L2CAP_UNMEASURED 18.0

/*
 * One measured point: a set-aside the driver grants (percent of L2) and
 * the share of each HBM figure kept under it, against none (0..1).
 */
struct gpumem_l2point {
	double percent;
	double read, write, copy, triad;
};

/* One GPU model of gpumem's table. */
struct gpumem_l2model {
	const char *model;              /* as the driver names it */
	double cap;                     /* percent of L2 */
	double granule;                 /* the driver grants multiples of it, rounding up */
	const struct gpumem_l2point *curve;     /* by percent, the last at the GPU's maximum */
	int npoints;
};

/* Where a cap came from. */
enum gpumem_l2cap_src {
	GPUMEM_L2CAP_TABLE,             /* gpumem's table of measured models */
	GPUMEM_L2CAP_SITE,              /* the site names the model */
	GPUMEM_L2CAP_SITE_OTHER,        /* the site's cap for models it does not name */
	GPUMEM_L2CAP_DEFAULT,           /* gpumem's cap for models it has not measured */
};

/* gpumem's entry for MODEL (the driver's name, any case), or NULL. */
const struct gpumem_l2model *gpumem_l2cap_model(const char *model);
/* The first model of the table: the example an unmeasured model's message gives. */
const struct gpumem_l2model *gpumem_l2cap_reference(void);
/* The cap for MODEL (NULL or "": none known) under the site's caps (NULL: none). */
double gpumem_l2cap_for(const struct gpumem_l2caps *site, const char *model,
			enum gpumem_l2cap_src *src);
/* M's measured point for a policy's PERCENT: the set-aside the driver grants for it. */
const struct gpumem_l2point *gpumem_l2cap_point(const struct gpumem_l2model *m, double percent);
/*
 * What PERCENT costs M, into BUF: "27% of its triad bandwidth (31% of its
 * write bandwidth)", or "nothing measurable of its HBM bandwidth".
 */
void gpumem_l2cap_cost(const struct gpumem_l2model *m, double percent, char *buf, size_t len);

/*
 * Cap *PERCENT for the GPUs whose models are NAMES[0..N-1] (N = 0 or "":
 * a model not known).  When it lowers it, a warning in D says what the
 * asked set-aside would cost and why the cap is what it is; WHERE is the
 * warning's file (NULL: the key itself).  Returns the cap applied.
 */
double gpumem_l2cap_apply(const struct gpumem_l2caps *site, const char *const *names, int n,
			  double *percent, const char *where, struct gpumem_diags *d);

/* limits.l2_model_max_percent: { MODEL: PERCENT, ..., other: PERCENT }. */
int gpumem_l2cap_walk(struct gpumem_walk *w, const struct gpumem_ynode *n);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Advice from a job's GPU memory profile (issue 25): which shipped policy
 * (policies/NAME.yaml) a job like this one should try, from one GPU's compact
 * summary (profile.h) and the job's effective policy (the accounting
 * record's "eff").  Pure functions: no I/O, the same figures always give
 * the same advice; `gpumem job` and `gpumem advise` print it.  The rules
 * and their thresholds are in advise.c, in order (doc/ADMIN.md has them
 * as a table).
 */
#ifndef GPUMEM_ADVISE_H
#define GPUMEM_ADVISE_H
#include "json.h"
#include "profile.h"

struct gpumem_advice {
	const char *rule;       /* "unsampled", "short", "idle", "faulting", "link-bound",
				 * "hbm-bound", "underused", "compute-bound" */
	const char *policy;     /* the policy to try ("zerocopy.yaml"), or NULL: none */
	int in_effect;          /* the job's effective policy already does that */
	char reason[400];       /* a plain sentence with the figures that triggered it */
};

/*
 * The advice for GPU G; EFF is the record's "eff" member ({"l2", "mps",
 * "daemon", "um"}), or NULL.  The first rule that matches wins.
 */
void gpumem_advise(const struct gpumem_prof_gpu *g, struct json_object *eff,
		   struct gpumem_advice *out);
/* A as {"gpu": INDEX, "rule", "policy", "in_effect", "reason"}, a new object, or NULL. */
struct json_object *gpumem_advice_json(const struct gpumem_advice *a, long index);
#endif

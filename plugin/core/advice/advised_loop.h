/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The advised loop (advised_loop.c): from each advised run's judgement
 * (judge.h) to where its policy stands for the name, and the choice for
 * the name's next job.  The rules (doc/admin/profile.md, "The judge"):
 *
 *   standing   a policy's advised runs of the name, oldest first, on the
 *              GPU count and model of the name's newest profiled run (a
 *              name whose work changed starts again): gained or even
 *              keeps it and clears its losses; a loss puts it on
 *              probation, a second loss in a row drops it; harm drops it
 *              at once; "not judged" changes nothing.  Verdicts last as
 *              long as the runs are in the lookup's window (advised.days).
 */
#ifndef GPUMEM_ADVISED_LOOP_H
#define GPUMEM_ADVISED_LOOP_H

struct gpumem_advised;          /* advice_history.h */

/* Each history entry's verdict and sentence, from the judgements, in A. */
void gpumem_advised_loop(struct gpumem_advised *a);
/* The choice for NAME's next job, looked back DAYS days: policy, fwd_name, src_json, line. */
void gpumem_advised_choose(struct gpumem_advised *a, const char *name, int days);
#endif

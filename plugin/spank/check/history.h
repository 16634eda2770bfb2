/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A GPU against its own history (history.c; the rules are
 * history_rules.h's; doc/admin/checks.md, "The GPU against its own
 * history").
 */
#ifndef GPUMEM_HISTORY_H
#define GPUMEM_HISTORY_H
#include "check_ctx.h"
#include "jobcheck.h"

/*
 * After a check R that measured: each GPU (by UUID) whose figure fell more
 * than its margin below the median of its recent passes gets "warn", even
 * where it cleared its reference (its device verdict and reasons in R's
 * document, R's verdict and reason); each other GPU that passed keeps its
 * figures in state_dir/gpus/hist.NODE.UUID.
 */
void gpumem_history_judge(const struct gpumem_check_ctx *c, struct gpumem_checkrun *r);
#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The advice library's one public header (plugin/core/core.am): the advice
 * rules and the advised history.  Advice builds on record, policy and
 * base.  Each file's own header says what it owns; outside advice,
 * include this one.
 */
#ifndef GPUMEM_CORE_ADVICE_H
#define GPUMEM_CORE_ADVICE_H
#include "advise.h"         /* the rules: built in, the site's, their language */
#include "advice_history.h" /* the advised history: a user's earlier jobs, judged */
#include "judge.h"          /* an advised run judged on its work against the defaults */
#include "advised_loop.h"   /* probation, drop and the policy a name gets next */
#endif

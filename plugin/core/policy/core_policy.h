/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The policy library's one public header (plugin/core/core.am): the policy
 * engine as the other libraries and every program include it.  Policy
 * builds on base alone.  Each file's own header says what it owns;
 * outside policy, include this one.
 */
#ifndef GPUMEM_CORE_POLICY_H
#define GPUMEM_CORE_POLICY_H
#include "policy.h"     /* the policy and site models, parse, merge, env, format */
#include "yamltree.h"   /* the capped YAML tree */
#include "schema.h"     /* the key tables and their walker */
#include "gpus.h"       /* GPU lists */
#include "l2cap.h"      /* the L2 set-aside's cap per GPU model */
#include "um_advice.h"  /* GPUMEM_UM_ADVICE's versions (header only) */
#include "env.h"        /* the environment variables' names */
#endif

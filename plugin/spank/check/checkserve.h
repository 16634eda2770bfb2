/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The job prolog's and epilog's side of the node's warm check server
 * (checkserve.c; site check.warm above 0): a check, or the NVML health a
 * reuse rests on, asked of a running `gpumem-check --serve`; its watch is
 * checkwatch.h's.  Each takes the check's contract (check_ctx.h).
 */
#ifndef GPUMEM_CHECKSERVE_H
#define GPUMEM_CHECKSERVE_H
#include <stddef.h>
#include "check_ctx.h"

struct gpumem_proc;

/*
 * The check asked of the node's warm server (the job's GPUs plain
 * indices).  1: served, P's status and out as a finished one-shot check's,
 * VIA "warm server pid N"; 0: no server (logged): run the one-shot check;
 * -1: asked, no whole reply (VIA: why): a check that did not finish.
 */
int gpumem_checkserve_run(const struct gpumem_check_ctx *c, int timeout, int l2_reset,
			  struct gpumem_proc *p, char *via, size_t vlen);
/*
 * The gpumem-health/1 document of the job's GPUs asked of the node's warm
 * server: 1, *DOC (malloc'd) and *CODE (gpumem-health's exit), the log
 * naming the server's pid; 0: none (logged, *DOC NULL): run gpumem-health.
 */
int gpumem_checkserve_health(const struct gpumem_check_ctx *c, char **doc, int *code);
/* When gpumem drains the node: stop its warm server (SIGTERM, after the check in hand). */
void gpumem_checkserve_stop(const struct gpumem_check_ctx *c);
#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Root's watch over the node's warm check server (checkwatch.c), for
 * checkserve.c: a server that stops answering (stuck in the driver, or
 * stopped) is ended and replaced, so that it never holds a node.
 */
#ifndef GPUMEM_CHECKWATCH_H
#define GPUMEM_CHECKWATCH_H
#include <stddef.h>
#include <sys/types.h>
#include "check_ctx.h"

/*
 * Hellos a server may miss in a row, while no hook is being served by it,
 * before it is ended and its socket removed (doc/admin/checks.md, "The warm check
 * server").
 */
#define GPUMEM_CS_MISSES 3

/*
 * The starter's lock (state_dir/check.<HOST>.lock), taken within WAIT_MS
 * (and the hook's deadline): its fd, or -1 with WHY.
 */
int gpumem_cs_lock(const struct gpumem_check_ctx *c, long wait_ms, char *why, size_t wlen);
/*
 * The hook started server PID (lock held): recorded as the node's, with
 * BUSY_MS (its cuInit) in which a missed hello does not count.
 */
void gpumem_cs_started(const struct gpumem_check_ctx *c, pid_t pid, long busy_ms);
/*
 * Server PID said hello and serves this hook for at most BUSY_MS: its
 * misses start again from none, and a hello missed meanwhile (another
 * hook queued behind this one) does not count.
 */
void gpumem_cs_serving(const struct gpumem_check_ctx *c, pid_t pid, long busy_ms);
/* The server replied: it is free again. */
void gpumem_cs_served(const struct gpumem_check_ctx *c);
/*
 * The server gave no hello in time, or its listen queue is full
 * (WHY: which): one more miss, unless a hook is being served.  At
 * GPUMEM_CS_MISSES in a row the recorded server is ended (SIGKILL: only a
 * live process that is that server, check_user's `CHECK --serve`) and its socket
 * removed, so that the next hook starts a fresh one; the log says so.
 */
void gpumem_cs_missed(const struct gpumem_check_ctx *c, const char *why);
#endif

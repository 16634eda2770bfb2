/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem advise --mine (advise_mine.c): the caller's own recent jobs by
 * name, with the advice of each name's latest profiled job.
 */
#ifndef GPUMEM_ADVISE_MINE_H
#define GPUMEM_ADVISE_MINE_H
/* SINCE: --since's argument or NULL (7 days); JSON: --json.  The exit code. */
int gpumem_advise_mine(const char *since, int json);
#endif

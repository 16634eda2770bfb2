/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Draining and resuming a node the way Node Health Check does. */
#ifndef GPUMEM_DRAIN_H
#define GPUMEM_DRAIN_H
#include <stddef.h>
#include <stdint.h>

#define GPUMEM_DRAIN_PREFIX "gpumem:"

/*
 * Drain NODE with REASON (which must start with "gpumem:"), unless an admin
 * (any reason not starting with "gpumem:") already drained or downed it.
 * Returns 1 drained, 0 left alone, -1 error; MSG says what happened.
 */
int gpumem_drain(const char *node, const char *reason, char *msg, size_t len);
/*
 * Resume NODE only if it is drained with a reason starting "gpumem:" and,
 * where that reason names the failed GPUs ("{GPU-a,GPU-b}"), only if each
 * of them is in PASSED (comma-separated UUIDs of GPUs that just passed).
 */
int gpumem_resume(const char *node, const char *passed, char *msg, size_t len);
/* 1 when every GPU the drain REASON names is in PASSED (or it names none). */
int gpumem_drain_gpus_passed(const char *reason, const char *passed);
/* Parse `scontrol show node -o` output: is it drained/down, and why. */
int gpumem_node_state(const char *show, int *drained, char *reason, size_t len);
#endif

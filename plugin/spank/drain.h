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
/* Resume NODE only if it is drained with a reason starting "gpumem:". */
int gpumem_resume(const char *node, char *msg, size_t len);
/* Parse `scontrol show node -o` output: is it drained/down, and why. */
int gpumem_node_state(const char *show, int *drained, char *reason, size_t len);
#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-l2reset's question before it starts CUDA: does any
 * process still hold a GPU of this node?  Persisting lines and the
 * set-aside belong to CUDA contexts; on the H100 with driver 580 a process
 * that set a persisting window leaves nothing behind once it exits or is
 * killed (tests/gpu/l2_linger.cu shows it).  So where NVML sees no compute
 * process on any GPU of the node, the job's contexts are gone and there is
 * nothing to reset: no CUDA start (cuInit and a context per GPU).  Any
 * doubt (no NVML, a call
 * that fails, a process on any GPU, whosever) means "held": the reset runs.
 * NVML through the one NVML reader (plugin/core/health/health_nvml.c, the
 * question gpumem-health's node_held asks too), dlopened: the node needs
 * only the driver.
 */
#include <stdio.h>
#include "core_health.h"
#include "l2reset.h"

int gpumem_l2_node_held(unsigned int *ngpus, char *why, size_t len)
{
	char driver[96], note[300];
	struct gpumem_health_nvml *n;
	int missing = 0, rv = 1;

	*ngpus = 0;
	n = gpumem_health_open(driver, sizeof(driver), note, sizeof(note), &missing);
	if (n == NULL) {
		snprintf(why, len, "NVML not available");
		return 1;
	}
	*ngpus = gpumem_health_count(n);
	if (*ngpus == 0)
		snprintf(why, len, "NVML lists no GPU");
	else
		rv = gpumem_health_node_held(n, why, len);
	gpumem_health_close(n);
	return rv;
}

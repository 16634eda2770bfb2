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
 * NVML is dlopened: the node needs only the driver.
 */
#include <stdio.h>
#include <string.h>
#include "l2reset.h"
#include "core_base.h"

struct nvml {
	void *h;
	gpumem_nvmlReturn_t (*init)(void);
	gpumem_nvmlReturn_t (*count)(unsigned int *);
	gpumem_nvmlReturn_t (*handle)(unsigned int, gpumem_nvmlDevice_t *);
	gpumem_nvmlReturn_t (*procs)(gpumem_nvmlDevice_t, unsigned int *, void *);
	gpumem_nvmlReturn_t (*shutdown)(void);
};

static int nvml_open(struct nvml *n)
{
	memset(n, 0, sizeof(*n));
	n->h = gpumem_nvml_open();
	if (n->h == NULL)
		return -1;
	GPUMEM_DLSYM(n->h, n->init, "nvmlInit_v2");
	GPUMEM_DLSYM(n->h, n->count, "nvmlDeviceGetCount_v2");
	GPUMEM_DLSYM(n->h, n->handle, "nvmlDeviceGetHandleByIndex_v2");
	GPUMEM_DLSYM_OR(n->h, n->procs, "nvmlDeviceGetComputeRunningProcesses_v3",
			"nvmlDeviceGetComputeRunningProcesses_v2");
	GPUMEM_DLSYM(n->h, n->shutdown, "nvmlShutdown");
	return n->init && n->count && n->handle && n->procs && n->shutdown ? 0 : -1;
}

int gpumem_l2_node_held(unsigned int *ngpus, char *why, size_t len)
{
	struct nvml n;
	unsigned int count = 0;
	int rv = 1;

	*ngpus = 0;
	snprintf(why, len, "NVML not available");
	if (nvml_open(&n) < 0 || n.init() != GPUMEM_NVML_SUCCESS) {
		if (n.h)
			dlclose(n.h);
		return 1;
	}
	if (n.count(&count) != GPUMEM_NVML_SUCCESS || count == 0) {
		snprintf(why, len, "NVML lists no GPU");
	} else {
		unsigned int g = 0;

		rv = gpumem_nvml_any_held(n.handle, n.procs, count, 0, &g);
		if (rv)
			snprintf(why, len, "a process holds GPU %u (NVML index)", g);
		else
			snprintf(why, len, "no process holds any of the node's %u GPU(s) (NVML)",
				 count);
		*ngpus = count;
	}
	n.shutdown();
	dlclose(n.h);
	return rv;
}

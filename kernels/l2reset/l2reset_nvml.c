/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-l2reset's question before it starts CUDA (issue 26): does any
 * process still hold a GPU of this node?  Persisting lines and the
 * set-aside belong to CUDA contexts; on the H100 with driver 580 a process
 * that set a persisting window leaves nothing behind once it exits or is
 * killed (bench/results/gpu/2026-11-25-h100-b, l2_linger D and E).  So
 * where NVML sees no compute process on any GPU of the node, the job's
 * contexts are gone and there is nothing to reset: no CUDA start (0.1 s of
 * cuInit, 0.15-0.19 s of context per GPU).  Any doubt (no NVML, a call
 * that fails, a process on any GPU, whosever) means "held": the reset runs.
 * NVML is dlopened: the node needs only the driver.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "l2reset.h"

typedef int (*nv_init_fn)(void);
typedef int (*nv_count_fn)(unsigned int *);
typedef int (*nv_handle_fn)(unsigned int, void **);
typedef int (*nv_procs_fn)(void *, unsigned int *, void *);
typedef int (*nv_shutdown_fn)(void);

#define NVML_SUCCESS 0
#define NVML_ERROR_INSUFFICIENT_SIZE 7

struct nvml {
	void *h;
	nv_init_fn init;
	nv_count_fn count;
	nv_handle_fn handle;
	nv_procs_fn procs;
	nv_shutdown_fn shutdown;
};

static int nvml_open(struct nvml *n)
{
	memset(n, 0, sizeof(*n));
	n->h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (n->h == NULL)
		return -1;
	GPUMEM_CUDA_SYM(n->h, n->init, "nvmlInit_v2");
	GPUMEM_CUDA_SYM(n->h, n->count, "nvmlDeviceGetCount_v2");
	GPUMEM_CUDA_SYM(n->h, n->handle, "nvmlDeviceGetHandleByIndex_v2");
	GPUMEM_CUDA_SYM(n->h, n->procs, "nvmlDeviceGetComputeRunningProcesses_v3");
	if (n->procs == NULL)
		GPUMEM_CUDA_SYM(n->h, n->procs, "nvmlDeviceGetComputeRunningProcesses_v2");
	GPUMEM_CUDA_SYM(n->h, n->shutdown, "nvmlShutdown");
	return n->init && n->count && n->handle && n->procs && n->shutdown ? 0 : -1;
}

/* 1 when a process holds GPU I (or NVML cannot say), 0 when none does. */
static int held(const struct nvml *n, unsigned int i)
{
	unsigned int np = 0;
	void *dev = NULL;
	int r;

	if (n->handle(i, &dev) != NVML_SUCCESS)
		return 1;
	/* No room given: success means no process, "insufficient size" means some. */
	r = n->procs(dev, &np, NULL);
	return !(r == NVML_SUCCESS && np == 0);
}

int gpumem_l2_node_held(char *why, size_t len)
{
	struct nvml n;
	unsigned int count = 0;
	int rv = 1;

	snprintf(why, len, "NVML not available");
	if (nvml_open(&n) < 0 || n.init() != NVML_SUCCESS) {
		if (n.h)
			dlclose(n.h);
		return 1;
	}
	if (n.count(&count) != NVML_SUCCESS || count == 0) {
		snprintf(why, len, "NVML lists no GPU");
	} else {
		rv = 0;
		for (unsigned int i = 0; i < count && !rv; i++)
			if (held(&n, i)) {
				snprintf(why, len, "a process holds GPU %u (NVML index)", i);
				rv = 1;
			}
		if (!rv)
			snprintf(why, len, "no process holds any of the node's %u GPU(s) (NVML)",
				 count);
	}
	n.shutdown();
	dlclose(n.h);
	return rv;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-probe: what the plugin needs to know about the node's GPUs, from a
 * separate process so that slurmstepd never loads the CUDA driver.  It
 * creates no context: cuInit and device attributes only.  One line per GPU:
 *   gpu INDEX UUID PCI_BUS_ID L2_BYTES PERSISTING_MAX_BYTES NAME
 * Exit 0 with GPUs, 3 with no driver or no GPU (a line "none REASON").
 *
 * Builds: gpumem-probe (plugin/probe/probe.am).  Forked by the plugin: as
 * root by the job prolog (its result is cached in root's state_dir for
 * every later job), as the job's user by a step whose GPUs the cache does
 * not know.  Includes: plugin/core's cudadl.h (libcuda is dlopened).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core_base.h"
#include "core_policy.h"

/* The few driver entry points we use, declared here: no toolkit needed. */
typedef int CUresult;
typedef int CUdevice;
typedef struct { unsigned char bytes[16]; } CUuuid;
enum { ATTR_L2_CACHE_SIZE = 38, ATTR_MAX_PERSISTING_L2_CACHE_SIZE = 108 };

int main(void)
{
	CUresult (*cu_init)(unsigned);
	CUresult (*cu_count)(int *);
	CUresult (*cu_get)(CUdevice *, int);
	CUresult (*cu_attr)(int *, int, CUdevice);
	CUresult (*cu_name)(char *, int, CUdevice);
	CUresult (*cu_pci)(char *, int, CUdevice);
	CUresult (*cu_uuid)(CUuuid *, CUdevice);
	char why[512];
	void *h;
	int n = 0;

	/* PCI order, so index N is the GPU Slurm and NVML call N. */
	setenv(GPUMEM_ENV_ORDER, "PCI_BUS_ID", 1);
	h = gpumem_cuda_open(why, sizeof(why));
	if (h == NULL) {
		printf("none %s\n", why);
		return GPUMEM_EXIT_NO_GPU;
	}
	GPUMEM_DLSYM(h, cu_init, "cuInit");
	GPUMEM_DLSYM(h, cu_count, "cuDeviceGetCount");
	GPUMEM_DLSYM(h, cu_get, "cuDeviceGet");
	GPUMEM_DLSYM(h, cu_attr, "cuDeviceGetAttribute");
	GPUMEM_DLSYM(h, cu_name, "cuDeviceGetName");
	GPUMEM_DLSYM(h, cu_pci, "cuDeviceGetPCIBusId");
	GPUMEM_DLSYM_OR(h, cu_uuid, "cuDeviceGetUuid_v2", "cuDeviceGetUuid");
	if (!cu_init || !cu_count || !cu_get || !cu_attr || !cu_name || !cu_pci || !cu_uuid) {
		printf("none CUDA driver library lacks needed entry points\n");
		return GPUMEM_EXIT_NO_GPU;
	}
	if (cu_init(0) != 0 || cu_count(&n) != 0 || n == 0) {
		printf("none no usable GPU (cuInit or cuDeviceGetCount failed, or 0 devices)\n");
		return GPUMEM_EXIT_NO_GPU;
	}
	for (int i = 0; i < n; i++) {
		char name[96] = "", pci[32] = "";
		int l2 = 0, pmax = 0;
		CUdevice dev;
		CUuuid u;

		if (cu_get(&dev, i) != 0)
			continue;
		cu_attr(&l2, ATTR_L2_CACHE_SIZE, dev);
		cu_attr(&pmax, ATTR_MAX_PERSISTING_L2_CACHE_SIZE, dev);
		cu_name(name, sizeof(name), dev);
		cu_pci(pci, sizeof(pci), dev);
		memset(&u, 0, sizeof(u));
		cu_uuid(&u, dev);
		printf("gpu %d GPU-", i);
		for (int b = 0; b < 16; b++)
			printf("%02x%s", u.bytes[b], b == 3 || b == 5 || b == 7 || b == 9 ? "-" : "");
		printf(" %s %d %d %s\n", pci, l2, pmax, name);
	}
	return 0;
}

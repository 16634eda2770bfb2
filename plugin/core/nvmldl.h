/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NVML loaded at run time (dlopen libnvidia-ml.so.1), for gpumem-check's
 * health part (kernels/check/nvml_dl.c) and gpumem-l2reset's "does any
 * process still hold a GPU?" (kernels/l2reset/l2reset_nvml.c).  nvml.h
 * ships with the driver's development files, not on build machines, so the
 * few ABI types and codes both use are declared here from NVML's documented
 * ABI.  Header only, like cudadl.h (whose GPUMEM_DLSYM takes the entry
 * points).
 */
#ifndef GPUMEM_NVMLDL_H
#define GPUMEM_NVMLDL_H
#include "cudadl.h"

typedef int gpumem_nvmlReturn_t;                /* nvmlReturn_t; 0 = success */
typedef struct gpumem_nvmlDevice_st *gpumem_nvmlDevice_t;

#define GPUMEM_NVML_SUCCESS             0
#define GPUMEM_NVML_ERROR_NOT_SUPPORTED 3
#define GPUMEM_NVML_ERROR_NOT_FOUND     6
#define GPUMEM_NVML_ERROR_INSUFFICIENT_SIZE 7

/* libnvidia-ml.so.1, or NULL (no driver, or a driver without NVML). */
static inline void *gpumem_nvml_open(void)
{
	return dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
}

/*
 * Does a compute process hold any of NVML's COUNT GPUs (gpumem-l2reset's
 * question, also asked by gpumem-health for the epilog)?  1 held, or NVML
 * cannot say (*gpu: the first such index); 0 none.  PROCS is
 * nvmlDeviceGetComputeRunningProcesses: asked with no room, success means
 * no process, "insufficient size" some.
 */
static inline int gpumem_nvml_any_held(gpumem_nvmlReturn_t (*handle)(unsigned int,
								     gpumem_nvmlDevice_t *),
				       gpumem_nvmlReturn_t (*procs)(gpumem_nvmlDevice_t,
								    unsigned int *, void *),
				       unsigned int count, unsigned int *gpu)
{
	for (unsigned int i = 0; i < count; i++) {
		gpumem_nvmlDevice_t dev = NULL;
		unsigned int np = 0;

		if (handle(i, &dev) != GPUMEM_NVML_SUCCESS ||
		    procs(dev, &np, NULL) != GPUMEM_NVML_SUCCESS || np != 0) {
			*gpu = i;
			return 1;
		}
	}
	return 0;
}
#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NVML loaded at run time (dlopen libnvidia-ml.so.1), for the one NVML
 * reader (health_nvml.c: gpumem-health, gpumem-check, gpumem-l2reset) and
 * gpumem-sample's GPM sampler (plugin/sample/sample_nvml.c).  nvml.h ships
 * with the driver's development files, not on build machines, so the few
 * ABI types and codes both use are declared here from NVML's documented
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

/* nvmlProcessInfo_t of _v2/_v3 (nvml.h), declared here. */
struct gpumem_nvml_proc {
	unsigned int pid;
	unsigned long long used;
	unsigned int gi, ci;
};
#define GPUMEM_NVML_PROCS_MAX 64

#endif

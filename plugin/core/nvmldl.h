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
#endif

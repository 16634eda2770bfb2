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

/* nvmlProcessInfo_t of _v2/_v3 (nvml.h), declared here. */
struct gpumem_nvml_proc {
	unsigned int pid;
	unsigned long long used;
	unsigned int gi, ci;
};
#define GPUMEM_NVML_PROCS_MAX 64

/* Does a process other than SELF hold DEV (1; or NVML cannot say), or none (0)? */
static inline int gpumem_nvml_held_by_other(gpumem_nvmlReturn_t (*procs)(gpumem_nvmlDevice_t,
									 unsigned int *, void *),
					    gpumem_nvmlDevice_t dev, unsigned int self)
{
	struct gpumem_nvml_proc p[GPUMEM_NVML_PROCS_MAX];
	unsigned int np = GPUMEM_NVML_PROCS_MAX;

	if (procs(dev, &np, p) != GPUMEM_NVML_SUCCESS || np > GPUMEM_NVML_PROCS_MAX)
		return 1;
	for (unsigned int i = 0; i < np; i++)
		if (p[i].pid != self)
			return 1;
	return 0;
}

/*
 * Does a compute process hold any of NVML's COUNT GPUs (gpumem-l2reset's
 * question, also asked by gpumem-health for the epilog)?  1 held, or NVML
 * cannot say (*gpu: the first such index); 0 none.  PROCS is
 * nvmlDeviceGetComputeRunningProcesses: asked with no room, success means
 * no process, "insufficient size" some.  SELF (a pid; 0 none) does not
 * count: the warm check server asks about every process but its own.
 */
static inline int gpumem_nvml_any_held(gpumem_nvmlReturn_t (*handle)(unsigned int,
								     gpumem_nvmlDevice_t *),
				       gpumem_nvmlReturn_t (*procs)(gpumem_nvmlDevice_t,
								    unsigned int *, void *),
				       unsigned int count, unsigned int self, unsigned int *gpu)
{
	for (unsigned int i = 0; i < count; i++) {
		gpumem_nvmlDevice_t dev = NULL;
		unsigned int np = 0;
		gpumem_nvmlReturn_t r;

		if (handle(i, &dev) != GPUMEM_NVML_SUCCESS)
			goto held;
		r = procs(dev, &np, NULL);
		if (r == GPUMEM_NVML_SUCCESS && np == 0)
			continue;
		if (self && r == GPUMEM_NVML_ERROR_INSUFFICIENT_SIZE &&
		    !gpumem_nvml_held_by_other(procs, dev, self))
			continue;
held:
		*gpu = i;
		return 1;
	}
	return 0;
}
#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libgpumem-um internals shared between its source files.  Nothing here is
 * exported: the library is built with -fvisibility=hidden and only the
 * interposed entry points (um_preload.c, um_dlsym.c) have default visibility.
 *
 *   um_preload.c  entry points, the real driver functions behind them, the
 *                 advice read from the environment, logging
 *   um_dlsym.c    the dlsym trampoline
 *   um_advise.c   driver functions the advice needs; one advice for the
 *                 whole allocation (preferred, accessed-by, read-mostly, prefetch)
 *   um_stripe.c   placement by size: GPU and CPU stripes
 *   um_plan.c     the stripe arithmetic (pure C, unit-tested)
 *   um_config.c   GPUMEM_UM_ADVICE (pure C, unit-tested)
 */
#ifndef GPUMEM_UM_PRELOAD_H
#define GPUMEM_UM_PRELOAD_H

#include <stddef.h>

#include <cuda.h>

#include "um_config.h"

#define GPUMEM_UM_PROG          "gpumem-um"

typedef void *(*gpumem_um_dlsym_fn)(void *handle, const char *name);

/* The dlsym that would have answered without this library (never ours). */
gpumem_um_dlsym_fn gpumem_um_real_dlsym(void);

/*
 * Index of 'name' among the entry points this library replaces
 * (cuGetProcAddress, cuGetProcAddress_v2, cuMemAllocManaged), or -1.
 */
int gpumem_um_hooked(const char *name);
enum { GPUMEM_UM_R_GPA1, GPUMEM_UM_R_GPA2, GPUMEM_UM_R_ALLOC, GPUMEM_UM_R_N };

/*
 * A dlsym lookup of a hooked name answered 'sym': remember it as the real
 * entry point and return ours instead (or NULL when there is no real one).
 */
void *gpumem_um_dlsym_hooked(void *handle, const char *name);

/* The real entry point behind hooked name 'i' (GPUMEM_UM_R_*), or NULL. */
void *gpumem_um_get_real(int i);
/* 'name' in libcuda, skipping ourselves; never loads libcuda. */
void *gpumem_um_cuda_sym(const char *name);

/* One line on stderr, "gpumem-um: " prefixed; errno is preserved. */
void gpumem_um_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Latch: true for the first caller only, in this process. */
int gpumem_um_first(int *flag);

/* ------------------------------------------------------------ driver functions (um_advise.c) */
typedef CUresult (*um_gpa1_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*um_gpa2_fn)(const char *, void **, int, cuuint64_t,
			       CUdriverProcAddressQueryResult *);
typedef CUresult (*um_advise_fn)(CUdeviceptr, size_t, CUmem_advise, CUmemLocation);
typedef CUresult (*um_advise8_fn)(CUdeviceptr, size_t, CUmem_advise, CUdevice);
typedef CUresult (*um_prefetch_fn)(CUdeviceptr, size_t, CUmemLocation, unsigned int, CUstream);
typedef CUresult (*um_prefetch8_fn)(CUdeviceptr, size_t, CUdevice, CUstream);
typedef CUresult (*um_ctxdev_fn)(CUdevice *);
typedef CUresult (*um_devattr_fn)(int *, CUdevice_attribute, CUdevice);
typedef CUresult (*um_errname_fn)(CUresult, const char **);
typedef CUresult (*um_meminfo_fn)(size_t *, size_t *);
typedef CUresult (*um_streamsync_fn)(CUstream);

/* Found through the real cuGetProcAddress; any may be NULL. */
struct um_drv {
	um_advise_fn advise;            /* 12.2+: CUmemLocation */
	um_advise8_fn advise8;          /* older drivers: device ordinal */
	um_prefetch_fn prefetch;
	um_prefetch8_fn prefetch8;
	um_ctxdev_fn ctx_get_device;
	um_devattr_fn dev_attr;
	um_errname_fn err_name;
	um_meminfo_fn mem_get_info;     /* placement: gpu_fraction auto */
	um_streamsync_fn stream_sync;   /* the legacy default stream */
};

/* The process's table, resolved once ('local' when another thread is at it). */
const struct um_drv *gpumem_um_drv(struct um_drv *local);
/* cuMemAdvise / cuMemPrefetchAsync on the legacy stream, either driver ABI. */
CUresult gpumem_um_advise_rv(const struct um_drv *d, CUdeviceptr p, size_t n, CUmem_advise a,
			     CUmemLocation loc);
CUresult gpumem_um_prefetch_rv(const struct um_drv *d, CUdeviceptr p, size_t n,
			       CUmemLocation loc);
/* "gpu 0", "host", "host NUMA node 1" */
void gpumem_um_where(char *buf, size_t len, CUmemLocation loc);
const char *gpumem_um_advice_name(CUmem_advise a);
const char *gpumem_um_err_name(const struct um_drv *d, CUresult rv);
/* Host memory on the GPU's NUMA node where allowed and known, else plain host. */
CUmemLocation gpumem_um_host_location(const struct um_drv *d, CUdevice dev, int have_dev);

/* The advice of 'c' on a whole allocation (um_advise.c). */
void gpumem_um_apply(CUdeviceptr p, size_t n, const struct gpumem_um_config *c);
/* Placement by size; falls back to a plain allocation, once said (um_stripe.c). */
void gpumem_um_stripe(CUdeviceptr p, size_t n, const struct gpumem_um_config *c);

#endif

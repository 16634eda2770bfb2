/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tests/gpu/cuda13_um.h: the device-number forms of cudaMemPrefetchAsync
 * and cudaMemAdvise that CUDA 13 dropped (it keeps only the cudaMemLocation
 * forms), for programs written before it that the GPU tests build unchanged
 * with `nvcc -include` (NVIDIA's UM oversubscription benchmark,
 * tests/gpu/advised_gpu.sh).  cudaCpuDeviceId means the host.
 */
#ifndef GPUMEM_CUDA13_UM_H
#define GPUMEM_CUDA13_UM_H
#include <cuda_runtime_api.h>
#if defined(CUDART_VERSION) && CUDART_VERSION >= 13000
static inline struct cudaMemLocation gpumem_um_loc(int device)
{
	struct cudaMemLocation l;

	l.type = device == cudaCpuDeviceId ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
	l.id = device == cudaCpuDeviceId ? 0 : device;
	return l;
}

static inline cudaError_t cudaMemPrefetchAsync(const void *p, size_t n, int device,
					       cudaStream_t s = 0)
{
	return cudaMemPrefetchAsync(p, n, gpumem_um_loc(device), 0, s);
}

static inline cudaError_t cudaMemAdvise(const void *p, size_t n, enum cudaMemoryAdvise a,
					int device)
{
	return cudaMemAdvise(p, n, a, gpumem_um_loc(device));
}
#endif
#endif

/*
 * Loading the CUDA driver at run time, for the helpers that talk to it
 * without the toolkit (gpumem-probe, gpumem-l2reset, gpumem-check's driver
 * probe): dlopen libcuda.so.1, take entry points by name, and the one
 * meaning of "no driver, no GPU" they all exit with.  Header only: each
 * helper links nothing more than libdl.
 */
#ifndef GPUMEM_CUDADL_H
#define GPUMEM_CUDADL_H
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* The helpers' exit status when there is no driver or no GPU: "skipped", never a failure. */
#define GPUMEM_EXIT_NO_GPU 3

/* libcuda.so.1, or NULL with the reason in WHY. */
static inline void *gpumem_cuda_open(char *why, size_t len)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

	if (h == NULL)
		snprintf(why, len, "no CUDA driver library (libcuda.so.1): %s", dlerror());
	return h;
}

/* Entry point NAME of H into the function pointer FN (no object/function cast warnings). */
#define GPUMEM_DLSYM(h, fn, name) do {					\
		void *gpumem_sym_ = dlsym((h), (name));			\
		memcpy(&(fn), &gpumem_sym_, sizeof(gpumem_sym_));	\
	} while (0)
/* The same, with an older name to fall back on where NAME is missing. */
#define GPUMEM_DLSYM_OR(h, fn, name, older) do {			\
		GPUMEM_DLSYM(h, fn, name);				\
		if ((fn) == NULL)					\
			GPUMEM_DLSYM(h, fn, older);			\
	} while (0)

/*
 * CUDA's MPS errors (805-810, the same numbers in the driver and the
 * runtime): an MPS daemon at CUDA_MPS_PIPE_DIRECTORY (/tmp/nvidia-mps when
 * unset) that this process cannot use.  They say nothing of the GPU.
 */
static inline int gpumem_cuda_mps_error(int e)
{
	return e >= 805 && e <= 810;
}
#endif

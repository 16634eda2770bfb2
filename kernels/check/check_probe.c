/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-check's driver probe: is there a driver with a GPU, and will the
 * CUDA runtime start?  main() calls it before anything heavy, so that a
 * node without a GPU, driver or CUDA gets its answer (exit 3, "skipped")
 * in milliseconds: only dlopen + cuInit + cuDeviceGetCount, then the
 * runtime's device count.  A GPU the driver will not start is a fail; an
 * MPS daemon this process cannot use makes the GPU unusable, never failed.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "core_base.h"
#include "core_policy.h"

typedef int (*cu_init_fn)(unsigned int);
typedef int (*cu_count_fn)(int *);
typedef int (*cu_errname_fn)(int, const char **);

/* Is there a GPU device node?  Tells "no GPU" from "a GPU CUDA cannot use". */
static int have_dev_nvidia(void)
{
	char path[32];
	int i;

	for (i = 0; i < 64; i++) {
		snprintf(path, sizeof(path), "/dev/nvidia%d", i);
		if (access(path, F_OK) == 0)
			return 1;
	}
	return 0;
}

static const char *mps_pipe(void)
{
	const char *d = getenv(GPUMEM_ENV_MPS_PIPE);

	return d && *d ? d : "/tmp/nvidia-mps";
}

/*
 * Is there a driver with a GPU?  Only dlopen + cuInit + cuDeviceGetCount:
 * milliseconds where there is none.  Returns 0 to go on, else the exit
 * code (3 skipped, 2 fail: a GPU is there but the driver will not start)
 * with 'why' filled.
 */
static int probe_driver(char *why, size_t len)
{
	cu_init_fn init;
	cu_count_fn count;
	cu_errname_fn errname;
	const char *name = NULL;
	void *lib;
	int r, n = 0;

	lib = gpumem_cuda_open(why, len);
	if (!lib)
		return GPUMEM_CHECK_EXIT_SKIPPED;
	GPUMEM_DLSYM(lib, init, "cuInit");
	GPUMEM_DLSYM(lib, count, "cuDeviceGetCount");
	GPUMEM_DLSYM(lib, errname, "cuGetErrorName");
	if (!init || !count) {
		snprintf(why, len, "no usable NVIDIA driver (libcuda.so.1 lacks cuInit)");
		return GPUMEM_CHECK_EXIT_SKIPPED;
	}
	r = init(0);
	if (r != 0) {
		if (!errname || errname(r, &name) != 0 || !name)
			name = "unknown error";
		if (gpumem_cuda_mps_error(r)) {
			snprintf(why, len, "an MPS daemon in %.200s cannot serve this check (cuInit: %s)",
				 mps_pipe(), name);
			return GPUMEM_CHECK_EXIT_UNUSABLE;
		}
		if (r == 100 /* CUDA_ERROR_NO_DEVICE */ || !have_dev_nvidia()) {
			snprintf(why, len, "no GPU (cuInit: %s)", name);
			return GPUMEM_CHECK_EXIT_SKIPPED;
		}
		/* e.g. CUDA_ERROR_SYSTEM_NOT_READY: fabric manager down on an NVSwitch node */
		snprintf(why, len, "a GPU is present but the CUDA driver will not start (cuInit: %s)",
			 name);
		return GPUMEM_CHECK_EXIT_FAIL;
	}
	if (count(&n) != 0 || n <= 0) {
		snprintf(why, len, "no GPU visible%s", getenv(GPUMEM_ENV_VISIBLE) ?
			 " (" GPUMEM_ENV_VISIBLE " is set)" : "");
		return GPUMEM_CHECK_EXIT_SKIPPED;
	}
	/* The handle stays open: the CUDA runtime opens the same library. */
	return 0;
}

/* What cudaGetDeviceCount's answer means: 0 to go on, else the exit code. */
static int runtime_verdict(cudaError_t e, int cuda_count, char *why, size_t len)
{
	int rc = 0;

	if (e == cudaErrorInsufficientDriver) {
		int drv = 0, rt = 0;

		cudaDriverGetVersion(&drv);
		cudaRuntimeGetVersion(&rt);
		snprintf(why, len, "the CUDA %d.%d runtime needs a newer driver "
			 "(this one supports CUDA %d.%d)", rt / 1000, rt % 1000 / 10,
			 drv / 1000, drv % 1000 / 10);
		rc = GPUMEM_CHECK_EXIT_SKIPPED;
	} else if (e == cudaErrorNoDevice || (e == cudaSuccess && cuda_count <= 0)) {
		snprintf(why, len, "no GPU visible to CUDA");
		rc = GPUMEM_CHECK_EXIT_SKIPPED;
	} else if (gpumem_cuda_mps_error((int)e)) {
		snprintf(why, len, "an MPS daemon in %.200s cannot serve this check: %s (%s)",
			 mps_pipe(), cudaGetErrorString(e), cudaGetErrorName(e));
		rc = GPUMEM_CHECK_EXIT_UNUSABLE;
	} else if (e != cudaSuccess) {
		snprintf(why, len, "the CUDA runtime cannot start: %s (%s)",
			 cudaGetErrorString(e), cudaGetErrorName(e));
		rc = GPUMEM_CHECK_EXIT_FAIL;
	}
	return rc;
}

int gpumem_check_probe(struct gpumem_check_report *rep, int *cuda_count, char *why, size_t len)
{
	cudaError_t e;
	double t;
	int rc;

	why[0] = '\0';
	t = gpumem_check_now();
	rc = probe_driver(why, len);
	rep->t.driver = gpumem_check_now() - t;
	if (rc == 0) {
		t = gpumem_check_now();
		e = cudaGetDeviceCount(cuda_count);
		rep->t.runtime = gpumem_check_now() - t;
		rc = runtime_verdict(e, *cuda_count, why, len);
	}
	return rc;
}

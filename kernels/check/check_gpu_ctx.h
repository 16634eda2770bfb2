/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The state of the check of one GPU (struct gpumem_check_ctx), shared by
 * the files that run its parts: check_gpu.c (the thread: context, setup,
 * order of the steps), check_measure.c (pattern test and HBM figures),
 * check_host.c (PCIe figures through a pinned, NUMA-placed buffer) and
 * check_l2ab.c (the persisting-L2 A/B).  Only those files include it.
 */
#ifndef GPUMEM_CHECK_GPU_CTX_H
#define GPUMEM_CHECK_GPU_CTX_H

#include <stdio.h>

#include "check_gpu.h"

/* Internal to these files (not linked symbols), so short names. */
#define MIB ((size_t)1 << 20)
#define NBW 5                           /* read write copy triad d2d */
#define MAX_REPEATS 64
#define L2AB_REPEATS 6

struct gpumem_check_ctx {
	struct gpumem_check_device *d;
	const struct gpumem_check_opts *o;
	struct gpumem_check_shared *sh;
	cudaStream_t st;
	cudaEvent_t ev[2 * (NBW * (MAX_REPEATS + 1) + 2)];
	int nev;
	struct gpumem_check_grid g;
	char *buf;                      /* device: memtest region and the arrays */
	size_t buf_bytes;
	char *a, *b, *c;                /* three arrays of arr_bytes */
	size_t arr_bytes, n;            /* n: double2 elements per array */
	void *ctl;                      /* device: memtest result, then a sink */
	struct gpumem_check_mt_result *mt;      /* pinned host copy */
	int dead;                       /* a CUDA error left the context unusable */
	char dead_msg[GPUMEM_CHECK_MSG];
};

/*
 * Record a CUDA error into 'dst'.  Anything but "out of memory" comes from
 * the GPU or the driver and can leave the context broken (sticky errors such
 * as an uncorrectable ECC error or an illegal address): stop using the GPU.
 */
static inline int cuda_fail(struct gpumem_check_ctx *c, char *dst, int *fatal,
			    const char *what, cudaError_t e)
{
	snprintf(dst, GPUMEM_CHECK_MSG, "%s: %s", what, cudaGetErrorString(e));
	if (e != cudaErrorMemoryAllocation) {
		if (fatal)
			*fatal = 1;
		if (!c->dead) {
			c->dead = 1;
			snprintf(c->dead_msg, sizeof(c->dead_msg), "not run: earlier CUDA error (%s)",
				 what);
		}
	}
	return -1;
}

static inline double elapsed_ms(cudaEvent_t a, cudaEvent_t b)
{
	float ms = 0;

	if (cudaEventElapsedTime(&ms, a, b) != cudaSuccess)
		return -1;
	return ms;
}

/* Best and median of the valid GB/s figures of 'n' repeats into 'm'. */
void gpumem_check_fill_metric(struct gpumem_check_metric *m, const double *gbps, int n);

/* check_measure.c: enqueued on the GPU's stream, collected after one sync. */
int gpumem_check_memtest_enqueue(struct gpumem_check_ctx *c);
int gpumem_check_bandwidth_enqueue(struct gpumem_check_ctx *c);
void gpumem_check_memtest_collect(struct gpumem_check_ctx *c);
void gpumem_check_bandwidth_collect(struct gpumem_check_ctx *c);

/* check_host.c: the host buffer of the PCIe figures, once pinned. */
struct gpumem_check_pinned {
	void *host, *alloc;             /* alloc: cudaMallocHost fallback, else NULL */
	size_t bytes;
	int registered;
	char error[GPUMEM_CHECK_MSG];
};

void gpumem_check_host_pin(struct gpumem_check_ctx *c, const struct gpumem_check_hostbuf *hb,
			   struct gpumem_check_pinned *pn);
void gpumem_check_host_unpin(struct gpumem_check_pinned *pn);
void gpumem_check_host_transfers(struct gpumem_check_ctx *c, const struct gpumem_check_pinned *pn);

/* check_l2ab.c */
void gpumem_check_l2_ab(struct gpumem_check_ctx *c);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The CUDA side of gpumem-check.  check_kernels.cu holds only the kernels
 * and thin C launchers; check_gpu.c drives them from C (CUDA runtime API,
 * which is a C API), so that the host logic builds with the project's
 * -Wall -Wextra -Werror.
 */
#ifndef GPUMEM_CHECK_GPU_H
#define GPUMEM_CHECK_GPU_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Memory test patterns, one 64-bit word each (index i of the region). */
enum {
	GPUMEM_CHECK_PAT_WALK1 = 0,     /* 1 << ((i + seed) % 64): walking ones */
	GPUMEM_CHECK_PAT_CHECKER,       /* 0x55.. / 0xAA.. alternating words */
	GPUMEM_CHECK_PAT_ADDRESS,       /* the word's own address: catches aliasing */
	GPUMEM_CHECK_PAT_RANDOM,        /* splitmix64(i ^ seed) */
	GPUMEM_CHECK_NPATTERNS
};

/* Written by the check kernels; 'first' starts at ~0. */
struct gpumem_check_mt_result {
	unsigned long long count;       /* mismatching words */
	unsigned long long first;       /* lowest mismatching word index */
	unsigned long long bits;        /* OR of got ^ expected */
};

struct gpumem_check_grid {
	unsigned blocks, threads;
};

/*
 * All launchers enqueue on 'stream' and return cudaGetLastError() as an
 * int (0 = launched).  Sizes are in 16-byte elements (n2) for the memory
 * test and in double2 elements (n) for the bandwidth kernels.
 */
int gpumem_check_launch_fill(cudaStream_t stream, struct gpumem_check_grid g, void *buf,
			     size_t n2, int pattern, unsigned long long seed);
/*
 * Compare every word with pattern ^ flip; count mismatches into *res; if
 * rewrite, store ~(pattern ^ flip) (the moving-inversions step).
 */
int gpumem_check_launch_verify(cudaStream_t stream, struct gpumem_check_grid g, void *buf,
			       size_t n2, int pattern, unsigned long long seed,
			       unsigned long long flip, int rewrite,
			       struct gpumem_check_mt_result *res);
/* XOR one word with mask (--plant-error). */
int gpumem_check_launch_flip(cudaStream_t stream, void *buf, size_t word, unsigned long long mask);

int gpumem_check_launch_init(cudaStream_t stream, struct gpumem_check_grid g, void *a, void *b,
			     void *c, size_t n);
/* The bandwidth kernels: one thread per element, their own grid. */
int gpumem_check_launch_read(cudaStream_t stream, const void *a, size_t n, void *sink);
int gpumem_check_launch_write(cudaStream_t stream, void *a, size_t n, double v);
int gpumem_check_launch_copy(cudaStream_t stream, void *c, const void *a, size_t n);
int gpumem_check_launch_triad(cudaStream_t stream, void *a, const void *b, const void *c,
			      double s, size_t n);
/* Stream over 'st' (n elements) while re-reading 'hot' (hot_n elements). */
int gpumem_check_launch_hotstream(cudaStream_t stream, struct gpumem_check_grid g,
				  const void *hot, size_t hot_n, const void *st, size_t n,
				  void *sink);

#ifdef __cplusplus
}
#endif

/* ---------------------------------------------------------------- runner */
#ifndef __CUDACC__
#include <pthread.h>
#include "check.h"
#include "check_numa.h"
#include "check_nvml.h"

struct gpumem_check_opts {
	int quick;                      /* bandwidth only */
	int memtest;                    /* run the pattern test */
	int plant_error;
	int l2ab;
	double l2_setaside_pct;         /* the job's set-aside, percent of L2 (0: none) */
	uint64_t l2_setaside_bytes;     /* or in bytes (0: none) */
	int l2_reset;                   /* reset persisting L2 at the end (--l2-reset) */
	uint64_t mem_bytes;             /* pattern test region */
	uint64_t array_bytes;           /* each of the three bandwidth arrays */
	uint64_t host_bytes;            /* H2D/D2H transfer size */
	int repeats;                    /* timed repeats per figure */
};

/* Seconds on the monotonic clock (check_sync.c). */
double gpumem_check_now(void);

/* A value some threads produce once and others wait for. */
struct gpumem_check_future {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done;
	void *value;
	char why[GPUMEM_CHECK_MSG];
};

void gpumem_check_future_init(struct gpumem_check_future *f);
void gpumem_check_future_set(struct gpumem_check_future *f, void *value);
void *gpumem_check_future_wait(struct gpumem_check_future *f);

struct gpumem_check_shared {
	const struct gpumem_check_opts *opts;
	struct gpumem_check_future topo;        /* struct gpumem_check_topo * */
	struct gpumem_check_future nvml;        /* struct gpumem_check_nvml * */
	/* GPU threads still creating their context (guarded by the mutex). */
	pthread_mutex_t ctx_mu;
	pthread_cond_t ctx_cv;
	int ctx_pending;
};

/* One GPU thread is past its context creation, whether it worked or not. */
void gpumem_check_ctx_done(struct gpumem_check_shared *sh);
/* Until every GPU thread is past its context creation. */
void gpumem_check_ctx_wait(struct gpumem_check_shared *sh);

struct gpumem_check_job {
	struct gpumem_check_shared *shared;
	struct gpumem_check_device *dev;
};

/* Identity of CUDA device 'ordinal' without creating a context. */
int gpumem_check_identify(int ordinal, struct gpumem_check_device *d);

/* Thread body: the whole check of one GPU (arg: struct gpumem_check_job *). */
void *gpumem_check_device_main(void *arg);
#endif

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The GPU's own memory, for one GPU: the moving-inversions pattern test and
 * the HBM figures (read, write, copy, triad, device-to-device copy).  Both
 * are only enqueued on the GPU's stream, each timed between two events, so
 * that the host can do other work meanwhile (check_gpu.c); their results
 * are collected after the one synchronisation.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_gpu_ctx.h"

/* Enqueue the moving-inversions pattern test; results come with the next sync. */
int gpumem_check_memtest_enqueue(struct gpumem_check_ctx *c)
{
	struct gpumem_check_memtest *m = &c->d->memtest;
	size_t n2 = (size_t)c->o->mem_bytes / 16;
	cudaEvent_t *ev = &c->ev[c->nev - 2];   /* the last pair */
	cudaError_t e;
	int p;

	m->bytes = (uint64_t)n2 * 16;
	m->patterns = GPUMEM_CHECK_NPATTERNS;
	e = cudaMemsetAsync(c->ctl, 0, sizeof(struct gpumem_check_mt_result), c->st);
	if (e == cudaSuccess)   /* 'first' starts at ~0 so atomicMin finds the lowest */
		e = cudaMemsetAsync((char *)c->ctl + offsetof(struct gpumem_check_mt_result, first),
				    0xff, sizeof(unsigned long long), c->st);
	if (e == cudaSuccess)
		e = cudaEventRecord(ev[0], c->st);
	for (p = 0; p < GPUMEM_CHECK_NPATTERNS && e == cudaSuccess; p++) {
		unsigned long long seed = 0x6770756d656dull + (unsigned long long)p;

		/* write P; check P and write ~P; check ~P */
		e = (cudaError_t)gpumem_check_launch_fill(c->st, c->g, c->buf, n2, p, seed);
		if (e == cudaSuccess && c->o->plant_error && p == 0) {
			/* Between write and verify, as a failing cell would do. */
			e = (cudaError_t)gpumem_check_launch_flip(c->st, c->buf, n2 + 7, 1ull << 17);
			m->planted = 1;
		}
		if (e == cudaSuccess)
			e = (cudaError_t)gpumem_check_launch_verify(c->st, c->g, c->buf, n2, p, seed, 0,
								    1, c->ctl);
		if (e == cudaSuccess)
			e = (cudaError_t)gpumem_check_launch_verify(c->st, c->g, c->buf, n2, p, seed,
								    ~0ull, 0, c->ctl);
	}
	if (e == cudaSuccess)
		e = cudaEventRecord(ev[1], c->st);
	if (e == cudaSuccess)
		e = cudaMemcpyAsync(c->mt, c->ctl, sizeof(*c->mt), cudaMemcpyDeviceToHost, c->st);
	if (e != cudaSuccess)
		return cuda_fail(c, m->error, &m->fatal, "memory test", e);
	m->run = 1;
	return 0;
}

static cudaError_t launch_bw(struct gpumem_check_ctx *c, int id)
{
	switch (id) {
	case GPUMEM_CHECK_READ:
		return (cudaError_t)gpumem_check_launch_read(c->st, c->a, c->n, c->ctl);
	case GPUMEM_CHECK_WRITE:
		return (cudaError_t)gpumem_check_launch_write(c->st, c->c, c->n, 3.0);
	case GPUMEM_CHECK_COPY:
		return (cudaError_t)gpumem_check_launch_copy(c->st, c->c, c->a, c->n);
	case GPUMEM_CHECK_TRIAD:
		return (cudaError_t)gpumem_check_launch_triad(c->st, c->a, c->b, c->c, 0.5, c->n);
	case GPUMEM_CHECK_D2D:
		return cudaMemcpyAsync(c->b, c->a, c->arr_bytes, cudaMemcpyDeviceToDevice, c->st);
	}
	return cudaErrorInvalidValue;
}

/* Bytes a figure counts per repeat: every byte read plus every byte written. */
static uint64_t bw_bytes(struct gpumem_check_ctx *c, int id)
{
	switch (id) {
	case GPUMEM_CHECK_READ:
	case GPUMEM_CHECK_WRITE: return c->arr_bytes;
	case GPUMEM_CHECK_COPY:
	case GPUMEM_CHECK_D2D:   return 2 * (uint64_t)c->arr_bytes;
	case GPUMEM_CHECK_TRIAD: return 3 * (uint64_t)c->arr_bytes;
	}
	return 0;
}

/* Enqueue 1 warm-up + R timed repeats of each HBM figure, event pair around each. */
int gpumem_check_bandwidth_enqueue(struct gpumem_check_ctx *c)
{
	int id, r, k = 0, R = c->o->repeats;
	cudaError_t e;

	e = (cudaError_t)gpumem_check_launch_init(c->st, c->g, c->a, c->b, c->c, c->n);
	for (id = 0; id < NBW && e == cudaSuccess; id++) {
		c->d->metric[id].bytes = bw_bytes(c, id);
		for (r = 0; r <= R && e == cudaSuccess; r++, k += 2) {
			e = cudaEventRecord(c->ev[k], c->st);
			if (e == cudaSuccess)
				e = launch_bw(c, id);
			if (e == cudaSuccess)
				e = cudaEventRecord(c->ev[k + 1], c->st);
		}
	}
	if (e != cudaSuccess) {
		for (id = 0; id < NBW; id++)
			cuda_fail(c, c->d->metric[id].error, &c->d->metric[id].fatal,
				  "bandwidth kernels", e);
		return -1;
	}
	return 0;
}

void gpumem_check_fill_metric(struct gpumem_check_metric *m, const double *gbps, int n)
{
	double tmp[MAX_REPEATS];
	int i, k = 0;

	for (i = 0; i < n; i++)
		if (gbps[i] > 0)
			tmp[k++] = gbps[i];
	if (!k) {
		snprintf(m->error, sizeof(m->error), "no valid timing");
		return;
	}
	m->best = gpumem_check_max(tmp, k);
	m->median = gpumem_check_median(tmp, k);
	m->repeats = k;
	m->measured = 1;
}

void gpumem_check_bandwidth_collect(struct gpumem_check_ctx *c)
{
	double gbps[MAX_REPEATS];
	int id, r, R = c->o->repeats;

	for (id = 0; id < NBW; id++) {
		struct gpumem_check_metric *m = &c->d->metric[id];
		int base = 2 * id * (R + 1);

		for (r = 1; r <= R; r++) {      /* r = 0 was the warm-up */
			double ms = elapsed_ms(c->ev[base + 2 * r], c->ev[base + 2 * r + 1]);
			gbps[r - 1] = ms > 0 ? (double)m->bytes / (ms * 1e6) : 0;
		}
		gpumem_check_fill_metric(m, gbps, R);
	}
}

void gpumem_check_memtest_collect(struct gpumem_check_ctx *c)
{
	struct gpumem_check_memtest *m = &c->d->memtest;
	cudaEvent_t *ev = &c->ev[c->nev - 2];
	double ms = elapsed_ms(ev[0], ev[1]);

	m->mismatches = c->mt->count;
	if (m->mismatches) {
		m->first_offset = c->mt->first * 8;
		m->first_address = (uint64_t)(uintptr_t)c->buf + m->first_offset;
		m->bad_bits = c->mt->bits;
	}
	m->seconds = ms > 0 ? ms / 1e3 : 0;
	/* per pattern: write, read+write, read = 4 passes over the region */
	m->gbps = ms > 0 ? 4.0 * GPUMEM_CHECK_NPATTERNS * (double)m->bytes / (ms * 1e6) : 0;
	c->d->t.memtest = m->seconds;
}

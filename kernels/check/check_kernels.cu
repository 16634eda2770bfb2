/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-check device code: the memory pattern test and the bandwidth
 * kernels, each behind a C launcher (check_gpu.h).
 *
 * The bandwidth kernels (read, write, copy, triad) are "flat": one 16-byte
 * element per thread, one 256-thread block per 4 KiB of each array.
 * Measured side by side (bench/kernel-shapes.cu): the flat triad beat the
 * grid-stride loop unrolled by two (SMs x 8 blocks), and the unrolled-by-four
 * and streaming-hint variants were slower still.  Consecutive blocks
 * touching consecutive 4 KiB pieces keep
 * the DRAM pages open; a grid-stride loop spreads each wave over the array.
 * The pattern test and the init/L2 kernels stay grid-stride: they are not
 * what the bandwidth figures are judged on.
 */
#include <cuda_runtime.h>
#include <stdint.h>

#include "check_gpu.h"

namespace {

/*
 * 256-thread blocks, 8 per SM: the host launches SMs x (threads per SM /
 * 256) blocks, so every block must fit at once or a second, mostly empty
 * wave would cut the measured bandwidth.  8 x 256 threads at <= 32
 * registers each is exactly the 64K registers of an sm_80/sm_90 SM.
 */
#define BOUNDS __launch_bounds__(256, 8)
#define FLAT_THREADS 256

__device__ __forceinline__ unsigned long long splitmix(unsigned long long x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The value word i holds for pattern P; 'base' is the region's address. */
template <int P>
__device__ __forceinline__ unsigned long long pattern(unsigned long long i, unsigned long long seed,
						      const void *base)
{
	if (P == GPUMEM_CHECK_PAT_WALK1)
		return 1ull << ((i + seed) & 63);
	if (P == GPUMEM_CHECK_PAT_CHECKER)
		return (i & 1) ? 0xaaaaaaaaaaaaaaaaull : 0x5555555555555555ull;
	if (P == GPUMEM_CHECK_PAT_ADDRESS)
		return (unsigned long long)(uintptr_t)base + i * 8;
	return splitmix(i ^ seed);
}

__device__ __forceinline__ size_t tid()
{
	return (size_t)blockIdx.x * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ size_t nthreads()
{
	return (size_t)gridDim.x * blockDim.x;
}

template <int P>
__global__ void BOUNDS k_fill(ulonglong2 *p, size_t n2, unsigned long long seed)
{
	for (size_t j = tid(); j < n2; j += nthreads()) {
		ulonglong2 v;
		v.x = pattern<P>(2 * j, seed, p);
		v.y = pattern<P>(2 * j + 1, seed, p);
		p[j] = v;
	}
}

/* Mismatches are rare: the atomics cost nothing on a healthy GPU. */
__device__ __noinline__ void mismatch(gpumem_check_mt_result *r, unsigned long long word,
				      unsigned long long diff)
{
	atomicAdd(&r->count, 1ull);
	atomicMin(&r->first, word);
	atomicOr(&r->bits, diff);
}

template <int P>
__global__ void BOUNDS k_verify(ulonglong2 *p, size_t n2, unsigned long long seed,
			 unsigned long long flip, int rewrite, gpumem_check_mt_result *r)
{
	for (size_t j = tid(); j < n2; j += nthreads()) {
		ulonglong2 got = p[j];
		unsigned long long e0 = pattern<P>(2 * j, seed, p) ^ flip;
		unsigned long long e1 = pattern<P>(2 * j + 1, seed, p) ^ flip;

		if (got.x != e0)
			mismatch(r, 2 * j, got.x ^ e0);
		if (got.y != e1)
			mismatch(r, 2 * j + 1, got.y ^ e1);
		if (rewrite) {
			ulonglong2 inv;
			inv.x = ~e0;
			inv.y = ~e1;
			p[j] = inv;
		}
	}
}

__global__ void k_flip(unsigned long long *p, size_t word, unsigned long long mask)
{
	p[word] ^= mask;
}

__global__ void BOUNDS k_init(double2 *a, double2 *b, double2 *c, size_t n)
{
	for (size_t i = tid(); i < n; i += nthreads()) {
		a[i] = make_double2(1.0, 1.0);
		b[i] = make_double2(2.0, 2.0);
		c[i] = make_double2(0.5, 0.5);
	}
}

/*
 * The comparison only keeps the load alive: the data is positive, so it
 * never stores, but the compiler cannot know that.
 */
__global__ void __launch_bounds__(256) k_read(const double2 *__restrict__ a, size_t n, double2 *sink)
{
	size_t i = tid();

	if (i < n) {
		double2 v = a[i];
		if (v.x + v.y == -1.0)
			sink[0] = v;
	}
}

__global__ void __launch_bounds__(256) k_write(double2 *__restrict__ a, size_t n, double v)
{
	size_t i = tid();

	if (i < n)
		a[i] = make_double2(v, v);
}

__global__ void __launch_bounds__(256) k_copy(double2 *__restrict__ c, const double2 *__restrict__ a,
					       size_t n)
{
	size_t i = tid();

	if (i < n)
		c[i] = a[i];
}

__global__ void __launch_bounds__(256) k_triad(double2 *__restrict__ a, const double2 *__restrict__ b,
						const double2 *__restrict__ c, double q, size_t n)
{
	size_t i = tid();

	if (i < n)
		a[i] = make_double2(fma(q, c[i].x, b[i].x), fma(q, c[i].y, b[i].y));
}

/* One 256-thread block per 256 elements; false if n needs too many blocks. */
bool flat_grid(size_t n, unsigned *blocks)
{
	size_t b = (n + FLAT_THREADS - 1) / FLAT_THREADS;

	if (n == 0 || b > 0x7fffffffu)
		return false;
	*blocks = (unsigned)b;
	return true;
}

/*
 * L2 A/B: every step reads one streaming element (used once) and one
 * element of a small hot set (re-read n/hot_n times).  Whether a
 * persisting access-policy window on the hot set helps is what the A/B
 * measures; the result is reported as measured, never assumed.
 */
__global__ void BOUNDS k_hotstream(const double2 *__restrict__ hot, size_t hot_n,
			    const double2 *__restrict__ st, size_t n, double2 *sink)
{
	const size_t s = nthreads();
	size_t i = tid();
	size_t j = i % hot_n;
	const size_t step = s % hot_n;
	double2 acc = make_double2(0, 0);

	for (; i < n; i += s) {
		double2 v = st[i], h = hot[j];
		acc.x += v.x * h.x;
		acc.y += v.y + h.y;
		j += step;
		if (j >= hot_n)
			j -= hot_n;
	}
	if (acc.x + acc.y == -1.0)
		sink[0] = acc;
}

template <int P>
int fill_as(cudaStream_t st, gpumem_check_grid g, void *buf, size_t n2, unsigned long long seed)
{
	k_fill<P><<<g.blocks, g.threads, 0, st>>>((ulonglong2 *)buf, n2, seed);
	return (int)cudaGetLastError();
}

template <int P>
int verify_as(cudaStream_t st, gpumem_check_grid g, void *buf, size_t n2, unsigned long long seed,
	      unsigned long long flip, int rewrite, gpumem_check_mt_result *res)
{
	k_verify<P><<<g.blocks, g.threads, 0, st>>>((ulonglong2 *)buf, n2, seed, flip, rewrite, res);
	return (int)cudaGetLastError();
}

} /* namespace */

extern "C" int gpumem_check_launch_fill(cudaStream_t stream, struct gpumem_check_grid g, void *buf,
					size_t n2, int pattern, unsigned long long seed)
{
	switch (pattern) {
	case GPUMEM_CHECK_PAT_WALK1:   return fill_as<GPUMEM_CHECK_PAT_WALK1>(stream, g, buf, n2, seed);
	case GPUMEM_CHECK_PAT_CHECKER: return fill_as<GPUMEM_CHECK_PAT_CHECKER>(stream, g, buf, n2, seed);
	case GPUMEM_CHECK_PAT_ADDRESS: return fill_as<GPUMEM_CHECK_PAT_ADDRESS>(stream, g, buf, n2, seed);
	default:                       return fill_as<GPUMEM_CHECK_PAT_RANDOM>(stream, g, buf, n2, seed);
	}
}

extern "C" int gpumem_check_launch_verify(cudaStream_t stream, struct gpumem_check_grid g,
					  void *buf, size_t n2, int pattern,
					  unsigned long long seed, unsigned long long flip,
					  int rewrite, struct gpumem_check_mt_result *res)
{
	switch (pattern) {
	case GPUMEM_CHECK_PAT_WALK1:
		return verify_as<GPUMEM_CHECK_PAT_WALK1>(stream, g, buf, n2, seed, flip, rewrite, res);
	case GPUMEM_CHECK_PAT_CHECKER:
		return verify_as<GPUMEM_CHECK_PAT_CHECKER>(stream, g, buf, n2, seed, flip, rewrite, res);
	case GPUMEM_CHECK_PAT_ADDRESS:
		return verify_as<GPUMEM_CHECK_PAT_ADDRESS>(stream, g, buf, n2, seed, flip, rewrite, res);
	default:
		return verify_as<GPUMEM_CHECK_PAT_RANDOM>(stream, g, buf, n2, seed, flip, rewrite, res);
	}
}

extern "C" int gpumem_check_launch_flip(cudaStream_t stream, void *buf, size_t word,
					unsigned long long mask)
{
	k_flip<<<1, 1, 0, stream>>>((unsigned long long *)buf, word, mask);
	return (int)cudaGetLastError();
}

extern "C" int gpumem_check_launch_init(cudaStream_t stream, struct gpumem_check_grid g, void *a,
					void *b, void *c, size_t n)
{
	k_init<<<g.blocks, g.threads, 0, stream>>>((double2 *)a, (double2 *)b, (double2 *)c, n);
	return (int)cudaGetLastError();
}

extern "C" int gpumem_check_launch_read(cudaStream_t stream, const void *a, size_t n, void *sink)
{
	unsigned nb;

	if (!flat_grid(n, &nb))
		return (int)cudaErrorInvalidValue;
	k_read<<<nb, FLAT_THREADS, 0, stream>>>((const double2 *)a, n, (double2 *)sink);
	return (int)cudaGetLastError();
}

extern "C" int gpumem_check_launch_write(cudaStream_t stream, void *a, size_t n, double v)
{
	unsigned nb;

	if (!flat_grid(n, &nb))
		return (int)cudaErrorInvalidValue;
	k_write<<<nb, FLAT_THREADS, 0, stream>>>((double2 *)a, n, v);
	return (int)cudaGetLastError();
}

extern "C" int gpumem_check_launch_copy(cudaStream_t stream, void *c, const void *a, size_t n)
{
	unsigned nb;

	if (!flat_grid(n, &nb))
		return (int)cudaErrorInvalidValue;
	k_copy<<<nb, FLAT_THREADS, 0, stream>>>((double2 *)c, (const double2 *)a, n);
	return (int)cudaGetLastError();
}

extern "C" int gpumem_check_launch_triad(cudaStream_t stream, void *a, const void *b, const void *c,
					 double s, size_t n)
{
	unsigned nb;

	if (!flat_grid(n, &nb))
		return (int)cudaErrorInvalidValue;
	k_triad<<<nb, FLAT_THREADS, 0, stream>>>((double2 *)a, (const double2 *)b,
						  (const double2 *)c, s, n);
	return (int)cudaGetLastError();
}

extern "C" int gpumem_check_launch_hotstream(cudaStream_t stream, struct gpumem_check_grid g,
					     const void *hot, size_t hot_n, const void *st,
					     size_t n, void *sink)
{
	if (!hot_n)
		return (int)cudaErrorInvalidValue;
	k_hotstream<<<g.blocks, g.threads, 0, stream>>>((const double2 *)hot, hot_n,
							 (const double2 *)st, n, (double2 *)sink);
	return (int)cudaGetLastError();
}

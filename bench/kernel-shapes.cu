/* SPDX-License-Identifier: GPL-2.0-or-later */
// bench/kernel-shapes.cu: which kernel shape gets closest to the HBM
// ceiling on this GPU?  gpumem-check's triad must reach at least a
// well-known STREAM-style benchmark's best triad and its read 90% of the
// datasheet; this program times, in one process and interleaved, the shapes
// a triad a = b + q*c can take (and read, write, copy in the two main
// shapes), at two array sizes, so the choice in kernels/check/check_kernels.cu
// rests on numbers.  Triad shapes:
//
//   gs2      grid-stride over double2, unrolled by 2, SMs x 8 blocks of 256
//            (what gpumem-check used up to 0.1.0)
//   gs2x4    the same, unrolled by 4
//   gs2cs    gs2 with streaming (evict-first) loads and stores
//   flat1    one double per thread, blocks of 1024, one block per 1024
//            elements (the shape of the common STREAM ports)
//   flat2    one double2 per thread, blocks of 256
//   flat2cs  flat2 with streaming loads and stores
//   flat4    two consecutive double2 per thread, blocks of 256
//   memcpy   cudaMemcpyAsync device to device, for the ceiling (2 x bytes)
// and read-gs/read-flat, write-gs/write-flat, copy-gs/copy-flat: grid-stride
// unrolled by 4 (SMs x 8 blocks) against one double2 per thread.
//
// Bytes counted: 3 x array bytes per triad (two reads, one write), 1 x for
// read and write, 2 x for copy.  Each
// figure is the best and the median of --repeats timed launches after two
// warm-up launches; variants are interleaved launch by launch so clock or
// thermal drift hits all of them alike.  The result is checked on the host
// side for every shape that writes: the output is poisoned, the shape run
// once more, and elements spread over the array are read back.
//
// build: nvcc -O3 -arch=sm_90 -o kernel-shapes bench/kernel-shapes.cu
// usage: kernel-shapes [--device N] [--repeats R] [BYTES_PER_ARRAY...]

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CK(call) do { \
	cudaError_t e_ = (call); \
	if (e_ != cudaSuccess) { \
		fprintf(stderr, "kernel-shapes: %s: %s\n", #call, cudaGetErrorString(e_)); \
		exit(1); \
	} \
} while (0)

namespace {

__device__ __forceinline__ double2 fma2(double2 b, double q, double2 c)
{
	return make_double2(fma(q, c.x, b.x), fma(q, c.y, b.y));
}

__global__ void __launch_bounds__(256, 8)
gs2(double2 *__restrict__ a, const double2 *__restrict__ b, const double2 *__restrict__ c,
    double q, size_t n)
{
	const size_t s = (size_t)gridDim.x * blockDim.x;
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	for (; i + s < n; i += 2 * s) {
		double2 b0 = b[i], b1 = b[i + s], c0 = c[i], c1 = c[i + s];
		a[i] = fma2(b0, q, c0);
		a[i + s] = fma2(b1, q, c1);
	}
	for (; i < n; i += s)
		a[i] = fma2(b[i], q, c[i]);
}

__global__ void __launch_bounds__(256, 8)
gs2x4(double2 *__restrict__ a, const double2 *__restrict__ b, const double2 *__restrict__ c,
      double q, size_t n)
{
	const size_t s = (size_t)gridDim.x * blockDim.x;
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	for (; i + 3 * s < n; i += 4 * s) {
		double2 b0 = b[i], b1 = b[i + s], b2 = b[i + 2 * s], b3 = b[i + 3 * s];
		double2 c0 = c[i], c1 = c[i + s], c2 = c[i + 2 * s], c3 = c[i + 3 * s];
		a[i] = fma2(b0, q, c0);
		a[i + s] = fma2(b1, q, c1);
		a[i + 2 * s] = fma2(b2, q, c2);
		a[i + 3 * s] = fma2(b3, q, c3);
	}
	for (; i < n; i += s)
		a[i] = fma2(b[i], q, c[i]);
}

__global__ void __launch_bounds__(256, 8)
gs2cs(double2 *__restrict__ a, const double2 *__restrict__ b, const double2 *__restrict__ c,
      double q, size_t n)
{
	const size_t s = (size_t)gridDim.x * blockDim.x;
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	for (; i + s < n; i += 2 * s) {
		double2 b0 = __ldcs(b + i), b1 = __ldcs(b + i + s);
		double2 c0 = __ldcs(c + i), c1 = __ldcs(c + i + s);
		__stcs(a + i, fma2(b0, q, c0));
		__stcs(a + i + s, fma2(b1, q, c1));
	}
	for (; i < n; i += s)
		__stcs(a + i, fma2(__ldcs(b + i), q, __ldcs(c + i)));
}

__global__ void __launch_bounds__(1024)
flat1(double *__restrict__ a, const double *__restrict__ b, const double *__restrict__ c,
      double q, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		a[i] = fma(q, c[i], b[i]);
}

__global__ void __launch_bounds__(256)
flat2(double2 *__restrict__ a, const double2 *__restrict__ b, const double2 *__restrict__ c,
      double q, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		a[i] = fma2(b[i], q, c[i]);
}

__global__ void __launch_bounds__(256)
flat2cs(double2 *__restrict__ a, const double2 *__restrict__ b, const double2 *__restrict__ c,
	double q, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		__stcs(a + i, fma2(__ldcs(b + i), q, __ldcs(c + i)));
}

__global__ void __launch_bounds__(256)
flat4(double2 *__restrict__ a, const double2 *__restrict__ b, const double2 *__restrict__ c,
      double q, size_t n)
{
	size_t i = 2 * ((size_t)blockIdx.x * blockDim.x + threadIdx.x);

	if (i + 1 < n) {
		double2 b0 = b[i], b1 = b[i + 1], c0 = c[i], c1 = c[i + 1];
		a[i] = fma2(b0, q, c0);
		a[i + 1] = fma2(b1, q, c1);
	} else if (i < n) {
		a[i] = fma2(b[i], q, c[i]);
	}
}


__global__ void __launch_bounds__(256, 8)
read_gs(const double2 *__restrict__ a, size_t n, double2 *sink)
{
	const size_t s = (size_t)gridDim.x * blockDim.x;
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	double x = 0;

	for (; i + 3 * s < n; i += 4 * s) {
		double2 v0 = a[i], v1 = a[i + s], v2 = a[i + 2 * s], v3 = a[i + 3 * s];
		x += v0.x + v0.y + v1.x + v1.y + v2.x + v2.y + v3.x + v3.y;
	}
	for (; i < n; i += s)
		x += a[i].x + a[i].y;
	if (x == -1.0)
		sink[0] = make_double2(x, x);
}

__global__ void __launch_bounds__(256)
read_flat(const double2 *__restrict__ a, size_t n, double2 *sink)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) {
		double2 v = a[i];
		if (v.x + v.y == -1.0)
			sink[0] = v;
	}
}

__global__ void __launch_bounds__(256, 8)
write_gs(double2 *__restrict__ a, size_t n, double v)
{
	const size_t s = (size_t)gridDim.x * blockDim.x;
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	const double2 w = make_double2(v, v);

	for (; i + 3 * s < n; i += 4 * s) {
		a[i] = w;
		a[i + s] = w;
		a[i + 2 * s] = w;
		a[i + 3 * s] = w;
	}
	for (; i < n; i += s)
		a[i] = w;
}

__global__ void __launch_bounds__(256)
write_flat(double2 *__restrict__ a, size_t n, double v)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		a[i] = make_double2(v, v);
}

__global__ void __launch_bounds__(256, 8)
copy_gs(double2 *__restrict__ c, const double2 *__restrict__ a, size_t n)
{
	const size_t s = (size_t)gridDim.x * blockDim.x;
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	for (; i + 3 * s < n; i += 4 * s) {
		double2 v0 = a[i], v1 = a[i + s], v2 = a[i + 2 * s], v3 = a[i + 3 * s];
		c[i] = v0;
		c[i + s] = v1;
		c[i + 2 * s] = v2;
		c[i + 3 * s] = v3;
	}
	for (; i < n; i += s)
		c[i] = a[i];
}

__global__ void __launch_bounds__(256)
copy_flat(double2 *__restrict__ c, const double2 *__restrict__ a, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = a[i];
}

__global__ void init(double *a, double *b, double *c, size_t n)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		a[i] = 0.1;
		b[i] = 0.2 + (double)(i & 7);
		c[i] = 0.3;
	}
}

struct variant {
	const char *name;
	double mult;            // bytes moved per array byte
	char out;               // 'a': checks a = b + q*c; 'w': a = 2.5; 'c': a = b; 0: none
	std::vector<float> ms;
};

double best_gbps(const std::vector<float> &ms, double bytes)
{
	float m = *std::min_element(ms.begin(), ms.end());
	return bytes / (m * 1e6);
}

double median_gbps(std::vector<float> ms, double bytes)
{
	std::sort(ms.begin(), ms.end());
	return bytes / (ms[ms.size() / 2] * 1e6);
}

} // namespace

int main(int argc, char **argv)
{
	int dev = 0, R = 20;
	std::vector<size_t> sizes;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--device") && i + 1 < argc) {
			dev = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) {
			R = atoi(argv[++i]);
		} else {
			char *end;
			double v = strtod(argv[i], &end);
			if (*end == 'M')
				v *= 1 << 20;
			else if (*end == 'G')
				v *= 1 << 30;
			if (!(v >= 1 << 20)) {
				fprintf(stderr, "usage: kernel-shapes [--device N] [--repeats R] [BYTES[M|G]...]\n");
				return 64;
			}
			sizes.push_back((size_t)v & ~(size_t)4095);
		}
	}
	if (sizes.empty()) {
		sizes.push_back((size_t)256 << 20);
		sizes.push_back((size_t)2 << 30);
	}
	if (R < 3)
		R = 3;
	CK(cudaSetDevice(dev));
	cudaDeviceProp p;
	CK(cudaGetDeviceProperties(&p, dev));
	printf("# %s, %d SMs; double arrays; best / median of %d interleaved launches\n",
	       p.name, p.multiProcessorCount, R);
	printf("# %-10s %-10s %10s %10s %8s\n", "array", "shape", "best GB/s", "median", "vs gs");

	for (size_t bytes : sizes) {
		size_t n = bytes / 8, n2 = n / 2;
		double *a, *b, *c, *sink;
		CK(cudaMalloc(&a, bytes));
		CK(cudaMalloc(&b, bytes));
		CK(cudaMalloc(&c, bytes));
		CK(cudaMalloc(&sink, 64));
		init<<<p.multiProcessorCount * 8, 256>>>(a, b, c, n);
		CK(cudaGetLastError());
		CK(cudaDeviceSynchronize());

		const unsigned gsb = (unsigned)p.multiProcessorCount * 8;
		const unsigned fb = (unsigned)((n2 + 255) / 256);
		const double q = 0.4;
		std::vector<variant> vs = {
			{"gs2", 3, 'a', {}}, {"gs2x4", 3, 'a', {}}, {"gs2cs", 3, 'a', {}},
			{"flat1", 3, 'a', {}}, {"flat2", 3, 'a', {}}, {"flat2cs", 3, 'a', {}},
			{"flat4", 3, 'a', {}}, {"memcpy", 2, 'c', {}},
			{"read-gs", 1, 0, {}}, {"read-flat", 1, 0, {}},
			{"write-gs", 1, 'w', {}}, {"write-flat", 1, 'w', {}},
			{"copy-gs", 2, 'c', {}}, {"copy-flat", 2, 'c', {}} };
		cudaEvent_t e0, e1;
		CK(cudaEventCreate(&e0));
		CK(cudaEventCreate(&e1));
		auto launch = [&](int k) {
			double2 *a2 = (double2 *)a, *s2 = (double2 *)sink;
			const double2 *b2 = (const double2 *)b, *c2 = (const double2 *)c;
			switch (k) {
			case 0: gs2<<<gsb, 256>>>(a2, b2, c2, q, n2); break;
			case 1: gs2x4<<<gsb, 256>>>(a2, b2, c2, q, n2); break;
			case 2: gs2cs<<<gsb, 256>>>(a2, b2, c2, q, n2); break;
			case 3: flat1<<<(unsigned)((n + 1023) / 1024), 1024>>>(a, b, c, q, n); break;
			case 4: flat2<<<fb, 256>>>(a2, b2, c2, q, n2); break;
			case 5: flat2cs<<<fb, 256>>>(a2, b2, c2, q, n2); break;
			case 6: flat4<<<(unsigned)((n2 / 2 + 255) / 256), 256>>>(a2, b2, c2, q, n2); break;
			case 7: CK(cudaMemcpyAsync(a, b, bytes, cudaMemcpyDeviceToDevice)); break;
			case 8: read_gs<<<gsb, 256>>>(b2, n2, s2); break;
			case 9: read_flat<<<fb, 256>>>(b2, n2, s2); break;
			case 10: write_gs<<<gsb, 256>>>(a2, n2, 2.5); break;
			case 11: write_flat<<<fb, 256>>>(a2, n2, 2.5); break;
			case 12: copy_gs<<<gsb, 256>>>(a2, b2, n2); break;
			default: copy_flat<<<fb, 256>>>(a2, b2, n2); break;
			}
			CK(cudaGetLastError());
		};
		for (int w = 0; w < 2; w++)
			for (size_t k = 0; k < vs.size(); k++)
				launch((int)k);
		for (int r = 0; r < R; r++)
			for (size_t k = 0; k < vs.size(); k++) {
				float ms;
				CK(cudaEventRecord(e0));
				launch((int)k);
				CK(cudaEventRecord(e1));
				CK(cudaEventSynchronize(e1));
				CK(cudaEventElapsedTime(&ms, e0, e1));
				vs[k].ms.push_back(ms);
			}
		// Every shape that writes: poison a, run it once, read samples back.
		for (size_t k = 0; k < vs.size(); k++) {
			if (!vs[k].out)
				continue;
			CK(cudaMemset(a, 0xff, bytes));
			launch((int)k);
			CK(cudaDeviceSynchronize());
			for (size_t j = 0; j < 64; j++) {
				size_t at = j == 63 ? n - 1 : (n / 63) * j + j;
				double h, want;
				CK(cudaMemcpy(&h, a + at, sizeof(h), cudaMemcpyDeviceToHost));
				want = vs[k].out == 'w' ? 2.5 : 0.2 + (double)(at & 7);
				if (vs[k].out == 'a')
					want += q * 0.3;
				if (fabs(h - want) > 1e-12) {
					fprintf(stderr, "kernel-shapes: %s wrote %g at %zu, want %g\n",
						vs[k].name, h, at, want);
					return 1;
				}
			}
		}
		double ref = best_gbps(vs[0].ms, 3.0 * bytes);
		for (auto &v : vs) {
			double by = v.mult * bytes, bg = best_gbps(v.ms, by);
			if (!strcmp(v.name, "read-gs") || !strcmp(v.name, "write-gs") || !strcmp(v.name, "copy-gs"))
				ref = bg;
			printf("  %-10s %-10s %10.1f %10.1f %8.3f\n",
			       (std::to_string(bytes >> 20) + "MiB").c_str(), v.name, bg,
			       median_gbps(v.ms, by), bg / ref);
		}
		CK(cudaFree(a));
		CK(cudaFree(b));
		CK(cudaFree(c));
		CK(cudaFree(sink));
		CK(cudaEventDestroy(e0));
		CK(cudaEventDestroy(e1));
	}
	return 0;
}

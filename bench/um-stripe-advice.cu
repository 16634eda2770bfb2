/* SPDX-License-Identifier: GPL-2.0-or-later */
// bench/um-stripe-advice.cu: which advice should the GPU part of a striped
// managed allocation get?  The same 2 MiB stripes as
// unified_memory.placement: stripe at gpu_fraction 0.5 (GPU granules and CPU
// granules alternating), with the CPU part always SetPreferredLocation(host)
// + SetAccessedBy(gpu), and the GPU part given, in turn:
//
//   pref      SetPreferredLocation(gpu) + prefetch       (gpumem up to 13eb4aa)
//   pref+map  the same + SetAccessedBy(gpu)                (a first try)
//   map       SetAccessedBy(gpu) + prefetch, no preferred location
//   zcopy     everything as the CPU part (zerocopy.yaml), the reference
//
// for data built on the GPU, built on the CPU, or prefetched to the CPU by
// the program before every pass, and prints the GB/s of each of --passes
// grid-stride reads, all in one process.  A benchmark: it asserts nothing
// but the checksums.
//
// usage: um-stripe-advice [BYTES (default 8G)] [PASSES (default 5)]
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "um-stripe-advice: %s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

static const size_t G = 2u << 20;   // granule

__global__ void fill(unsigned *p, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		p[i] = (unsigned)i;
}

__global__ void rd(const uint4 *__restrict__ p, size_t n16, unsigned long long *sum)
{
	unsigned long long s = 0;

	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n16; i += (size_t)gridDim.x * blockDim.x) {
		uint4 a = p[i];

		s += (unsigned long long)a.x + a.y + a.z + a.w;
	}
	atomicAdd(sum, s);
}

static void advise(void *p, size_t n, int variant, int dev)
{
	cudaMemLocation gpu = {}, host = {};

	gpu.type = cudaMemLocationTypeDevice; gpu.id = dev;
	host.type = cudaMemLocationTypeHost;
	for (size_t off = 0; off < n; off += G) {
		char *q = (char *)p + off;
		size_t len = n - off < G ? n - off : G;
		bool on_gpu = variant != 3 && (off / G) % 2 == 1;

		if (!on_gpu) {
			CK(cudaMemAdvise(q, len, cudaMemAdviseSetPreferredLocation, host));
			CK(cudaMemAdvise(q, len, cudaMemAdviseSetAccessedBy, gpu));
			continue;
		}
		if (variant != 2)
			CK(cudaMemAdvise(q, len, cudaMemAdviseSetPreferredLocation, gpu));
		if (variant != 0)
			CK(cudaMemAdvise(q, len, cudaMemAdviseSetAccessedBy, gpu));
		CK(cudaMemPrefetchAsync(q, len, gpu, 0, 0));
	}
	CK(cudaDeviceSynchronize());
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : (8ull << 30);
	int passes = argc > 2 ? atoi(argv[2]) : 5, dev = 0, sms;
	const char *vname[] = { "pref", "pref+map", "map", "zcopy" };
	const char *oname[] = { "gpu", "cpu", "to-cpu" };
	unsigned long long *dsum, want = 0;
	cudaMemLocation host = {};

	host.type = cudaMemLocationTypeHost;
	if (argc > 1 && strchr(argv[1], 'G'))
		n = strtoull(argv[1], NULL, 10) << 30;
	CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
	CK(cudaMalloc(&dsum, sizeof(*dsum)));
	for (size_t i = 0; i < n / 4; i++)
		want += (unsigned)i;
	printf("um-stripe-advice: %zu bytes, gpu_fraction 0.5 in 2 MiB stripes, %d passes, GB/s per pass\n", n, passes);
	printf("%-9s %-7s", "gpu-part", "origin");
	for (int r = 0; r < passes; r++)
		printf(" %8s%d", "pass", r + 1);
	printf("\n");
	for (int o = 0; o < 3; o++) {
		for (int v = 0; v < 4; v++) {
			unsigned *p;

			CK(cudaMallocManaged(&p, n));
			advise(p, n, v, dev);
			if (o == 1) {
				for (size_t i = 0; i < n / 4; i++)
					p[i] = (unsigned)i;
			} else {
				fill<<<sms * 8, 256>>>(p, n / 4);
				CK(cudaDeviceSynchronize());
			}
			printf("%-9s %-7s", vname[v], oname[o]);
			for (int r = 0; r < passes; r++) {
				cudaEvent_t e0, e1;
				unsigned long long got = 0;
				float ms;

				if (o == 2)
					CK(cudaMemPrefetchAsync(p, n, host, 0, 0));
				CK(cudaMemset(dsum, 0, sizeof(*dsum)));
				CK(cudaDeviceSynchronize());
				CK(cudaEventCreate(&e0));
				CK(cudaEventCreate(&e1));
				CK(cudaEventRecord(e0));
				rd<<<sms * 8, 256>>>((const uint4 *)p, n / 16, dsum);
				CK(cudaEventRecord(e1));
				CK(cudaEventSynchronize(e1));
				CK(cudaEventElapsedTime(&ms, e0, e1));
				CK(cudaMemcpy(&got, dsum, sizeof(got), cudaMemcpyDeviceToHost));
				printf(" %9.2f%s", n / (ms / 1e3) / 1e9, got == want ? "" : "!BAD");
				CK(cudaEventDestroy(e0));
				CK(cudaEventDestroy(e1));
			}
			printf("\n");
			fflush(stdout);
			CK(cudaFree(p));
		}
	}
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
// l2_linger: does a process's persisting-L2 state slow other processes down,
// and does gpumem-l2reset undo it?  Two roles, run by tests/gpu/um.sh:
//
//   l2_linger hold [--seconds S]
//       set the persisting L2 set-aside to its maximum, mark a buffer of
//       that size persisting with a stream access-policy window (hitRatio 1),
//       touch it so its lines are resident and persisting, print "READY",
//       then keep the context for S seconds (0: exit at once, leaving
//       whatever the driver leaves).  Never resets anything itself.
//   l2_linger read [--bytes N] [--reps R]
//       an ordinary process: the best of R timed passes over an N-byte
//       buffer (default: half the L2) that should stay L2-resident, in TB/s.
//   l2_linger info
//       the L2 size, the persisting maximum and the window maximum.
//
// Only the reader's number matters; it is reported as measured.

#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <unistd.h>

#define CK(call) do { \
	cudaError_t e_ = (call); \
	if (e_ != cudaSuccess) { \
		fprintf(stderr, "l2_linger: %s failed: %s\n", #call, cudaGetErrorString(e_)); \
		exit(1); \
	} \
} while (0)

// L2-only loads (ld.global.cg skips L1), volatile so that no pass is merged
// with another: every pass really goes to L2.
__device__ __forceinline__ uint4 ld_cg(const uint4 *p)
{
	uint4 v;

	asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];"
		     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
	return v;
}

__global__ void read_passes(const uint4 *p, size_t n16, int passes, unsigned *sink)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	unsigned s = 0;

	for (int k = 0; k < passes; k++)
		for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += stride) {
			uint4 v = ld_cg(p + i);

			s ^= v.x + v.y + v.z + v.w;
		}
	if (s == 0x9e3779b9u)   // practically never: keeps the loads alive
		*sink = s;
}

__global__ void touch(uint4 *p, size_t n16, int passes)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (int k = 0; k < passes; k++)
		for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += stride) {
			uint4 v = p[i];

			v.x += 1;
			p[i] = v;
		}
}

static size_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	switch (*end) {
	case 'k': case 'K': v *= 1024; break;
	case 'm': case 'M': v *= 1024 * 1024; break;
	case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
	default: break;
	}
	return (size_t)v;
}

static int hold(int seconds, const cudaDeviceProp &prop)
{
	size_t setaside = prop.persistingL2CacheMaxSize, limit = 0;
	size_t window = (size_t)prop.accessPolicyMaxWindowSize;
	size_t bytes = setaside < window ? setaside : window;
	cudaStream_t st;
	cudaStreamAttrValue attr;
	void *p;

	if (setaside == 0 || bytes == 0) {
		printf("l2_linger: hold: this GPU has no persisting L2 (persistingL2CacheMaxSize=0)\n");
		return 3;
	}
	CK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, setaside));
	CK(cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize));
	CK(cudaMalloc(&p, bytes));
	CK(cudaMemset(p, 0, bytes));
	CK(cudaStreamCreate(&st));
	memset(&attr, 0, sizeof(attr));
	attr.accessPolicyWindow.base_ptr = p;
	attr.accessPolicyWindow.num_bytes = bytes;
	attr.accessPolicyWindow.hitRatio = 1.0f;
	attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
	attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
	CK(cudaStreamSetAttribute(st, cudaStreamAttributeAccessPolicyWindow, &attr));
	touch<<<prop.multiProcessorCount * 4, 256, 0, st>>>((uint4 *)p, bytes / 16, 20);
	CK(cudaGetLastError());
	CK(cudaStreamSynchronize(st));
	printf("l2_linger: hold READY pid=%d l2=%d setaside=%zu window=%zu seconds=%d\n",
	       (int)getpid(), prop.l2CacheSize, limit, bytes, seconds);
	fflush(stdout);
	if (seconds > 0)
		std::this_thread::sleep_for(std::chrono::seconds(seconds));
	// Exit without cudaCtxResetPersistingL2Cache or a limit of 0: as a job would.
	return 0;
}

static int read_bw(size_t bytes, int reps, const cudaDeviceProp &prop)
{
	const int passes = 20;
	unsigned *sink;
	cudaEvent_t e0, e1;
	float best = 1e30f;
	void *p;

	bytes -= bytes % 16;
	CK(cudaMalloc(&p, bytes));
	CK(cudaMalloc(&sink, sizeof(*sink)));
	CK(cudaMemset(p, 1, bytes));
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	// Warm-up: the buffer into L2 and the clocks up.
	for (int i = 0; i < 3; i++)
		read_passes<<<prop.multiProcessorCount * 4, 512>>>((const uint4 *)p, bytes / 16, passes, sink);
	CK(cudaDeviceSynchronize());
	for (int r = 0; r < reps; r++) {
		float ms;

		CK(cudaEventRecord(e0));
		read_passes<<<prop.multiProcessorCount * 4, 512>>>((const uint4 *)p, bytes / 16, passes, sink);
		CK(cudaEventRecord(e1));
		CK(cudaEventSynchronize(e1));
		CK(cudaEventElapsedTime(&ms, e0, e1));
		if (ms < best)
			best = ms;
	}
	printf("l2_linger: read bytes=%zu passes=%d best_ms=%.4f tbps=%.2f\n", bytes, passes, best,
	       (double)bytes * passes / (best / 1e3) / 1e12);
	CK(cudaFree(p));
	CK(cudaFree(sink));
	return 0;
}

int main(int argc, char **argv)
{
	cudaDeviceProp prop;
	int dev = 0, seconds = 120, reps = 20;
	size_t bytes = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: l2_linger hold [--seconds S] | read [--bytes N] [--reps R] | info\n");
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			seconds = atoi(argv[++i]);
		else if (strcmp(argv[i], "--bytes") == 0 && i + 1 < argc)
			bytes = parse_size(argv[++i]);
		else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
			reps = atoi(argv[++i]);
		else {
			fprintf(stderr, "l2_linger: unknown argument '%s'\n", argv[i]);
			return 2;
		}
	}
	CK(cudaGetDevice(&dev));
	CK(cudaGetDeviceProperties(&prop, dev));
	if (bytes == 0)
		bytes = (size_t)prop.l2CacheSize / 2;
	if (strcmp(argv[1], "info") == 0) {
		printf("l2_linger: info device=%d name=\"%s\" l2=%d persisting_max=%d window_max=%d\n", dev,
		       prop.name, prop.l2CacheSize, prop.persistingL2CacheMaxSize,
		       prop.accessPolicyMaxWindowSize);
		return 0;
	}
	if (strcmp(argv[1], "hold") == 0)
		return hold(seconds, prop);
	if (strcmp(argv[1], "read") == 0)
		return read_bw(bytes, reps, prop);
	fprintf(stderr, "l2_linger: unknown role '%s'\n", argv[1]);
	return 2;
}

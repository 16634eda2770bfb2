/* SPDX-License-Identifier: GPL-2.0-or-later */
// um_read: an ordinary unified-memory program, as a job would run it.  It
// knows nothing of gpumem: it allocates managed memory, fills it on the CPU,
// then reads it once on the GPU and prints the bandwidth, for two access
// patterns, each on a fresh allocation:
//   grid    a grid-stride loop over the whole buffer
//   random  each warp reads one CHUNK-byte chunk (2 MiB by default) picked
//           by a pseudo-random permutation, as the UM oversubscription
//           benchmarks do
// and reports the range attributes the driver holds for the buffer
// (preferred location, last prefetch location, accessed-by, read-mostly),
// so that advice applied from outside (libgpumem-um) is visible.
//
// tests/gpu/um.sh builds it three ways: nvcc's default (static cudart),
// -cudart shared, and -DUM_READ_DRIVER (cuMemAllocManaged called directly,
// linked to libcuda).  UM_READ_LINK names the build in the output.
//
// With --fill gpu the buffer is instead first touched by a GPU kernel that
// writes it (a program that builds its data on the GPU): fill_s is then the
// time from just before the allocation to the end of that kernel, which is
// what a prefetch to the GPU at allocation time (prefetch.yaml) shortens.
//
// For placement by size (tests/gpu/um_stripe.sh): --reads N reads the buffer N times
// and reports the first pass (gbps: read-once) apart from the others
// (gbps_rest: read-many); placed_gpu/placed_cpu count the bytes whose
// preferred location is the GPU / the CPU, 2 MiB at a time, so a stripe
// placement applied from outside is visible; --alloc device|pinned reads a
// cudaMalloc buffer (HBM) or a cudaMallocHost one through its mapping (the
// link) with the same kernel, for the model's two bandwidths.
//
// For the stripes' access patterns: --pattern block (each block one contiguous slice) and
// --to-cpu (the program prefetches the whole buffer to the CPU before each
// pass, as the oversubscription benchmark's page_fault mode does).
//
// usage: um_read [--bytes N] [--pattern grid|block|random|both] [--chunk N]
//                [--fill cpu|gpu] [--reads N] [--to-cpu] [--alloc managed|device|pinned]
// One "um_read: RESULT key=value..." line per pattern; exit 0 when every
// checksum matched.

#include <cuda_runtime.h>
#ifdef UM_READ_DRIVER
#include <cuda.h>
#endif

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#ifndef UM_READ_LINK
#define UM_READ_LINK "static"
#endif

#define CK(call) do { \
	cudaError_t e_ = (call); \
	if (e_ != cudaSuccess) { \
		fprintf(stderr, "um_read: %s failed: %s\n", #call, cudaGetErrorString(e_)); \
		exit(1); \
	} \
} while (0)

// Elements i, i + st, i + 2 st, ... below end, four independent 16-byte
// loads in flight per thread (enough to keep a PCIe/C2C link busy when the
// GPU reads host memory through a mapping); the warp's total added to *sum.
__device__ void read_strided(const uint4 *__restrict__ p, size_t i, size_t end, size_t st,
			     unsigned long long *sum)
{
	unsigned long long s = 0;

	for (; i + 3 * st < end; i += 4 * st) {
		uint4 a = p[i], b = p[i + st], c = p[i + 2 * st], d = p[i + 3 * st];

		s += (unsigned long long)a.x + a.y + a.z + a.w + b.x + b.y + b.z + b.w +
		     c.x + c.y + c.z + c.w + d.x + d.y + d.z + d.w;
	}
	for (; i < end; i += st) {
		uint4 a = p[i];

		s += (unsigned long long)a.x + a.y + a.z + a.w;
	}
	for (int o = 16; o > 0; o >>= 1)
		s += __shfl_down_sync(0xffffffffu, s, o);
	if ((threadIdx.x & 31) == 0)
		atomicAdd(sum, s);
}

// Grid-stride: thread t reads t, t + threads, t + 2 threads, ...
__global__ void read_grid(const uint4 *__restrict__ p, size_t n16, unsigned long long *sum)
{
	read_strided(p, (size_t)blockIdx.x * blockDim.x + threadIdx.x, n16,
		     (size_t)gridDim.x * blockDim.x, sum);
}

// Block-stride: block b reads one contiguous slice, its threads striding
// through it (the oversubscription benchmarks' "block_streaming").
__global__ void read_block(const uint4 *__restrict__ p, size_t n16, unsigned long long *sum)
{
	size_t per = (n16 + gridDim.x - 1) / gridDim.x;
	size_t lo = (size_t)blockIdx.x * per, hi = lo + per < n16 ? lo + per : n16;

	read_strided(p, lo + threadIdx.x, hi, blockDim.x, sum);
}

// Warp w reads chunk (w * mult + 7) mod nchunks: a permutation, since
// gcd(mult, nchunks) == 1, so every byte is still read exactly once.
__global__ void read_random(const uint4 *__restrict__ p, size_t nchunks, size_t chunk16,
			    size_t mult, unsigned long long *sum)
{
	size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
	size_t nwarps = (size_t)gridDim.x * blockDim.x / 32;
	unsigned lane = threadIdx.x & 31;
	unsigned long long s = 0;

	for (size_t w = warp; w < nchunks; w += nwarps) {
		const uint4 *q = p + ((w * mult + 7) % nchunks) * chunk16;
		size_t j = lane;

		for (; j + 96 < chunk16; j += 128) {
			uint4 a = q[j], b = q[j + 32], c = q[j + 64], d = q[j + 96];

			s += (unsigned long long)a.x + a.y + a.z + a.w + b.x + b.y + b.z + b.w +
			     c.x + c.y + c.z + c.w + d.x + d.y + d.z + d.w;
		}
		for (; j < chunk16; j += 32) {
			uint4 a = q[j];

			s += (unsigned long long)a.x + a.y + a.z + a.w;
		}
	}
	for (int o = 16; o > 0; o >>= 1)
		s += __shfl_down_sync(0xffffffffu, s, o);
	if (lane == 0)
		atomicAdd(sum, s);
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

static size_t gcd(size_t a, size_t b)
{
	while (b) {
		size_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

// The value of word i: cheap, not constant, so a wrong page reads wrong.
static inline uint32_t word(size_t i)
{
	return (uint32_t)(i * 2654435761u) ^ (uint32_t)(i >> 32);
}

__global__ void fill_gpu(uint32_t *p, size_t nwords)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < nwords;
	     i += (size_t)gridDim.x * blockDim.x)
		p[i] = (uint32_t)(i * 2654435761u) ^ (uint32_t)(i >> 32);
}

// Fill on the CPU with several threads (first touch happens here, as in a
// program that builds its input on the host); returns the 64-bit sum.
static unsigned long long fill(uint32_t *p, size_t nwords)
{
	unsigned nt = std::thread::hardware_concurrency();
	std::vector<std::thread> th;
	std::vector<unsigned long long> part;

	if (nt == 0 || nt > 16)
		nt = nt ? 16 : 4;
	part.assign(nt, 0);
	for (unsigned t = 0; t < nt; t++)
		th.emplace_back([=, &part] {
			size_t lo = nwords / nt * t, hi = t + 1 == nt ? nwords : nwords / nt * (t + 1);
			unsigned long long s = 0;

			for (size_t i = lo; i < hi; i++) {
				uint32_t w = word(i);

				p[i] = w;
				s += w;
			}
			part[t] = s;
		});
	unsigned long long s = 0;
	for (unsigned t = 0; t < nt; t++) {
		th[t].join();
		s += part[t];
	}
	return s;
}

static std::string where(int type, int id)
{
	char b[48];

	switch (type) {
	case cudaMemLocationTypeDevice: snprintf(b, sizeof(b), "gpu%d", id); break;
	case cudaMemLocationTypeHost: snprintf(b, sizeof(b), "cpu"); break;
	case cudaMemLocationTypeHostNuma: snprintf(b, sizeof(b), "cpu(numa%d)", id); break;
	case cudaMemLocationTypeHostNumaCurrent: snprintf(b, sizeof(b), "cpu(numa-current)"); break;
	default: snprintf(b, sizeof(b), "none"); break;
	}
	return b;
}

static std::string old_where(int dev)
{
	char b[16];

	if (dev == cudaCpuDeviceId)
		return "cpu";
	if (dev == cudaInvalidDeviceId)
		return "none";
	snprintf(b, sizeof(b), "gpu%d", dev);
	return b;
}

// What the driver records for the range: the advice, whoever gave it.
static std::string range_attrs(const void *p, size_t n)
{
	int type = 0, id = 0, rm = 0, dev = 0;
	int by[8];
	std::string s, acc;

	if (cudaMemRangeGetAttribute(&type, sizeof(type), cudaMemRangeAttributePreferredLocationType, p, n) == cudaSuccess &&
	    cudaMemRangeGetAttribute(&id, sizeof(id), cudaMemRangeAttributePreferredLocationId, p, n) == cudaSuccess)
		s += "preferred=" + where(type, id);
	else if (cudaMemRangeGetAttribute(&dev, sizeof(dev), cudaMemRangeAttributePreferredLocation, p, n) == cudaSuccess)
		s += "preferred=" + old_where(dev);
	else
		s += "preferred=?";
	(void)cudaGetLastError();
	if (cudaMemRangeGetAttribute(&type, sizeof(type), cudaMemRangeAttributeLastPrefetchLocationType, p, n) == cudaSuccess &&
	    cudaMemRangeGetAttribute(&id, sizeof(id), cudaMemRangeAttributeLastPrefetchLocationId, p, n) == cudaSuccess)
		s += " last_prefetch=" + where(type, id);
	else if (cudaMemRangeGetAttribute(&dev, sizeof(dev), cudaMemRangeAttributeLastPrefetchLocation, p, n) == cudaSuccess)
		s += " last_prefetch=" + old_where(dev);
	else
		s += " last_prefetch=?";
	(void)cudaGetLastError();
	if (cudaMemRangeGetAttribute(by, sizeof(by), cudaMemRangeAttributeAccessedBy, p, n) == cudaSuccess) {
		for (int i = 0; i < 8; i++) {
			if (by[i] == cudaInvalidDeviceId)
				continue;
			acc += (acc.empty() ? "" : ",") + old_where(by[i]);
		}
	} else {
		acc = "?";
	}
	s += " accessed_by=" + (acc.empty() ? std::string("none") : acc);
	(void)cudaGetLastError();
	if (cudaMemRangeGetAttribute(&rm, sizeof(rm), cudaMemRangeAttributeReadMostly, p, n) == cudaSuccess)
		s += " read_mostly=" + std::to_string(rm);
	(void)cudaGetLastError();
	return s;
}

static const char *alloc_kind = "managed";

static void *alloc_managed(size_t bytes)
{
	if (strcmp(alloc_kind, "device") == 0) {
		void *p = nullptr;

		CK(cudaMalloc(&p, bytes));
		return p;
	}
	if (strcmp(alloc_kind, "pinned") == 0) {
		void *p = nullptr;

		CK(cudaHostAlloc(&p, bytes, cudaHostAllocMapped));
		return p;
	}
#ifdef UM_READ_DRIVER
	CUdeviceptr d = 0;
	CUresult r = cuMemAllocManaged(&d, bytes, CU_MEM_ATTACH_GLOBAL);

	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "um_read: cuMemAllocManaged(%zu) failed: %d\n", bytes, (int)r);
		exit(1);
	}
	return (void *)d;
#else
	void *p = nullptr;

	CK(cudaMallocManaged(&p, bytes));
	return p;
#endif
}

static void free_managed(void *p)
{
	if (strcmp(alloc_kind, "pinned") == 0) {
		CK(cudaFreeHost(p));
		return;
	}
	if (strcmp(alloc_kind, "device") == 0) {
		CK(cudaFree(p));
		return;
	}
#ifdef UM_READ_DRIVER
	cuMemFree((CUdeviceptr)p);
#else
	CK(cudaFree(p));
#endif
}

// The sum fill() and fill_gpu() leave, computed without touching the buffer.
static unsigned long long expected_sum(size_t nwords)
{
	unsigned nt = std::thread::hardware_concurrency();
	std::vector<std::thread> th;
	std::vector<unsigned long long> part;
	unsigned long long s = 0;

	nt = nt == 0 ? 4 : nt > 16 ? 16 : nt;
	part.assign(nt, 0);
	for (unsigned t = 0; t < nt; t++)
		th.emplace_back([=, &part] {
			size_t lo = nwords / nt * t, hi = t + 1 == nt ? nwords : nwords / nt * (t + 1);
			unsigned long long x = 0;

			for (size_t i = lo; i < hi; i++)
				x += word(i);
			part[t] = x;
		});
	for (unsigned t = 0; t < nt; t++) {
		th[t].join();
		s += part[t];
	}
	return s;
}

// Bytes whose preferred location is the GPU / the CPU, 2 MiB at a time.
// Where the policy put each 2 MiB: preferred on the GPU, or (the stripes)
// no preferred location but prefetched to the GPU, counts as GPU;
// preferred on the host as CPU.  Asked before the first pass, so a
// program's own --to-cpu prefetch does not count.
static int range_attr(const void *p, size_t len, cudaMemRangeAttribute a)
{
	int v = 0;

	if (cudaMemRangeGetAttribute(&v, sizeof(v), a, p, len) != cudaSuccess) {
		(void)cudaGetLastError();
		return -1;
	}
	return v;
}

static void placed(const void *p, size_t n, size_t *gpu, size_t *cpu)
{
	const size_t step = (size_t)2 << 20;

	*gpu = *cpu = 0;
	if (strcmp(alloc_kind, "managed") != 0)
		return;
	for (size_t off = 0; off < n; off += step) {
		const char *q = (const char *)p + off;
		size_t len = n - off < step ? n - off : step;
		int type = range_attr(q, len, cudaMemRangeAttributePreferredLocationType);

		if (type == cudaMemLocationTypeInvalid &&
		    range_attr(q, len, cudaMemRangeAttributeLastPrefetchLocationType) == cudaMemLocationTypeDevice)
			type = cudaMemLocationTypeDevice;
		if (type == cudaMemLocationTypeDevice)
			*gpu += len;
		else if (type == cudaMemLocationTypeHost || type == cudaMemLocationTypeHostNuma)
			*cpu += len;
	}
}

static bool to_cpu;     // --to-cpu: the program moves its data to the CPU before each pass

static int run(const char *pattern, size_t bytes, size_t chunk, const cudaDeviceProp &prop,
	       bool gpu_fill, int reads)
{
	size_t nwords = bytes / 4, n16 = bytes / 16;
	unsigned long long *dsum, got = 0, want;
	cudaEvent_t e0, e1;
	float ms = 0;
	double fill_s;
	uint32_t *p;

	if (gpu_fill) {
		want = expected_sum(nwords);
		CK(cudaDeviceSynchronize());
		auto t0 = std::chrono::steady_clock::now();
		p = (uint32_t *)alloc_managed(bytes);
		fill_gpu<<<prop.multiProcessorCount * 8, 256>>>(p, nwords);
		CK(cudaGetLastError());
		CK(cudaDeviceSynchronize());
		fill_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	} else {
		p = (uint32_t *)alloc_managed(bytes);
		auto t0 = std::chrono::steady_clock::now();
		want = fill(p, nwords);
		fill_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	}
	std::string attrs = range_attrs(p, bytes);
	size_t pg = 0, pc = 0;
	double rest_ms = 0, first_ms = 0;
	bool all_ok = true;

	placed(p, bytes, &pg, &pc);
	CK(cudaMalloc(&dsum, sizeof(*dsum)));
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	for (int r = 0; r < reads; r++) {
		CK(cudaMemset(dsum, 0, sizeof(*dsum)));
		if (to_cpu && strcmp(alloc_kind, "managed") == 0) {
			cudaMemLocation host = {};

			host.type = cudaMemLocationTypeHost;
			CK(cudaMemPrefetchAsync(p, bytes, host, 0, 0));
		}
		CK(cudaDeviceSynchronize());
		CK(cudaEventRecord(e0));
		if (strcmp(pattern, "grid") == 0) {
			read_grid<<<prop.multiProcessorCount * 8, 256>>>((const uint4 *)p, n16, dsum);
		} else if (strcmp(pattern, "block") == 0) {
			read_block<<<prop.multiProcessorCount * 8, 256>>>((const uint4 *)p, n16, dsum);
		} else {
			size_t nchunks = bytes / chunk, mult = 2654435761u % nchunks;

			if (mult == 0)
				mult = 1;
			while (gcd(mult, nchunks) != 1)
				mult++;
			// One warp per chunk, 4 warps a block.
			read_random<<<(unsigned)((nchunks + 3) / 4), 128>>>((const uint4 *)p, nchunks,
									       chunk / 16, mult, dsum);
		}
		CK(cudaGetLastError());
		CK(cudaEventRecord(e1));
		CK(cudaEventSynchronize(e1));
		CK(cudaEventElapsedTime(&ms, e0, e1));
		CK(cudaMemcpy(&got, dsum, sizeof(got), cudaMemcpyDeviceToHost));
		all_ok = all_ok && got == want;
		if (r == 0)
			first_ms = ms;
		else
			rest_ms += ms;
	}
	ms = (float)first_ms;
	printf("um_read: RESULT link=%s alloc=%s pattern=%s fill=%s to_cpu=%d bytes=%zu fill_s=%.4f kernel_ms=%.3f gbps=%.2f "
	       "reads=%d gbps_rest=%.2f placed_gpu=%zu placed_cpu=%zu check=%s %s\n",
	       UM_READ_LINK, alloc_kind, pattern, gpu_fill ? "gpu" : "cpu", to_cpu ? 1 : 0, bytes, fill_s, ms,
	       bytes / (ms / 1e3) / 1e9, reads,
	       reads > 1 ? (double)bytes * (reads - 1) / (rest_ms / 1e3) / 1e9 : 0.0, pg, pc,
	       all_ok ? "ok" : "BAD", attrs.c_str());
	fflush(stdout);
	got = all_ok ? want : want + 1;
	CK(cudaFree(dsum));
	CK(cudaEventDestroy(e0));
	CK(cudaEventDestroy(e1));
	free_managed(p);
	return got == want ? 0 : 1;
}

int main(int argc, char **argv)
{
	size_t bytes = (size_t)2 << 30, chunk = (size_t)2 << 20, free_b = 0, total_b = 0;
	const char *pattern = "both";
	bool gpu_fill = false;
	cudaDeviceProp prop;
	int dev = 0, bad = 0, managed = 0, reads = 1;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--bytes") == 0 && i + 1 < argc)
			bytes = parse_size(argv[++i]);
		else if (strcmp(argv[i], "--chunk") == 0 && i + 1 < argc)
			chunk = parse_size(argv[++i]);
		else if (strcmp(argv[i], "--pattern") == 0 && i + 1 < argc)
			pattern = argv[++i];
		else if (strcmp(argv[i], "--reads") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0)
			reads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--alloc") == 0 && i + 1 < argc &&
			 (!strcmp(argv[i + 1], "managed") || !strcmp(argv[i + 1], "device") ||
			  !strcmp(argv[i + 1], "pinned")))
			alloc_kind = argv[++i];
		else if (strcmp(argv[i], "--to-cpu") == 0)
			to_cpu = true;
		else if (strcmp(argv[i], "--fill") == 0 && i + 1 < argc &&
			 (strcmp(argv[i + 1], "cpu") == 0 || strcmp(argv[i + 1], "gpu") == 0))
			gpu_fill = strcmp(argv[++i], "gpu") == 0;
		else {
			fprintf(stderr, "usage: um_read [--bytes N] [--pattern grid|block|random|both] [--chunk N] [--fill cpu|gpu] "
				"[--reads N] [--to-cpu] [--alloc managed|device|pinned]\n");
			return 2;
		}
	}
	if (chunk < 4096 || chunk % 16 != 0) {
		fprintf(stderr, "um_read: --chunk must be a multiple of 16, at least 4096\n");
		return 2;
	}
	CK(cudaGetDevice(&dev));
	CK(cudaGetDeviceProperties(&prop, dev));
	CK(cudaDeviceGetAttribute(&managed, cudaDevAttrConcurrentManagedAccess, dev));
	CK(cudaMemGetInfo(&free_b, &total_b));
	// Never ask for more than the card has free (with room for the runtime).
	if (bytes > free_b / 2) {
		fprintf(stderr, "um_read: %zu bytes is more than half of the %zu free: using %zu\n",
			bytes, free_b, free_b / 2);
		bytes = free_b / 2;
	}
	bytes -= bytes % chunk;
	if (bytes == 0) {
		fprintf(stderr, "um_read: nothing to read\n");
		return 2;
	}
	printf("um_read: link=%s device=%d name=\"%s\" free=%zu concurrent_managed=%d bytes=%zu chunk=%zu\n",
	       UM_READ_LINK, dev, prop.name, free_b, managed, bytes, chunk);
	if (strcmp(pattern, "grid") == 0 || strcmp(pattern, "both") == 0)
		bad |= run("grid", bytes, chunk, prop, gpu_fill, reads);
	if (strcmp(pattern, "block") == 0)
		bad |= run("block", bytes, chunk, prop, gpu_fill, reads);
	if (strcmp(pattern, "random") == 0 || strcmp(pattern, "both") == 0)
		bad |= run("random", bytes, chunk, prop, gpu_fill, reads);
	return bad;
}

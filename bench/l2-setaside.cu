/* SPDX-License-Identifier: GPL-2.0-or-later */
// bench/l2-setaside.cu: what the persisting-L2 set-aside costs kernels that
// never ask for persistence.  CUDA documents that normal accesses may use
// the set-aside while no persisting access needs it; this program measures
// whether that holds, in one process and side by side:
//
//   sweep   read, write, copy and triad over arrays well past L2, at each
//           set-aside from 0 to the GPU's maximum in --step % of L2 (set with
//           cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize)), the
//           set-asides visited round-robin for --rounds rounds so drift hits
//           all alike; each figure is the median of its rounds' best launch,
//           printed with its ratio to no set-aside.
//   ws      repeated reads of a working set of W MiB (W from 4 to 1.5x L2)
//           at a few set-asides: where normal accesses may use the set-aside,
//           the L2-hit plateau ends at the whole L2; where they may not, it
//           ends at L2 minus the set-aside.
//   window  a table of T MiB read at random on every element while an array
//           streams through (out[i] = a[i] + table[h(i)]): no set-aside, the
//           set-aside alone, and the set-aside with a persisting
//           access-policy window over the table, alternated; separates the
//           window's own effect from the set-aside's tax.
//   env     no cudaDeviceSetLimit: prints the limit the context started with
//           (what CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT or
//           an MPS server gave it) and the four figures once, for runs in
//           separate processes side by side.
//
//   l2-setaside [--mib N] [--rounds K] [--step P] [--pct P] [--mode sweep|ws|window|env]
//
// Bytes counted: 1x array for read and write, 2x for copy, 3x for triad.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

__global__ void k_read(const double *a, size_t n, double *sink)
{
	double s = 0;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		s += a[i];
	if (s == 12345.678)
		*sink = s;
}

__global__ void k_write(double *a, size_t n, double v)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		a[i] = v;
}

__global__ void k_copy(double *c, const double *a, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		c[i] = a[i];
}

__global__ void k_triad(double *a, const double *b, const double *c, size_t n, double q)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		a[i] = b[i] + q * c[i];
}

__global__ void k_gather(double *out, const double *a, const double *table, size_t n, size_t tn)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		size_t h = (i * 2654435761u) ^ (i >> 7);
		out[i] = a[i] + table[h % tn];
	}
}

struct arrays {
	double *a, *b, *c, *sink;
	size_t n;
	int blocks;
	cudaEvent_t t0, t1;
};

enum { K_READ, K_WRITE, K_COPY, K_TRIAD, K_N };
static const char *kname[K_N] = { "read", "write", "copy", "triad" };
static const int kbytes[K_N] = { 1, 1, 2, 3 };

static void launch(struct arrays *r, int k, size_t n)
{
	switch (k) {
	case K_READ: k_read<<<r->blocks, 256>>>(r->a, n, r->sink); break;
	case K_WRITE: k_write<<<r->blocks, 256>>>(r->c, n, 1.0); break;
	case K_COPY: k_copy<<<r->blocks, 256>>>(r->c, r->a, n); break;
	case K_TRIAD: k_triad<<<r->blocks, 256>>>(r->a, r->b, r->c, n, 0.4); break;
	}
}

/* Best GB/s of `reps` launches of kernel k over n elements. */
static double best_gbs(struct arrays *r, int k, size_t n, int reps)
{
	float ms, best = 1e30f;

	launch(r, k, n);
	for (int i = 0; i < reps; i++) {
		CK(cudaEventRecord(r->t0));
		launch(r, k, n);
		CK(cudaEventRecord(r->t1));
		CK(cudaEventSynchronize(r->t1));
		CK(cudaEventElapsedTime(&ms, r->t0, r->t1));
		best = std::min(best, ms);
	}
	return (double)kbytes[k] * n * sizeof(double) / (best * 1e-3) / 1e9;
}

static void set_aside(size_t bytes)
{
	CK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, bytes));
	CK(cudaCtxResetPersistingL2Cache());
}

static double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

static void sweep(struct arrays *r, const cudaDeviceProp *p, int step, int rounds)
{
	std::vector<int> pct;
	int maxpct = (int)(100.0 * p->persistingL2CacheMaxSize / p->l2CacheSize);

	for (int s = 0; s <= maxpct; s += step)
		pct.push_back(s);
	if (pct.back() != maxpct)
		pct.push_back(maxpct);
	std::vector<std::vector<std::vector<double>>> f(pct.size(),
		std::vector<std::vector<double>>(K_N));
	for (int k = 0; k < rounds; k++)
		for (size_t i = 0; i < pct.size(); i++) {
			size_t j = (i + k) % pct.size();	/* each round starts elsewhere */
			set_aside(std::min((size_t)p->persistingL2CacheMaxSize,
					   (size_t)((double)pct[j] / 100 * p->l2CacheSize)));
			for (int q = 0; q < K_N; q++)
				f[j][q].push_back(best_gbs(r, q, r->n, 10));
		}
	set_aside(0);
	printf("# sweep: median of %d rounds' best of 10 launches; ratio against no set-aside\n", rounds);
	printf("%-9s %-10s", "setaside%", "bytes");
	for (int q = 0; q < K_N; q++)
		printf(" %9s %6s", kname[q], "ratio");
	printf("\n");
	for (size_t i = 0; i < pct.size(); i++) {
		size_t b = std::min((size_t)p->persistingL2CacheMaxSize,
				    (size_t)((double)pct[i] / 100 * p->l2CacheSize));
		printf("%-9d %-10zu", pct[i], b);
		for (int q = 0; q < K_N; q++)
			printf(" %9.0f %6.3f", median(f[i][q]), median(f[i][q]) / median(f[0][q]));
		printf("\n");
	}
}

static void working_set(struct arrays *r, const cudaDeviceProp *p)
{
	int pcts[] = { 0, 25, 50, 100 };
	int l2mib = p->l2CacheSize >> 20;

	printf("# ws: read of a working set of W MiB, best of 20 launches, GB/s, by set-aside (%% of L2; 100 = the GPU's maximum)\n");
	printf("%-6s", "W_MiB");
	for (int s : pcts)
		printf(" %8d%%", s == 100 ? (int)(100.0 * p->persistingL2CacheMaxSize / p->l2CacheSize) : s);
	printf("\n");
	for (int w = 4; w <= l2mib * 3 / 2; w += 4) {
		size_t n = ((size_t)w << 20) / sizeof(double);
		printf("%-6d", w);
		for (int s : pcts) {
			size_t b = s == 100 ? (size_t)p->persistingL2CacheMaxSize
				   : (size_t)((double)s / 100 * p->l2CacheSize);
			set_aside(std::min(b, (size_t)p->persistingL2CacheMaxSize));
			printf(" %9.0f", best_gbs(r, K_READ, n, 20));
		}
		printf("\n");
	}
	set_aside(0);
}

static void set_window(cudaStream_t st, void *base, size_t bytes, float ratio)
{
	cudaStreamAttrValue v;

	memset(&v, 0, sizeof(v));
	v.accessPolicyWindow.base_ptr = base;
	v.accessPolicyWindow.num_bytes = bytes;
	v.accessPolicyWindow.hitRatio = bytes ? ratio : 0.0f;
	v.accessPolicyWindow.hitProp = bytes ? cudaAccessPropertyPersisting : cudaAccessPropertyNormal;
	v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
	CK(cudaStreamSetAttribute(st, cudaStreamAttributeAccessPolicyWindow, &v));
}

/* ms of the best of 10 gathers on stream st */
static float gather_ms(struct arrays *r, cudaStream_t st, const double *table, size_t tn)
{
	float ms, best = 1e30f;

	for (int i = 0; i < 11; i++) {
		CK(cudaEventRecord(r->t0, st));
		k_gather<<<r->blocks, 256, 0, st>>>(r->c, r->a, table, r->n, tn);
		CK(cudaEventRecord(r->t1, st));
		CK(cudaEventSynchronize(r->t1));
		CK(cudaEventElapsedTime(&ms, r->t0, r->t1));
		if (i)
			best = std::min(best, ms);
	}
	return best;
}

static void window(struct arrays *r, const cudaDeviceProp *p, int pct, int rounds)
{
	int tmib[] = { 4, 8, 16, 32 };
	size_t sa = std::min((size_t)p->persistingL2CacheMaxSize, (size_t)((double)pct / 100 * p->l2CacheSize));
	cudaStream_t st;
	double *table;

	CK(cudaStreamCreate(&st));
	CK(cudaMalloc(&table, (size_t)32 << 20));
	CK(cudaMemset(table, 0, (size_t)32 << 20));
	printf("# window: out[i] = a[i] + table[h(i)] over %zu MiB; set-aside %d%% of L2 (asked %zu bytes);\n"
	       "# median of %d rounds' best of 10, time ratio against no set-aside and no window (>1: faster)\n",
	       r->n * sizeof(double) >> 20, pct, sa, rounds);
	printf("%-7s %10s %14s %16s %16s\n", "T_MiB", "none_ms", "setaside_only", "setaside+window", "window_vs_same");
	for (int t : tmib) {
		size_t tb = (size_t)t << 20, tn = tb / sizeof(double);
		float ratio = std::min(1.0f, (float)sa / (float)tb);
		std::vector<double> f0, f1, f2;

		for (int k = 0; k < rounds; k++) {
			set_aside(0);
			set_window(st, NULL, 0, 0);
			f0.push_back(gather_ms(r, st, table, tn));
			set_aside(sa);
			f1.push_back(gather_ms(r, st, table, tn));
			set_window(st, table, tb, ratio);
			f2.push_back(gather_ms(r, st, table, tn));
			set_window(st, NULL, 0, 0);
		}
		printf("%-7d %10.3f %14.3f %16.3f %16.3f\n", t, median(f0), median(f0) / median(f1),
		       median(f0) / median(f2), median(f1) / median(f2));
	}
	set_aside(0);
	CK(cudaFree(table));
	CK(cudaStreamDestroy(st));
}

static void env_run(struct arrays *r, const cudaDeviceProp *p)
{
	size_t lim = 0;
	const char *e = getenv("CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT");

	CK(cudaDeviceGetLimit(&lim, cudaLimitPersistingL2CacheSize));
	printf("env=%s limit=%zu (%.1f%% of L2, %.1f%% of max)", e ? e : "unset", lim,
	       100.0 * lim / p->l2CacheSize, 100.0 * lim / p->persistingL2CacheMaxSize);
	for (int q = 0; q < K_N; q++)
		printf(" %s=%.0f", kname[q], best_gbs(r, q, r->n, 20));
	printf("\n");
}

int main(int argc, char **argv)
{
	size_t mib = 1024;
	int rounds = 5, step = 5, pct = 18;
	const char *mode = "sweep";
	cudaDeviceProp p;
	struct arrays r;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--mib"))
			mib = strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--rounds"))
			rounds = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--step"))
			step = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--pct"))
			pct = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--mode"))
			mode = argv[i + 1];
		else {
			fprintf(stderr, "usage: l2-setaside [--mib N] [--rounds K] [--step P] [--pct P] [--mode sweep|ws|window|env]\n");
			return 2;
		}
	}
	if (!mib || rounds < 1 || step < 1 || pct < 0 || pct > 100) {
		fprintf(stderr, "l2-setaside: --mib, --rounds and --step must be positive\n");
		return 2;
	}
	CK(cudaGetDeviceProperties(&p, 0));
	r.n = (mib << 20) / sizeof(double);
	r.blocks = p.multiProcessorCount * 8;
	CK(cudaMalloc(&r.a, r.n * sizeof(double)));
	CK(cudaMalloc(&r.b, r.n * sizeof(double)));
	CK(cudaMalloc(&r.c, r.n * sizeof(double)));
	CK(cudaMalloc(&r.sink, sizeof(double)));
	CK(cudaMemset(r.a, 0, r.n * sizeof(double)));
	CK(cudaMemset(r.b, 0, r.n * sizeof(double)));
	CK(cudaMemset(r.c, 0, r.n * sizeof(double)));
	CK(cudaEventCreate(&r.t0));
	CK(cudaEventCreate(&r.t1));
	printf("# %s: L2 %d bytes, persisting max %d bytes (%.1f%% of L2), %d SMs; arrays of %zu MiB\n",
	       p.name, p.l2CacheSize, p.persistingL2CacheMaxSize,
	       100.0 * p.persistingL2CacheMaxSize / p.l2CacheSize, p.multiProcessorCount, mib);
	if (!strcmp(mode, "sweep"))
		sweep(&r, &p, step, rounds);
	else if (!strcmp(mode, "ws"))
		working_set(&r, &p);
	else if (!strcmp(mode, "window"))
		window(&r, &p, pct, rounds);
	else if (!strcmp(mode, "env"))
		env_run(&r, &p);
	else {
		fprintf(stderr, "l2-setaside: unknown --mode '%s'\n", mode);
		return 2;
	}
	return 0;
}

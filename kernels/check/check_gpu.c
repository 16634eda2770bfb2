/*
 * gpumem-check: the check of one GPU, run in its own host thread so that
 * several GPUs are checked at the same time.
 *
 * Order, chosen to fit the 0.5 s budget: context creation (the dominant
 * cost with cuInit, overlapping hwloc's start-up in another thread; NVML
 * starts once every context exists, as both take the driver's locks),
 * then the pattern test and all HBM figures are enqueued on one stream
 * without waiting; while the GPU works, NVML's health counters are read and
 * the host buffer for H2D/D2H is allocated, touched on the GPU's NUMA node
 * and pinned; then one synchronisation, the PCIe transfers (the PCIe link
 * is read while they run, at its working speed) and the optional L2 A/B.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_gpu.h"

#define MIB ((size_t)1 << 20)
#define NBW 5                           /* read write copy triad d2d */
#define MAX_REPEATS 64
#define L2AB_REPEATS 6

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void gpumem_check_future_init(struct gpumem_check_future *f)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
}

void gpumem_check_future_set(struct gpumem_check_future *f, void *value)
{
	pthread_mutex_lock(&f->mu);
	f->value = value;
	f->done = 1;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

void *gpumem_check_future_wait(struct gpumem_check_future *f)
{
	void *v;

	pthread_mutex_lock(&f->mu);
	while (!f->done)
		pthread_cond_wait(&f->cv, &f->mu);
	v = f->value;
	pthread_mutex_unlock(&f->mu);
	return v;
}

void gpumem_check_ctx_done(struct gpumem_check_shared *sh)
{
	pthread_mutex_lock(&sh->ctx_mu);
	if (sh->ctx_pending > 0 && --sh->ctx_pending == 0)
		pthread_cond_broadcast(&sh->ctx_cv);
	pthread_mutex_unlock(&sh->ctx_mu);
}

void gpumem_check_ctx_wait(struct gpumem_check_shared *sh)
{
	pthread_mutex_lock(&sh->ctx_mu);
	while (sh->ctx_pending > 0)
		pthread_cond_wait(&sh->ctx_cv, &sh->ctx_mu);
	pthread_mutex_unlock(&sh->ctx_mu);
}

int gpumem_check_identify(int ordinal, struct gpumem_check_device *d)
{
	struct cudaDeviceProp p;
	const unsigned char *u;
	cudaError_t e;
	int v, rv = -1;

	e = cudaGetDeviceProperties(&p, ordinal);
	if (e != cudaSuccess) {
		snprintf(d->health.context_error, sizeof(d->health.context_error),
			 "cudaGetDeviceProperties: %s", cudaGetErrorString(e));
		goto fail;
	}
	snprintf(d->name, sizeof(d->name), "%s", p.name);
	/* The form nvidia-smi and NVML print, so --devices GPU-... matches. */
	u = (const unsigned char *)p.uuid.bytes;
	snprintf(d->uuid, sizeof(d->uuid),
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
		 u[12], u[13], u[14], u[15]);
	if (cudaDeviceGetPCIBusId(d->pci_bus_id, (int)sizeof(d->pci_bus_id), ordinal) != cudaSuccess)
		snprintf(d->pci_bus_id, sizeof(d->pci_bus_id), "%04x:%02x:%02x.0",
			 (unsigned)p.pciDomainID, (unsigned)p.pciBusID, (unsigned)p.pciDeviceID);
	d->cc_major = p.major;
	d->cc_minor = p.minor;
	d->sm_count = p.multiProcessorCount;
	d->mem_total = p.totalGlobalMem;
	d->l2_bytes = p.l2CacheSize > 0 ? (uint64_t)p.l2CacheSize : 0;
	d->persisting_max = p.persistingL2CacheMaxSize > 0 ? (uint64_t)p.persistingL2CacheMaxSize : 0;
	d->mps_client = p.mpsEnabled;
	d->numa.cuda_node = p.hostNumaId;
	d->health.ecc_enabled = p.ECCEnabled ? 1 : 0;  /* NVML refines this later */
	if (cudaDeviceGetAttribute(&v, cudaDevAttrComputeMode, ordinal) == cudaSuccess)
		d->health.compute_mode = v;
	rv = 0;
fail:
	return rv;
}

/* ------------------------------------------------------------ one GPU */
struct ctx {
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
static int cuda_fail(struct ctx *c, char *dst, int *fatal, const char *what, cudaError_t e)
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

static double elapsed_ms(cudaEvent_t a, cudaEvent_t b)
{
	float ms = 0;

	if (cudaEventElapsedTime(&ms, a, b) != cudaSuccess)
		return -1;
	return ms;
}

/* --quick implies no memory test whatever --no-memtest says. */
static int want_memtest(const struct gpumem_check_opts *o)
{
	return o->memtest && !o->quick;
}

static int setup(struct ctx *c)
{
	struct gpumem_check_device *d = c->d;
	const struct gpumem_check_opts *o = c->o;
	size_t freeb = 0, totalb = 0, need, arr;
	cudaError_t e;
	int i, nev, tpsm = 0, rv = -1;

	e = cudaStreamCreateWithFlags(&c->st, cudaStreamNonBlocking);
	if (e != cudaSuccess)
		return cuda_fail(c, d->health.context_error, NULL, "cudaStreamCreate", e);
	/*
	 * Pairs for every bandwidth repeat, the last pair for the memory test;
	 * the L2 A/B (after a synchronisation) reuses the first ones.
	 */
	nev = 2 * NBW * (o->repeats + 1) + 2;
	if (nev < 2 * 2 * (L2AB_REPEATS + 1) + 2)
		nev = 2 * 2 * (L2AB_REPEATS + 1) + 2;
	if (nev > (int)(sizeof(c->ev) / sizeof(c->ev[0])))
		nev = (int)(sizeof(c->ev) / sizeof(c->ev[0]));
	for (i = 0; i < nev; i++) {
		/* not cudaEventDisableTiming: we time with them */
		e = cudaEventCreate(&c->ev[i]);
		if (e != cudaSuccess)
			return cuda_fail(c, d->health.context_error, NULL, "cudaEventCreate", e);
		c->nev = i + 1;
	}
	/* The pattern test: enough 256-thread blocks to fill every SM, grid-stride. */
	if (cudaDeviceGetAttribute(&tpsm, cudaDevAttrMaxThreadsPerMultiProcessor, d->ordinal) !=
	    cudaSuccess || tpsm < 256)
		tpsm = 1024;
	c->g.threads = 256;
	c->g.blocks = (unsigned)(d->sm_count > 0 ? d->sm_count : 1) * (unsigned)(tpsm / 256);

	e = cudaMallocHost((void **)&c->mt, sizeof(*c->mt));
	if (e != cudaSuccess)
		return cuda_fail(c, d->health.context_error, NULL, "cudaMallocHost", e);
	e = cudaMalloc(&c->ctl, 256);
	if (e != cudaSuccess)
		return cuda_fail(c, d->health.context_error, NULL, "cudaMalloc", e);

	/* One allocation for the pattern region and the three arrays (they reuse it). */
	arr = (size_t)o->array_bytes & ~(size_t)(MIB - 1);
	if (cudaMemGetInfo(&freeb, &totalb) == cudaSuccess && freeb) {
		size_t cap = freeb / 10 * 8 / 3 & ~(size_t)(MIB - 1);     /* leave 20% */

		if (arr > cap)
			arr = cap;
		if (want_memtest(o) && o->mem_bytes > freeb / 10 * 9) {
			snprintf(d->health.unusable, sizeof(d->health.unusable),
				 "only %zu MiB of device memory free, the memory test needs %llu MiB",
				 freeb / MIB, (unsigned long long)(o->mem_bytes / MIB));
			goto fail;
		}
	}
	if (arr < 16 * MIB) {
		snprintf(d->health.unusable, sizeof(d->health.unusable),
			 "only %zu MiB of device memory free", freeb / MIB);
		goto fail;
	}
	need = 3 * arr;
	if (want_memtest(o) && o->mem_bytes > need)
		need = (size_t)o->mem_bytes;
	e = cudaMalloc((void **)&c->buf, need);
	if (e == cudaErrorMemoryAllocation) {
		snprintf(d->health.unusable, sizeof(d->health.unusable),
			 "cannot allocate %zu MiB of device memory", need / MIB);
		cudaGetLastError();     /* not sticky; clear it */
		goto fail;
	}
	if (e != cudaSuccess)
		return cuda_fail(c, d->health.context_error, NULL, "cudaMalloc", e);
	c->buf_bytes = need;
	c->arr_bytes = arr;
	c->n = arr / 16;
	c->a = c->buf;
	c->b = c->buf + arr;
	c->c = c->buf + 2 * arr;
	d->array_bytes = arr;
	rv = 0;
fail:
	return rv;
}

static void cleanup(struct ctx *c)
{
	int i;

	for (i = 0; i < c->nev; i++)
		cudaEventDestroy(c->ev[i]);
	if (c->buf)
		cudaFree(c->buf);
	if (c->ctl)
		cudaFree(c->ctl);
	if (c->mt)
		cudaFreeHost(c->mt);
	if (c->st)
		cudaStreamDestroy(c->st);
}

/* Enqueue the moving-inversions pattern test; results come with the next sync. */
static int memtest_enqueue(struct ctx *c)
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

static cudaError_t launch_bw(struct ctx *c, int id)
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
static uint64_t bw_bytes(struct ctx *c, int id)
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
static int bandwidth_enqueue(struct ctx *c)
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

static void fill_metric(struct gpumem_check_metric *m, const double *gbps, int n)
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

static void bandwidth_collect(struct ctx *c)
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
		fill_metric(m, gbps, R);
	}
}

static void memtest_collect(struct ctx *c)
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

/* The host buffer of the PCIe figures, once pinned. */
struct pinned {
	void *host, *alloc;             /* alloc: cudaMallocHost fallback, else NULL */
	size_t bytes;
	int registered;
	char error[GPUMEM_CHECK_MSG];
};

/*
 * Pin the NUMA-placed host buffer.  Called while the GPU still runs the
 * memory test and the HBM figures: registering 64 MiB takes about 10 ms of
 * host time, which would otherwise add to the check's wall time.
 */
static void host_pin(struct ctx *c, const struct gpumem_check_hostbuf *hb, struct pinned *pn)
{
	struct gpumem_check_device *d = c->d;
	cudaError_t e;

	memset(pn, 0, sizeof(*pn));
	pn->host = hb->p;
	pn->bytes = hb->bytes;
	if (pn->host && cudaHostRegister(pn->host, pn->bytes, cudaHostRegisterDefault) == cudaSuccess) {
		pn->registered = 1;
		d->numa.pinned_by_register = 1;
		return;
	}
	/* e.g. a low RLIMIT_MEMLOCK: fall back to the driver's own pinned memory */
	cudaGetLastError();
	if (!pn->bytes)
		pn->bytes = (size_t)c->o->host_bytes;
	e = cudaMallocHost(&pn->alloc, pn->bytes);
	if (e != cudaSuccess) {
		snprintf(pn->error, sizeof(pn->error), "no pinned host memory: %s",
			 cudaGetErrorString(e));
		cudaGetLastError();
		pn->alloc = pn->host = NULL;
		return;
	}
	pn->host = pn->alloc;
	d->numa.placed = 0;
	d->numa.node = -1;      /* wherever the driver put it */
	snprintf(d->numa.note, sizeof(d->numa.note),
		 "cudaHostRegister failed; cudaMallocHost memory, not placed");
}

static void host_unpin(struct pinned *pn)
{
	if (pn->registered)
		cudaHostUnregister(pn->host);
	if (pn->alloc)
		cudaFreeHost(pn->alloc);
	memset(pn, 0, sizeof(*pn));
}

/* H2D then D2H through the pinned, NUMA-placed host buffer. */
static void host_transfers(struct ctx *c, const struct pinned *pn)
{
	struct gpumem_check_device *d = c->d;
	struct gpumem_check_metric *mh = &d->metric[GPUMEM_CHECK_H2D];
	struct gpumem_check_metric *md = &d->metric[GPUMEM_CHECK_D2H];
	void *host = pn->host;
	size_t bytes = pn->bytes;
	double gbps[MAX_REPEATS];
	int R = c->o->repeats, r, k, dir;
	cudaError_t e;

	if (pn->error[0]) {
		snprintf(mh->error, sizeof(mh->error), "%s", pn->error);
		snprintf(md->error, sizeof(md->error), "%s", pn->error);
		return;
	}
	mh->bytes = md->bytes = bytes;
	e = cudaSuccess;
	for (dir = 0, k = 0; dir < 2 && e == cudaSuccess; dir++)
		for (r = 0; r <= R && e == cudaSuccess; r++, k += 2) {
			e = cudaEventRecord(c->ev[k], c->st);
			if (e == cudaSuccess)
				e = dir == 0 ? cudaMemcpyAsync(c->a, host, bytes, cudaMemcpyHostToDevice, c->st)
					: cudaMemcpyAsync(host, c->a, bytes, cudaMemcpyDeviceToHost, c->st);
			if (e == cudaSuccess)
				e = cudaEventRecord(c->ev[k + 1], c->st);
		}
	/*
	 * Read the PCIe link while the copies (~25 ms) are still running: an
	 * idle link drops to a low generation to save power, and a reading
	 * taken afterwards would look like a degraded link.
	 */
	if (e == cudaSuccess && !c->o->quick) {
		struct gpumem_check_nvml *nvml = gpumem_check_future_wait(&c->sh->nvml);

		if (nvml && cudaStreamQuery(c->st) == cudaErrorNotReady)
			gpumem_check_nvml_pcie(nvml, d);
	}
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(c->st);
	if (e != cudaSuccess) {
		cuda_fail(c, mh->error, &mh->fatal, "host transfers", e);
		snprintf(md->error, sizeof(md->error), "%s", mh->error);
		md->fatal = mh->fatal;
		return;
	}
	for (dir = 0; dir < 2; dir++) {
		int base = 2 * dir * (R + 1);

		for (r = 1; r <= R; r++) {
			double ms = elapsed_ms(c->ev[base + 2 * r], c->ev[base + 2 * r + 1]);
			gbps[r - 1] = ms > 0 ? (double)bytes / (ms * 1e6) : 0;
		}
		fill_metric(dir == 0 ? mh : md, gbps, R);
	}
}

static int set_window(struct ctx *c, void *base, size_t bytes)
{
	cudaStreamAttrValue v;

	memset(&v, 0, sizeof(v));
	v.accessPolicyWindow.base_ptr = base;
	v.accessPolicyWindow.num_bytes = bytes;
	v.accessPolicyWindow.hitRatio = bytes ? 1.0f : 0.0f;
	v.accessPolicyWindow.hitProp = bytes ? cudaAccessPropertyPersisting : cudaAccessPropertyNormal;
	v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
	return cudaStreamSetAttribute(c->st, cudaStreamAttributeAccessPolicyWindow, &v) ==
		cudaSuccess ? 0 : -1;
}

/*
 * The persisting-L2 A/B.  Arms alternate (without, with, without, ...) so
 * clock or thermal drift cannot favour one; persisting lines are reset
 * before each "without" run so the previous "with" run cannot help it.
 * The limit is set back to 0 at the end.
 */
static void l2_ab(struct ctx *c)
{
	struct gpumem_check_device *d = c->d;
	struct gpumem_check_l2ab *l = &d->l2ab;
	double t[2][L2AB_REPEATS];
	int maxwin = 0, r, arm, k = 0, limit_set = 0, refused = 0;
	size_t setaside, hot;
	cudaError_t e;

	l->l2_bytes = d->l2_bytes;
	if (!d->persisting_max) {
		snprintf(l->error, sizeof(l->error), "the GPU has no persisting L2 (persistingL2CacheMaxSize 0)");
		return;
	}
	if (cudaDeviceGetAttribute(&maxwin, cudaDevAttrMaxAccessPolicyWindowSize, d->ordinal) !=
	    cudaSuccess || maxwin <= 0) {
		snprintf(l->error, sizeof(l->error), "no access-policy window support");
		cudaGetLastError();
		return;
	}
	setaside = (size_t)d->persisting_max;
	e = cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, setaside);
	if (e != cudaSuccess) {
		/* e.g. refused under MPS: not a fault of the GPU */
		snprintf(l->error, sizeof(l->error), "cudaDeviceSetLimit(persisting L2 %zu): %s",
			 setaside, cudaGetErrorString(e));
		cudaGetLastError();
		return;
	}
	limit_set = 1;
	hot = setaside < (size_t)maxwin ? setaside : (size_t)maxwin;
	hot &= ~(size_t)15;
	if (hot > c->arr_bytes)
		hot = c->arr_bytes;
	l->setaside_bytes = setaside;
	l->hot_bytes = hot;
	l->stream_bytes = c->arr_bytes;
	e = cudaSuccess;
	/* r = 0 is the warm-up pair */
	for (r = 0; r <= L2AB_REPEATS && e == cudaSuccess && !refused; r++)
		for (arm = 0; arm < 2 && e == cudaSuccess && !refused; arm++, k += 2) {
			if (arm == 0) {
				/*
				 * The reset acts when called, not in stream order:
				 * wait for the previous "with" run first.
				 */
				e = cudaStreamSynchronize(c->st);
				if (e != cudaSuccess)
					break;
				refused = set_window(c, NULL, 0) < 0 ||
					cudaCtxResetPersistingL2Cache() != cudaSuccess;
			} else {
				refused = set_window(c, c->a, hot) < 0;
			}
			if (refused)
				break;
			e = cudaEventRecord(c->ev[k], c->st);
			if (e == cudaSuccess)
				e = (cudaError_t)gpumem_check_launch_hotstream(c->st, c->g, c->a, hot / 16,
									       c->b, c->n, c->ctl);
			if (e == cudaSuccess)
				e = cudaEventRecord(c->ev[k + 1], c->st);
		}
	if (e == cudaSuccess && !refused)
		e = cudaStreamSynchronize(c->st);
	if (e != cudaSuccess) {
		cuda_fail(c, l->error, NULL, "L2 A/B", e);
		goto fail;
	}
	if (refused) {
		snprintf(l->error, sizeof(l->error), "access-policy window refused by the driver");
		cudaGetLastError();
		goto fail;
	}
	for (r = 1; r <= L2AB_REPEATS; r++)
		for (arm = 0; arm < 2; arm++) {
			int i = 2 * (2 * r + arm);
			t[arm][r - 1] = elapsed_ms(c->ev[i], c->ev[i + 1]);
		}
	l->ms_without = gpumem_check_median(t[0], L2AB_REPEATS);
	l->ms_with = gpumem_check_median(t[1], L2AB_REPEATS);
	l->speedup = l->ms_with > 0 ? l->ms_without / l->ms_with : 0;
	l->repeats = L2AB_REPEATS;
	l->run = l->ms_without > 0 && l->ms_with > 0;
	if (!l->run)
		snprintf(l->error, sizeof(l->error), "no valid timing");
fail:
	if (limit_set && !c->dead) {
		set_window(c, NULL, 0);
		cudaCtxResetPersistingL2Cache();
		cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
		cudaGetLastError();
	}
}

static void mark_not_run(struct ctx *c)
{
	struct gpumem_check_device *d = c->d;
	int i;

	for (i = 0; i < GPUMEM_CHECK_NMETRICS; i++)
		if (!d->metric[i].measured && !d->metric[i].error[0] && c->dead)
			snprintf(d->metric[i].error, GPUMEM_CHECK_MSG, "%s", c->dead_msg);
}

/* NVML's part of the health, once NVML is up; returns NVML (or NULL). */
static struct gpumem_check_nvml *health_read(struct gpumem_check_job *job)
{
	struct gpumem_check_device *d = job->dev;
	struct gpumem_check_nvml *nvml;
	double t = now();

	nvml = gpumem_check_future_wait(&job->shared->nvml);
	if (nvml)
		gpumem_check_nvml_query(nvml, d, !job->shared->opts->quick);
	d->t.nvml = now() - t;
	return nvml;
}

void *gpumem_check_device_main(void *arg)
{
	struct gpumem_check_job *job = arg;
	struct gpumem_check_device *d = job->dev;
	const struct gpumem_check_opts *o = job->shared->opts;
	struct gpumem_check_hostbuf hb;
	struct pinned pn;
	struct gpumem_check_topo *topo;
	struct gpumem_check_nvml *nvml = NULL;
	struct ctx c;
	double t0 = now(), t1;
	size_t host_bytes;
	int health_done = 0;
	cudaError_t e;

	memset(&c, 0, sizeof(c));
	memset(&hb, 0, sizeof(hb));
	memset(&pn, 0, sizeof(pn));
	c.d = d;
	c.o = o;
	c.sh = job->shared;

	e = cudaSetDevice(d->ordinal);
	if (e == cudaSuccess)
		e = cudaFree(NULL);     /* creates the primary context now */
	d->t.init = now() - t0;
	gpumem_check_ctx_done(job->shared);
	if (e != cudaSuccess) {
		d->health.context_ok = 0;
		/* Exclusive-process GPU owned by someone else, or prohibited. */
		d->health.busy = e == cudaErrorDevicesUnavailable || d->health.compute_mode == 2;
		snprintf(d->health.context_error, sizeof(d->health.context_error), "%s (%s)",
			 cudaGetErrorString(e), cudaGetErrorName(e));
		goto health;
	}
	d->health.context_ok = 1;
	if (setup(&c) < 0) {
		if (!d->health.unusable[0] && c.dead) {
			d->health.context_ok = 0;       /* stream/event/alloc failure: broken context */
		}
		goto health;
	}

	t1 = now();
	if (want_memtest(o))
		memtest_enqueue(&c);
	if (!c.dead)
		bandwidth_enqueue(&c);

	/*
	 * While the GPU works: NVML's health counters (read under load, where a
	 * thermal slowdown shows; ~5 ms of host time that would otherwise add
	 * to the wall time), then the host buffer, near the GPU.
	 */
	nvml = health_read(job);
	health_done = 1;
	host_bytes = (size_t)o->host_bytes;
	if (host_bytes > c.arr_bytes)
		host_bytes = c.arr_bytes;
	topo = gpumem_check_future_wait(&job->shared->topo);
	if (!topo)
		snprintf(d->numa.note, sizeof(d->numa.note), "not placed: %.160s",
			 job->shared->topo.why);
	gpumem_check_host_alloc(topo, d->pci_bus_id, d->numa.cuda_node, host_bytes, &hb, &d->numa);
	if (!c.dead)
		host_pin(&c, &hb, &pn);

	if (!c.dead) {
		e = cudaStreamSynchronize(c.st);
		if (e != cudaSuccess) {
			if (d->memtest.run)
				cuda_fail(&c, d->memtest.error, &d->memtest.fatal, "memory test/bandwidth", e);
			for (int i = 0; i < NBW; i++)
				cuda_fail(&c, d->metric[i].error, &d->metric[i].fatal,
					  "memory test/bandwidth", e);
		} else {
			if (d->memtest.run)
				memtest_collect(&c);
			bandwidth_collect(&c);
		}
	}
	if (d->memtest.run && !d->memtest.error[0] && c.dead && !d->memtest.seconds) {
		/* enqueued, never collected: a later launch broke the context */
		snprintf(d->memtest.error, sizeof(d->memtest.error), "%s", c.dead_msg);
		d->memtest.fatal = 1;
	}
	d->t.bandwidth = now() - t1 - d->t.memtest - d->t.nvml;

	t1 = now();
	if (!c.dead)
		host_transfers(&c, &pn);
	/* No reading of the link during the transfers: read it now, idle. */
	if (nvml && !o->quick && d->health.pcie_gen < 0)
		gpumem_check_nvml_pcie(nvml, d);
	d->t.host = now() - t1;
	host_unpin(&pn);
	gpumem_check_host_free(topo, &hb);

	if (o->l2ab && !o->quick && !c.dead) {
		t1 = now();
		l2_ab(&c);
		d->t.l2ab = now() - t1;
	} else if (o->l2ab) {
		snprintf(d->l2ab.error, sizeof(d->l2ab.error), "%s",
			 c.dead ? c.dead_msg : "not run with --quick");
	}
	mark_not_run(&c);

health:
	if (!health_done)
		health_read(job);
	cleanup(&c);
	d->t.total = now() - t0;
	return NULL;
}

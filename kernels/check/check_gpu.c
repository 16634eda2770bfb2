/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-check: the check of one GPU, run in its own host thread so that
 * several GPUs are checked at the same time.
 *
 * Order, chosen to fit the 0.35 s budget: context creation (the dominant
 * cost with cuInit, overlapping hwloc's start-up in another thread; NVML
 * starts once every context exists, as both take the driver's locks),
 * then the pattern test and all HBM figures are enqueued on one stream
 * without waiting; while the GPU works, the host buffer for H2D/D2H is
 * allocated, touched on the GPU's NUMA node and pinned (NVML starting
 * meanwhile), then NVML's health counters are read; then one synchronisation, the PCIe transfers (the PCIe link
 * is read while they run, at its working speed) and the optional L2 A/B.
 *
 * This file holds the thread (gpumem_check_device_main, a row of those
 * steps), the context and its buffers; the steps' own work is in
 * check_measure.c (pattern test, HBM), check_host.c (PCIe) and
 * check_l2ab.c.  Also gpumem_check_identify, for main() before any context.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_gpu_ctx.h"
#include "core_base.h"

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
	d->health.nv.ecc_enabled = p.ECCEnabled ? 1 : 0;  /* NVML refines this later */
	if (cudaDeviceGetAttribute(&v, cudaDevAttrComputeMode, ordinal) == cudaSuccess)
		d->health.compute_mode = v;
	rv = 0;
fail:
	return rv;
}

/* ------------------------------------------------------------ one GPU */
/* --quick implies no memory test whatever --no-memtest says. */
static int want_memtest(const struct gpumem_check_opts *o)
{
	return o->memtest && !o->quick;
}

/* One allocation for the pattern region and the three arrays (they reuse it). */
static int arrays_alloc(struct gpumem_check_ctx *c)
{
	struct gpumem_check_device *d = c->d;
	const struct gpumem_check_opts *o = c->o;
	size_t freeb = 0, totalb = 0, need, arr;
	cudaError_t e;
	int rv = -1;

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

/* Stream, timing events, grid, the result words, then the arrays; -1 on failure. */
static int setup(struct gpumem_check_ctx *c)
{
	struct gpumem_check_device *d = c->d;
	const struct gpumem_check_opts *o = c->o;
	cudaError_t e;
	int i, nev, tpsm = 0;

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
	return arrays_alloc(c);
}

static void cleanup(struct gpumem_check_ctx *c)
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

static void mark_not_run(struct gpumem_check_ctx *c)
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
	double t = gpumem_check_now();

	nvml = gpumem_check_future_wait(&job->shared->nvml);
	if (nvml)
		gpumem_check_nvml_query(nvml, d, !job->shared->opts->quick);
	d->t.nvml = gpumem_check_now() - t;
	return nvml;
}

/* The primary context, now: -1 (the health says why) if CUDA will not give one. */
static int context_create(struct gpumem_check_job *job, double t0)
{
	struct gpumem_check_device *d = job->dev;
	cudaError_t e;

	e = cudaSetDevice(d->ordinal);
	if (e == cudaSuccess)
		e = cudaFree(NULL);     /* creates the primary context now */
	d->t.init = gpumem_check_now() - t0;
	gpumem_check_ctx_done(job->shared);
	if (e != cudaSuccess) {
		d->health.context_ok = 0;
		/* Exclusive-process GPU owned by someone else, prohibited, or an MPS daemon in the way. */
		d->health.busy = e == cudaErrorDevicesUnavailable || d->health.compute_mode == 2 ||
			gpumem_cuda_mps_error((int)e);
		snprintf(d->health.context_error, sizeof(d->health.context_error), "%s (%s)",
			 cudaGetErrorString(e), cudaGetErrorName(e));
		return -1;
	}
	d->health.context_ok = 1;
	return 0;
}

/* The host buffer of the PCIe figures, near the GPU, pinned; returns the topology. */
static struct gpumem_check_topo *host_prepare(struct gpumem_check_job *job,
					      struct gpumem_check_ctx *c,
					      struct gpumem_check_hostbuf *hb,
					      struct gpumem_check_pinned *pn)
{
	struct gpumem_check_device *d = job->dev;
	struct gpumem_check_topo *topo;
	double t = gpumem_check_now();
	size_t host_bytes;

	host_bytes = (size_t)c->o->host_bytes;
	if (host_bytes > c->arr_bytes)
		host_bytes = c->arr_bytes;
	topo = gpumem_check_future_wait(&job->shared->topo);
	if (!topo)
		snprintf(d->numa.note, sizeof(d->numa.note), "not placed: %.160s",
			 job->shared->topo.why);
	gpumem_check_host_alloc(topo, d->pci_bus_id, d->numa.cuda_node, host_bytes, hb, &d->numa);
	if (!c->dead)
		gpumem_check_host_pin(c, hb, pn);
	d->t.prepare = gpumem_check_now() - t;
	return topo;
}

/* The one synchronisation, then the pattern test's and the HBM figures' results. */
static void hbm_collect(struct gpumem_check_ctx *c)
{
	struct gpumem_check_device *d = c->d;
	double t = gpumem_check_now();
	cudaError_t e;

	if (!c->dead) {
		e = cudaStreamSynchronize(c->st);
		d->t.wait = gpumem_check_now() - t;
		if (e != cudaSuccess) {
			if (d->memtest.run)
				cuda_fail(c, d->memtest.error, &d->memtest.fatal, "memory test/bandwidth", e);
			for (int i = 0; i < NBW; i++)
				cuda_fail(c, d->metric[i].error, &d->metric[i].fatal,
					  "memory test/bandwidth", e);
		} else {
			if (d->memtest.run)
				gpumem_check_memtest_collect(c);
			gpumem_check_bandwidth_collect(c);
		}
	}
	if (d->memtest.run && !d->memtest.error[0] && c->dead && !d->memtest.seconds) {
		/* enqueued, never collected: a later launch broke the context */
		snprintf(d->memtest.error, sizeof(d->memtest.error), "%s", c->dead_msg);
		d->memtest.fatal = 1;
	}
}

/* The PCIe figures; then the host buffer goes. */
static void host_phase(struct gpumem_check_ctx *c, struct gpumem_check_nvml *nvml,
		       struct gpumem_check_topo *topo, struct gpumem_check_hostbuf *hb,
		       struct gpumem_check_pinned *pn)
{
	struct gpumem_check_device *d = c->d;
	double t1;

	t1 = gpumem_check_now();
	if (!c->dead)
		gpumem_check_host_transfers(c, pn);
	/* No reading of the link during the transfers: read it now, idle. */
	if (nvml && !c->o->quick && d->health.nv.gen < 0)
		gpumem_check_nvml_pcie(nvml, d);
	d->t.host = gpumem_check_now() - t1;
	gpumem_check_host_unpin(pn);
	gpumem_check_host_free(topo, hb);
}

static void l2ab_phase(struct gpumem_check_ctx *c)
{
	struct gpumem_check_device *d = c->d;
	const struct gpumem_check_opts *o = c->o;
	double t1;

	d->l2ab.sa.asked = o->l2ab && (o->l2_setaside_pct > 0 || o->l2_setaside_bytes);
	if (o->l2ab && !o->quick && !c->dead) {
		t1 = gpumem_check_now();
		gpumem_check_l2_ab(c);
		d->t.l2ab = gpumem_check_now() - t1;
	} else if (o->l2ab) {
		snprintf(d->l2ab.error, sizeof(d->l2ab.error), "%s",
			 c->dead ? c->dead_msg : "not run with --quick");
		snprintf(d->l2ab.sa.error, sizeof(d->l2ab.sa.error), "%s", d->l2ab.error);
	}
}

/*
 * --l2-reset: the persisting lines back to normal and the set-aside to 0,
 * in this context, as gpumem-l2reset does in one of its own: the job
 * epilog then starts CUDA once for both.  It judges nothing.
 */
static void l2reset_phase(struct gpumem_check_ctx *c)
{
	struct gpumem_check_device *d = c->d;
	double t1 = gpumem_check_now();
	cudaError_t e;

	if (!c->o->l2_reset)
		return;
	if (!d->health.context_ok || c->dead) {
		snprintf(d->l2reset.note, sizeof(d->l2reset.note), "no usable context: %.150s",
			 c->dead ? c->dead_msg : d->health.context_error);
		return;
	}
	e = cudaCtxResetPersistingL2Cache();
	if (e == cudaSuccess)
		e = cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
	if (e == cudaErrorNotSupported || e == cudaErrorUnsupportedLimit) {
		cudaGetLastError();
		d->l2reset.done = 1;    /* MIG, some vGPU profiles: nothing persists */
		snprintf(d->l2reset.note, sizeof(d->l2reset.note), "not supported here: %s",
			 cudaGetErrorName(e));
	} else if (e != cudaSuccess) {
		snprintf(d->l2reset.note, sizeof(d->l2reset.note), "%s", cudaGetErrorString(e));
	} else {
		d->l2reset.done = 1;
	}
	d->l2reset.seconds = gpumem_check_now() - t1;
}

void *gpumem_check_device_main(void *arg)
{
	struct gpumem_check_job *job = arg;
	struct gpumem_check_device *d = job->dev;
	const struct gpumem_check_opts *o = job->shared->opts;
	struct gpumem_check_hostbuf hb;
	struct gpumem_check_pinned pn;
	struct gpumem_check_topo *topo;
	struct gpumem_check_nvml *nvml = NULL;
	struct gpumem_check_ctx c;
	double t0 = gpumem_check_now(), t1;
	int health_done = 0;

	memset(&c, 0, sizeof(c));
	memset(&hb, 0, sizeof(hb));
	memset(&pn, 0, sizeof(pn));
	c.d = d;
	c.o = o;
	c.sh = job->shared;

	if (context_create(job, t0) < 0)
		goto health;
	if (setup(&c) < 0) {
		if (!d->health.unusable[0] && c.dead) {
			d->health.context_ok = 0;       /* stream/event/alloc failure: broken context */
		}
		goto health;
	}

	t1 = gpumem_check_now();
	if (want_memtest(o))
		gpumem_check_memtest_enqueue(&c);
	if (!c.dead)
		gpumem_check_bandwidth_enqueue(&c);

	/*
	 * While the GPU works: the host buffer, near the GPU, pinned (the
	 * longest host step), while NVML starts in
	 * its own thread; then NVML's health counters, read with the GPU still
	 * busy, where a thermal slowdown shows.  In the other order NVML's
	 * start and the pinning added up.
	 */
	topo = host_prepare(job, &c, &hb, &pn);
	nvml = health_read(job);
	health_done = 1;
	hbm_collect(&c);
	d->t.bandwidth = gpumem_check_now() - t1 - d->t.memtest - d->t.nvml;

	host_phase(&c, nvml, topo, &hb, &pn);
	l2ab_phase(&c);
	mark_not_run(&c);

health:
	if (!health_done)
		health_read(job);
	l2reset_phase(&c);      /* also where there is no usable context: it says so */
	cleanup(&c);
	d->t.total = gpumem_check_now() - t0;
	return NULL;
}

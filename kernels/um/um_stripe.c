/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libgpumem-um: placement by size (unified_memory.placement: stripe).
 *
 * A managed allocation of at least min_bytes is split between the GPU and
 * the CPU: the whole allocation gets SetAccessedBy(gpu), so the GPU reads
 * whatever sits on the CPU over the link without faulting or migrating it;
 * the GPU part is prefetched to the GPU, so it starts in HBM; the CPU part
 * gets SetPreferredLocation(host).  Nothing is ever evicted to make room,
 * because the GPU part is chosen to fit: a fixed gpu_fraction, or (auto) the
 * GPU's free memory at allocation time minus the reserve.  That is the
 * distribution the UM oversubscription literature calls striping (NVIDIA's
 * oversubscription study, "stripe_gpu_cpu": 2 MiB pages dealt round-robin
 * between the GPU and the CPU in proportion to what fits).
 *
 * No preferred location for the GPU part.  With
 * SetPreferredLocation(gpu) on it (up to 0.1.0), pages the program's CPU
 * code touched, or the program itself prefetched to the CPU, came back to the
 * GPU by faults, one by one, on the next GPU pass, mapped or not: a first
 * pass at 0.27x of zero-copy for data built on the CPU, and every pass at
 * 0.3x for a program that prefetches to the CPU before each pass (H100,
 * bench/um-stripe-advice.cu).  Without it, the mapping holds: such pages are
 * read over the link, as zero-copy reads them, and stay where the program
 * put them.  The price: data built on the CPU and read many times stays at
 * zero-copy speed (it was 2x after that slow first pass) unless the program
 * prefetches it to the GPU itself.  policies/README.md has the table.
 *
 * Stripes, not one GPU prefix.  With a prefix, the bandwidth a program gets
 * depends on which addresses it reads: a program that reads only the first
 * half, or reads the first half more often, would see all-HBM or all-link
 * and nothing in between.  With the GPU share spread through the whole
 * allocation, every stretch of it longer than one period has the asked mix,
 * so a read-once pass and every pass of a read-many loop cost
 *     bytes * (f / HBM + (1 - f) / link)
 * whatever order they read in (while the link is busy the GPU part is read
 * at the same time, so this is an upper bound on the time).
 *
 * Bounded work.  Dealing single 2 MiB pages, as the study does, costs 2-3
 * driver calls per page: 12,288 for a 8 GiB allocation.  Here the granules
 * are grouped into at most GPUMEM_UM_MAX_PERIODS (64) periods; each period
 * holds its GPU granules first, then its CPU granules, and adjacent ranges
 * of one kind are merged (um_plan.c).  So at most 128 ranges of one call
 * each and one mapping for the whole: at most 129
 * cuMemAdvise/cuMemPrefetchAsync calls per allocation, plus cuMemGetInfo
 * (and one cuStreamSynchronize, below) for auto; a fraction of 0 or 1 is
 * 2 calls.  Allocations of up to 64
 * granules are dealt granule by granule, as in the study.
 *
 * auto.  Prefetches are asynchronous: the free memory a second allocation
 * reads could still count pages the first one's prefetch has not moved yet.
 * So before reading it, the library waits for the legacy default stream
 * once if it queued a GPU prefetch on that device since the last wait.
 *
 * Failure.  If a call fails, the advice given so far is unset and the
 * allocation is left a plain managed one (the pages already prefetched stay
 * where they are, as after any prefetch); the first such failure in the
 * process is said on stderr, the program goes on.
 *
 * Builds: libgpumem-um.so (kernels/um/um.am), hidden symbols only.
 * Includes: this folder's headers and cuda.h.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <cuda.h>

#include "um_config.h"
#include "um_preload.h"

#define UM_MAX_DEVICES 64
static int um_gpu_queued[UM_MAX_DEVICES];      /* GPU prefetch since the last wait */
static int um_stripe_fail_reported;

struct um_place {
	const struct um_drv *d;
	CUdeviceptr p;
	size_t n;
	CUdevice dev;
	CUmemLocation gpu, host;
	int calls;
	char what[128];                 /* the call that failed */
};

static CUresult um_call_advise(struct um_place *s, const struct gpumem_um_range *r,
			       CUmem_advise a, CUmemLocation loc)
{
	CUresult rv = gpumem_um_advise_rv(s->d, s->p + r->off, r->len, a, loc);
	char where[48];

	s->calls++;
	if (rv != CUDA_SUCCESS) {
		gpumem_um_where(where, sizeof(where), loc);
		snprintf(s->what, sizeof(s->what), "cuMemAdvise(%s, %s) on bytes %" PRIu64
			 "..%" PRIu64, gpumem_um_advice_name(a), where, r->off, r->off + r->len);
	}
	return rv;
}

static CUresult um_call_prefetch(struct um_place *s, const struct gpumem_um_range *r)
{
	CUresult rv = gpumem_um_prefetch_rv(s->d, s->p + r->off, r->len, s->gpu);

	s->calls++;
	if (rv != CUDA_SUCCESS)
		snprintf(s->what, sizeof(s->what), "cuMemPrefetchAsync(gpu %d) on bytes %" PRIu64
			 "..%" PRIu64, (int)s->dev, r->off, r->off + r->len);
	return rv;
}

/* auto: what the GPU has free now, after our own queued prefetches ran. */
static CUresult um_free_bytes(struct um_place *s, uint64_t *free_bytes)
{
	size_t fr = 0, total = 0;
	CUresult rv = CUDA_ERROR_NOT_SUPPORTED;

	if (s->dev >= 0 && s->dev < UM_MAX_DEVICES && s->d->stream_sync != NULL &&
	    __atomic_exchange_n(&um_gpu_queued[s->dev], 0, __ATOMIC_ACQ_REL)) {
		rv = s->d->stream_sync((CUstream)0);
		if (rv != CUDA_SUCCESS) {
			snprintf(s->what, sizeof(s->what), "cuStreamSynchronize(legacy stream)");
			return rv;
		}
	}
	if (s->d->mem_get_info != NULL)
		rv = s->d->mem_get_info(&fr, &total);
	if (rv != CUDA_SUCCESS) {
		snprintf(s->what, sizeof(s->what), "cuMemGetInfo");
		return rv;
	}
	*free_bytes = fr;
	return CUDA_SUCCESS;
}

/*
 * The whole allocation mapped for the GPU (one call), then each range: the
 * GPU part prefetched there, the CPU part preferred on the host.
 */
static CUresult um_place_ranges(struct um_place *s, const struct gpumem_um_range *r, int nr)
{
	const struct gpumem_um_range whole = { 0, s->n, 0 };
	CUresult rv = um_call_advise(s, &whole, CU_MEM_ADVISE_SET_ACCESSED_BY, s->gpu);

	for (int i = 0; i < nr && rv == CUDA_SUCCESS; i++) {
		if (r[i].gpu)
			rv = um_call_prefetch(s, &r[i]);
		else
			rv = um_call_advise(s, &r[i], CU_MEM_ADVISE_SET_PREFERRED_LOCATION, s->host);
	}
	return rv;
}

static void um_describe_fraction(char *buf, size_t len, const struct gpumem_um_config *c,
				 uint64_t free_bytes)
{
	if (c->gpu_ppm == GPUMEM_UM_AUTO)
		snprintf(buf, len, "auto: %" PRIu64 " free - %" PRIu64 " reserve", free_bytes,
			 c->reserve);
	else
		snprintf(buf, len, "gpu_fraction %u.%06u", (unsigned)c->gpu_ppm / GPUMEM_UM_PPM,
			 (unsigned)c->gpu_ppm % GPUMEM_UM_PPM);
}

void gpumem_um_stripe(CUdeviceptr p, size_t n, const struct gpumem_um_config *c)
{
	struct um_drv local;
	struct um_place s = { .d = gpumem_um_drv(&local), .p = p, .n = n };
	struct gpumem_um_range r[GPUMEM_UM_MAX_RANGES];
	const struct gpumem_um_range whole = { 0, n, 0 };
	uint64_t free_bytes = 0, gpu_bytes = 0;
	CUresult rv = CUDA_ERROR_NOT_SUPPORTED;
	char how[96];
	int nr;

	s.host.type = CU_MEM_LOCATION_TYPE_HOST;
	s.host.id = 0;
	if (s.d->ctx_get_device != NULL)
		rv = s.d->ctx_get_device(&s.dev);
	if (rv != CUDA_SUCCESS) {
		snprintf(s.what, sizeof(s.what), "cuCtxGetDevice");
		goto fail;
	}
	s.gpu.type = CU_MEM_LOCATION_TYPE_DEVICE;
	s.gpu.id = (int)s.dev;
	if (c->gpu_ppm == GPUMEM_UM_AUTO && (rv = um_free_bytes(&s, &free_bytes)) != CUDA_SUCCESS)
		goto fail;
	nr = gpumem_um_plan(n, c->granularity, gpumem_um_gpu_granules(n, c, free_bytes), r);
	rv = um_place_ranges(&s, r, nr);
	/* The policy's accessed_by=cpu still holds for the whole allocation. */
	if (rv == CUDA_SUCCESS && (c->accessed_by & GPUMEM_UM_BY_CPU))
		rv = um_call_advise(&s, &whole, CU_MEM_ADVISE_SET_ACCESSED_BY, s.host);
	if (rv != CUDA_SUCCESS)
		goto undo;
	for (int i = 0; i < nr; i++)
		gpu_bytes += r[i].gpu ? r[i].len : 0;
	if (gpu_bytes && s.dev >= 0 && s.dev < UM_MAX_DEVICES)
		__atomic_store_n(&um_gpu_queued[s.dev], 1, __ATOMIC_RELEASE);
	if (c->verbose) {
		um_describe_fraction(how, sizeof(how), c, free_bytes);
		gpumem_um_log("stripe: %zu bytes at 0x%llx: %" PRIu64 " on gpu %d, %" PRIu64
			      " on the host (%s), %d ranges of %" PRIu64 "-byte granules, "
			      "%d driver calls", n, (unsigned long long)p, gpu_bytes, (int)s.dev,
			      (uint64_t)n - gpu_bytes, how, nr, c->granularity, s.calls);
	}
	return;
undo:
	(void)gpumem_um_advise_rv(s.d, p, n, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, s.gpu);
	(void)gpumem_um_advise_rv(s.d, p, n, CU_MEM_ADVISE_UNSET_ACCESSED_BY, s.gpu);
fail:
	if (gpumem_um_first(&um_stripe_fail_reported))
		gpumem_um_log("placing a %zu-byte managed allocation between the GPU and the host "
			      "failed: %s: %s (%d); it is left a plain managed allocation, further "
			      "failures are not reported", n, s.what, gpumem_um_err_name(s.d, rv),
			      (int)rv);
}

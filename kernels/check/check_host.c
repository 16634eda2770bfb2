/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The PCIe figures of one GPU (H2D, D2H): pinning the host buffer that
 * check_numa.c placed on the GPU's NUMA node (with cudaMallocHost as the
 * fallback), the timed transfers, and the PCIe link read while they run.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_gpu_ctx.h"

/*
 * Pin the NUMA-placed host buffer.  Called while the GPU still runs the
 * memory test and the HBM figures: placing, touching and registering the
 * buffer is the longest host step of the check, which would otherwise add
 * to its wall time.
 */
void gpumem_check_host_pin(struct gpumem_check_ctx *c, const struct gpumem_check_hostbuf *hb,
			   struct gpumem_check_pinned *pn)
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

void gpumem_check_host_unpin(struct gpumem_check_pinned *pn)
{
	if (pn->registered)
		cudaHostUnregister(pn->host);
	if (pn->alloc)
		cudaFreeHost(pn->alloc);
	memset(pn, 0, sizeof(*pn));
}

/* H2D then D2H through the pinned, NUMA-placed host buffer. */
void gpumem_check_host_transfers(struct gpumem_check_ctx *c, const struct gpumem_check_pinned *pn)
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
		gpumem_check_fill_metric(dir == 0 ? mh : md, gbps, R);
	}
}

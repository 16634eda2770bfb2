/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libgpumem-um: one advice for a whole managed allocation, as the policy's
 * unified_memory keys say (preferred location, accessed-by, read-mostly,
 * prefetch), and the driver functions every kind of advice needs.
 *
 * The functions come from the real cuGetProcAddress with the version and
 * flags a 12.2+ driver wants (CUmemLocation ABI), else the 8.0 ABI with a
 * device ordinal; the prefetch always goes to the legacy default stream,
 * whatever default the program compiled for.  A failed call is reported
 * once per process and the program goes on.
 *
 * Builds: libgpumem-um.so (kernels/um/um.am), hidden symbols only.
 * Includes: this folder's headers and cuda.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "um_config.h"
#include "um_preload.h"

static struct um_drv um_drv_cache;
static int um_drv_state;        /* as um_cfg_state */

static void *um_drv_sym(const char *name, int ver, cuuint64_t flags)
{
	um_gpa2_fn gpa2 = (um_gpa2_fn)gpumem_um_get_real(GPUMEM_UM_R_GPA2);
	um_gpa1_fn gpa1;
	CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	void *fn = NULL;

	if (gpa2 != NULL)
		return gpa2(name, &fn, ver, flags, &st) == CUDA_SUCCESS &&
		       st == CU_GET_PROC_ADDRESS_SUCCESS ? fn : NULL;
	gpa1 = (um_gpa1_fn)gpumem_um_get_real(GPUMEM_UM_R_GPA1);
	if (gpa1 != NULL)
		return gpa1(name, &fn, ver, flags) == CUDA_SUCCESS ? fn : NULL;
	/* A driver older than 11.3: the plain exports are the 8.0 API. */
	return ver <= 8000 ? gpumem_um_cuda_sym(name) : NULL;
}

static void um_drv_resolve(struct um_drv *d)
{
	memset(d, 0, sizeof(*d));
	d->advise = (um_advise_fn)um_drv_sym("cuMemAdvise", 12020, CU_GET_PROC_ADDRESS_DEFAULT);
	if (d->advise == NULL)
		d->advise8 = (um_advise8_fn)um_drv_sym("cuMemAdvise", 8000,
						       CU_GET_PROC_ADDRESS_DEFAULT);
	/* The legacy default stream, whatever the program's default is. */
	d->prefetch = (um_prefetch_fn)um_drv_sym("cuMemPrefetchAsync", 12020,
						 CU_GET_PROC_ADDRESS_LEGACY_STREAM);
	if (d->prefetch == NULL)
		d->prefetch8 = (um_prefetch8_fn)um_drv_sym("cuMemPrefetchAsync", 8000,
							   CU_GET_PROC_ADDRESS_LEGACY_STREAM);
	d->ctx_get_device = (um_ctxdev_fn)um_drv_sym("cuCtxGetDevice", 2000,
						     CU_GET_PROC_ADDRESS_DEFAULT);
	d->dev_attr = (um_devattr_fn)um_drv_sym("cuDeviceGetAttribute", 2000,
						CU_GET_PROC_ADDRESS_DEFAULT);
	d->err_name = (um_errname_fn)um_drv_sym("cuGetErrorName", 6000,
						CU_GET_PROC_ADDRESS_DEFAULT);
	d->mem_get_info = (um_meminfo_fn)um_drv_sym("cuMemGetInfo", 3020,
						    CU_GET_PROC_ADDRESS_DEFAULT);
	d->stream_sync = (um_streamsync_fn)um_drv_sym("cuStreamSynchronize", 2000,
						      CU_GET_PROC_ADDRESS_LEGACY_STREAM);
}

const struct um_drv *gpumem_um_drv(struct um_drv *local)
{
	int expect = 0;

	if (__atomic_load_n(&um_drv_state, __ATOMIC_ACQUIRE) == 2)
		return &um_drv_cache;
	if (!__atomic_compare_exchange_n(&um_drv_state, &expect, 1, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		um_drv_resolve(local);
		return local;
	}
	um_drv_resolve(&um_drv_cache);
	__atomic_store_n(&um_drv_state, 2, __ATOMIC_RELEASE);
	return &um_drv_cache;
}

/*
 * Is NUMA node 'node' in this process's Mems_allowed?  1 yes, 0 no, -1 not
 * known.  Pointing the driver at a node the job's cpuset excludes would
 * either fail or place memory where Slurm said it must not be, so a host
 * NUMA location is used only when this says yes.
 */
static int um_mems_allowed(int node)
{
	/* Big enough for the Cpus_allowed lines of a machine with 8192 CPUs. */
	char buf[16384], *p, *end;
	size_t len = 0;
	ssize_t n;
	int fd, rv = -1, ngroups = 0, grp;

	fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		goto fail;
	while (len < sizeof(buf) - 1 &&
	       ((n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0 || (n < 0 && errno == EINTR)))
		if (n > 0)
			len += (size_t)n;
	close(fd);
	if (len == 0)
		goto fail;
	buf[len] = '\0';
	p = strstr(buf, "\nMems_allowed:");
	if (p == NULL)
		goto fail;
	p += strlen("\nMems_allowed:");
	p += strspn(p, " \t");
	end = p + strspn(p, "0123456789abcdefABCDEF,");
	/* Comma-separated 32-bit hex words, the most significant first. */
	for (char *q = p; q < end; q++)
		if (*q == ',')
			ngroups++;
	ngroups++;
	grp = ngroups - 1 - node / 32;
	if (grp < 0) {
		rv = 0;
		goto fail;
	}
	for (; grp > 0 && p < end; p++)
		if (*p == ',')
			grp--;
	rv = (int)((strtoul(p, NULL, 16) >> (node % 32)) & 1u);
fail:
	return rv;
}

#define UM_MAX_DEVICES 64
static int um_numa_of[UM_MAX_DEVICES];  /* NUMA node + 2; 1 = plain host; 0 = unknown */
static int um_numa_off;                 /* a HOST_NUMA advice failed: host only */

/* Host memory, on the NUMA node nearest the GPU when that is cheap and allowed. */
CUmemLocation gpumem_um_host_location(const struct um_drv *d, CUdevice dev, int have_dev)
{
	CUmemLocation loc = { .type = CU_MEM_LOCATION_TYPE_HOST, .id = 0 };
	int v, node = -1;

	if (!have_dev || dev < 0 || dev >= UM_MAX_DEVICES || d->advise == NULL ||
	    __atomic_load_n(&um_numa_off, __ATOMIC_RELAXED))
		return loc;
	v = __atomic_load_n(&um_numa_of[dev], __ATOMIC_RELAXED);
	if (v == 0) {
		if (d->dev_attr != NULL &&
		    d->dev_attr(&node, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, dev) == CUDA_SUCCESS &&
		    node >= 0 && node < 4096 && um_mems_allowed(node) == 1)
			v = node + 2;
		else
			v = 1;
		__atomic_store_n(&um_numa_of[dev], v, __ATOMIC_RELAXED);
	}
	if (v >= 2) {
		loc.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
		loc.id = v - 2;
	}
	return loc;
}

void gpumem_um_where(char *buf, size_t len, CUmemLocation loc)
{
	switch (loc.type) {
	case CU_MEM_LOCATION_TYPE_DEVICE:
		snprintf(buf, len, "gpu %d", loc.id);
		break;
	case CU_MEM_LOCATION_TYPE_HOST_NUMA:
		snprintf(buf, len, "host NUMA node %d", loc.id);
		break;
	default:
		snprintf(buf, len, "host");
		break;
	}
}

const char *gpumem_um_advice_name(CUmem_advise a)
{
	switch (a) {
	case CU_MEM_ADVISE_SET_PREFERRED_LOCATION: return "SET_PREFERRED_LOCATION";
	case CU_MEM_ADVISE_SET_ACCESSED_BY: return "SET_ACCESSED_BY";
	case CU_MEM_ADVISE_SET_READ_MOSTLY: return "SET_READ_MOSTLY";
	case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION: return "UNSET_PREFERRED_LOCATION";
	case CU_MEM_ADVISE_UNSET_ACCESSED_BY: return "UNSET_ACCESSED_BY";
	default: return "?";
	}
}

const char *gpumem_um_err_name(const struct um_drv *d, CUresult rv)
{
	const char *name = NULL;

	if (d->err_name == NULL || d->err_name(rv, &name) != CUDA_SUCCESS || name == NULL)
		name = "unknown error";
	return name;
}

static int um_fail_reported;

/* The first failure in the process is reported; the job goes on regardless. */
static void um_fail(const struct um_drv *d, const char *what, CUresult rv, size_t bytes)
{
	if (!gpumem_um_first(&um_fail_reported))
		return;
	gpumem_um_log("%s on a %zu-byte managed allocation failed: %s (%d); the allocation is "
		      "left as the program made it, further failures are not reported",
		      what, bytes, gpumem_um_err_name(d, rv), (int)rv);
}

CUresult gpumem_um_advise_rv(const struct um_drv *d, CUdeviceptr p, size_t n, CUmem_advise a,
			     CUmemLocation loc)
{
	CUresult rv = CUDA_ERROR_NOT_SUPPORTED;

	if (d->advise != NULL) {
		rv = d->advise(p, n, a, loc);
		/* A driver that refuses NUMA locations still takes "host". */
		if (rv != CUDA_SUCCESS && loc.type == CU_MEM_LOCATION_TYPE_HOST_NUMA) {
			__atomic_store_n(&um_numa_off, 1, __ATOMIC_RELAXED);
			loc.type = CU_MEM_LOCATION_TYPE_HOST;
			loc.id = 0;
			rv = d->advise(p, n, a, loc);
		}
	} else if (d->advise8 != NULL) {
		rv = d->advise8(p, n, a, loc.type == CU_MEM_LOCATION_TYPE_DEVICE ? loc.id : CU_DEVICE_CPU);
	}
	return rv;
}

CUresult gpumem_um_prefetch_rv(const struct um_drv *d, CUdeviceptr p, size_t n, CUmemLocation loc)
{
	CUresult rv = CUDA_ERROR_NOT_SUPPORTED;

	if (d->prefetch != NULL) {
		rv = d->prefetch(p, n, loc, 0, (CUstream)0);
		if (rv != CUDA_SUCCESS && loc.type == CU_MEM_LOCATION_TYPE_HOST_NUMA) {
			loc.type = CU_MEM_LOCATION_TYPE_HOST;
			loc.id = 0;
			rv = d->prefetch(p, n, loc, 0, (CUstream)0);
		}
	} else if (d->prefetch8 != NULL) {
		rv = d->prefetch8(p, n, loc.type == CU_MEM_LOCATION_TYPE_DEVICE ? loc.id : CU_DEVICE_CPU,
				  (CUstream)0);
	}
	return rv;
}

static void um_advise(const struct um_drv *d, CUdeviceptr p, size_t n, CUmem_advise a,
		      CUmemLocation loc)
{
	CUresult rv = gpumem_um_advise_rv(d, p, n, a, loc);
	char what[96], where[48];

	if (rv != CUDA_SUCCESS) {
		gpumem_um_where(where, sizeof(where), loc);
		snprintf(what, sizeof(what), "cuMemAdvise(%s, %s)", gpumem_um_advice_name(a), where);
		um_fail(d, what, rv, n);
	}
}

static void um_prefetch(const struct um_drv *d, CUdeviceptr p, size_t n, CUmemLocation loc)
{
	CUresult rv = gpumem_um_prefetch_rv(d, p, n, loc);
	char what[96], where[48];

	if (rv != CUDA_SUCCESS) {
		gpumem_um_where(where, sizeof(where), loc);
		snprintf(what, sizeof(what), "cuMemPrefetchAsync(%s)", where);
		um_fail(d, what, rv, n);
	}
}

static int um_verbose_done;

/* "cpu (host NUMA node 1)", "gpu (gpu 0)", "none": for the verbose line. */
static void um_describe(char *buf, size_t len, enum gpumem_um_where w, const char *host,
			const char *gpu)
{
	if (w == GPUMEM_UM_NONE)
		snprintf(buf, len, "none");
	else
		snprintf(buf, len, "%s (%s)", gpumem_um_where_name(w), w == GPUMEM_UM_GPU ? gpu : host);
}

void gpumem_um_apply(CUdeviceptr p, size_t n, const struct gpumem_um_config *c)
{
	struct um_drv local;
	const struct um_drv *d = gpumem_um_drv(&local);
	CUmemLocation gpu = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 };
	CUmemLocation host = { .type = CU_MEM_LOCATION_TYPE_HOST, .id = 0 };
	CUmemLocation pref;
	CUdevice dev = 0;
	CUresult rv = CUDA_ERROR_NOT_SUPPORTED;
	int have_dev = 0;

	/* GPU means the device of the context the allocation was made in. */
	if (d->ctx_get_device != NULL)
		rv = d->ctx_get_device(&dev);
	if (rv == CUDA_SUCCESS)
		have_dev = 1;
	else if (c->preferred == GPUMEM_UM_GPU || (c->accessed_by & GPUMEM_UM_BY_GPU) ||
		 c->prefetch == GPUMEM_UM_GPU) {
		um_fail(d, "cuCtxGetDevice", rv, n);
		return;
	}
	gpu.id = (int)dev;
	pref = gpumem_um_host_location(d, dev, have_dev);

	/*
	 * Preferred location "cpu" is plain host: on the H100 a HOST_NUMA
	 * preference was accepted but read back as no preference at all,
	 * while plain host is what the measured zero-copy gain used.
	 * Prefetches still go to
	 * the GPU's nearest NUMA node.
	 */
	if (c->preferred != GPUMEM_UM_NONE)
		um_advise(d, p, n, CU_MEM_ADVISE_SET_PREFERRED_LOCATION,
			  c->preferred == GPUMEM_UM_GPU ? gpu : host);
	/* Accessed-by takes a device or plain host, never a NUMA node. */
	if (c->accessed_by & GPUMEM_UM_BY_CPU)
		um_advise(d, p, n, CU_MEM_ADVISE_SET_ACCESSED_BY, host);
	if (c->accessed_by & GPUMEM_UM_BY_GPU)
		um_advise(d, p, n, CU_MEM_ADVISE_SET_ACCESSED_BY, gpu);
	/* The location is ignored for read-mostly; give a valid one anyway. */
	if (c->read_mostly)
		um_advise(d, p, n, CU_MEM_ADVISE_SET_READ_MOSTLY, have_dev ? gpu : host);
	if (c->prefetch != GPUMEM_UM_NONE)
		um_prefetch(d, p, n, c->prefetch == GPUMEM_UM_GPU ? gpu : pref);

	if (c->verbose && gpumem_um_first(&um_verbose_done)) {
		char pw[48], gw[48], pref_s[64], by_s[64], fetch_s[64];

		if (__atomic_load_n(&um_numa_off, __ATOMIC_RELAXED))
			pref = host;
		gpumem_um_where(pw, sizeof(pw), pref);
		gpumem_um_where(gw, sizeof(gw), gpu);
		um_describe(pref_s, sizeof(pref_s), c->preferred, "host", gw);
		um_describe(fetch_s, sizeof(fetch_s), c->prefetch, pw, gw);
		snprintf(by_s, sizeof(by_s), "%s%s%s%s",
			 c->accessed_by == 0 ? "none" : "",
			 (c->accessed_by & GPUMEM_UM_BY_CPU) ? "cpu (host)" : "",
			 c->accessed_by == (GPUMEM_UM_BY_CPU | GPUMEM_UM_BY_GPU) ? "," : "",
			 (c->accessed_by & GPUMEM_UM_BY_GPU) ? "gpu" : "");
		if (c->accessed_by & GPUMEM_UM_BY_GPU)
			snprintf(by_s + strlen(by_s), sizeof(by_s) - strlen(by_s), " (%s)", gw);
		gpumem_um_log("advising managed allocations of %" PRIu64 " bytes or more: "
			      "preferred=%s accessed_by=%s read_mostly=%d prefetch=%s "
			      "(first: %zu bytes at 0x%llx)",
			      c->min_bytes, pref_s, by_s, c->read_mostly ? 1 : 0, fetch_s,
			      n, (unsigned long long)p);
	}
}
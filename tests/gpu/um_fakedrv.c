/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A stand-in for libcuda.so.1, for the CPU-side tests of libgpumem-um and
 * gpumem-l2reset (tests/cli/um_preload.sh): the tests put it on
 * LD_LIBRARY_PATH under that name.  It implements just what those two use,
 * logs every call that matters as "fakedrv: ..." on stderr, and obeys:
 *   UM_FAKEDRV_NODEV=1     cuInit says CUDA_ERROR_NO_DEVICE
 *   UM_FAKEDRV_NGPUS=N     devices (default 2)
 *   UM_FAKEDRV_NUMA=N      CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID (default -1)
 *   UM_FAKEDRV_OLD=1       a 12.0 driver: no CUmemLocation cuMemAdvise/Prefetch
 *   UM_FAKEDRV_FAIL=NAME   that function fails with CUDA_ERROR_INVALID_VALUE
 *   UM_FAKEDRV_FAILNTH=N   with UM_FAKEDRV_FAIL: only its Nth call fails
 *   UM_FAKEDRV_HANG=NAME   that function sleeps 30 s
 *   UM_FAKEDRV_FREE=BYTES  what cuMemGetInfo says is free (default 80 GiB)
 * Advice and prefetch lines end in "@+OFFSET", the offset from the start
 * of the last allocation, so a test can check each range exactly.
 * Preloaded after libgpumem-um instead, it is an interposer of getpid that
 * finds the real one with dlsym(RTLD_NEXT): that must be libc's, which holds
 * only if libgpumem-um's dlsym keeps the caller's identity (else "next"
 * would be counted from libgpumem-um, find this getpid again and recurse).
 * Not part of gpumem.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#define EXPORT(sym) __asm__(sym) __attribute__((visibility("default")))

static int env_int(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : dflt;
}

/* Failure and hang injection by function name. */
static int fake_calls;   /* calls of the UM_FAKEDRV_FAIL function so far */

static CUresult fake_enter(const char *fn)
{
	const char *f = getenv("UM_FAKEDRV_FAIL"), *h = getenv("UM_FAKEDRV_HANG");
	int nth = env_int("UM_FAKEDRV_FAILNTH", 0);

	if (h && strcmp(h, fn) == 0) {
		fprintf(stderr, "fakedrv: %s hangs\n", fn);
		sleep(30);
	}
	if (f && strcmp(f, fn) == 0 && (nth == 0 || ++fake_calls == nth)) {
		fprintf(stderr, "fakedrv: %s fails\n", fn);
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

static const char *loc_str(CUmemLocation l, char *buf, size_t len)
{
	switch (l.type) {
	case CU_MEM_LOCATION_TYPE_DEVICE: snprintf(buf, len, "device:%d", l.id); break;
	case CU_MEM_LOCATION_TYPE_HOST: snprintf(buf, len, "host"); break;
	case CU_MEM_LOCATION_TYPE_HOST_NUMA: snprintf(buf, len, "host_numa:%d", l.id); break;
	default: snprintf(buf, len, "type%d:%d", (int)l.type, l.id); break;
	}
	return buf;
}

static const char *advice_str(CUmem_advise a)
{
	switch (a) {
	case CU_MEM_ADVISE_SET_PREFERRED_LOCATION: return "preferred";
	case CU_MEM_ADVISE_SET_ACCESSED_BY: return "accessed_by";
	case CU_MEM_ADVISE_SET_READ_MOSTLY: return "read_mostly";
	case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION: return "unset_preferred";
	case CU_MEM_ADVISE_UNSET_ACCESSED_BY: return "unset_accessed_by";
	default: return "other";
	}
}

static int fake_inited, fake_device;
static uintptr_t fake_last;     /* the last allocation's start */

static unsigned long long fake_off(CUdeviceptr p)
{
	return (unsigned long long)((uintptr_t)p - fake_last);
}

pid_t getpid(void) __attribute__((visibility("default")));
pid_t getpid(void)
{
	pid_t (*next)(void) = (pid_t (*)(void))dlsym(RTLD_NEXT, "getpid");

	return next == getpid || next == NULL ? -1 : next();
}

CUresult fake_cuInit(unsigned int flags) EXPORT("cuInit");
CUresult fake_cuInit(unsigned int flags)
{
	CUresult rv = fake_enter("cuInit");

	(void)flags;
	if (rv != CUDA_SUCCESS)
		return rv;
	if (env_int("UM_FAKEDRV_NODEV", 0))
		return CUDA_ERROR_NO_DEVICE;
	fake_inited = 1;
	return CUDA_SUCCESS;
}

CUresult fake_cuDriverGetVersion(int *v) EXPORT("cuDriverGetVersion");
CUresult fake_cuDriverGetVersion(int *v)
{
	*v = env_int("UM_FAKEDRV_OLD", 0) ? 12000 : 13000;
	return CUDA_SUCCESS;
}

CUresult fake_cuGetErrorName(CUresult e, const char **s) EXPORT("cuGetErrorName");
CUresult fake_cuGetErrorName(CUresult e, const char **s)
{
	switch (e) {
	case CUDA_SUCCESS: *s = "CUDA_SUCCESS"; break;
	case CUDA_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
	case CUDA_ERROR_NO_DEVICE: *s = "CUDA_ERROR_NO_DEVICE"; break;
	case CUDA_ERROR_INVALID_DEVICE: *s = "CUDA_ERROR_INVALID_DEVICE"; break;
	default: *s = "CUDA_ERROR_UNKNOWN"; break;
	}
	return CUDA_SUCCESS;
}

CUresult fake_cuGetErrorString(CUresult e, const char **s) EXPORT("cuGetErrorString");
CUresult fake_cuGetErrorString(CUresult e, const char **s)
{
	return fake_cuGetErrorName(e, s);
}

CUresult fake_cuDeviceGetCount(int *n) EXPORT("cuDeviceGetCount");
CUresult fake_cuDeviceGetCount(int *n)
{
	*n = env_int("UM_FAKEDRV_NGPUS", 2);
	return CUDA_SUCCESS;
}

CUresult fake_cuDeviceGet(CUdevice *d, int ordinal) EXPORT("cuDeviceGet");
CUresult fake_cuDeviceGet(CUdevice *d, int ordinal)
{
	if (ordinal < 0 || ordinal >= env_int("UM_FAKEDRV_NGPUS", 2))
		return CUDA_ERROR_INVALID_DEVICE;
	*d = ordinal;
	return CUDA_SUCCESS;
}

CUresult fake_cuDeviceGetName(char *name, int len, CUdevice d) EXPORT("cuDeviceGetName");
CUresult fake_cuDeviceGetName(char *name, int len, CUdevice d)
{
	snprintf(name, (size_t)len, "Fake GPU %d", d);
	return CUDA_SUCCESS;
}

CUresult fake_cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
	EXPORT("cuDeviceGetAttribute");
CUresult fake_cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
	(void)d;
	switch (a) {
	case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: *v = env_int("UM_FAKEDRV_NUMA", -1); break;
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: *v = 1; break;
	case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 50 << 20; break;
	case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE: *v = 30 << 20; break;
	default: return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

CUresult fake_cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) EXPORT("cuDevicePrimaryCtxRetain");
CUresult fake_cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
	CUresult rv = fake_enter("cuDevicePrimaryCtxRetain");

	if (rv != CUDA_SUCCESS)
		return rv;
	*c = (CUcontext)(uintptr_t)(0x1000 + d);
	fprintf(stderr, "fakedrv: retain %d\n", d);
	return CUDA_SUCCESS;
}

CUresult fake_cuDevicePrimaryCtxRelease(CUdevice d) EXPORT("cuDevicePrimaryCtxRelease_v2");
CUresult fake_cuDevicePrimaryCtxRelease(CUdevice d)
{
	fprintf(stderr, "fakedrv: release %d\n", d);
	return CUDA_SUCCESS;
}

CUresult fake_cuCtxSetCurrent(CUcontext c) EXPORT("cuCtxSetCurrent");
CUresult fake_cuCtxSetCurrent(CUcontext c)
{
	if (c != NULL)
		fake_device = (int)((uintptr_t)c - 0x1000);
	return CUDA_SUCCESS;
}

CUresult fake_cuCtxGetDevice(CUdevice *d) EXPORT("cuCtxGetDevice");
CUresult fake_cuCtxGetDevice(CUdevice *d)
{
	CUresult rv = fake_enter("cuCtxGetDevice");

	if (rv != CUDA_SUCCESS)
		return rv;
	*d = fake_device;
	return CUDA_SUCCESS;
}

CUresult fake_cuCtxResetPersistingL2Cache(void) EXPORT("cuCtxResetPersistingL2Cache");
CUresult fake_cuCtxResetPersistingL2Cache(void)
{
	CUresult rv = fake_enter("cuCtxResetPersistingL2Cache");

	if (rv == CUDA_SUCCESS)
		fprintf(stderr, "fakedrv: reset persisting L2 on %d\n", fake_device);
	return rv;
}

CUresult fake_cuCtxSetLimit(CUlimit l, size_t v) EXPORT("cuCtxSetLimit");
CUresult fake_cuCtxSetLimit(CUlimit l, size_t v)
{
	CUresult rv = fake_enter("cuCtxSetLimit");

	if (rv == CUDA_SUCCESS)
		fprintf(stderr, "fakedrv: set limit %d to %zu on %d\n", (int)l, v, fake_device);
	return rv;
}

CUresult fake_cuCtxGetLimit(size_t *v, CUlimit l) EXPORT("cuCtxGetLimit");
CUresult fake_cuCtxGetLimit(size_t *v, CUlimit l)
{
	(void)l;
	*v = 0;
	return CUDA_SUCCESS;
}

CUresult fake_cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned int flags)
	EXPORT("cuMemAllocManaged");
CUresult fake_cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned int flags)
{
	void *m;
	CUresult rv = fake_enter("cuMemAllocManaged");

	if (rv != CUDA_SUCCESS)
		return rv;
	if (!fake_inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	m = calloc(1, n ? n : 1);
	if (m == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*p = (CUdeviceptr)(uintptr_t)m;
	fake_last = (uintptr_t)m;
	fprintf(stderr, "fakedrv: alloc %zu flags %u\n", n, flags);
	return CUDA_SUCCESS;
}

CUresult fake_cuMemFree(CUdeviceptr p) EXPORT("cuMemFree_v2");
CUresult fake_cuMemFree(CUdeviceptr p)
{
	free((void *)(uintptr_t)p);
	return CUDA_SUCCESS;
}

CUresult fake_cuMemAdvise8(CUdeviceptr p, size_t n, CUmem_advise a, CUdevice d) EXPORT("cuMemAdvise");
CUresult fake_cuMemAdvise8(CUdeviceptr p, size_t n, CUmem_advise a, CUdevice d)
{
	CUresult rv = fake_enter("cuMemAdvise");

	if (rv == CUDA_SUCCESS)
		fprintf(stderr, "fakedrv: advise8 %s %s %zu @+%llu\n", advice_str(a),
			d == CU_DEVICE_CPU ? "cpu" : d == 0 ? "dev0" : d == 1 ? "dev1" : "dev?", n,
			fake_off(p));
	return rv;
}

CUresult fake_cuMemAdvise(CUdeviceptr p, size_t n, CUmem_advise a, CUmemLocation l)
	EXPORT("cuMemAdvise_v2");
CUresult fake_cuMemAdvise(CUdeviceptr p, size_t n, CUmem_advise a, CUmemLocation l)
{
	char b[32];
	CUresult rv = fake_enter("cuMemAdvise");

	if (rv == CUDA_SUCCESS && l.type == CU_MEM_LOCATION_TYPE_HOST_NUMA && getenv("UM_FAKEDRV_NONUMA"))
		rv = CUDA_ERROR_INVALID_VALUE;
	if (rv == CUDA_SUCCESS)
		fprintf(stderr, "fakedrv: advise %s %s %zu @+%llu\n", advice_str(a),
			loc_str(l, b, sizeof(b)), n, fake_off(p));
	return rv;
}

CUresult fake_cuMemPrefetchAsync8(CUdeviceptr p, size_t n, CUdevice d, CUstream s)
	EXPORT("cuMemPrefetchAsync");
CUresult fake_cuMemPrefetchAsync8(CUdeviceptr p, size_t n, CUdevice d, CUstream s)
{
	CUresult rv = fake_enter("cuMemPrefetchAsync");

	if (rv == CUDA_SUCCESS)
		fprintf(stderr, "fakedrv: prefetch8 %s %zu stream %p @+%llu\n",
			d == CU_DEVICE_CPU ? "cpu" : "dev", n, (void *)s, fake_off(p));
	return rv;
}

CUresult fake_cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUmemLocation l, unsigned int f, CUstream s)
	EXPORT("cuMemPrefetchAsync_v2");
CUresult fake_cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUmemLocation l, unsigned int f, CUstream s)
{
	char b[32];
	CUresult rv = fake_enter("cuMemPrefetchAsync");

	if (rv == CUDA_SUCCESS)
		fprintf(stderr, "fakedrv: prefetch %s %zu flags %u stream %p legacy @+%llu\n",
			loc_str(l, b, sizeof(b)), n, f, (void *)s, fake_off(p));
	return rv;
}

CUresult fake_cuMemPrefetchAsync_ptsz(CUdeviceptr p, size_t n, CUmemLocation l, unsigned int f,
				      CUstream s) EXPORT("cuMemPrefetchAsync_v2_ptsz");
CUresult fake_cuMemPrefetchAsync_ptsz(CUdeviceptr p, size_t n, CUmemLocation l, unsigned int f,
				      CUstream s)
{
	char b[32];

	(void)p;
	fprintf(stderr, "fakedrv: prefetch %s %zu flags %u stream %p per-thread\n",
		loc_str(l, b, sizeof(b)), n, f, (void *)s);
	return CUDA_SUCCESS;
}

CUresult fake_cuMemGetInfo(size_t *fr, size_t *total) EXPORT("cuMemGetInfo_v2");
CUresult fake_cuMemGetInfo(size_t *fr, size_t *total)
{
	const char *v = getenv("UM_FAKEDRV_FREE");
	CUresult rv = fake_enter("cuMemGetInfo");

	if (rv != CUDA_SUCCESS)
		return rv;
	*fr = v && *v ? (size_t)strtoull(v, NULL, 10) : (size_t)80 << 30;
	*total = (size_t)96 << 30;
	fprintf(stderr, "fakedrv: meminfo free %zu\n", *fr);
	return CUDA_SUCCESS;
}

CUresult fake_cuStreamSynchronize(CUstream s) EXPORT("cuStreamSynchronize");
CUresult fake_cuStreamSynchronize(CUstream s)
{
	CUresult rv = fake_enter("cuStreamSynchronize");

	if (rv == CUDA_SUCCESS)
		fprintf(stderr, "fakedrv: stream sync %p\n", (void *)s);
	return rv;
}

CUresult fake_gpa2(const char *sym, void **pfn, int ver, cuuint64_t flags,
		   CUdriverProcAddressQueryResult *st) EXPORT("cuGetProcAddress_v2");
CUresult fake_gpa1(const char *sym, void **pfn, int ver, cuuint64_t flags) EXPORT("cuGetProcAddress");

static const struct {
	const char *name;
	int minver, maxver;     /* the versions this entry answers */
	void *fn;
} fake_table[] = {
	{ "cuInit", 2000, 99999, (void *)fake_cuInit },
	{ "cuDriverGetVersion", 2020, 99999, (void *)fake_cuDriverGetVersion },
	{ "cuGetErrorName", 6000, 99999, (void *)fake_cuGetErrorName },
	{ "cuGetErrorString", 6000, 99999, (void *)fake_cuGetErrorString },
	{ "cuGetProcAddress", 11030, 11999, (void *)fake_gpa1 },
	{ "cuGetProcAddress", 12000, 99999, (void *)fake_gpa2 },
	{ "cuDeviceGetAttribute", 2000, 99999, (void *)fake_cuDeviceGetAttribute },
	{ "cuCtxGetDevice", 2000, 99999, (void *)fake_cuCtxGetDevice },
	{ "cuCtxSetCurrent", 4000, 99999, (void *)fake_cuCtxSetCurrent },
	{ "cuDevicePrimaryCtxRetain", 7000, 99999, (void *)fake_cuDevicePrimaryCtxRetain },
	{ "cuMemAllocManaged", 6000, 99999, (void *)fake_cuMemAllocManaged },
	{ "cuMemFree", 3020, 99999, (void *)fake_cuMemFree },
	{ "cuMemAdvise", 8000, 12019, (void *)fake_cuMemAdvise8 },
	{ "cuMemAdvise", 12020, 99999, (void *)fake_cuMemAdvise },
	{ "cuMemPrefetchAsync", 8000, 12019, (void *)fake_cuMemPrefetchAsync8 },
	{ "cuMemPrefetchAsync", 12020, 99999, (void *)fake_cuMemPrefetchAsync },
	{ "cuMemGetInfo", 3020, 99999, (void *)fake_cuMemGetInfo },
	{ "cuStreamSynchronize", 2000, 99999, (void *)fake_cuStreamSynchronize },
};

CUresult fake_gpa2(const char *sym, void **pfn, int ver, cuuint64_t flags,
		   CUdriverProcAddressQueryResult *st)
{
	CUdriverProcAddressQueryResult r = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;

	*pfn = NULL;
	for (size_t i = 0; i < sizeof(fake_table) / sizeof(fake_table[0]); i++) {
		if (strcmp(fake_table[i].name, sym) != 0)
			continue;
		if (env_int("UM_FAKEDRV_OLD", 0) && fake_table[i].minver > 12000) {
			r = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
			continue;
		}
		if (ver < fake_table[i].minver) {
			if (r == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)
				r = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
			continue;
		}
		if (ver > fake_table[i].maxver)
			continue;
		*pfn = fake_table[i].fn;
		/* Per-thread default stream: the _ptsz entry, as the driver does. */
		if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) &&
		    fake_table[i].fn == (void *)fake_cuMemPrefetchAsync)
			*pfn = (void *)fake_cuMemPrefetchAsync_ptsz;
		r = CU_GET_PROC_ADDRESS_SUCCESS;
		break;
	}
	if (st != NULL)
		*st = r;
	return r == CU_GET_PROC_ADDRESS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult fake_gpa1(const char *sym, void **pfn, int ver, cuuint64_t flags)
{
	return fake_gpa2(sym, pfn, ver, flags, NULL);
}

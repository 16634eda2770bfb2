/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libgpumem-um: the unified-memory advice of a gpumem policy, applied to
 * every managed allocation of an unmodified CUDA program.
 *
 * The SPANK plugin puts this library in LD_PRELOAD and the advice in
 * GPUMEM_UM_ADVICE (um_config.h).  Right after each successful
 * cuMemAllocManaged of at least min_bytes (cudaMallocManaged ends there
 * too) we call cuMemAdvise for the preferred location, the accessed-by
 * processors and read-mostly, then optionally cuMemPrefetchAsync.
 *
 * How the allocations are caught, without CUPTI (one subscriber only: it
 * would lock out Nsight, compute-sanitizer and torch.profiler):
 *  - cuMemAllocManaged is exported, for programs linked to libcuda;
 *  - cuGetProcAddress and cuGetProcAddress_v2 are exported and hand out our
 *    cuMemAllocManaged (and themselves) when asked for those names;
 *  - dlsym is interposed (um_dlsym.c) for those three names only, because
 *    the CUDA runtime finds cuGetProcAddress_v2 with dlsym on its own
 *    dlopen("libcuda.so.1") handle, which LD_PRELOAD does not reach.
 *
 * No constructor, no lock, nothing resolved before a program calls CUDA:
 * a shell or a `cat` in the job pays for one dlvsym at most.  State is
 * published with atomics only, so a fork at any moment leaves the child
 * nothing to deadlock on.  libcuda is never loaded by us, only found once
 * the program has loaded it, so the library loads where there is no driver.
 *
 * What is applied lives in um_advise.c (one advice per allocation) and
 * um_stripe.c (placement by size); this file only catches the allocations.
 *
 * Builds: libgpumem-um.so (kernels/um/um.am).  Runs inside every process of
 * a job, as the user.  Includes: this folder's headers and cuda.h only.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "um_config.h"
#include "um_preload.h"

/* cuda.h maps the name to _v2; the plain symbol is the 11.3 entry point. */
#undef cuGetProcAddress

#define UM_EXPORT __attribute__((visibility("default")))

typedef CUresult (*um_alloc_fn)(CUdeviceptr *, size_t, unsigned int);

/* ------------------------------------------------------------ logging */
void gpumem_um_log(const char *fmt, ...)
{
	char line[512];
	int saved = errno, n, off;
	va_list ap;

	n = snprintf(line, sizeof(line), "%s: ", GPUMEM_UM_PROG);
	va_start(ap, fmt);
	off = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	n = off < 0 ? n : n + off;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	/* One write, so that lines of several processes do not interleave. */
	for (off = 0; off < n;) {
		ssize_t w = write(STDERR_FILENO, line + off, (size_t)(n - off));

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (int)w;
	}
	errno = saved;
}

int gpumem_um_first(int *flag)
{
	return __atomic_exchange_n(flag, 1, __ATOMIC_ACQ_REL) == 0;
}

/* ------------------------------------------------------------ the real entry points */
#define R_GPA1 GPUMEM_UM_R_GPA1
#define R_GPA2 GPUMEM_UM_R_GPA2
#define R_ALLOC GPUMEM_UM_R_ALLOC
#define R_N GPUMEM_UM_R_N

static const char *const um_hooked_names[R_N] = {
	"cuGetProcAddress", "cuGetProcAddress_v2", "cuMemAllocManaged",
};

static CUresult um_gpa1(const char *symbol, void **pfn, int ver, cuuint64_t flags);
static CUresult um_gpa2(const char *symbol, void **pfn, int ver, cuuint64_t flags,
			CUdriverProcAddressQueryResult *status);
static CUresult um_alloc_managed(CUdeviceptr *dptr, size_t bytesize, unsigned int flags);

/*
 * The exported names are aliases of these hidden functions, so comparing
 * with "ours" and handing "ours" out never goes through the GOT, which
 * would give another interposer's function of the same name.
 */
UM_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int ver, cuuint64_t flags)
	__attribute__((alias("um_gpa1")));
UM_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int ver, cuuint64_t flags,
				       CUdriverProcAddressQueryResult *status)
	__attribute__((alias("um_gpa2")));
UM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
	__attribute__((alias("um_alloc_managed")));

static void *um_ours(int i)
{
	switch (i) {
	case R_GPA1: return (void *)um_gpa1;
	case R_GPA2: return (void *)um_gpa2;
	default: return (void *)um_alloc_managed;
	}
}

static void *um_real[R_N];
static void *um_libcuda;

int gpumem_um_hooked(const char *name)
{
	for (int i = 0; i < R_N; i++)
		if (strcmp(name, um_hooked_names[i]) == 0)
			return i;
	return -1;
}

static void um_set_real(int i, void *fn)
{
	void *none = NULL;

	/* The first answer wins; later ones name the same driver function. */
	if (fn != NULL && fn != um_ours(i))
		__atomic_compare_exchange_n(&um_real[i], &none, fn, 0, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE);
}

/* libcuda if the program has loaded it, global or not; never loads it. */
static void *um_libcuda_handle(void)
{
	void *h = __atomic_load_n(&um_libcuda, __ATOMIC_ACQUIRE);

	if (h == NULL) {
		h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
		if (h != NULL)
			__atomic_store_n(&um_libcuda, h, __ATOMIC_RELEASE);
		else
			(void)dlerror();        /* leave no error for the program */
	}
	return h;
}

/* Look 'name' up in libcuda, skipping ourselves. */
void *gpumem_um_cuda_sym(const char *name)
{
	gpumem_um_dlsym_fn real = gpumem_um_real_dlsym();
	void *h, *fn = NULL;

	if (real == NULL)
		return NULL;
	fn = real(RTLD_NEXT, name);
	if (fn == NULL && (h = um_libcuda_handle()) != NULL)
		fn = real(h, name);
	if (fn == NULL)
		(void)dlerror();
	return fn;
}

/*
 * The real entry point behind hooked name 'i': what a lookup handed us, or
 * for a program that called our export directly, libcuda's.
 */
void *gpumem_um_get_real(int i)
{
	void *fn = __atomic_load_n(&um_real[i], __ATOMIC_ACQUIRE);

	if (fn == NULL) {
		um_set_real(i, gpumem_um_cuda_sym(um_hooked_names[i]));
		fn = __atomic_load_n(&um_real[i], __ATOMIC_ACQUIRE);
	}
	return fn;
}

void *gpumem_um_dlsym_hooked(void *handle, const char *name)
{
	gpumem_um_dlsym_fn real = gpumem_um_real_dlsym();
	int i = gpumem_um_hooked(name);
	void *sym;

	if (real == NULL)
		return NULL;
	sym = real(handle, name);
	if (sym == NULL || i < 0)
		return sym;
	/*
	 * RTLD_DEFAULT (or a handle whose scope holds us) found our own
	 * export: answer what the program would see without this library,
	 * NULL included, so "is there a CUDA driver?" probes are unchanged.
	 */
	if (sym == um_ours(i)) {
		sym = real(RTLD_NEXT, name);
		if (sym == NULL)
			return NULL;
	}
	um_set_real(i, sym);
	return um_ours(i);
}

/* ------------------------------------------------------------ the advice */
static struct gpumem_um_config um_cfg;
static int um_cfg_state;        /* 0 unread, 1 being read, 2 read */
static int um_cfg_on;           /* with state 2: there is advice to apply */

static int um_config_read(struct gpumem_um_config *c, int report)
{
	const char *s = getenv(GPUMEM_UM_ENV);
	char err[160];

	gpumem_um_config_init(c);
	if (s == NULL)
		return 0;
	if (gpumem_um_config_parse(s, c, err, sizeof(err)) < 0) {
		if (report)
			gpumem_um_log("%s: %s", GPUMEM_UM_ENV, err);
		return 0;
	}
	if (!gpumem_um_config_active(c)) {
		if (report && c->verbose)
			gpumem_um_log("%s asks for no advice: managed allocations are left alone",
				      GPUMEM_UM_ENV);
		return 0;
	}
	return 1;
}

/*
 * The advice, read once per process at the first managed allocation (not
 * at load: every process of a job script inherits LD_PRELOAD, and a bad
 * value would otherwise be reported by each `cat`).  A thread that finds
 * another one reading it reads its own copy, silently: no waiting.
 */
static int um_config(struct gpumem_um_config *c)
{
	int expect = 0, on;

	if (__atomic_load_n(&um_cfg_state, __ATOMIC_ACQUIRE) == 2) {
		*c = um_cfg;
		return um_cfg_on;
	}
	if (!__atomic_compare_exchange_n(&um_cfg_state, &expect, 1, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return um_config_read(c, 0);
	on = um_config_read(c, 1);
	um_cfg = *c;
	um_cfg_on = on;
	__atomic_store_n(&um_cfg_state, 2, __ATOMIC_RELEASE);
	return on;
}

/* ------------------------------------------------------------ the entry points */
static CUresult um_alloc_managed(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	um_alloc_fn real = (um_alloc_fn)gpumem_um_get_real(R_ALLOC);
	struct gpumem_um_config c;
	CUresult rv;

	if (real == NULL)       /* libcuda is not loaded: as if it had not been called */
		return CUDA_ERROR_NOT_INITIALIZED;
	rv = real(dptr, bytesize, flags);
	if (rv == CUDA_SUCCESS && dptr != NULL && um_config(&c) && bytesize >= c.min_bytes) {
		int saved = errno;

		if (c.placement == GPUMEM_UM_PLACE_STRIPE)
			gpumem_um_stripe(*dptr, bytesize, &c);
		else
			gpumem_um_apply(*dptr, bytesize, &c);
		errno = saved;
	}
	return rv;
}

/* A lookup that found cuMemAllocManaged or cuGetProcAddress: give ours. */
static void um_gpa_fixup(const char *symbol, void **pfn, int ver)
{
	int i;

	if (symbol == NULL || pfn == NULL || *pfn == NULL || symbol[0] != 'c' || symbol[1] != 'u')
		return;
	if (strcmp(symbol, "cuMemAllocManaged") == 0)
		i = R_ALLOC;
	else if (strcmp(symbol, "cuGetProcAddress") == 0)
		i = ver >= 12000 ? R_GPA2 : R_GPA1;
	else
		return;
	um_set_real(i, *pfn);
	*pfn = um_ours(i);
}

static CUresult um_gpa2(const char *symbol, void **pfn, int ver, cuuint64_t flags,
			CUdriverProcAddressQueryResult *status)
{
	um_gpa2_fn real = (um_gpa2_fn)gpumem_um_get_real(R_GPA2);
	CUresult rv;

	if (real == NULL)
		return CUDA_ERROR_NOT_INITIALIZED;
	rv = real(symbol, pfn, ver, flags, status);
	if (rv == CUDA_SUCCESS)
		um_gpa_fixup(symbol, pfn, ver);
	return rv;
}

static CUresult um_gpa1(const char *symbol, void **pfn, int ver, cuuint64_t flags)
{
	um_gpa1_fn real = (um_gpa1_fn)gpumem_um_get_real(R_GPA1);
	CUresult rv;

	if (real == NULL)
		return CUDA_ERROR_NOT_INITIALIZED;
	rv = real(symbol, pfn, ver, flags);
	if (rv == CUDA_SUCCESS)
		um_gpa_fixup(symbol, pfn, ver);
	return rv;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A CUDA program in miniature, for the CPU-side tests of libgpumem-um
 * (tests/cli/um_preload.sh, with tests/gpu/um_fakedrv.c as libcuda.so.1).
 * It reaches cuMemAllocManaged the ways real programs do:
 *   runtime    as the CUDA runtime (12.x/13.x, static or shared) does:
 *              dlopen("libcuda.so.1"), dlsym(h, "cuGetProcAddress_v2"), then
 *              ask it for "cuGetProcAddress" and use that for everything
 *   runtime11  the same through the 11.3 cuGetProcAddress
 *   direct     a program linked to libcuda: a plain call of the symbol
 *   default    dlsym(RTLD_DEFAULT, ...) before and after libcuda is loaded
 * usage: um_client MODE [--threads N] [--fork] [--ptds] BYTES...
 * Prints "client: ..." lines; exit 0 when every allocation succeeded.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>

#undef cuGetProcAddress

typedef CUresult (*gpa1_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t, unsigned int);
typedef CUresult (*init_fn)(unsigned int);

/* A program linked to libcuda calls this; weak, so the client starts without it. */
extern CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
	__attribute__((weak));

static alloc_fn alloc;
static size_t *sizes;
static int nsizes;

static int alloc_all(const char *who)
{
	int bad = 0;

	for (int i = 0; i < nsizes; i++) {
		CUdeviceptr p = 0;
		CUresult rv = alloc(&p, sizes[i], CU_MEM_ATTACH_GLOBAL);

		printf("client: %s alloc %zu rc=%d\n", who, sizes[i], (int)rv);
		bad |= rv != CUDA_SUCCESS;
	}
	fflush(stdout);
	return bad;
}

static void *thread_main(void *arg)
{
	return (void *)(intptr_t)alloc_all((const char *)arg);
}

int main(int argc, char **argv)
{
	const char *mode;
	int nthreads = 0, do_fork = 0, bad = 0;
	cuuint64_t flags = CU_GET_PROC_ADDRESS_DEFAULT;
	void *h, *fn = NULL;
	init_fn init = NULL;

	if (argc < 2) {
		fprintf(stderr, "usage: um_client runtime|runtime11|direct|default [--threads N] "
			"[--fork] [--ptds] BYTES...\n");
		return 2;
	}
	mode = argv[1];
	sizes = calloc((size_t)argc, sizeof(*sizes));
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--fork") == 0)
			do_fork = 1;
		else if (strcmp(argv[i], "--ptds") == 0)
			flags = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
		else
			sizes[nsizes++] = strtoull(argv[i], NULL, 0);
	}

	if (strcmp(mode, "default") == 0) {
		printf("client: default before: %s\n",
		       dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2") ? "found" : "null");
		printf("client: default before cuMemAllocManaged: %s\n",
		       dlsym(RTLD_DEFAULT, "cuMemAllocManaged") ? "found" : "null");
	}
	h = dlopen("libcuda.so.1", strcmp(mode, "runtime") == 0 || strcmp(mode, "runtime11") == 0 ?
		   RTLD_NOW | RTLD_LOCAL : RTLD_NOW | RTLD_GLOBAL);
	if (h == NULL) {
		printf("client: no libcuda.so.1: %s\n", dlerror());
		return 3;
	}
	if (strcmp(mode, "runtime") == 0) {
		gpa2_fn g = (gpa2_fn)dlsym(h, "cuGetProcAddress_v2");
		CUdriverProcAddressQueryResult st;

		if (g == NULL || g("cuGetProcAddress", &fn, 12000, 0, &st) != CUDA_SUCCESS)
			return 4;
		g = (gpa2_fn)fn;
		if (g("cuInit", (void **)&init, 2000, flags, &st) != CUDA_SUCCESS ||
		    g("cuMemAllocManaged", (void **)&alloc, 6000, flags, &st) != CUDA_SUCCESS)
			return 4;
	} else if (strcmp(mode, "runtime11") == 0) {
		gpa1_fn g = (gpa1_fn)dlsym(h, "cuGetProcAddress");

		if (g == NULL || g("cuGetProcAddress", &fn, 11030, 0) != CUDA_SUCCESS)
			return 4;
		g = (gpa1_fn)fn;
		if (g("cuInit", (void **)&init, 2000, flags) != CUDA_SUCCESS ||
		    g("cuMemAllocManaged", (void **)&alloc, 6000, flags) != CUDA_SUCCESS)
			return 4;
	} else if (strcmp(mode, "direct") == 0) {
		if (cuMemAllocManaged == NULL) {
			printf("client: cuMemAllocManaged is not linked\n");
			return 5;
		}
		alloc = cuMemAllocManaged;
		init = (init_fn)dlsym(h, "cuInit");
	} else if (strcmp(mode, "default") == 0) {
		gpa2_fn g = (gpa2_fn)dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2");
		CUdriverProcAddressQueryResult st;

		printf("client: default after: %s\n", g ? "found" : "null");
		if (g == NULL || g("cuInit", (void **)&init, 2000, 0, &st) != CUDA_SUCCESS)
			return 4;
		alloc = (alloc_fn)dlsym(RTLD_DEFAULT, "cuMemAllocManaged");
	} else {
		fprintf(stderr, "um_client: unknown mode '%s'\n", mode);
		return 2;
	}
	if (init == NULL || alloc == NULL || init(0) != CUDA_SUCCESS) {
		printf("client: cuInit failed\n");
		return 6;
	}
	{
		Dl_info di;
		const char *f = dladdr((void *)alloc, &di) && di.dli_fname ? di.dli_fname : "?";

		printf("client: cuMemAllocManaged from %s\n", strrchr(f, '/') ? strrchr(f, '/') + 1 : f);
	}

	bad |= alloc_all("main");
	if (nthreads > 0) {
		pthread_t t[64];

		if (nthreads > 64)
			nthreads = 64;
		for (int i = 0; i < nthreads; i++)
			pthread_create(&t[i], NULL, thread_main, (void *)"thread");
		for (int i = 0; i < nthreads; i++) {
			void *r;

			pthread_join(t[i], &r);
			bad |= r != NULL;
		}
	}
	if (do_fork) {
		pid_t pid = fork();
		int status = 0;

		if (pid == 0)
			_exit(alloc_all("child"));
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			bad = 1;
	}
	printf("client: done %s\n", bad ? "with failures" : "ok");
	return bad;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench/cuda-startup.c: where the fixed cost of a short CUDA program goes.
 * gpumem-check has a wall-time budget of which CUDA start-up is most; this
 * times each step of that start-up on its own, through the driver API as
 * the check's first steps do, and prints one line of monotonic times that
 * bench/check-timing turns into a table (it also times exec and exit from
 * outside, which no program can time for itself).
 *
 *   cuda-startup [--devices N] [--serial] [--alloc BYTES] [--host BYTES]
 *                [--release]
 *
 * --devices N  create contexts on the first N visible GPUs (default 1), in
 *              one thread each unless --serial
 * --alloc B    then cuMemAlloc B bytes on each and free them
 * --host B     then cuMemHostAlloc B bytes (pinned) and free them
 * --release    release the primary contexts before exiting, each in its
 *              device's thread (one after another with --serial); default:
 *              leave them to the exit
 * --cycles K   after the one cuInit, K rounds of (contexts, alloc, release
 *              in each device's thread), one "cuda-startup-cycle:" line each
 *              (what a process that stays up between checks would pay per
 *              check: the warm check server); implies --release
 *
 * Output: "cuda-startup: main=T dlopen=S init=S count=S ctx=S,S.. alloc=S
 * host=S release=S exit=T" (T: CLOCK_MONOTONIC seconds, S: durations).
 * build: cc -O2 -I/usr/local/cuda/include -o cuda-startup bench/cuda-startup.c -ldl -lpthread
 */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXDEV 16

static CUresult (*p_init)(unsigned int);
static CUresult (*p_count)(int *);
static CUresult (*p_get)(CUdevice *, int);
static CUresult (*p_retain)(CUcontext *, CUdevice);
static CUresult (*p_release)(CUdevice);
static CUresult (*p_setcur)(CUcontext);
static CUresult (*p_alloc)(CUdeviceptr *, size_t);
static CUresult (*p_free)(CUdeviceptr);
static CUresult (*p_halloc)(void **, size_t, unsigned int);
static CUresult (*p_hfree)(void *);

static size_t alloc_bytes;
static int release, serial, cycles = 1;
static double t_ctx[MAXDEV], t_alloc[MAXDEV], t_rel[MAXDEV];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, int rv)
{
	fprintf(stderr, "cuda-startup: %s failed (%d)\n", what, rv);
	_exit(1);
}

static void *dev_main(void *arg)
{
	int i = (int)(long)arg, rv;
	CUdevice d;
	CUcontext c;
	CUdeviceptr p;
	double t = now();

	if ((rv = p_get(&d, i)) || (rv = p_retain(&c, d)) || (rv = p_setcur(c)))
		die("context creation", rv);
	t_ctx[i] = now() - t;
	if (alloc_bytes) {
		t = now();
		if ((rv = p_alloc(&p, alloc_bytes)) || (rv = p_free(p)))
			die("cuMemAlloc/cuMemFree", rv);
		t_alloc[i] = now() - t;
	}
	if (release && !serial) {
		t = now();
		p_release(d);
		t_rel[i] = now() - t;
	}
	return NULL;
}

#define SYM(p, name) do { *(void **)&(p) = dlsym(lib, name); if (!(p)) die("dlsym " name, 0); } while (0)

int main(int argc, char **argv)
{
	double t_main = now(), t, t_dl, t_init, t_count, t_host = 0, t_rel_total = 0, t_rel_max = 0;
	int ndev = 1, count = 0, i, rv;
	size_t host_bytes = 0;
	pthread_t tid[MAXDEV];
	void *lib;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--devices") && i + 1 < argc)
			ndev = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--alloc") && i + 1 < argc)
			alloc_bytes = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--host") && i + 1 < argc)
			host_bytes = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--serial"))
			serial = 1;
		else if (!strcmp(argv[i], "--release"))
			release = 1;
		else if (!strcmp(argv[i], "--cycles") && i + 1 < argc)
			cycles = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: cuda-startup [--devices N] [--serial] [--alloc B] [--host B] [--release] [--cycles K]\n");
			return 64;
		}
	}
	t = now();
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		die("dlopen libcuda.so.1", 0);
	t_dl = now() - t;
	SYM(p_init, "cuInit");
	SYM(p_count, "cuDeviceGetCount");
	SYM(p_get, "cuDeviceGet");
	SYM(p_retain, "cuDevicePrimaryCtxRetain");
	SYM(p_release, "cuDevicePrimaryCtxRelease_v2");
	SYM(p_setcur, "cuCtxSetCurrent");
	SYM(p_alloc, "cuMemAlloc_v2");
	SYM(p_free, "cuMemFree_v2");
	SYM(p_halloc, "cuMemHostAlloc");
	SYM(p_hfree, "cuMemFreeHost");
	t = now();
	if ((rv = p_init(0)))
		die("cuInit", rv);
	t_init = now() - t;
	t = now();
	if ((rv = p_count(&count)))
		die("cuDeviceGetCount", rv);
	t_count = now() - t;
	if (ndev > count)
		ndev = count;
	if (ndev > MAXDEV)
		ndev = MAXDEV;
	if (cycles < 1)
		cycles = 1;
	if (cycles > 1)
		release = 1;
	for (int k = 0; k < cycles; k++) {
		double tc = now(), mc = 0, ma = 0, mr = 0;

		for (i = 0; i < ndev; i++) {
			if (serial)
				dev_main((void *)(long)i);
			else if (pthread_create(&tid[i], NULL, dev_main, (void *)(long)i))
				die("pthread_create", 0);
		}
		if (!serial)
			for (i = 0; i < ndev; i++)
				pthread_join(tid[i], NULL);
		if (cycles == 1)
			break;
		for (i = 0; i < ndev; i++) {
			mc = t_ctx[i] > mc ? t_ctx[i] : mc;
			ma = t_alloc[i] > ma ? t_alloc[i] : ma;
			mr = t_rel[i] > mr ? t_rel[i] : mr;
		}
		if (serial) {
			double tr = now();

			for (i = 0; i < ndev; i++) {
				CUdevice d;

				if (!p_get(&d, i))
					p_release(d);
			}
			mr = now() - tr;
		}
		printf("cuda-startup-cycle: k=%d gpus=%d ctx=%.4f alloc=%.4f release=%.4f wall=%.4f\n",
		       k, ndev, mc, ma, mr, now() - tc);
	}
	if (host_bytes) {
		void *h;
		CUdevice d;
		CUcontext c;

		if ((rv = p_get(&d, 0)) || (rv = p_retain(&c, d)) || (rv = p_setcur(c)))
			die("context", rv);
		t = now();
		if ((rv = p_halloc(&h, host_bytes, 0)) || (rv = p_hfree(h)))
			die("cuMemHostAlloc/cuMemFreeHost", rv);
		t_host = now() - t;
	}
	if (release && !serial) {
		for (i = 0; i < ndev; i++)
			if (t_rel[i] > t_rel_max)
				t_rel_max = t_rel[i];
		t_rel_total = t_rel_max;
	} else if (release) {
		t = now();
		for (i = 0; i < ndev; i++) {
			CUdevice d;

			if (!p_get(&d, i))
				p_release(d);
		}
		t_rel_total = now() - t;
	}
	printf("cuda-startup: main=%.6f dlopen=%.4f init=%.4f count=%.4f gpus=%d ctx=", t_main,
	       t_dl, t_init, t_count, count);
	for (i = 0; i < ndev; i++)
		printf("%s%.4f", i ? "," : "", t_ctx[i]);
	printf(" alloc=");
	for (i = 0; i < ndev; i++)
		printf("%s%.4f", i ? "," : "", t_alloc[i]);
	printf(" host=%.4f release=%.4f exit=%.6f\n", t_host, t_rel_total, now());
	fflush(stdout);
	_exit(0);
}

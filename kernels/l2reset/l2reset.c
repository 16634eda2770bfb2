/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-l2reset: put the persisting L2 cache of each GPU back to normal at
 * the end of a job (forked by the job epilog, bounded by --timeout).
 *
 * First NVML (l2reset_nvml.c): where no process holds any GPU of the node,
 * the contexts that set persisting lines are gone and nothing persists:
 * one line says so, and CUDA is not started (--force resets anyway).
 * Else, for each GPU: retain its primary context (a context of our own:
 * nothing the job owns is touched), cuCtxResetPersistingL2Cache() to demote
 * every persisting line to normal, set CU_LIMIT_PERSISTING_L2_CACHE_SIZE to
 * 0, release the context.  One line per GPU with the time it took.
 *
 * libcuda is dlopen'ed, never linked: on a node without a driver this
 * starts, says so and exits 3 within milliseconds.
 *
 * Exit: 0 done (or nothing to do), 2 a failure or a usage error or the
 * timeout, 3 no GPU or no driver.
 *
 * Builds: gpumem-l2reset (kernels/l2reset/l2reset.am).  Runs as the job's
 * user, forked by the job epilog, on the job's GPUs.  Includes: system
 * headers, cuda.h (types only), l2reset.h and plugin/core's cudadl.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core_policy.h"
#include "l2reset.h"

#include <cuda.h>

#define PROG            "gpumem-l2reset"
#ifndef PACKAGE_VERSION                 /* config.h is force-included by the build */
#define PACKAGE_VERSION "?"
#endif
#define EXIT_OK         0
#define EXIT_FAIL       2
#define EXIT_NO_GPU     GPUMEM_EXIT_NO_GPU
#define MAX_DEVICES     64

typedef CUresult (*init_fn)(unsigned int);
typedef CUresult (*count_fn)(int *);
typedef CUresult (*get_fn)(CUdevice *, int);
typedef CUresult (*name_fn)(char *, int, CUdevice);
typedef CUresult (*attr_fn)(int *, CUdevice_attribute, CUdevice);
typedef CUresult (*retain_fn)(CUcontext *, CUdevice);
typedef CUresult (*release_fn)(CUdevice);
typedef CUresult (*setcur_fn)(CUcontext);
typedef CUresult (*reset_fn)(void);
typedef CUresult (*setlimit_fn)(CUlimit, size_t);
typedef CUresult (*errname_fn)(CUresult, const char **);

struct drv {
	void *h;
	init_fn init;
	count_fn count;
	get_fn get;
	name_fn name;
	attr_fn attr;
	retain_fn retain;
	release_fn release;
	setcur_fn set_current;
	reset_fn reset;
	setlimit_fn set_limit;
	errname_fn err_name;
};

static int quiet, force;
static char timeout_msg[96];

static void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void msg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", PROG);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Progress lines go to stdout (the plugin logs them); problems to stderr. */
static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
	va_list ap;

	if (quiet)
		return;
	printf("%s: ", PROG);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* A hung driver call must not hold the epilog: say so and leave. */
static void on_alarm(int sig)
{
	ssize_t w;

	(void)sig;
	w = write(STDERR_FILENO, timeout_msg, strlen(timeout_msg));
	(void)w;
	_exit(EXIT_FAIL);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *err_str(const struct drv *d, CUresult rv)
{
	static char buf[32];
	const char *s = NULL;

	if (d->err_name != NULL && d->err_name(rv, &s) == CUDA_SUCCESS && s != NULL)
		return s;
	snprintf(buf, sizeof(buf), "CUDA error %d", (int)rv);
	return buf;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--devices all|N[,N...]] [--timeout SECONDS] [--force] [--quiet]\n"
		"Reset the persisting L2 lines of each GPU and set its persisting L2\n"
		"set-aside to 0.  --devices takes CUDA ordinals as this process sees\n"
		"them (" GPUMEM_ENV_VISIBLE " applies); default all.  --timeout bounds the\n"
		"whole run (default 30 s, 0 = none).  Where NVML shows no process on any\n"
		"GPU of the node, nothing persists and CUDA is not started; --force\n"
		"resets all the same.\n"
		"Exit status: 0 done, 2 failure or timeout, 3 no GPU or no CUDA driver.\n",
		PROG);
}

/* "all" -> *n = -1; else a comma list of distinct ordinals. */
static int parse_devices(const char *s, int *devs, int *n)
{
	const char *p = s;

	*n = 0;
	if (strcmp(s, "all") == 0) {
		*n = -1;
		return 0;
	}
	while (*p) {
		char *end;
		long v;
		int dup = 0;

		if (*p < '0' || *p > '9')
			return -1;
		errno = 0;
		v = strtol(p, &end, 10);
		if (errno != 0 || v >= MAX_DEVICES || (*end != ',' && *end != '\0'))
			return -1;
		for (int i = 0; i < *n; i++)
			dup |= devs[i] == (int)v;
		if (!dup)
			devs[(*n)++] = (int)v;
		p = *end == ',' ? end + 1 : end;
		if (*end == ',' && *p == '\0')
			return -1;
	}
	return *n > 0 ? 0 : -1;
}

static int load_driver(struct drv *d)
{
	int rv = -1;
	char why[512];

	memset(d, 0, sizeof(*d));
	d->h = gpumem_cuda_open(why, sizeof(why));
	if (d->h == NULL) {
		msg("%s", why);
		goto fail;
	}
	GPUMEM_DLSYM(d->h, d->init, "cuInit");
	GPUMEM_DLSYM(d->h, d->count, "cuDeviceGetCount");
	GPUMEM_DLSYM(d->h, d->get, "cuDeviceGet");
	GPUMEM_DLSYM(d->h, d->name, "cuDeviceGetName");
	GPUMEM_DLSYM(d->h, d->attr, "cuDeviceGetAttribute");
	GPUMEM_DLSYM(d->h, d->retain, "cuDevicePrimaryCtxRetain");
	GPUMEM_DLSYM_OR(d->h, d->release, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease");
	GPUMEM_DLSYM(d->h, d->set_current, "cuCtxSetCurrent");
	GPUMEM_DLSYM(d->h, d->reset, "cuCtxResetPersistingL2Cache");
	GPUMEM_DLSYM(d->h, d->set_limit, "cuCtxSetLimit");
	GPUMEM_DLSYM(d->h, d->err_name, "cuGetErrorName");
	if (!d->init || !d->count || !d->get || !d->name || !d->attr || !d->retain ||
	    !d->release || !d->set_current || !d->set_limit) {
		msg("libcuda.so.1 lacks the entry points this needs (driver too old?)");
		goto fail;
	}
	rv = 0;
fail:
	return rv;
}

/* 0 done or nothing to do, -1 failed. */
static int reset_one(const struct drv *d, int ordinal)
{
	CUdevice dev;
	CUcontext ctx = NULL;
	CUresult r;
	char name[128] = "?";
	const char *step = "cuDeviceGet";
	int max_persist = 0, retained = 0, rv = -1;
	double t0 = now();

	r = d->get(&dev, ordinal);
	if (r != CUDA_SUCCESS)
		goto fail;
	if (d->name(name, sizeof(name), dev) != CUDA_SUCCESS)
		snprintf(name, sizeof(name), "?");
	/* No persisting L2 (before Ampere): nothing can linger. */
	step = "cuDeviceGetAttribute(MAX_PERSISTING_L2_CACHE_SIZE)";
	r = d->attr(&max_persist, CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, dev);
	if (r == CUDA_SUCCESS && max_persist == 0) {
		out("gpu %d (%s): no persisting L2 on this GPU, nothing to reset", ordinal, name);
		rv = 0;
		goto fail;
	}
	if (d->reset == NULL) {
		out("gpu %d (%s): the driver has no cuCtxResetPersistingL2Cache, nothing to reset",
		    ordinal, name);
		rv = 0;
		goto fail;
	}
	step = "cuDevicePrimaryCtxRetain";
	r = d->retain(&ctx, dev);
	if (r != CUDA_SUCCESS)
		goto fail;
	retained = 1;
	step = "cuCtxSetCurrent";
	r = d->set_current(ctx);
	if (r != CUDA_SUCCESS)
		goto fail;
	step = "cuCtxResetPersistingL2Cache";
	r = d->reset();
	if (r == CUDA_SUCCESS) {
		step = "cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0)";
		r = d->set_limit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0);
	}
	/* MIG instances and some vGPU profiles have no persisting L2 control. */
	if (r == CUDA_ERROR_NOT_SUPPORTED || r == CUDA_ERROR_UNSUPPORTED_LIMIT) {
		out("gpu %d (%s): %s: %s, nothing to reset here", ordinal, name, step,
		    err_str(d, r));
		rv = 0;
		goto fail;
	}
	if (r != CUDA_SUCCESS)
		goto fail;
	d->set_current(NULL);
	retained = 0;
	step = "cuDevicePrimaryCtxRelease";
	r = d->release(dev);
	if (r != CUDA_SUCCESS)
		goto fail;
	out("gpu %d (%s): persisting L2 lines reset, set-aside 0 bytes, %.3f s", ordinal, name,
	    now() - t0);
	rv = 0;
fail:
	if (rv < 0)
		msg("gpu %d (%s): %s failed: %s", ordinal, name, step, err_str(d, r));
	if (retained) {
		d->set_current(NULL);
		d->release(dev);
	}
	return rv;
}

/* The options: 0 go on, 1 done (help, version), -1 usage error (said). */
static int parse_args(int argc, char **argv, int *devs, int *ndevs, long *timeout)
{
	static const struct option opts[] = {
		{ "devices", required_argument, NULL, 'd' },
		{ "timeout", required_argument, NULL, 't' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "d:t:qfhV", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (parse_devices(optarg, devs, ndevs) < 0) {
				msg("--devices '%s': want 'all' or CUDA ordinals like 0,1 (below %d)",
				    optarg, MAX_DEVICES);
				return -1;
			}
			break;
		case 't':
			errno = 0;
			*timeout = strtol(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || end == optarg || *timeout < 0 ||
			    *timeout > 86400) {
				msg("--timeout '%s': want whole seconds, 0 to 86400", optarg);
				return -1;
			}
			break;
		case 'q': quiet = 1; break;
		case 'f': force = 1; break;
		case 'h': usage(stdout); return 1;
		case 'V': printf("%s %s\n", PROG, PACKAGE_VERSION); return 1;
		default: usage(stderr); return -1;
		}
	}
	if (optind < argc) {
		msg("unexpected argument '%s'", argv[optind]);
		usage(stderr);
		return -1;
	}
	return 0;
}

/* --timeout: SIGALRM ends the program with a line saying so. */
static void arm_timeout(long timeout)
{
	struct sigaction sa;

	if (timeout <= 0)
		return;
	snprintf(timeout_msg, sizeof(timeout_msg), "%s: timed out after %ld s\n", PROG, timeout);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	alarm((unsigned int)timeout);
}

/* The driver, started, and how many GPUs it sees; -1 (said): no usable GPU. */
static int start_driver(struct drv *d, int *count)
{
	CUresult r;

	if (load_driver(d) < 0)
		return -1;
	r = d->init(0);
	if (r != CUDA_SUCCESS) {
		msg("cuInit failed: %s (no usable GPU)", err_str(d, r));
		return -1;
	}
	r = d->count(count);
	if (r != CUDA_SUCCESS || *count <= 0) {
		msg("no GPU visible%s%s", r != CUDA_SUCCESS ? ": " : "",
		    r != CUDA_SUCCESS ? err_str(d, r) : "");
		return -1;
	}
	if (*count > MAX_DEVICES)
		*count = MAX_DEVICES;
	return 0;
}

/*
 * Nothing to reset, known without starting CUDA: no process on any GPU of
 * the node (NVML), so every context and its persisting L2 is gone.  Only
 * for a request CUDA could serve (some GPU visible, every --devices ordinal
 * below the node's GPU count); any other goes the CUDA way, which says what
 * is wrong with it.  --force always goes the CUDA way.
 */
static int nothing_held(const int *devs, int ndevs, char *why, size_t len)
{
	const char *vis = getenv(GPUMEM_ENV_VISIBLE);
	unsigned int ngpus = 0;

	if (force || (vis != NULL && *vis == '\0') || gpumem_l2_node_held(&ngpus, why, len))
		return 0;
	for (int i = 0; i < ndevs; i++)
		if (devs[i] < 0 || (unsigned int)devs[i] >= ngpus)
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	struct drv d;
	int devs[MAX_DEVICES], ndevs = -1, count = 0, failed = 0, rv = EXIT_FAIL;
	long timeout = 30;
	double t0 = now(), t_init;
	char why[128];

	switch (parse_args(argc, argv, devs, &ndevs, &timeout)) {
	case 1: return EXIT_OK;
	case -1: return EXIT_FAIL;
	}
	arm_timeout(timeout);
	if (nothing_held(devs, ndevs, why, sizeof(why))) {
		out("%s: nothing persists, nothing to reset, %.3f s", why, now() - t0);
		return EXIT_OK;
	}
	if (start_driver(&d, &count) < 0)
		return EXIT_NO_GPU;
	t_init = now() - t0;
	if (ndevs < 0) {
		for (int i = 0; i < count; i++)
			devs[i] = i;
		ndevs = count;
	}
	/* Check every ordinal before touching any GPU. */
	for (int i = 0; i < ndevs; i++) {
		if (devs[i] >= count) {
			msg("gpu %d: no such device (%d visible)", devs[i], count);
			return rv;
		}
	}
	for (int i = 0; i < ndevs; i++)
		if (reset_one(&d, devs[i]) < 0)
			failed++;
	out("%d GPU(s), %d failed, %.3f s (driver start %.3f s)", ndevs, failed, now() - t0,
	    t_init);
	return failed ? EXIT_FAIL : EXIT_OK;
}

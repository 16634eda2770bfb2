/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one NVML reader (nvhealth.h): gpumem-health's reads, the warm check
 * server's (health_doc.c) and gpumem-check's health counters
 * (kernels/check/check_nvml.c), over one NVML per process where a process
 * needs it more than once (gpumem_health_shared): dlopened (nvmldl.h),
 * each query optional (an old driver without a symbol, a GPU that answers
 * "not supported" leaves the field at -1).  gpumem-health finds a GPU by
 * NVML's index, the check by PCI bus id (a MIG instance's GPU) or UUID.  No CUDA, no context: NVML's
 * counters only, so it takes milliseconds where the driver is loaded
 * (persistence mode).  The evidence string and the alarms made of it,
 * what a reuse of an earlier check rests on, are health_doc.c's.
 *
 * XIDs: NVML gives them only as events (nvmlDeviceRegisterEvents with
 * nvmlEventTypeXidCriticalError, then nvmlEventSetWait) to a process that
 * registered before they happened; it keeps no count.  A program started
 * per job cannot see past ones, so none are read here: the memory XIDs (48
 * double-bit ECC, 63/64 row remapping or page retirement, 94/95 contained
 * and uncontained ECC) move the ECC, remapping and retirement counters this
 * compares, and a GPU that fell off the bus (79) fails NVML's queries
 * (no evidence: the check is measured).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nvhealth.h"
#include "core_base.h"

#define NVLINK_MAX 18           /* NVML_NVLINK_MAX_LINKS */

/* nvmlMemory_v2_t (nvml.h), declared here. */
struct mem_v2 {
	unsigned int version;
	unsigned long long total, reserved, free, used;
};
struct mem_v1 {
	unsigned long long total, free, used;
};

struct gpumem_health_nvml {
	void *lib;
	gpumem_nvmlReturn_t (*shutdown)(void);
	gpumem_nvmlReturn_t (*count)(unsigned int *);
	gpumem_nvmlReturn_t (*by_index)(unsigned int, gpumem_nvmlDevice_t *);
	gpumem_nvmlReturn_t (*by_pci)(const char *, gpumem_nvmlDevice_t *);
	gpumem_nvmlReturn_t (*by_uuid)(const char *, gpumem_nvmlDevice_t *);
	gpumem_nvmlReturn_t (*uuid)(gpumem_nvmlDevice_t, char *, unsigned int);
	gpumem_nvmlReturn_t (*ecc_mode)(gpumem_nvmlDevice_t, int *, int *);
	gpumem_nvmlReturn_t (*ecc_total)(gpumem_nvmlDevice_t, int, int, unsigned long long *);
	gpumem_nvmlReturn_t (*remapped)(gpumem_nvmlDevice_t, unsigned int *, unsigned int *,
					unsigned int *, unsigned int *);
	gpumem_nvmlReturn_t (*retired)(gpumem_nvmlDevice_t, int, unsigned int *,
				       unsigned long long *);
	gpumem_nvmlReturn_t (*retired_pending)(gpumem_nvmlDevice_t, int *);
	gpumem_nvmlReturn_t (*clocks)(gpumem_nvmlDevice_t, unsigned long long *);
	gpumem_nvmlReturn_t (*link[4])(gpumem_nvmlDevice_t, unsigned int *);
	gpumem_nvmlReturn_t (*nvlink)(gpumem_nvmlDevice_t, unsigned int, int *);
	gpumem_nvmlReturn_t (*mem2)(gpumem_nvmlDevice_t, struct mem_v2 *);
	gpumem_nvmlReturn_t (*mem1)(gpumem_nvmlDevice_t, struct mem_v1 *);
	gpumem_nvmlReturn_t (*procs)(gpumem_nvmlDevice_t, unsigned int *, void *); /* gpumem_nvml_proc[] */
	gpumem_nvmlReturn_t (*mig_mode)(gpumem_nvmlDevice_t, unsigned int *, unsigned int *);
	gpumem_nvmlReturn_t (*arch)(gpumem_nvmlDevice_t, unsigned int *);
	gpumem_nvmlReturn_t (*bus_width)(gpumem_nvmlDevice_t, unsigned int *);
	gpumem_nvmlReturn_t (*max_clock)(gpumem_nvmlDevice_t, int, unsigned int *);
	const char *(*errstr)(gpumem_nvmlReturn_t);
	unsigned int self;              /* a pid node_held leaves out (0: none) */
	char driver[96];
};

/* nvmlClockType_t */
#define NVML_CLOCK_MEM 2

static int ok(gpumem_nvmlReturn_t r)
{
	return r == GPUMEM_NVML_SUCCESS;
}

static void load(struct gpumem_health_nvml *n)
{
	GPUMEM_DLSYM(n->lib, n->shutdown, "nvmlShutdown");
	GPUMEM_DLSYM(n->lib, n->errstr, "nvmlErrorString");
	GPUMEM_DLSYM_OR(n->lib, n->count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
	GPUMEM_DLSYM_OR(n->lib, n->by_index, "nvmlDeviceGetHandleByIndex_v2",
			"nvmlDeviceGetHandleByIndex");
	GPUMEM_DLSYM_OR(n->lib, n->by_pci, "nvmlDeviceGetHandleByPciBusId_v2",
			"nvmlDeviceGetHandleByPciBusId");
	GPUMEM_DLSYM(n->lib, n->by_uuid, "nvmlDeviceGetHandleByUUID");
	GPUMEM_DLSYM(n->lib, n->uuid, "nvmlDeviceGetUUID");
	GPUMEM_DLSYM(n->lib, n->mig_mode, "nvmlDeviceGetMigMode");
	GPUMEM_DLSYM(n->lib, n->arch, "nvmlDeviceGetArchitecture");
	GPUMEM_DLSYM(n->lib, n->bus_width, "nvmlDeviceGetMemoryBusWidth");
	GPUMEM_DLSYM(n->lib, n->max_clock, "nvmlDeviceGetMaxClockInfo");
	GPUMEM_DLSYM(n->lib, n->ecc_mode, "nvmlDeviceGetEccMode");
	GPUMEM_DLSYM(n->lib, n->ecc_total, "nvmlDeviceGetTotalEccErrors");
	GPUMEM_DLSYM(n->lib, n->remapped, "nvmlDeviceGetRemappedRows");
	GPUMEM_DLSYM(n->lib, n->retired, "nvmlDeviceGetRetiredPages");
	GPUMEM_DLSYM(n->lib, n->retired_pending, "nvmlDeviceGetRetiredPagesPendingStatus");
	/* Renamed in R535; the old name stays exported. */
	GPUMEM_DLSYM_OR(n->lib, n->clocks, "nvmlDeviceGetCurrentClocksEventReasons",
			"nvmlDeviceGetCurrentClocksThrottleReasons");
	GPUMEM_DLSYM(n->lib, n->link[0], "nvmlDeviceGetCurrPcieLinkGeneration");
	GPUMEM_DLSYM(n->lib, n->link[1], "nvmlDeviceGetCurrPcieLinkWidth");
	GPUMEM_DLSYM(n->lib, n->link[2], "nvmlDeviceGetMaxPcieLinkGeneration");
	GPUMEM_DLSYM(n->lib, n->link[3], "nvmlDeviceGetMaxPcieLinkWidth");
	GPUMEM_DLSYM(n->lib, n->nvlink, "nvmlDeviceGetNvLinkState");
	GPUMEM_DLSYM(n->lib, n->mem2, "nvmlDeviceGetMemoryInfo_v2");
	GPUMEM_DLSYM(n->lib, n->mem1, "nvmlDeviceGetMemoryInfo");
	GPUMEM_DLSYM_OR(n->lib, n->procs, "nvmlDeviceGetComputeRunningProcesses_v3",
			"nvmlDeviceGetComputeRunningProcesses_v2");
}

struct gpumem_health_nvml *gpumem_health_open(char *driver, size_t dlen, char *note,
					      size_t nlen, int *missing)
{
	struct gpumem_health_nvml *n = calloc(1, sizeof(*n));
	gpumem_nvmlReturn_t (*init)(void) = NULL, (*version)(char *, unsigned int) = NULL, r;

	*missing = 0;
	driver[0] = '\0';
	if (n == NULL) {
		snprintf(note, nlen, "out of memory");
		return NULL;
	}
	n->lib = gpumem_nvml_open();
	if (n->lib == NULL) {
		*missing = 1;
		snprintf(note, nlen, "skipped: NVML not found (libnvidia-ml.so.1)");
		goto fail;
	}
	GPUMEM_DLSYM_OR(n->lib, init, "nvmlInit_v2", "nvmlInit");
	GPUMEM_DLSYM(n->lib, version, "nvmlSystemGetDriverVersion");
	load(n);
	if (!init || !n->shutdown || ((!n->count || !n->by_index) && !n->by_pci && !n->by_uuid)) {
		snprintf(note, nlen, "NVML error: libnvidia-ml.so.1 lacks nvmlInit or the device list");
		goto fail;
	}
	r = init();
	if (!ok(r)) {
		snprintf(note, nlen, "NVML error: nvmlInit: %s",
			 n->errstr && n->errstr(r) ? n->errstr(r) : "unknown error");
		goto fail;
	}
	if (version && !ok(version(n->driver, (unsigned int)sizeof(n->driver))))
		n->driver[0] = '\0';
	snprintf(driver, dlen, "%s", n->driver);
	snprintf(note, nlen, "ok");
	return n;
fail:
	if (n->lib)
		dlclose(n->lib);
	free(n);
	return NULL;
}

/* Does a process other than SELF hold DEV (1; or NVML cannot say), or none (0)? */
static int held_by_other(gpumem_nvmlReturn_t (*procs)(gpumem_nvmlDevice_t,
									 unsigned int *, void *),
					    gpumem_nvmlDevice_t dev, unsigned int self)
{
	struct gpumem_nvml_proc p[GPUMEM_NVML_PROCS_MAX];
	unsigned int np = GPUMEM_NVML_PROCS_MAX;

	if (procs(dev, &np, p) != GPUMEM_NVML_SUCCESS || np > GPUMEM_NVML_PROCS_MAX)
		return 1;
	for (unsigned int i = 0; i < np; i++)
		if (p[i].pid != self)
			return 1;
	return 0;
}

/*
 * Does a compute process hold any of NVML's COUNT GPUs (gpumem-l2reset's
 * question, also asked by gpumem-health for the epilog)?  1 held, or NVML
 * cannot say (*gpu: the first such index); 0 none.  PROCS is
 * nvmlDeviceGetComputeRunningProcesses: asked with no room, success means
 * no process, "insufficient size" some.  SELF (a pid; 0 none) does not
 * count: the warm check server asks about every process but its own.
 */
static int any_held(gpumem_nvmlReturn_t (*handle)(unsigned int,
								     gpumem_nvmlDevice_t *),
				       gpumem_nvmlReturn_t (*procs)(gpumem_nvmlDevice_t,
								    unsigned int *, void *),
				       unsigned int count, unsigned int self, unsigned int *gpu)
{
	for (unsigned int i = 0; i < count; i++) {
		gpumem_nvmlDevice_t dev = NULL;
		unsigned int np = 0;
		gpumem_nvmlReturn_t r;

		if (handle(i, &dev) != GPUMEM_NVML_SUCCESS)
			goto held;
		r = procs(dev, &np, NULL);
		if (r == GPUMEM_NVML_SUCCESS && np == 0)
			continue;
		if (self && r == GPUMEM_NVML_ERROR_INSUFFICIENT_SIZE &&
		    !held_by_other(procs, dev, self))
			continue;
held:
		*gpu = i;
		return 1;
	}
	return 0;
}

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gpumem_health_nvml *shared;

struct gpumem_health_nvml *gpumem_health_shared(char *driver, size_t dlen, char *note,
						size_t nlen, int *missing)
{
	struct gpumem_health_nvml *n;

	pthread_mutex_lock(&shared_lock);
	if (shared == NULL) {
		shared = gpumem_health_open(driver, dlen, note, nlen, missing);
	} else {
		*missing = 0;
		snprintf(driver, dlen, "%s", shared->driver);
		snprintf(note, nlen, "ok");
	}
	n = shared;
	pthread_mutex_unlock(&shared_lock);
	return n;
}

void gpumem_health_ignore_pid(struct gpumem_health_nvml *n, unsigned int pid)
{
	if (n)
		n->self = pid;
}

void gpumem_health_close(struct gpumem_health_nvml *n)
{
	if (n == NULL)
		return;
	n->shutdown();
	dlclose(n->lib);
	free(n);
}

/*
 * NVML device I's node index: I, as gpumem-sample numbers them (NVML's
 * order is the PCI bus order Slurm's gres numbering follows).
 */
static unsigned int node_index(struct gpumem_health_nvml *n, unsigned int i,
			       gpumem_nvmlDevice_t dev)
{
	(void)n;
	(void)dev;
	return i;
}

unsigned int gpumem_health_count(struct gpumem_health_nvml *n)
{
	unsigned int count = 0;

	if (!n->count || !ok(n->count(&count)))
		return 0;
	return count;
}

int gpumem_health_list(struct gpumem_health_nvml *n, char idx[][16], int max)
{
	unsigned int count = 0;
	int k = 0;
	gpumem_nvmlDevice_t dev;

	if (!n->count || !n->by_index || !ok(n->count(&count)))
		return 0;
	for (unsigned int i = 0; i < count && k < max; i++)
		if (ok(n->by_index(i, &dev)))
			snprintf(idx[k++], 16, "%u", node_index(n, i, dev));
	return k;
}

/*
 * Does any process hold any GPU of the node (gpumem-l2reset's question,
 * l2reset_nvml.c: where none does, no context is left to have persisting
 * L2 lines, and the epilog need not start one to reset them)?  1 held, or
 * NVML cannot say (any doubt); 0 none; WHY says which.
 */
int gpumem_health_node_held(struct gpumem_health_nvml *n, char *why, size_t len)
{
	unsigned int count = 0, g = 0;

	if (!n->procs || !n->count || !n->by_index || !ok(n->count(&count)) || count == 0) {
		snprintf(why, len, "NVML cannot say which processes hold the GPUs");
		return 1;
	}
	if (any_held(n->by_index, n->procs, count, n->self, &g)) {
		snprintf(why, len, "a process holds GPU %u (NVML index), or NVML cannot say", g);
		return 1;
	}
	snprintf(why, len, "no process holds any of the node's %u GPU(s) (NVML)", count);
	return 0;
}

/* The NVML handle of the GPU whose node index is GPU. */
static int find(struct gpumem_health_nvml *n, const char *gpu, gpumem_nvmlDevice_t *dev)
{
	unsigned int count = 0;
	char *end;
	unsigned long want = strtoul(gpu, &end, 10);

	if (!gpu[0] || *end || !n->count || !n->by_index || !ok(n->count(&count)))
		return -1;
	for (unsigned int i = 0; i < count; i++)
		if (ok(n->by_index(i, dev)) && node_index(n, i, *dev) == want)
			return 0;
	return -1;
}

static void read_ecc(struct gpumem_health_nvml *n, gpumem_nvmlDevice_t dev,
		     struct gpumem_health_dev *d, int unsaid_off)
{
	unsigned long long v;
	int cur, pend;

	if (n->ecc_mode && ok(n->ecc_mode(dev, &cur, &pend))) {
		d->ecc_enabled = cur == 1;
		d->ecc_pending = pend == 1;
	} else if (n->ecc_mode && unsaid_off) {
		d->ecc_enabled = 0;
	}
	for (int c = 0; c < 2 && n->ecc_total && d->ecc_enabled == 1; c++)
		for (int t = 0; t < 2; t++)
			if (ok(n->ecc_total(dev, t, c, &v)))
				d->ecc[c][t] = (long long)v;
}

/* Row remapping (Ampere on) and page retirement (before it). */
static void read_rows(struct gpumem_health_nvml *n, gpumem_nvmlDevice_t dev,
		      struct gpumem_health_dev *d)
{
	unsigned int a, b, c, e;
	gpumem_nvmlReturn_t r;
	int p;

	if (n->remapped && ok(n->remapped(dev, &a, &b, &c, &e))) {
		d->remap_c = a;
		d->remap_u = b;
		d->remap_pending = c != 0;
		d->remap_failure = e != 0;
	}
	for (int cause = 0; cause < 2 && n->retired; cause++) {
		a = 0;
		r = n->retired(dev, cause, &a, NULL);
		if (ok(r) || r == GPUMEM_NVML_ERROR_INSUFFICIENT_SIZE)
			*(cause ? &d->retired_dbe : &d->retired_sbe) = a;
	}
	if (n->retired_pending && ok(n->retired_pending(dev, &p)))
		d->retired_pending = p == 1;
}

static void read_pcie(struct gpumem_health_nvml *n, gpumem_nvmlDevice_t dev,
		      struct gpumem_health_dev *d)
{
	int *out[4] = { &d->gen, &d->width, &d->max_gen, &d->max_width };
	unsigned int v;

	for (int i = 0; i < 4; i++)
		if (n->link[i] && ok(n->link[i](dev, &v)))
			*out[i] = (int)v;
}

static void read_nvlink(struct gpumem_health_nvml *n, gpumem_nvmlDevice_t dev,
			struct gpumem_health_dev *d)
{
	int on;

	for (unsigned int l = 0; n->nvlink && l < NVLINK_MAX; l++) {
		if (!ok(n->nvlink(dev, l, &on)))
			break;
		d->nvl_links = (d->nvl_links < 0 ? 0 : d->nvl_links) + 1;
		d->nvl_up = (d->nvl_up < 0 ? 0 : d->nvl_up) + (on == 1);
	}
}

static void read_clocks(struct gpumem_health_nvml *n, gpumem_nvmlDevice_t dev,
			struct gpumem_health_dev *d)
{
	unsigned long long m;

	if (n->clocks && ok(n->clocks(dev, &m)))
		d->clocks = (long long)(m & 0x7fffffffffffffffULL);
}

/* The GPU's UUID (a MIG instance's GPU's own), and its MIG mode ("not supported": off). */
static void read_mig(struct gpumem_health_nvml *n, gpumem_nvmlDevice_t dev,
		     struct gpumem_health_dev *d)
{
	unsigned int a, b;
	gpumem_nvmlReturn_t r;

	if (n->uuid && !ok(n->uuid(dev, d->uuid, sizeof(d->uuid))))
		d->uuid[0] = '\0';
	if (n->mig_mode) {
		r = n->mig_mode(dev, &a, &b);
		if (ok(r))
			d->mig_mode = a == 1;
		else if (r == GPUMEM_NVML_ERROR_NOT_SUPPORTED)
			d->mig_mode = 0;
	}
}

/* What the GPU's peak is computed from (peak.h); the PCIe maximum is read_pcie's. */
static void read_peak(struct gpumem_health_nvml *n, gpumem_nvmlDevice_t dev,
		      struct gpumem_health_dev *d)
{
	unsigned int a;

	if (n->arch && ok(n->arch(dev, &a)) && a < 1000)
		d->arch = (int)a;
	if (n->bus_width && ok(n->bus_width(dev, &a)) && a > 0 && a < 100000)
		d->bus_bits = (int)a;
	if (n->max_clock && ok(n->max_clock(dev, NVML_CLOCK_MEM, &a)) && a > 0 && a < 100000)
		d->mem_mhz = (int)a;
}

static void read_memory(struct gpumem_health_nvml *n, gpumem_nvmlDevice_t dev,
			struct gpumem_health_dev *d)
{
	struct mem_v2 m2 = { (unsigned int)sizeof(struct mem_v2) | (2u << 24), 0, 0, 0, 0 };
	struct mem_v1 m1;
	struct gpumem_nvml_proc p[GPUMEM_NVML_PROCS_MAX];
	unsigned int np = GPUMEM_NVML_PROCS_MAX;

	/* v2 leaves the driver's reservation out of "used"; v1 counts it in. */
	if (n->mem2 && ok(n->mem2(dev, &m2)))
		d->mem_used = (long long)m2.used;
	else if (n->mem1 && ok(n->mem1(dev, &m1)))
		d->mem_used = (long long)m1.used;
	if (n->procs && ok(n->procs(dev, &np, p))) {
		d->mem_procs = 0;
		for (unsigned int i = 0; i < np && i < GPUMEM_NVML_PROCS_MAX; i++)
			d->mem_procs += (long long)p[i].used;
	}
}

static void read_parts(struct gpumem_health_nvml *n, gpumem_nvmlDevice_t dev,
		       unsigned int parts, struct gpumem_health_dev *d)
{
	if (parts & GPUMEM_HEALTH_PART_MIG)
		read_mig(n, dev, d);
	if (parts & GPUMEM_HEALTH_PART_ECC)
		read_ecc(n, dev, d, (parts & GPUMEM_HEALTH_ECC_UNSAID_OFF) != 0);
	if (parts & GPUMEM_HEALTH_PART_ROWS)
		read_rows(n, dev, d);
	if (parts & GPUMEM_HEALTH_PART_CLOCKS)
		read_clocks(n, dev, d);
	if (parts & GPUMEM_HEALTH_PART_PCIE)
		read_pcie(n, dev, d);
	if (parts & GPUMEM_HEALTH_PART_NVLINK)
		read_nvlink(n, dev, d);
	if (parts & GPUMEM_HEALTH_PART_MEMORY)
		read_memory(n, dev, d);
	if (parts & GPUMEM_HEALTH_PART_PEAK)
		read_peak(n, dev, d);
}

void gpumem_health_clear(struct gpumem_health_dev *d)
{
	d->found = 0;
	d->ecc_enabled = d->ecc_pending = d->remap_pending = d->remap_failure = -1;
	d->retired_pending = d->mig_mode = -1;
	d->arch = d->bus_bits = d->mem_mhz = -1;
	d->ecc[0][0] = d->ecc[0][1] = d->ecc[1][0] = d->ecc[1][1] = -1;
	d->remap_c = d->remap_u = d->retired_sbe = d->retired_dbe = d->clocks = -1;
	d->gen = d->width = d->max_gen = d->max_width = d->nvl_links = d->nvl_up = -1;
	d->mem_used = d->mem_procs = -1;
	d->uuid[0] = '\0';
}

void gpumem_health_read(struct gpumem_health_nvml *n, struct gpumem_health_dev *d)
{
	gpumem_nvmlDevice_t dev;

	gpumem_health_clear(d);
	if (find(n, d->gpu, &dev) < 0) {
		snprintf(d->note, sizeof(d->note), "NVML lists no GPU with index %s", d->gpu);
		return;
	}
	d->found = 1;
	if (n->uuid && !ok(n->uuid(dev, d->uuid, sizeof(d->uuid))))
		d->uuid[0] = '\0';
	read_parts(n, dev, GPUMEM_HEALTH_PART_ALL, d);
}

int gpumem_health_read_gpu(struct gpumem_health_nvml *n, const char *pci, const char *uuid,
			   unsigned int parts, struct gpumem_health_dev *d, const char **err)
{
	gpumem_nvmlReturn_t r = GPUMEM_NVML_ERROR_NOT_FOUND;
	gpumem_nvmlDevice_t dev = NULL;

	if (n->by_pci && pci && pci[0])
		r = n->by_pci(pci, &dev);
	if (!ok(r) && n->by_uuid && uuid && uuid[0])
		r = n->by_uuid(uuid, &dev);
	if (!ok(r)) {
		*err = n->errstr ? n->errstr(r) : NULL;
		if (*err == NULL)
			*err = "unknown NVML error";
		return -1;
	}
	d->found = 1;
	read_parts(n, dev, parts, d);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A stand-in for libnvidia-ml.so.1, for the tests of gpumem-sample
 * (tests/cli/sample.sh): built as tests/fake-nvml/.libs/libnvidia-ml.so.1,
 * which the tests put on LD_LIBRARY_PATH.  It implements what the sampler
 * calls, with NVML's documented ABI declared here on its own (not from the
 * sampler's header, so the two transcriptions check each other), and gives
 * figures in NVML's own units (GPM: percent and MiB/s; PCIe counter: KB/s;
 * memory: bytes) so the sampler's conversions are tested.  It obeys:
 *   FAKE_NVML_INIT_FAIL=1   nvmlInit_v2 says NVML_ERROR_DRIVER_NOT_LOADED
 *   FAKE_NVML_GPUS=N        devices (default 1, at most 16)
 *   FAKE_NVML_GPM=0|1       GPM supported (default 1)
 *   FAKE_NVML_MIG=0,2       these devices are in MIG mode
 *   FAKE_NVML_VALUES=dram=70,sm=40,occ=30,pcie_rx=12.5,pcie_tx=7,
 *                    nvl_rx=0,nvl_tx=0,mem=7.5    (percent, GB/s, GiB)
 *   FAKE_NVML_VALUES_<I>=...  the same for device I only (over the above)
 *   FAKE_NVML_SEQ=10,20,30  DRAM figures of successive samples, cycled
 *                           (per device; GPM and utilisation alike)
 *   FAKE_NVML_REFUSE=occ,nvl_rx  GPM refuses these metrics
 *   FAKE_NVML_HEALTH=ecc_vc=0,ecc_vu=0,ecc_ac=0,ecc_au=0,remap_c=0,remap_u=0,
 *                    remap_p=0,remap_f=0,ret_s=0,ret_d=0,ret_p=0,thr=0,
 *                    gen=5,width=16,maxgen=5,maxwidth=16,nvl=0,orphan=0
 *                    what gpumem-health reads (fake_health.c): ECC counts
 *                    (volatile, aggregate; corrected, uncorrected),
 *                    remapped rows, retired pages (counts; p, f: 0 or 1),
 *                    the clock event reasons (thr, a number), the PCIe
 *                    link, active NVLinks, GiB of "mem" held by no process
 *   FAKE_NVML_HEALTH_<I>=...  the same for device I only (over the above)
 *   FAKE_NVML_HEALTH_FILE=PATH  its first line, the same keys (over both),
 *                    read again at each device lookup: live counters for a
 *                    process that keeps NVML open (the warm check server)
 *   FAKE_NVML_PID=self  the one process holding a GPU (mem) is the caller
 *                    (default pid 4242)
 *   FAKE_NVML_HANG_FILE=PATH  while PATH exists, a device lookup by index
 *                    does not return: a driver stuck in the health path
 * UUIDs are GPU-fa4e0000-0000-4000-8000-00000000000I.  Not part of gpumem.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "fake_nvml.h"

typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;

/* GPM (nvml.h: nvmlGpmMetricId_t, nvmlGpmMetric_t, nvmlGpmMetricsGet_t, nvmlGpmSupport_t). */
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;
typedef struct {
	unsigned int metricId;
	nvmlReturn_t nvmlReturn;
	double value;
	struct { char *shortName, *longName, *unit; } metricInfo;
} nvmlGpmMetric_t;
#define NVML_GPM_METRIC_MAX 98          /* the smallest of the headers: R525 */
typedef struct {
	unsigned int version, numMetrics;
	nvmlGpmSample_t sample1, sample2;
	nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;
typedef struct { unsigned int version, isSupportedDevice; } nvmlGpmSupport_t;

static const char *const vname[NV] = { "dram", "sm", "occ", "pcie_rx", "pcie_tx",
				       "nvl_rx", "nvl_tx", "mem" };
#define MAX_SEQ 64

struct nvmlGpmSample_st {
	struct nvmlDevice_st *dev;
	unsigned long seq_at;
};

struct nvmlDevice_st dev[MAX_DEV];
unsigned int ndev;
static int inited, gpm_on, refuse[NV];
static double seq[MAX_SEQ];
static size_t nseq;

/* "k=v,k=v" into V, whose N keys are NAMES (FAKE_NVML_VALUES, FAKE_NVML_HEALTH). */
void fake_keys(const char *s, const char *const *names, int n, double *v)
{
	char buf[512], *save = NULL, *t, *eq;

	snprintf(buf, sizeof(buf), "%s", s ? s : "");
	for (t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		eq = strchr(t, '=');
		if (eq == NULL)
			continue;
		*eq = '\0';
		for (int i = 0; i < n; i++)
			if (strcmp(t, names[i]) == 0)
				v[i] = atof(eq + 1);
	}
}

static void values(const char *s, double *v)
{
	fake_keys(s, vname, NV, v);
}

/* Is I in the comma list S? */
static int listed(const char *s, const char *name)
{
	char buf[256], *save = NULL, *t;

	snprintf(buf, sizeof(buf), "%s", s ? s : "");
	for (t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (strcmp(t, name) == 0)
			return 1;
	return 0;
}

static void configure(void)
{
	static const double dflt[NV] = { 70, 40, 30, 12.5, 7, 0, 0, 7.5 };
	const char *g = getenv("FAKE_NVML_GPM"), *sq = getenv("FAKE_NVML_SEQ");
	char key[32], idx[16], *end;

	ndev = getenv("FAKE_NVML_GPUS") ? (unsigned int)atoi(getenv("FAKE_NVML_GPUS")) : 1;
	if (ndev > MAX_DEV)
		ndev = MAX_DEV;
	gpm_on = !(g && strcmp(g, "0") == 0);
	for (int i = 0; i < NV; i++)
		refuse[i] = listed(getenv("FAKE_NVML_REFUSE"), vname[i]);
	for (nseq = 0; sq && *sq && nseq < MAX_SEQ; sq = *end ? end + 1 : end) {
		seq[nseq++] = strtod(sq, &end);
		if (end == sq)
			break;
	}
	for (unsigned int i = 0; i < ndev; i++) {
		memset(&dev[i], 0, sizeof(dev[i]));
		dev[i].index = i;
		memcpy(dev[i].v, dflt, sizeof(dflt));
		values(getenv("FAKE_NVML_VALUES"), dev[i].v);
		snprintf(key, sizeof(key), "FAKE_NVML_VALUES_%u", i);
		values(getenv(key), dev[i].v);
		snprintf(idx, sizeof(idx), "%u", i);
		dev[i].mig = listed(getenv("FAKE_NVML_MIG"), idx);
		fake_health_configure(i, dev[i].h);
	}
}

/* The DRAM figure of D's next sample. */
static double dram_next(struct nvmlDevice_st *d)
{
	return nseq ? seq[d->seq_at++ % nseq] : d->v[V_DRAM];
}

unsigned int fake_holder_pid(void)
{
	const char *p = getenv("FAKE_NVML_PID");

	return p && !strcmp(p, "self") ? (unsigned int)getpid() : 4242;
}

int fake_valid(struct nvmlDevice_st *d)
{
	return inited && d >= dev && d < dev + ndev;
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
	const char *f = getenv("FAKE_NVML_INIT_FAIL");

	if (f && strcmp(f, "1") == 0)
		return NVML_ERROR_DRIVER_NOT_LOADED;
	configure();
	inited = 1;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
	if (!inited)
		return NVML_ERROR_UNINITIALIZED;
	inited = 0;
	return NVML_SUCCESS;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r)
{
	switch (r) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
	case NVML_ERROR_NOT_FOUND: return "Not Found";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	default: return "Unknown Error";
	}
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
	if (!inited)
		return NVML_ERROR_UNINITIALIZED;
	*n = ndev;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, struct nvmlDevice_st **d)
{
	const char *hang = getenv("FAKE_NVML_HANG_FILE");

	while (hang && access(hang, F_OK) == 0)
		usleep(100000);
	if (!inited)
		return NVML_ERROR_UNINITIALIZED;
	if (i >= ndev)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (getenv("FAKE_NVML_HEALTH_FILE"))
		fake_health_configure(i, dev[i].h);
	*d = &dev[i];
	return NVML_SUCCESS;
}

static void uuid_of(unsigned int i, char *buf, size_t len)
{
	snprintf(buf, len, "GPU-fa4e0000-0000-4000-8000-%012x", i);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *u, struct nvmlDevice_st **d)
{
	char buf[96];

	if (!inited)
		return NVML_ERROR_UNINITIALIZED;
	for (unsigned int i = 0; i < ndev; i++) {
		uuid_of(i, buf, sizeof(buf));
		if (strcasecmp(buf, u) == 0) {
			*d = &dev[i];
			return NVML_SUCCESS;
		}
	}
	return NVML_ERROR_NOT_FOUND;
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(struct nvmlDevice_st *d, char *buf, unsigned int len)
{
	if (!fake_valid(d))
		return NVML_ERROR_INVALID_ARGUMENT;
	if (len < 41)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	uuid_of(d->index, buf, len);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(struct nvmlDevice_st *d, char *buf, unsigned int len)
{
	if (!fake_valid(d))
		return NVML_ERROR_INVALID_ARGUMENT;
	snprintf(buf, len, "NVIDIA H100 80GB HBM3 (stand-in)");
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(struct nvmlDevice_st *d, unsigned int *cur,
					  unsigned int *pend)
{
	if (!fake_valid(d))
		return NVML_ERROR_INVALID_ARGUMENT;
	*cur = *pend = (unsigned int)d->mig;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(struct nvmlDevice_st *d, nvmlMemory_t *m)
{
	if (!fake_valid(d))
		return NVML_ERROR_INVALID_ARGUMENT;
	m->total = 80ULL << 30;
	m->used = (unsigned long long)(d->v[V_MEM] * (1ULL << 30));
	m->free = m->total - m->used;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(struct nvmlDevice_st *d, nvmlUtilization_t *u)
{
	if (!fake_valid(d))
		return NVML_ERROR_INVALID_ARGUMENT;
	u->gpu = (unsigned int)(d->v[V_SM] + 0.5);
	u->memory = (unsigned int)(dram_next(d) + 0.5);
	return NVML_SUCCESS;
}

/* NVML_PCIE_UTIL_TX_BYTES 0, RX 1; KB/s (1024 bytes). */
EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(struct nvmlDevice_st *d, int counter,
						unsigned int *kb)
{
	if (!fake_valid(d) || counter < 0 || counter > 1)
		return NVML_ERROR_INVALID_ARGUMENT;
	*kb = (unsigned int)(d->v[counter ? V_PCIE_RX : V_PCIE_TX] * 1e9 / 1024 + 0.5);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(struct nvmlDevice_st *d, nvmlGpmSupport_t *s)
{
	if (!fake_valid(d))
		return NVML_ERROR_INVALID_ARGUMENT;
	if (s->version != 1)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	s->isSupportedDevice = (unsigned int)gpm_on;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *s)
{
	if (s == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	*s = calloc(1, sizeof(**s));
	return *s ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t s)
{
	if (s == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	free(s);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlGpmSampleGet(struct nvmlDevice_st *d, nvmlGpmSample_t s)
{
	if (!fake_valid(d) || s == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!gpm_on || d->mig)
		return NVML_ERROR_NOT_SUPPORTED;
	s->dev = d;
	s->seq_at = d->seq_at++;
	return NVML_SUCCESS;
}

/* Metric ID into the stand-in's figure, in GPM's unit; -1 when unknown. */
static double gpm_value(struct nvmlDevice_st *d, unsigned int id, const nvmlGpmSample_t s2,
			int *which)
{
	static const struct { unsigned int id; int v; double scale; } map[] = {
		{ 2, V_SM, 1 }, { 3, V_OCC, 1 }, { 10, V_DRAM, 1 },
		{ 20, V_PCIE_TX, 1e9 / 1048576 }, { 21, V_PCIE_RX, 1e9 / 1048576 },
		{ 60, V_NVL_RX, 1e9 / 1048576 }, { 61, V_NVL_TX, 1e9 / 1048576 },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (map[i].id != id)
			continue;
		*which = map[i].v;
		if (map[i].v == V_DRAM && nseq)         /* the later sample's figure */
			return seq[(s2->seq_at - 1) % nseq];
		return d->v[map[i].v] * map[i].scale;
	}
	return -1;
}

EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *mg)
{
	struct nvmlDevice_st *d;
	int which = 0;
	double v;

	if (mg == NULL || !inited)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (mg->version != 1)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	if (mg->numMetrics == 0 || mg->numMetrics > NVML_GPM_METRIC_MAX || !mg->sample1 ||
	    !mg->sample2 || !mg->sample1->dev || mg->sample1->dev != mg->sample2->dev ||
	    mg->sample2->seq_at <= mg->sample1->seq_at)
		return NVML_ERROR_INVALID_ARGUMENT;
	d = mg->sample2->dev;
	for (unsigned int i = 0; i < mg->numMetrics; i++) {
		nvmlGpmMetric_t *m = &mg->metrics[i];

		memset(&m->metricInfo, 0, sizeof(m->metricInfo));
		v = gpm_value(d, m->metricId, mg->sample2, &which);
		m->nvmlReturn = v < 0 || refuse[which] ? NVML_ERROR_NOT_SUPPORTED : NVML_SUCCESS;
		m->value = v < 0 ? 0 : v;
	}
	return NVML_SUCCESS;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-sample's NVML part: load libnvidia-ml.so.1 (the node needs only
 * the driver), find the GPUs asked for, decide each metric's source once,
 * and read one round.  Sources:
 *  - GPM (Hopper and newer, driver R520+): two sample buffers per GPU, one
 *    nvmlGpmSampleGet a round, nvmlGpmMetricsGet between the last two: a
 *    true average over the interval.  A metric GPM refuses on the first
 *    round falls back below (DRAM, SM, PCIe) or has no data (occupancy,
 *    NVLink) for the rest of the run.
 *  - NVML's older counters: nvmlDeviceGetUtilizationRates (the share of
 *    time a kernel ran, and memory was read or written: coarser than GPM's
 *    SM and DRAM figures, hence their own source names) and
 *    nvmlDeviceGetPcieThroughput (a 20 ms window inside the driver).
 *  - Memory used: nvmlDeviceGetMemoryInfo, always.
 * A GPU in MIG mode is listed with no metrics: its GPU-wide counters would
 * mix the instances of other jobs.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "sample_nvml.h"

#define MIB_PER_S_TO_GBPS (1048576.0 / 1e9)
#define KIB_PER_S_TO_GBPS (1024.0 / 1e9)
#define BYTES_PER_GIB     1073741824.0

/* Name, unit, GPM metric ID and the source without GPM, per metric. */
static const struct {
	const char *name;
	enum sample_unit unit;
	unsigned int gpm_id;
	double gpm_scale;
	enum sample_how fallback;
} metric[SAMPLE_NMETRICS] = {
	[SAMPLE_DRAM] = { "dram_bw_util", SAMPLE_PERCENT, GPUMEM_GPM_DRAM_BW_UTIL, 1, SAMPLE_UTIL },
	[SAMPLE_SM] = { "sm_util", SAMPLE_PERCENT, GPUMEM_GPM_SM_UTIL, 1, SAMPLE_UTIL },
	[SAMPLE_OCC] = { "sm_occupancy", SAMPLE_PERCENT, GPUMEM_GPM_SM_OCCUPANCY, 1, SAMPLE_NONE },
	[SAMPLE_PCIE_RX] = { "pcie_rx", SAMPLE_GBPS, GPUMEM_GPM_PCIE_RX_PER_SEC,
			     MIB_PER_S_TO_GBPS, SAMPLE_PCIE },
	[SAMPLE_PCIE_TX] = { "pcie_tx", SAMPLE_GBPS, GPUMEM_GPM_PCIE_TX_PER_SEC,
			     MIB_PER_S_TO_GBPS, SAMPLE_PCIE },
	[SAMPLE_NVL_RX] = { "nvlink_rx", SAMPLE_GBPS, GPUMEM_GPM_NVLINK_TOTAL_RX_PER_SEC,
			    MIB_PER_S_TO_GBPS, SAMPLE_NONE },
	[SAMPLE_NVL_TX] = { "nvlink_tx", SAMPLE_GBPS, GPUMEM_GPM_NVLINK_TOTAL_TX_PER_SEC,
			    MIB_PER_S_TO_GBPS, SAMPLE_NONE },
	[SAMPLE_MEM] = { "mem_used", SAMPLE_GIB, 0, 0, SAMPLE_MEMINFO },
};
#define GPM_METRICS SAMPLE_MEM          /* the metrics before mem_used have a GPM ID */

#if __SIZEOF_POINTER__ == 8
/* nvml.h's layout on LP64 (x86_64, aarch64): metrics[] at 24, 40 bytes each. */
_Static_assert(sizeof(gpumem_nvmlGpmMetric_t) == 40, "nvmlGpmMetric_t is 40 bytes");
_Static_assert(offsetof(gpumem_nvmlGpmMetricsGet_t, metrics) == 24,
	       "nvmlGpmMetricsGet_t.metrics at 24");
_Static_assert(sizeof(gpumem_nvmlMemory_t) == 24, "nvmlMemory_t is 24 bytes");
#endif

const char *sample_metric_name(enum sample_metric m)
{
	return metric[m].name;
}

const char *sample_how_name(enum sample_how h)
{
	static const char *const names[] = {
		[SAMPLE_NONE] = NULL, [SAMPLE_GPM] = "gpm", [SAMPLE_UTIL] = "nvml-utilization",
		[SAMPLE_PCIE] = "nvml-pcie", [SAMPLE_MEMINFO] = "nvml-memory",
	};
	return names[h];
}

static const char *errstr(const struct sample_nvml *n, gpumem_nvmlReturn_t r)
{
	const char *s = n->error_string ? n->error_string(r) : NULL;

	return s ? s : "unknown NVML error";
}

static void take_symbols(struct sample_nvml *n)
{
	GPUMEM_DLSYM(n->lib, n->init, "nvmlInit_v2");
	GPUMEM_DLSYM(n->lib, n->shutdown, "nvmlShutdown");
	GPUMEM_DLSYM(n->lib, n->error_string, "nvmlErrorString");
	GPUMEM_DLSYM(n->lib, n->count, "nvmlDeviceGetCount_v2");
	GPUMEM_DLSYM(n->lib, n->by_index, "nvmlDeviceGetHandleByIndex_v2");
	GPUMEM_DLSYM(n->lib, n->by_uuid, "nvmlDeviceGetHandleByUUID");
	GPUMEM_DLSYM(n->lib, n->name, "nvmlDeviceGetName");
	GPUMEM_DLSYM(n->lib, n->uuid, "nvmlDeviceGetUUID");
	GPUMEM_DLSYM(n->lib, n->mig_mode, "nvmlDeviceGetMigMode");
	GPUMEM_DLSYM(n->lib, n->memory, "nvmlDeviceGetMemoryInfo");
	GPUMEM_DLSYM(n->lib, n->util, "nvmlDeviceGetUtilizationRates");
	GPUMEM_DLSYM(n->lib, n->pcie, "nvmlDeviceGetPcieThroughput");
	/* GPM: R520 and newer; without it every GPU takes the older counters. */
	GPUMEM_DLSYM(n->lib, n->gpm_support, "nvmlGpmQueryDeviceSupport");
	GPUMEM_DLSYM(n->lib, n->gpm_alloc, "nvmlGpmSampleAlloc");
	GPUMEM_DLSYM(n->lib, n->gpm_free, "nvmlGpmSampleFree");
	GPUMEM_DLSYM(n->lib, n->gpm_get, "nvmlGpmSampleGet");
	GPUMEM_DLSYM(n->lib, n->gpm_metrics, "nvmlGpmMetricsGet");
}

int sample_nvml_open(struct sample_nvml *n, char *why, size_t len)
{
	gpumem_nvmlReturn_t r;
	int rv = -1;

	memset(n, 0, sizeof(*n));
	n->lib = gpumem_nvml_open();
	if (n->lib == NULL) {
		snprintf(why, len, "no NVML (%s)", dlerror());
		goto fail;
	}
	take_symbols(n);
	if (!n->init || !n->shutdown || !n->count || !n->by_index) {
		snprintf(why, len, "libnvidia-ml.so.1 lacks nvmlInit_v2 or the device calls");
		goto fail;
	}
	r = n->init();
	if (r != GPUMEM_NVML_SUCCESS) {
		snprintf(why, len, "nvmlInit failed: %s", errstr(n, r));
		goto fail;
	}
	n->inited = 1;
	rv = 0;
fail:
	return rv;
}

/* Free G's GPM buffers: it takes the older counters from now on. */
static void drop_gpm(const struct sample_nvml *n, struct sample_gpu *g)
{
	for (int i = 0; i < 2; i++)
		if (g->smp[i] && n->gpm_free)
			n->gpm_free(g->smp[i]);
	g->smp[0] = g->smp[1] = NULL;
	g->gpm = g->primed = 0;
	for (int m = 0; m < SAMPLE_NMETRICS; m++)
		if (g->how[m] == SAMPLE_GPM)
			g->how[m] = metric[m].fallback;
}

/* GPM for G when NVML has it and the GPU supports it, and its first sample. */
static void start_gpm(struct sample_nvml *n, struct sample_gpu *g)
{
	gpumem_nvmlGpmSupport_t sup = { .version = GPUMEM_GPM_SUPPORT_VERSION };

	if (!n->gpm_support || !n->gpm_alloc || !n->gpm_free || !n->gpm_get || !n->gpm_metrics)
		return;
	if (n->mg == NULL && (n->mg = calloc(1, sizeof(*n->mg))) == NULL)
		return;
	if (n->gpm_support(g->dev, &sup) != GPUMEM_NVML_SUCCESS || !sup.isSupportedDevice)
		return;
	g->gpm = 1;
	for (int m = 0; m < GPM_METRICS; m++)
		g->how[m] = SAMPLE_GPM;
	if (n->gpm_alloc(&g->smp[0]) != GPUMEM_NVML_SUCCESS ||
	    n->gpm_alloc(&g->smp[1]) != GPUMEM_NVML_SUCCESS ||
	    n->gpm_get(g->dev, g->smp[0]) != GPUMEM_NVML_SUCCESS) {
		drop_gpm(n, g);
		return;
	}
	g->cur = 0;
	g->primed = 1;
}

/* Name, UUID, MIG mode and sources of the GPU with handle G->dev. */
static void describe(struct sample_nvml *n, struct sample_gpu *g)
{
	unsigned int cur = 0, pend = 0;

	if (!n->name || n->name(g->dev, g->name, sizeof(g->name)) != GPUMEM_NVML_SUCCESS)
		g->name[0] = '\0';
	if (!n->uuid || n->uuid(g->dev, g->uuid, sizeof(g->uuid)) != GPUMEM_NVML_SUCCESS)
		g->uuid[0] = '\0';
	g->name[sizeof(g->name) - 1] = g->uuid[sizeof(g->uuid) - 1] = '\0';
	for (int m = 0; m < SAMPLE_NMETRICS; m++) {
		sample_stat_init(&g->stat[m], metric[m].unit);
		g->how[m] = metric[m].fallback;
	}
	if (n->mig_mode && n->mig_mode(g->dev, &cur, &pend) == GPUMEM_NVML_SUCCESS &&
	    cur == GPUMEM_NVML_DEVICE_MIG_ENABLE) {
		g->mig = 1;
		for (int m = 0; m < SAMPLE_NMETRICS; m++)
			g->how[m] = SAMPLE_NONE;
		return;
	}
	start_gpm(n, g);
}

/* The node's index of the GPU with UUID U (its handle in *dev), or -1 with why. */
static int index_of_uuid(struct sample_nvml *n, const char *u, unsigned int count,
			 gpumem_nvmlDevice_t *dev, char *why, size_t len)
{
	char got[GPUMEM_NVML_BUFFER_SIZE];
	gpumem_nvmlDevice_t d;

	if (!n->by_uuid || !n->uuid || n->by_uuid(u, dev) != GPUMEM_NVML_SUCCESS) {
		snprintf(why, len, "no such GPU: %s", u);
		return -1;
	}
	for (unsigned int i = 0; i < count; i++)
		if (n->by_index(i, &d) == GPUMEM_NVML_SUCCESS &&
		    n->uuid(d, got, sizeof(got)) == GPUMEM_NVML_SUCCESS &&
		    strncasecmp(got, u, sizeof(got)) == 0)
			return (int)i;
	snprintf(why, len, "no such GPU: %s (not among NVML's %u GPUs)", u, count);
	return -1;
}

/* Entry I of W (or GPU I of the node when W lists none) into G. */
static int find(struct sample_nvml *n, const struct sample_want *w, size_t i,
		unsigned int count, struct sample_gpu *g, char *why, size_t len)
{
	gpumem_nvmlReturn_t r;
	int idx = w->n ? w->item[i].index : (int)i;

	if (w->n && w->item[i].uuid[0]) {
		idx = index_of_uuid(n, w->item[i].uuid, count, &g->dev, why, len);
		if (idx < 0)
			return -1;
	} else if ((unsigned int)idx >= count) {
		snprintf(why, len, "no such GPU: index %d (NVML lists %u)", idx, count);
		return -1;
	} else if ((r = n->by_index((unsigned int)idx, &g->dev)) != GPUMEM_NVML_SUCCESS) {
		snprintf(why, len, "GPU %d: %s", idx, errstr(n, r));
		return -1;
	}
	g->index = (unsigned int)idx;
	describe(n, g);
	return 0;
}

int sample_nvml_select(struct sample_nvml *n, const struct sample_want *w,
		       struct sample_gpu **gpus, size_t *ngpus, char *why, size_t len)
{
	struct sample_gpu *g = NULL;
	unsigned int count = 0;
	gpumem_nvmlReturn_t r;
	size_t want, done = 0;
	int rv = -1;

	*gpus = NULL;
	*ngpus = 0;
	r = n->count(&count);
	if (r != GPUMEM_NVML_SUCCESS) {
		snprintf(why, len, "nvmlDeviceGetCount failed: %s", errstr(n, r));
		goto fail;
	}
	if (count == 0) {
		snprintf(why, len, "no GPU: NVML lists none");
		goto fail;
	}
	want = w->n ? w->n : (count < SAMPLE_MAX_GPUS ? count : SAMPLE_MAX_GPUS);
	g = calloc(want, sizeof(*g));
	if (g == NULL) {
		snprintf(why, len, "out of memory");
		goto fail;
	}
	for (done = 0; done < want; done++) {
		if (find(n, w, done, count, &g[done], why, len) < 0)
			goto fail;
		for (size_t j = 0; j < done; j++)
			if (g[j].index == g[done].index) {
				snprintf(why, len, "GPU %u is listed twice", g[j].index);
				done++;
				goto fail;
			}
	}
	*gpus = g;
	*ngpus = want;
	g = NULL;
	rv = 0;
fail:
	if (g) {
		for (size_t i = 0; i < done; i++)
			if (g[i].gpm)
				drop_gpm(n, &g[i]);
		free(g);
	}
	return rv;
}

/*
 * The first GPM result decides, per metric: GPM, or its fallback from now
 * on.  0, or -1 when GPM gave none of them (G is then done with GPM).
 */
static int decide(struct sample_gpu *g, const gpumem_nvmlGpmMetricsGet_t *mg)
{
	int any = 0;

	g->decided = 1;
	for (int m = 0; m < GPM_METRICS; m++) {
		if (mg->metrics[m].nvmlReturn != GPUMEM_NVML_SUCCESS)
			g->how[m] = metric[m].fallback;
		else
			any = 1;
	}
	return any ? 0 : -1;
}

/* GPM values of this round into V (NaN where none): 0, or -1 when GPM failed. */
static int read_gpm(struct sample_nvml *n, struct sample_gpu *g, double *v)
{
	gpumem_nvmlGpmMetricsGet_t *mg = n->mg;
	int next = g->cur ^ 1;

	if (n->gpm_get(g->dev, g->smp[next]) != GPUMEM_NVML_SUCCESS) {
		g->primed = 0;
		return -1;
	}
	if (!g->primed) {       /* a failed round before: this sample starts again */
		g->cur = next;
		g->primed = 1;
		return -1;
	}
	mg->version = GPUMEM_GPM_METRICS_GET_VERSION;
	mg->numMetrics = GPM_METRICS;
	mg->sample1 = g->smp[g->cur];
	mg->sample2 = g->smp[next];
	for (int m = 0; m < GPM_METRICS; m++) {
		mg->metrics[m].metricId = metric[m].gpm_id;
		mg->metrics[m].nvmlReturn = GPUMEM_NVML_ERROR_NOT_SUPPORTED;
	}
	g->cur = next;
	if (n->gpm_metrics(mg) != GPUMEM_NVML_SUCCESS)
		return -1;
	if (!g->decided && decide(g, mg) < 0)
		return -1;
	for (int m = 0; m < GPM_METRICS; m++)
		if (g->how[m] == SAMPLE_GPM && mg->metrics[m].nvmlReturn == GPUMEM_NVML_SUCCESS)
			v[m] = mg->metrics[m].value * metric[m].gpm_scale;
	return 0;
}

static int has_gpm(const struct sample_gpu *g)
{
	for (int m = 0; m < GPM_METRICS; m++)
		if (g->how[m] == SAMPLE_GPM)
			return 1;
	return 0;
}

const char *sample_gpu_source(const struct sample_gpu *g)
{
	return g->mig ? NULL : has_gpm(g) ? "gpm" : "nvml";
}

/* The older counters, for the metrics whose source they are. */
static void read_fallback(struct sample_nvml *n, struct sample_gpu *g, double *v)
{
	gpumem_nvmlUtilization_t u;
	unsigned int kb;

	if ((g->how[SAMPLE_DRAM] == SAMPLE_UTIL || g->how[SAMPLE_SM] == SAMPLE_UTIL) && n->util &&
	    n->util(g->dev, &u) == GPUMEM_NVML_SUCCESS) {
		if (g->how[SAMPLE_DRAM] == SAMPLE_UTIL)
			v[SAMPLE_DRAM] = u.memory;
		if (g->how[SAMPLE_SM] == SAMPLE_UTIL)
			v[SAMPLE_SM] = u.gpu;
	}
	if (g->how[SAMPLE_PCIE_RX] == SAMPLE_PCIE && n->pcie &&
	    n->pcie(g->dev, GPUMEM_NVML_PCIE_UTIL_RX_BYTES, &kb) == GPUMEM_NVML_SUCCESS)
		v[SAMPLE_PCIE_RX] = kb * KIB_PER_S_TO_GBPS;
	if (g->how[SAMPLE_PCIE_TX] == SAMPLE_PCIE && n->pcie &&
	    n->pcie(g->dev, GPUMEM_NVML_PCIE_UTIL_TX_BYTES, &kb) == GPUMEM_NVML_SUCCESS)
		v[SAMPLE_PCIE_TX] = kb * KIB_PER_S_TO_GBPS;
}

void sample_nvml_round(struct sample_nvml *n, struct sample_gpu *g, unsigned long long tick)
{
	double v[SAMPLE_NMETRICS];
	gpumem_nvmlMemory_t mem;

	if (g->mig)
		return;
	for (int m = 0; m < SAMPLE_NMETRICS; m++)
		v[m] = NAN;
	/*
	 * GPM that fails before its first result, or refuses every metric in
	 * it: the older counters, from this round on.  Later failures only
	 * leave this round without GPM values.
	 */
	if (g->gpm && read_gpm(n, g, v) < 0 && (!g->decided || !has_gpm(g)))
		drop_gpm(n, g);
	read_fallback(n, g, v);
	if (n->memory && n->memory(g->dev, &mem) == GPUMEM_NVML_SUCCESS)
		v[SAMPLE_MEM] = (double)mem.used / BYTES_PER_GIB;
	for (int m = 0; m < SAMPLE_NMETRICS; m++)
		sample_stat_add(&g->stat[m], tick, v[m]);
	g->rounds++;
}

void sample_nvml_close(struct sample_nvml *n, struct sample_gpu *gpus, size_t ngpus)
{
	for (size_t i = 0; i < ngpus; i++)
		if (gpus[i].gpm)
			drop_gpm(n, &gpus[i]);
	free(n->mg);
	n->mg = NULL;
	if (n->inited)
		n->shutdown();
	n->inited = 0;
}

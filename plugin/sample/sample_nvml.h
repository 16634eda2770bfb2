/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-sample's side of NVML: the GPUs it samples, where each metric
 * comes from (GPM, or NVML's older counters where GPM is not there), and
 * the NVML ABI that takes.  nvml.h is not on build machines, so the types,
 * codes and GPM metric IDs used here are declared from NVML's documented
 * ABI (nvml.h, API version 13, "GPM Enums/Structs/Functions"; the GPM part
 * is the same since R520: version 1 of nvmlGpmMetricsGet_t and
 * nvmlGpmSupport_t).  The generic ones (return codes, the device handle,
 * gpumem_nvml_open) are plugin/core/base/nvmldl.h's.
 */
#ifndef GPUMEM_SAMPLE_NVML_H
#define GPUMEM_SAMPLE_NVML_H
#include <stddef.h>
#include "core_base.h"
#include "sample_stats.h"

/* ------------------------------------------------------------ NVML ABI */
typedef struct { unsigned int gpu, memory; } gpumem_nvmlUtilization_t;  /* percent */
/* Bytes; "used" is reserved + allocated. */
typedef struct { unsigned long long total, free, used; } gpumem_nvmlMemory_t;
#define GPUMEM_NVML_PCIE_UTIL_TX_BYTES 0        /* nvmlPcieUtilCounter_t, KB/s */
#define GPUMEM_NVML_PCIE_UTIL_RX_BYTES 1
#define GPUMEM_NVML_DEVICE_MIG_ENABLE  1        /* nvmlDeviceGetMigMode's current mode */
#define GPUMEM_NVML_BUFFER_SIZE        96       /* NVML_DEVICE_UUID/NAME_V2_BUFFER_SIZE */

/* nvmlGpmMetricId_t: percent 0.0-100.0, or MiB/s for the *_PER_SEC ones. */
#define GPUMEM_GPM_SM_UTIL                2
#define GPUMEM_GPM_SM_OCCUPANCY           3
#define GPUMEM_GPM_DRAM_BW_UTIL           10
#define GPUMEM_GPM_PCIE_TX_PER_SEC        20
#define GPUMEM_GPM_PCIE_RX_PER_SEC        21
#define GPUMEM_GPM_NVLINK_TOTAL_RX_PER_SEC 60
#define GPUMEM_GPM_NVLINK_TOTAL_TX_PER_SEC 61
#define GPUMEM_GPM_METRICS_GET_VERSION    1
#define GPUMEM_GPM_SUPPORT_VERSION        1
/*
 * nvml.h sizes metrics[] with NVML_GPM_METRIC_MAX, which grows with the
 * driver (98 in R525, 333 in CUDA 13's header) while the version stays 1;
 * NVML reads numMetrics entries.  More room than any header so far costs
 * 40 KiB once and is safe against a driver that touches the whole array.
 */
#define GPUMEM_GPM_METRIC_ROOM 1024

typedef struct gpumem_nvmlGpmSample_st *gpumem_nvmlGpmSample_t;
typedef struct {
	unsigned int metricId;          /* IN */
	gpumem_nvmlReturn_t nvmlReturn; /* OUT: nonzero: value not valid */
	double value;                   /* OUT */
	struct { char *shortName, *longName, *unit; } metricInfo;      /* OUT */
} gpumem_nvmlGpmMetric_t;
typedef struct {
	unsigned int version;           /* GPUMEM_GPM_METRICS_GET_VERSION */
	unsigned int numMetrics;
	gpumem_nvmlGpmSample_t sample1, sample2;
	gpumem_nvmlGpmMetric_t metrics[GPUMEM_GPM_METRIC_ROOM];
} gpumem_nvmlGpmMetricsGet_t;
typedef struct {
	unsigned int version;           /* GPUMEM_GPM_SUPPORT_VERSION */
	unsigned int isSupportedDevice;
} gpumem_nvmlGpmSupport_t;

/* ------------------------------------------------------------ the sampler's view */
#define SAMPLE_MAX_GPUS 64

/* The metrics of one GPU, in the document's order. */
enum sample_metric {
	SAMPLE_DRAM, SAMPLE_SM, SAMPLE_OCC, SAMPLE_PCIE_RX, SAMPLE_PCIE_TX,
	SAMPLE_NVL_RX, SAMPLE_NVL_TX, SAMPLE_MEM, SAMPLE_NMETRICS
};
/* Where a metric's values come from (its "source"). */
enum sample_how { SAMPLE_NONE, SAMPLE_GPM, SAMPLE_UTIL, SAMPLE_PCIE, SAMPLE_MEMINFO };

struct sample_gpu {
	unsigned int index;                     /* NVML's (the node's) numbering */
	char uuid[GPUMEM_NVML_BUFFER_SIZE], name[GPUMEM_NVML_BUFFER_SIZE];
	gpumem_nvmlDevice_t dev;
	int mig;                                /* MIG mode: nothing sampled */
	int gpm;                                /* GPM samples are taken */
	int decided;                            /* the first GPM result set how[] */
	gpumem_nvmlGpmSample_t smp[2];
	int cur, primed;                        /* smp[cur] holds the last GPM sample */
	enum sample_how how[SAMPLE_NMETRICS];
	unsigned long long rounds;              /* sampling rounds ("samples") */
	struct sample_stat stat[SAMPLE_NMETRICS];
};

struct sample_nvml {
	void *lib;
	gpumem_nvmlReturn_t (*init)(void);
	gpumem_nvmlReturn_t (*shutdown)(void);
	const char *(*error_string)(gpumem_nvmlReturn_t);
	gpumem_nvmlReturn_t (*count)(unsigned int *);
	gpumem_nvmlReturn_t (*by_index)(unsigned int, gpumem_nvmlDevice_t *);
	gpumem_nvmlReturn_t (*by_uuid)(const char *, gpumem_nvmlDevice_t *);
	gpumem_nvmlReturn_t (*name)(gpumem_nvmlDevice_t, char *, unsigned int);
	gpumem_nvmlReturn_t (*uuid)(gpumem_nvmlDevice_t, char *, unsigned int);
	gpumem_nvmlReturn_t (*mig_mode)(gpumem_nvmlDevice_t, unsigned int *, unsigned int *);
	gpumem_nvmlReturn_t (*memory)(gpumem_nvmlDevice_t, gpumem_nvmlMemory_t *);
	gpumem_nvmlReturn_t (*util)(gpumem_nvmlDevice_t, gpumem_nvmlUtilization_t *);
	gpumem_nvmlReturn_t (*pcie)(gpumem_nvmlDevice_t, int, unsigned int *);
	gpumem_nvmlReturn_t (*gpm_support)(gpumem_nvmlDevice_t, gpumem_nvmlGpmSupport_t *);
	gpumem_nvmlReturn_t (*gpm_alloc)(gpumem_nvmlGpmSample_t *);
	gpumem_nvmlReturn_t (*gpm_free)(gpumem_nvmlGpmSample_t);
	gpumem_nvmlReturn_t (*gpm_get)(gpumem_nvmlDevice_t, gpumem_nvmlGpmSample_t);
	gpumem_nvmlReturn_t (*gpm_metrics)(gpumem_nvmlGpmMetricsGet_t *);
	gpumem_nvmlGpmMetricsGet_t *mg;         /* one request, reused */
	int inited;
};

/* What --gpus asked for: indices and UUIDs, in order; n == 0: every GPU. */
struct sample_want {
	size_t n;
	struct { int index; char uuid[GPUMEM_NVML_BUFFER_SIZE]; } item[SAMPLE_MAX_GPUS];
};

/* "dram_bw_util", ...: the document's name of metric M. */
const char *sample_metric_name(enum sample_metric m);
/* "gpm", "nvml-utilization", "nvml-pcie", "nvml-memory"; NULL for none. */
const char *sample_how_name(enum sample_how h);

/* G's source: "gpm" where any metric comes from GPM, else "nvml"; NULL in MIG mode. */
const char *sample_gpu_source(const struct sample_gpu *g);

/* Load and start NVML: 0, or -1 with the reason (a sentence) in WHY. */
int sample_nvml_open(struct sample_nvml *n, char *why, size_t len);
/*
 * The GPUs of W (all when W lists none) into *gpus (calloc'd), their MIG
 * mode and sources decided, the first GPM sample taken: 0, or -1 with why.
 */
int sample_nvml_select(struct sample_nvml *n, const struct sample_want *w,
		       struct sample_gpu **gpus, size_t *ngpus, char *why, size_t len);
/* One sampling round of G: its values for timeline tick TICK (0, 1, ...). */
void sample_nvml_round(struct sample_nvml *n, struct sample_gpu *g, unsigned long long tick);
/* Free the GPM samples and the request, shut NVML down. */
void sample_nvml_close(struct sample_nvml *n, struct sample_gpu *gpus, size_t ngpus);
#endif

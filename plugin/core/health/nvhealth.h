/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-health's model (health_nvml.c fills it from NVML, health_doc.c
 * makes the document of it): per GPU, what NVML says of its health without
 * a CUDA context, in milliseconds.  -1 (or "") where NVML did not say.
 * The document is gpumem-health/1, doc/CHECK-JSON.md ("gpumem-health/1"),
 * printed by gpumem-health (plugin/health/health.c) and answered by the
 * warm check server (kernels/check/check_serve.c) alike: both link this
 * code (core/health/libgpumemhealth, not the plugin).
 */
#ifndef GPUMEM_NVHEALTH_H
#define GPUMEM_NVHEALTH_H
#include <stddef.h>
#include <time.h>

#define GPUMEM_HEALTH_SCHEMA "gpumem-health/1"
#define GPUMEM_HEALTH_MAX_GPUS 64
/* Memory held by no process above this (bytes) forbids reuse: a context left behind. */
#define GPUMEM_HEALTH_UNOWNED_MAX (1LL << 30)
/* The clock event reasons that say the GPU is slowed by itself (nvml.h's bits). */
#define GPUMEM_HEALTH_SW_THERMAL 0x20ULL
#define GPUMEM_HEALTH_HW_SLOWDOWN 0x8ULL
#define GPUMEM_HEALTH_HW_THERMAL 0x40ULL
#define GPUMEM_HEALTH_HW_POWER_BRAKE 0x80ULL

struct gpumem_health_dev {
	char gpu[16];                   /* the node's index asked for (NVML's, as gpumem-sample's) */
	int found;                      /* NVML answered for it */
	char note[200];                 /* why not, when not found */
	char uuid[96];
	int ecc_enabled;
	long long ecc[2][2];            /* [volatile, aggregate][corrected, uncorrected] */
	long long remap_c, remap_u;
	int remap_pending, remap_failure;
	long long retired_sbe, retired_dbe;
	int retired_pending;
	long long clocks;               /* the clock event (throttle) reasons' mask */
	int gen, width, max_gen, max_width;
	int nvl_links, nvl_up;          /* -1: no NVLink */
	long long mem_used, mem_procs;  /* bytes in use; held by the GPU's processes */
};

struct gpumem_health_nvml;
/* Load and initialise NVML: a handle, or NULL with why in NOTE (*missing: no library). */
struct gpumem_health_nvml *gpumem_health_open(char *driver, size_t dlen, char *note,
					      size_t nlen, int *missing);
/* The node's GPUs by index in order, at most MAX, into IDX; how many. */
int gpumem_health_list(struct gpumem_health_nvml *n, char idx[][16], int max);
/* Fill D (d->gpu set) from NVML. */
void gpumem_health_read(struct gpumem_health_nvml *n, struct gpumem_health_dev *d);
void gpumem_health_close(struct gpumem_health_nvml *n);
/*
 * Leave process PID out of node_held (the warm check server's own pid:
 * it holds no context while it answers, but the answer must not depend on
 * that); 0: count every process.
 */
void gpumem_health_ignore_pid(struct gpumem_health_nvml *n, unsigned int pid);
/* 1 when a process holds any GPU of the node or NVML cannot say, 0 when none does; WHY says. */
int gpumem_health_node_held(struct gpumem_health_nvml *n, char *why, size_t len);
/*
 * D's evidence: the counters a reuse compares ("uuid=... ecc.vol.corr=0 ..."),
 * and its alarms: conditions that forbid reuse whatever the counters say
 * (ALARM is called once for each, with a short text).
 */
void gpumem_health_evidence(const struct gpumem_health_dev *d, char *buf, size_t len);
void gpumem_health_alarms(const struct gpumem_health_dev *d,
			  void (*alarm)(const char *text, void *arg), void *arg);
/* "0,1,3" into IDX (at most MAX); how many, or -1 when an entry is not a plain index. */
int gpumem_health_parse_list(const char *s, char idx[][16], int max);
/*
 * The gpumem-health/1 document of GPUS ("0,1,3"; NULL: every GPU) read
 * from N (NULL: NVML did not start, NOTE says why, MISSING: no library),
 * timed from T0 (CLOCK_MONOTONIC), as malloc'd text ending in a newline
 * (NULL: out of memory); *CODE: gpumem-health's exit (0, 1 a GPU not
 * answered, 3 no NVML).
 */
char *gpumem_health_document(struct gpumem_health_nvml *n, const char *driver, const char *note,
			     int missing, const char *gpus, const struct timespec *t0, int *code);
#endif

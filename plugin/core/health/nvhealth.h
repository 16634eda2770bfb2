/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one NVML reader (health_nvml.c fills the model from NVML, health_doc.c
 * makes gpumem-health's document of it): per GPU, what NVML says of its
 * health without a CUDA context, in milliseconds.  -1 (or "") where NVML
 * did not say.  The document is gpumem-health/1, doc/CHECK-JSON.md
 * ("gpumem-health/1"), printed by gpumem-health (plugin/health/health.c)
 * and answered by the warm check server (kernels/check/check_serve.c)
 * alike; gpumem-check reads its health counters through the same reader
 * and model (kernels/check/check_nvml.c), over the same NVML (one nvmlInit
 * per process, gpumem_health_shared).  Both link this code
 * (core/libgpumemhealth, not the plugin).
 */
#ifndef GPUMEM_NVHEALTH_H
#define GPUMEM_NVHEALTH_H
#include <stddef.h>
#include <time.h>

#define GPUMEM_HEALTH_SCHEMA "gpumem-health/1"
#define GPUMEM_HEALTH_MAX_GPUS 64
/* Memory held by no process above this (bytes) forbids reuse: a context left behind. */
#define GPUMEM_HEALTH_UNOWNED_MAX (1LL << 30)
/* The clock event ("throttle") reasons named (nvml.h's bits). */
#define GPUMEM_HEALTH_GPU_IDLE       0x1ULL
#define GPUMEM_HEALTH_APP_CLOCKS     0x2ULL
#define GPUMEM_HEALTH_SW_POWER_CAP   0x4ULL
#define GPUMEM_HEALTH_HW_SLOWDOWN    0x8ULL
#define GPUMEM_HEALTH_SYNC_BOOST     0x10ULL
#define GPUMEM_HEALTH_SW_THERMAL     0x20ULL
#define GPUMEM_HEALTH_HW_THERMAL     0x40ULL
#define GPUMEM_HEALTH_HW_POWER_BRAKE 0x80ULL
#define GPUMEM_HEALTH_DISPLAY_CLOCKS 0x100ULL
/*
 * Those that say the hardware or the driver slowed the GPU by itself: an
 * alarm for a reuse (gpumem_health_alarms), a warning for the check.
 */
#define GPUMEM_HEALTH_SLOWDOWN (GPUMEM_HEALTH_HW_SLOWDOWN | GPUMEM_HEALTH_SW_THERMAL | \
				GPUMEM_HEALTH_HW_THERMAL | GPUMEM_HEALTH_HW_POWER_BRAKE)

struct gpumem_health_dev {
	char gpu[16];                   /* the node's index asked for (NVML's, as gpumem-sample's) */
	int found;                      /* NVML answered for it */
	char note[200];                 /* why not, when not found */
	char uuid[96];
	int ecc_enabled, ecc_pending;   /* ECC on; a mode change waits for a reset */
	long long ecc[2][2];            /* [volatile, aggregate][corrected, uncorrected] */
	long long remap_c, remap_u;
	int remap_pending, remap_failure;
	long long retired_sbe, retired_dbe;
	int retired_pending;
	long long clocks;               /* the clock event (throttle) reasons' mask */
	int gen, width, max_gen, max_width;
	int nvl_links, nvl_up;          /* -1: no NVLink */
	long long mem_used, mem_procs;  /* bytes in use; held by the GPU's processes */
	int mig_mode;                   /* MIG mode on (the check's part) */
	int arch, bus_bits, mem_mhz;    /* the GPU's peak's inputs (peak.h; the check's part) */
};

/* What a read fills (gpumem_health_read_gpu); the rest of the model is left as it is. */
enum {
	GPUMEM_HEALTH_PART_ECC = 1 << 0,        /* mode and counters */
	GPUMEM_HEALTH_PART_ROWS = 1 << 1,       /* remapped rows, retired pages */
	GPUMEM_HEALTH_PART_CLOCKS = 1 << 2,     /* the clock event reasons */
	GPUMEM_HEALTH_PART_PCIE = 1 << 3,
	GPUMEM_HEALTH_PART_NVLINK = 1 << 4,
	GPUMEM_HEALTH_PART_MEMORY = 1 << 5,     /* in use, and held by processes */
	GPUMEM_HEALTH_PART_MIG = 1 << 6,        /* MIG mode, and the UUID */
	GPUMEM_HEALTH_PART_PEAK = 1 << 8,       /* architecture, memory bus width, max memory clock */
	/* An ECC mode NVML does not give reads as off (a GPU without ECC says "not supported"). */
	GPUMEM_HEALTH_ECC_UNSAID_OFF = 1 << 7,
	GPUMEM_HEALTH_PART_ALL = 0x3f,          /* gpumem-health's: all but MIG */
};

struct gpumem_health_nvml;
/* Load and initialise NVML: a handle, or NULL with why in NOTE (*missing: no library). */
struct gpumem_health_nvml *gpumem_health_open(char *driver, size_t dlen, char *note,
					      size_t nlen, int *missing);
/* How many GPUs NVML lists (0: none, or it cannot say). */
unsigned int gpumem_health_count(struct gpumem_health_nvml *n);
/* The node's GPUs by index in order, at most MAX, into IDX; how many. */
int gpumem_health_list(struct gpumem_health_nvml *n, char idx[][16], int max);
/* Fill D (d->gpu set) from NVML. */
void gpumem_health_read(struct gpumem_health_nvml *n, struct gpumem_health_dev *d);
void gpumem_health_close(struct gpumem_health_nvml *n);
/*
 * The process's one NVML, for every thread of it (gpumem-check's NVML
 * thread, the warm server's health requests): started at the first call
 * and kept (never closed; a start that failed is tried again at the next
 * call); DRIVER, NOTE and *MISSING as gpumem_health_open says them.
 */
struct gpumem_health_nvml *gpumem_health_shared(char *driver, size_t dlen, char *note,
						size_t nlen, int *missing);
/* D's fields all unknown (-1, ""), D->gpu and D->note kept. */
void gpumem_health_clear(struct gpumem_health_dev *d);
/*
 * Fill PARTS of D from NVML for the GPU whose PCI bus id is PCI, else
 * (none, or NVML does not find it) whose UUID is UUID: the check's
 * lookup, which finds a MIG instance's GPU.  0, or -1 with NVML's error
 * in *ERR (static text).
 */
int gpumem_health_read_gpu(struct gpumem_health_nvml *n, const char *pci, const char *uuid,
			   unsigned int parts, struct gpumem_health_dev *d, const char **err);
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
/* MASK's clock event reasons by name ("hw_slowdown,sw_thermal"; "none", "unknown" below 0). */
void gpumem_health_clock_names(long long mask, char *buf, size_t len);
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

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-check: the CUDA health and bandwidth check.
 *
 * This header holds what every part shares: the results of one GPU, the
 * verdict rules, the JSON and table writers.  Everything declared here is
 * plain C with no CUDA dependency, so that CI (which has no GPU) can unit
 * test the verdicts, the MPS scaling and the JSON (tests/unit/test_verdict.c).
 * The CUDA side lives in check_gpu.h, check_gpu_ctx.h, check_gpu.c and its
 * parts (check_measure.c, check_host.c, check_l2ab.c) and check_kernels.cu.
 */
#ifndef GPUMEM_CHECK_H
#define GPUMEM_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include "core_health.h"
#include "core_policy.h"

#define GPUMEM_CHECK_PROG      "gpumem-check"
#define GPUMEM_CHECK_SCHEMA    "gpumem-check/1"

/*
 * A figure below min_fraction of its reference warns; one below
 * (min_fraction - WARN_BAND) fails.  0.10 is wide enough to absorb the
 * run-to-run noise of a 10-repeat best-of measurement (a few percent) and
 * still narrow enough that a GPU at 3/4 of its reference never just warns
 * under the default 0.85.
 */
#define GPUMEM_CHECK_WARN_BAND       0.10
#define GPUMEM_CHECK_DEFAULT_FRACTION 0.85

#define GPUMEM_CHECK_MSG         192    /* one message, reason or note */
#define GPUMEM_CHECK_MAX_REASONS 16

/* Exit codes; documented in gpumem-check(8). */
enum gpumem_check_exit {
	GPUMEM_CHECK_EXIT_PASS = 0,
	GPUMEM_CHECK_EXIT_WARN = 1,
	GPUMEM_CHECK_EXIT_FAIL = 2,
	GPUMEM_CHECK_EXIT_SKIPPED = 3,  /* no GPU, no driver, no CUDA library */
	GPUMEM_CHECK_EXIT_UNUSABLE = 4, /* MIG mode, busy, exclusive-process */
	GPUMEM_CHECK_EXIT_USAGE = 64,
};

enum gpumem_check_verdict {
	GPUMEM_CHECK_V_NOTRUN = 0,      /* not measured (option, or earlier error) */
	GPUMEM_CHECK_V_PASS,
	GPUMEM_CHECK_V_NOREF,           /* measured, no reference: "pass (no reference)" */
	GPUMEM_CHECK_V_WARN,
	GPUMEM_CHECK_V_UNUSABLE,
	GPUMEM_CHECK_V_FAIL,
	GPUMEM_CHECK_V_SKIPPED,         /* the whole run: nothing to check */
};

enum gpumem_check_metric_id {
	GPUMEM_CHECK_READ = 0,
	GPUMEM_CHECK_WRITE,
	GPUMEM_CHECK_COPY,
	GPUMEM_CHECK_TRIAD,
	GPUMEM_CHECK_D2D,
	GPUMEM_CHECK_H2D,
	GPUMEM_CHECK_D2H,
	GPUMEM_CHECK_NMETRICS
};

/* One bandwidth figure.  GB/s are 10^9 bytes per second. */
struct gpumem_check_metric {
	int measured;
	int fatal;                      /* error came from the GPU (a fail) */
	char error[GPUMEM_CHECK_MSG];   /* why it was not measured; "" if it was */
	double best, median;            /* GB/s over the timed repeats */
	int repeats;                    /* timed repeats (the warm-up not counted) */
	uint64_t bytes;                 /* bytes moved by one repeat */
	/* Filled by gpumem_check_judge_device(). */
	double reference;               /* site figure, 0 = none */
	double scale;                   /* MPS share factor applied to it */
	double threshold;               /* pass at or above */
	double warn_floor;              /* warn at or above, fail below */
	double peak;                    /* judged against the GPU's peak: that peak, else 0 */
	char basis[64];                 /* "site reference", "0.82 of this GPU's peak", ... */
	enum gpumem_check_verdict verdict;
};

/*
 * Health; -1 in any counter or flag means "not known".  NVML's part is the
 * one NVML reader's model (plugin/core/health/nvhealth.h), filled by check_nvml.c:
 * of it the check reports ECC (volatile counts), retired pages, remapped
 * rows, PCIe, the clock event reasons and the MIG mode.
 */
struct gpumem_check_health {
	int context_ok;
	int busy;                       /* context refused: busy/exclusive/prohibited */
	char context_error[GPUMEM_CHECK_MSG];
	char unusable[GPUMEM_CHECK_MSG];/* context works but the GPU cannot be checked */
	int compute_mode;               /* cudaComputeMode value */
	int nvml;                       /* GPUMEM_CHECK_NVML_* */
	char nvml_note[GPUMEM_CHECK_MSG];
	int mig_instance;               /* CUDA device is a MIG slice, not the GPU */
	struct gpumem_health_dev nv;    /* NVML's counters; ecc_enabled first from CUDA */
	enum gpumem_check_verdict verdict;
};

enum {
	GPUMEM_CHECK_NVML_NOTRUN = 0,   /* not asked (e.g. the GPU failed earlier) */
	GPUMEM_CHECK_NVML_OK,
	GPUMEM_CHECK_NVML_MISSING,      /* libnvidia-ml.so.1 absent */
	GPUMEM_CHECK_NVML_ERROR,        /* present, but init or lookup failed */
};

struct gpumem_check_memtest {
	int run;
	int fatal;                      /* a CUDA error (fail) */
	char error[GPUMEM_CHECK_MSG];
	uint64_t bytes;
	int patterns;
	uint64_t mismatches;            /* 64-bit words that read back wrong */
	uint64_t first_offset;          /* lowest bad word, bytes from the start */
	uint64_t first_address;         /* its device virtual address */
	uint64_t bad_bits;              /* OR of (got ^ expected) */
	int planted;                    /* --plant-error flipped a word */
	double seconds;
	double gbps;                    /* pattern traffic rate, for information */
	enum gpumem_check_verdict verdict;
};

/*
 * The set-aside's own cost (--l2-setaside): triad with no persisting-L2
 * set-aside and with the job's, no window on either side.
 */
struct gpumem_check_setaside {
	int asked;                      /* --l2-setaside was given */
	int run;
	char error[GPUMEM_CHECK_MSG];   /* why it did not run */
	double percent;                 /* of L2, as set (after the GPU's cap) */
	uint64_t bytes;
	double gbps_without, gbps_with; /* triad medians of the two arms */
	double ratio;                   /* gbps_with / gbps_without; < 1: the set-aside costs */
	int repeats;
};

struct gpumem_check_l2ab {
	int run;
	char error[GPUMEM_CHECK_MSG];   /* why it did not run */
	uint64_t l2_bytes, setaside_bytes, hot_bytes, stream_bytes;
	double ms_without, ms_with;     /* medians of the two arms */
	double speedup;                 /* ms_without / ms_with; < 1: window slower */
	int repeats;
	struct gpumem_check_setaside sa;
};

/* --l2-reset: persisting L2 put back to normal in the check's own context. */
struct gpumem_check_l2reset {
	int done;                       /* reset, or nothing persists here (not supported) */
	char note[GPUMEM_CHECK_MSG];    /* "not supported: ...", or why it failed */
	double seconds;
};

struct gpumem_check_numa {
	int node;                       /* node used for the host buffer, -1 none */
	int placed;                     /* thread bound and pages verified there */
	int cuda_node;                  /* CUDA's hostNumaId, -1 unknown */
	int pinned_by_register;         /* cudaHostRegister (else cudaMallocHost) */
	char note[GPUMEM_CHECK_MSG];
};

struct gpumem_check_device {
	int ordinal;                    /* CUDA ordinal, in this process */
	int index;                      /* the caller's number (report, --devices) */
	char name[256];
	char uuid[64];                  /* "GPU-xxxxxxxx-xxxx-..." */
	char pci_bus_id[32];
	int cc_major, cc_minor, sm_count;
	uint64_t mem_total, l2_bytes, persisting_max;
	int mps_client;                 /* CUDA says the context goes through MPS */
	uint64_t array_bytes;           /* per bandwidth array actually used */
	struct gpumem_check_health health;
	struct gpumem_check_memtest memtest;
	struct gpumem_check_metric metric[GPUMEM_CHECK_NMETRICS];
	struct gpumem_check_l2ab l2ab;
	struct gpumem_check_l2reset l2reset;
	struct gpumem_check_numa numa;
	struct {
		double init, memtest, bandwidth, host, l2ab, nvml, prepare, wait, total;
	} t;                            /* seconds per phase */
	/* Filled by gpumem_check_judge_device(). */
	struct gpumem_peak peak;        /* from the NVML figures in health */
	int has_reference;
	char ref_model[96];
	enum gpumem_check_verdict verdict;
	int nreasons;
	char reasons[GPUMEM_CHECK_MAX_REASONS][GPUMEM_CHECK_MSG];
};

struct gpumem_check_report {
	char version[32];
	char host[256];
	char time[32];                  /* ISO 8601 UTC */
	int cuda_driver, cuda_runtime;  /* 13000 = 13.0; 0 unknown */
	char nvml_driver[80];
	const char *site_path;          /* NULL: no site file */
	double min_fraction;
	double mps_share;               /* percent, 0 < s <= 100 */
	const char *mps_share_source;   /* "option", "environment", "default" */
	int quick, memtest, l2ab, l2_reset, plant_error;
	uint64_t mem_bytes;
	double l2_setaside_pct;         /* --l2-setaside N%: percent of L2; 0 none */
	uint64_t l2_setaside_bytes;     /* --l2-setaside SIZE: bytes; 0 none */
	int ndevices;
	struct gpumem_check_device *devices;
	double wall_s;
	/*
	 * Where the wall time went before and around the per-GPU threads, so a
	 * slow check can be explained: driver (dlopen + cuInit), runtime (its
	 * start-up and the device count), identify (properties of every
	 * visible GPU), devices (the GPU threads, start to last join).
	 */
	struct {
		double driver, runtime, identify, devices;
	} t;
	/* Filled by gpumem_check_judge_report() (or the caller for "skipped"). */
	enum gpumem_check_verdict verdict;
	int exit_code;
	char reason[GPUMEM_CHECK_MSG];  /* why skipped / timed out; "" otherwise */
};

/* ------------------------------------------------------------ verdicts */
const char *gpumem_check_verdict_name(enum gpumem_check_verdict v);
const char *gpumem_check_metric_name(enum gpumem_check_metric_id m);
/* Severity order used to combine verdicts: fail > unusable > warn > pass. */
int gpumem_check_verdict_rank(enum gpumem_check_verdict v);
int gpumem_check_exit_code(enum gpumem_check_verdict v);
double gpumem_check_ref_value(const struct gpumem_ref *ref, enum gpumem_check_metric_id m);

/*
 * What an MPS share leaves of a reference.  Copy-engine transfers (H2D,
 * D2H) are not limited by the active-thread percentage: 1.  The SM-driven
 * figures get sqrt(share/100), capped at 1: bandwidth is far from linear in
 * SMs (a quarter of the SMs keeps more than half of it), and sqrt stays
 * below what was measured, i.e. conservative.
 */
double gpumem_check_mps_scale(enum gpumem_check_metric_id m, double share_pct);

/*
 * Where the site names no reference, a figure is judged against the GPU's
 * own peak (peak.h): it passes at or above this fraction of the peak (at
 * the default min_fraction; another scales it in proportion), warns down
 * to GPUMEM_CHECK_WARN_BAND below, fails under that.  doc/admin/checks.md
 * gives the measurements they stand below.
 */
double gpumem_check_peak_floor(enum gpumem_check_metric_id m, double min_fraction);

/*
 * Judge one device against 'ref' (NULL: unknown model): fills every
 * metric's reference/threshold/verdict, the health and memtest verdicts,
 * the device verdict and the reasons behind it.
 */
void gpumem_check_judge_device(struct gpumem_check_device *d, const struct gpumem_ref *ref,
			       double min_fraction, double share_pct);
/* Overall verdict and exit code from the device verdicts. */
void gpumem_check_judge_report(struct gpumem_check_report *r);

void gpumem_check_add_reason(struct gpumem_check_device *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Median of n values (sorts v in place); 0 for n <= 0. */
double gpumem_check_median(double *v, int n);
double gpumem_check_max(const double *v, int n);

/* Reset a device record: every count unknown, nothing run. */
void gpumem_check_device_init(struct gpumem_check_device *d, int ordinal);

/* ------------------------------------------------------------ output */
/* The versioned document described in doc/CHECK-JSON.md. */
int gpumem_check_json_write(FILE *f, const struct gpumem_check_report *r);
/* The short human table. */
void gpumem_check_table_write(FILE *f, const struct gpumem_check_report *r);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem policy engine: the one implementation of the policy format, the
 * site configuration, merging, clamping and the task environment.  The SPANK
 * plugin, the gpumem CLI and gpumem-check all link it (libgpumemcore).
 *
 * Builds: libgpumempolicy (plugin/core/core.am), in libgpumemcore, linked into every program.
 * Runs as: whoever links it (root in slurmstepd, the user in srun and gpumem).
 * Includes: system headers, base's diag.h, fileio.h and units.h (the
 * diagnostics, file reads and units every policy reader uses) and env.h
 * (the variables' names).
 */
#ifndef GPUMEM_POLICY_H
#define GPUMEM_POLICY_H

#include <stdint.h>
#include <stdio.h>
#include <stddef.h>
#include "core_base.h"
#include "env.h"

#define GPUMEM_NAME "gpumem"

/* Hard caps that keep a hostile file cheap to reject (its bytes: fileio.h). */
#define GPUMEM_MAX_DEPTH        16
#define GPUMEM_MAX_NODES        4096
#define GPUMEM_MAX_SCALAR       1024
#define GPUMEM_MAX_REFS         64
#define GPUMEM_MAX_GPUS         64
#define GPUMEM_MAX_L2CAPS       16
/* check.min_interval's default, minutes (doc/admin/checks.md, "Reuse: a check that rests on evidence"). */
#define GPUMEM_CHECK_MIN_INTERVAL_DEFAULT 60

/* ------------------------------------------------------------ the policy */
enum gpumem_loc { GPUMEM_LOC_NONE = 0, GPUMEM_LOC_CPU, GPUMEM_LOC_GPU };
enum gpumem_daemon { GPUMEM_DAEMON_NONE = 0, GPUMEM_DAEMON_SITE, GPUMEM_DAEMON_JOB };
enum gpumem_onfail { GPUMEM_ONFAIL_WARN = 0, GPUMEM_ONFAIL_FAIL, GPUMEM_ONFAIL_DRAIN };
/* unified_memory.placement: split big allocations GPU/CPU. */
enum gpumem_placement { GPUMEM_PLACE_NONE = 0, GPUMEM_PLACE_STRIPE };
#define GPUMEM_FRACTION_AUTO (-1.0)     /* um.gpu_fraction: from free memory */

/* Bits of gpumem_policy.set: which keys a file (or a merge) set. */
enum {
	GPUMEM_K_L2_LIMIT       = 1u << 0,
	GPUMEM_K_L2_RESET       = 1u << 1,
	GPUMEM_K_MPS_PCT        = 1u << 2,
	GPUMEM_K_MPS_PINNED     = 1u << 3,
	GPUMEM_K_MPS_DAEMON     = 1u << 4,
	GPUMEM_K_UM_PREFERRED   = 1u << 5,
	GPUMEM_K_UM_ACCESSED_BY = 1u << 6,
	GPUMEM_K_UM_READ_MOSTLY = 1u << 7,
	GPUMEM_K_UM_PREFETCH    = 1u << 8,
	GPUMEM_K_UM_MIN_BYTES   = 1u << 9,
	GPUMEM_K_CHECK_BEFORE   = 1u << 10,
	GPUMEM_K_CHECK_AFTER    = 1u << 11,
	GPUMEM_K_CHECK_FRACTION = 1u << 12,
	GPUMEM_K_CHECK_ONFAIL   = 1u << 13,
	GPUMEM_K_CHECK_L2AB     = 1u << 14,
	GPUMEM_K_UM_PLACEMENT   = 1u << 15,
	GPUMEM_K_UM_FRACTION    = 1u << 16,
	GPUMEM_K_UM_RESERVE     = 1u << 17,
	GPUMEM_K_UM_GRANULARITY = 1u << 18,
	GPUMEM_K_PROFILE        = 1u << 19,
};

/* Bits of gpumem_policy.sections: which sections appeared at all. */
enum {
	GPUMEM_S_L2    = 1u << 0,
	GPUMEM_S_MPS   = 1u << 1,
	GPUMEM_S_UM    = 1u << 2,
	GPUMEM_S_CHECK = 1u << 3,
	GPUMEM_S_PROFILE = 1u << 4,
	GPUMEM_S_ALL   = 0x1fu,
};

/*
 * limits.l2_model_max_percent: the site's caps on the persisting-L2
 * set-aside per GPU model, over gpumem's own table (l2cap.c).
 */
struct gpumem_l2caps {
	int n;
	struct { char model[96]; double percent; } m[GPUMEM_MAX_L2CAPS];
	double other;                   /* models neither names; < 0: gpumem's own */
};

struct gpumem_policy {
	unsigned set;           /* GPUMEM_K_* */
	unsigned sections;      /* GPUMEM_S_* */
	struct {
		/* Either a percentage of the GPU's L2 or a byte count. */
		int limit_is_percent;
		double limit_percent;
		uint64_t limit_bytes;
		int reset_at_exit;
		double site_max_percent;        /* set by the merge: limits.l2_max_percent */
		struct gpumem_l2caps site_caps; /* set by the merge: limits.l2_model_max_percent */
	} l2;
	struct {
		int active_thread_percentage;   /* 1..100 */
		uint64_t pinned_device_mem_limit; /* bytes, 0 = no limit */
		enum gpumem_daemon daemon;
	} mps;
	struct {
		enum gpumem_loc preferred_location;
		unsigned accessed_by;           /* bit 0 cpu, bit 1 gpu */
		int read_mostly;
		enum gpumem_loc prefetch;
		uint64_t min_bytes;
		enum gpumem_placement placement;
		double gpu_fraction;            /* 0..1, or GPUMEM_FRACTION_AUTO */
		uint64_t reserve;               /* auto: bytes left free on the GPU */
		uint64_t granularity;           /* power of two */
		double site_max_fraction;       /* set by the merge: limits.um_max_gpu_fraction */
		int placement_pos[2];           /* line, col of placement in its file */
	} um;
	struct {
		int before, after;
		double min_fraction;            /* 0..1 */
		enum gpumem_onfail on_fail;
		int l2_ab;                      /* run the persisting-window A/B */
	} check;
	struct {
		int enabled;                    /* sample the job's GPUs (gpumem-sample) */
	} profile;
};

#define GPUMEM_ACCESS_CPU 1u
#define GPUMEM_ACCESS_GPU 2u

/* Built-in defaults: nothing is changed, checks off, min_fraction 0.85. */
void gpumem_policy_init(struct gpumem_policy *p);

/*
 * Parse a policy from memory.  'name' is what diagnostics call the file.
 * Every problem found is added to 'd'; returns 0 when there was no error.
 */
int gpumem_policy_parse(const char *buf, size_t len, const char *name,
			struct gpumem_policy *p, struct gpumem_diags *d);
/*
 * The same for the JSON that gpumem_policy_format writes, as forwarded to
 * the nodes: read with json-c (json.h) under the policy's caps, then
 * walked by the same table, so every key gets the same checks.
 */
int gpumem_policy_parse_json(const char *buf, size_t len, const char *name,
			     struct gpumem_policy *p, struct gpumem_diags *d);

int gpumem_policy_load(const char *path, struct gpumem_policy *p, struct gpumem_diags *d);

/* Overlay: every key set in 'top' replaces the one in 'base'. */
void gpumem_policy_overlay(struct gpumem_policy *base, const struct gpumem_policy *top);

/* Serialise.  JSON output of a parsed policy parses back to the same policy. */
enum gpumem_fmt { GPUMEM_FMT_YAML, GPUMEM_FMT_JSON };
/* only_set: emit only the keys in p->set (used to forward a user policy). */
char *gpumem_policy_format(const struct gpumem_policy *p, enum gpumem_fmt fmt, int only_set);

/* ------------------------------------------------------------ site file */
/* Reference figures of one GPU model, GB/s (10^9 bytes/s); 0 = unknown. */
struct gpumem_ref {
	char *model;            /* as the driver names it, e.g. "NVIDIA H200" */
	double read, write, copy, triad, d2d, h2d, d2h;
};

struct gpumem_site {
	char *path;
	struct gpumem_policy defaults;
	struct {
		double l2_max_percent;          /* of the GPU's L2 */
		struct gpumem_l2caps l2_caps;   /* per GPU model (l2cap.c) */
		int mps_min_pct, mps_max_pct;
		uint64_t mps_max_pinned;        /* 0 = no cap */
		unsigned daemons_allowed;       /* bit per gpumem_daemon */
		unsigned onfail_allowed;        /* bit per gpumem_onfail */
		unsigned sections_allowed;      /* GPUMEM_S_* */
		unsigned placements_allowed;    /* bit per gpumem_placement */
		double um_max_gpu_fraction;     /* cap on unified_memory.gpu_fraction */
		uint64_t um_min_reserve;        /* floor on unified_memory.reserve */
		double min_fraction;            /* floor on check.bandwidth.min_fraction */
		int strict;                     /* clamps are errors */
	} limits;
	char *policy_dir;
	struct gpumem_ref refs[GPUMEM_MAX_REFS];
	int nrefs;
	struct {
		char *dir;
		char *textfile_dir;
	} report;
	struct {
		int enabled;
		char *reason;                   /* prefix; always starts "gpumem:" */
	} drain;
	int check_timeout_s;
	int check_min_interval_min;     /* 0: measure every check; default below */
	int check_warm_s;               /* the warm check server's idle time; 0: off (default) */
	int check_warm_min_gpus;        /* the server only on nodes with at least this many GPUs */
	int profile_interval_ms;        /* gpumem-sample's interval, >= 100 */
	struct gpumem_advice_table *advice;     /* advice:, or NULL: built in (advise.h) */
	struct {
		int by_default;         /* GPUMEM_BY_DEFAULT_*: a job with no --gpumem-policy is
					 * advised, with what its rule promises (advise.h) */
		int days;               /* how far back the lookup goes (default 30) */
		int timeout_s;          /* its sacct is killed after this (default below) */
		int hint;               /* a named policy: say once when the last job's advice differs */
	} advised;
};

/* advised.by_default: off, gain (only rules that promise a gain), all; their names. */
enum { GPUMEM_BY_DEFAULT_OFF = 0, GPUMEM_BY_DEFAULT_GAIN, GPUMEM_BY_DEFAULT_ALL };
/* advised.timeout's default, seconds: the most a submission waits for accounting. */
#define GPUMEM_ADVISED_TIMEOUT_S 3
extern const char *const gpumem_by_default_names[];     /* "off", "gain", "all", NULL */

void gpumem_site_init(struct gpumem_site *s);
int gpumem_site_parse(const char *buf, size_t len, const char *name,
		      struct gpumem_site *s, struct gpumem_diags *d);
int gpumem_site_load(const char *path, struct gpumem_site *s, struct gpumem_diags *d);
void gpumem_site_free(struct gpumem_site *s);
/*
 * The site file the command-line tools use: PATH when given, else
 * $GPUMEM_SITE, else INSTALLED when it exists.  0 with *have = 0 when there
 * is none, 0 with *have = 1 when loaded, -1 when the file is bad (in d).
 */
int gpumem_site_load_default(const char *path, const char *installed, struct gpumem_site *s,
			     int *have, struct gpumem_diags *d);
const struct gpumem_ref *gpumem_site_ref(const struct gpumem_site *s, const char *model);

/*
 * Resolve --gpumem-policy=ARG: a path (contains '/' or ends in .yaml/.yml)
 * is returned as is; a bare NAME becomes POLICY_DIR/NAME.yaml.  Names are
 * restricted to [A-Za-z0-9._-] and may not start with '.'.
 * Returns a malloc'd path or NULL with an error in 'd'.
 */
char *gpumem_policy_resolve(const struct gpumem_site *s, const char *arg, struct gpumem_diags *d);

/*
 * The effective policy: built-in defaults, overlaid by the site defaults,
 * overlaid by 'user' (may be NULL), then clamped to the site limits.  Every
 * clamp is a warning naming the key, the asked value and the limit (an error
 * when the site is strict).  'user_name' names the user's file in messages.
 */
int gpumem_policy_effective(const struct gpumem_site *s, const struct gpumem_policy *user,
			    const char *user_name, struct gpumem_policy *out,
			    struct gpumem_diags *d);

/* ------------------------------------------------------------ environment */
/* What the node knows about one GPU of the step (from gpumem-probe). */
struct gpumem_gpu {
	int index;                      /* CUDA ordinal as the task sees it */
	char uuid[64];
	char pci_bus_id[32];
	char name[96];
	uint64_t l2_bytes;
	uint64_t persisting_max_bytes;
};

struct gpumem_node {
	struct gpumem_gpu gpus[GPUMEM_MAX_GPUS];
	int ngpus;                      /* -1: unknown (no probe) */
	const char *um_library;         /* installed libgpumem-um.so, or NULL */
	const char *mps_pipe_dir;       /* per-job MPS daemon dirs, or NULL */
	const char *mps_log_dir;
};

#define GPUMEM_ENV_MAX 16
struct gpumem_env {
	int n;
	struct { char name[64]; char value[1024]; } var[GPUMEM_ENV_MAX];
};

/* The names a policy may produce (GPUMEM_ENV_*) are env.h's. */

/*
 * The variables a task receives under policy 'p' on 'node'.  The L2
 * percentage is clamped to what every GPU of the step accepts (a value
 * above persistingL2CacheMaxSize/l2CacheSize makes context creation fail),
 * with a warning.  LD_PRELOAD here holds only node->um_library; the caller
 * prepends it to the task's own LD_PRELOAD.
 */
int gpumem_policy_env(const struct gpumem_policy *p, const struct gpumem_node *node,
		      struct gpumem_env *env, struct gpumem_diags *d);

/* The largest whole percentage of L2 every GPU of 'node' lets persist, or -1. */
int gpumem_l2_hw_max_percent(const struct gpumem_node *node);

/* The value of GPUMEM_UM_ADVICE, parsed by libgpumem-um; see kernels/um/um_config.c. */
int gpumem_um_format(const struct gpumem_policy *p, char *buf, size_t len);

/* ------------------------------------------------------------ enum names */
/*
 * Each enum's names in enum order, NULL-ended: the one list the policy and
 * site key tables (policy.c, site.c), the name functions below and merge's
 * messages share.  gpumem_section_names follows the GPUMEM_S_* bits.
 */
extern const char *const gpumem_loc_names[], *const gpumem_access_names[],
	*const gpumem_daemon_names[], *const gpumem_onfail_names[],
	*const gpumem_placement_names[], *const gpumem_section_names[];
const char *gpumem_loc_name(enum gpumem_loc l);
const char *gpumem_daemon_name(enum gpumem_daemon d);
const char *gpumem_onfail_name(enum gpumem_onfail f);
const char *gpumem_placement_name(enum gpumem_placement p);

#endif

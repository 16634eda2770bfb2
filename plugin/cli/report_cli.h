/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the files of `gpumem report` share among themselves (plugin/cli
 * only; the report file's format and head line are plugin/core/record/report.h):
 * the rows (one per report and GPU) and the directory loader
 * (report_load.c, report_dir.c; report_build.c builds them; report_scan.c
 * reads a head line without json-c), the names and times they share
 * (report_model.c), the cache (report_cache.c), the table and JSON writers
 * (report_table.c), the fleet summary (report_summary.c), the per-GPU view
 * that the summary and the picture's overview both draw from
 * (report_fleet.c), the picture (report_svg*.c), and the jobs' GPU memory
 * profiles of --profiles (report_profile.c).
 */
#ifndef GPUMEM_REPORT_CLI_H
#define GPUMEM_REPORT_CLI_H

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include "core_record.h"

int gpumem_report_main(int argc, char **argv);

/* ------------------------------------------------------------ rows */
/* Verdict classes, in the order "worst first" sorts them. */
enum gpumem_report_vclass {
	GPUMEM_REPORT_V_FAIL, GPUMEM_REPORT_V_UNUSABLE, GPUMEM_REPORT_V_ERROR,
	GPUMEM_REPORT_V_WARN, GPUMEM_REPORT_V_SKIPPED, GPUMEM_REPORT_V_NOT_RUN,
	GPUMEM_REPORT_V_PASS, GPUMEM_REPORT_NV
};

/* What says a file is the one read before (report_cache.c). */
struct gpumem_report_stamp {
	unsigned long long ino, size;
	long long mtime_ns, ctime_ns;
};

struct gpumem_report_prof;              /* report_profile.c */

/* One report file, as far as the rows need it. */
struct gpumem_report_file {
	char *name;                     /* file name within the directory */
	struct gpumem_report_stamp stamp;
	long long job;
	char *step, *node, *user, *policy, *phase, *time_text, *gpus, *status, *reason;
	char *verdict;                  /* as written */
	enum gpumem_report_vclass vclass;
	long long uid, exit_code;
	int has_uid, has_exit_code, drained;
	time_t time;
	struct gpumem_report_prof *prof;        /* want.profiles: its "profile", NULL: none */
};

struct gpumem_report_metric {
	int present;                    /* the check document has this metric */
	enum gpumem_report_vclass vclass;
	char *verdict;                  /* as written, or NULL */
	double best, median, reference, threshold, warn_floor; /* NaN: not known */
};

/*
 * A row against its peers (report_peers.c): of its figures, the one lowest
 * against its peers' median (as a share of its metric's margin).  peers 0:
 * not compared (no GPU, no figure, or too few peers).
 */
struct gpumem_report_vs {
	int metric;
	int node;                       /* against its node's GPUs, not its model's */
	double ratio, median;           /* its figure / the peers' median; that median (GB/s) */
	size_t peers;
	int slow;                       /* ratio under the metric's margin */
};

/* One row: a GPU of a report, or the report itself when it has no GPU. */
struct gpumem_report_row {
	const struct gpumem_report_file *rep;
	int has_gpu;
	int cuda_index;                 /* ordinal as the step saw it, -1 */
	int node_index;                 /* the node's GPU index, from "gpus", -1 */
	char *gpu_name, *gpu_uuid, *gpu_pci;
	enum gpumem_report_vclass vclass;
	char *verdict;                  /* as written */
	char *reason;                   /* why not a pass, or NULL */
	struct gpumem_report_metric m[GPUMEM_REPORT_NMETRICS];
	struct gpumem_report_vs vs;     /* set by gpumem_report_peers */
};

struct gpumem_report_set {
	struct gpumem_report_file **files;
	size_t nfiles;
	struct gpumem_report_row *rows;
	size_t nrows, cap;
	size_t nbad;                    /* files skipped with a warning */
	size_t nlisted;                 /* report files in the directory */
	size_t nskipped;                /* of them, not read: ruled out by the filters */
	size_t ncached;                 /* of them, taken from the cache */
	struct gpumem_report_cache_run *writer; /* the cache being written, NULL: none */
	pthread_t writer_tid;
};

int gpumem_report_metric_id(const char *name);      /* -1: unknown */
const char *gpumem_report_vclass_name(enum gpumem_report_vclass v);
enum gpumem_report_vclass gpumem_report_vclass_of(const char *verdict);
/* Sort rank: skipped and not_run rank alike. */
int gpumem_report_vclass_rank(enum gpumem_report_vclass v);

/*
 * Which files to read.  A report file's name says its job, step and node
 * (job<JOB>.<STEP>.<NODE>.<PHASE>.json, as the plugin writes it): a name
 * the callback rules out is never opened, nor a file last written before
 * min_mtime.  Both only narrow the read: rows are still filtered on what
 * the files say.  A name of another form is always read.
 */
struct gpumem_report_want {
	int (*name)(long long job, const char *step, const char *node, void *arg);
	void *arg;
	time_t min_mtime;               /* 0: any */
	int profiles;                   /* read files whole and keep their "profile" (no cache) */
};

/*
 * Read the *.json files of dir (names starting with '.', such as the
 * plugin's temporary files, are skipped; want may be NULL), on as many
 * threads as there are CPUs (at most 8); every unusable file gets one
 * warning on stderr, in file-name order, and is skipped.  -1 (with a
 * message) only when the directory itself cannot be read.
 */
/*
 * With use_cache (the default of `gpumem report`), the rows of every file
 * read before, unchanged since (inode, size, mtime, ctime), come from the
 * user's cache file instead of being parsed again, and the cache is
 * rewritten when the directory changed; report_cache.c says where and why
 * it can be trusted.
 */
int gpumem_report_load_dir(const char *dir, const struct gpumem_report_want *want,
			   int use_cache, struct gpumem_report_set *set);

void gpumem_report_set_free(struct gpumem_report_set *set);

/*
 * ISO 8601: YYYY-MM-DD, optionally [T ]HH:MM[:SS[.frac]], optionally Z or
 * +HH[:MM]/-HH[:MM].  Without a zone the time is local.  0 or -1.
 */
int gpumem_report_parse_time(const char *s, time_t *out);
/* --since: such a time, or an age before NOW (90m, 2h, 7d, 2w, 30s).  0 or -1. */
int gpumem_report_parse_since(const char *s, time_t now, time_t *out);

/* The node's GPU index when the report says it, else the CUDA ordinal. */
int gpumem_report_gpu_index(const struct gpumem_report_row *r);
/* A GPU model without its "NVIDIA " ("?" for NULL). */
const char *gpumem_report_short_model(const char *name);
/* "YYYY-MM-DD HH:MM", UTC. */
void gpumem_report_utc(time_t t, char *buf, size_t len);

/* Natural order for node names: gpu2 before gpu10. */
int gpumem_report_natcmp(const char *a, const char *b);
/*
 * A row's sort rank (report_model.c): its verdict's, but a row slow
 * against its peers ranks right after the warnings, whatever it passed.
 */
int gpumem_report_row_rank(const struct gpumem_report_row *r);
/*
 * qsort of row pointers: worst first (the rank above; slow rows the
 * slowest first), then newest (report_model.c).
 */
int gpumem_report_cmp_rows(const void *pa, const void *pb);

/* ------------------------------------------------------------ peers (report_peers.c) */
/* A row is slow under this share of its peers' median: HBM figures, host links. */
#define GPUMEM_PEER_MARGIN_HBM 0.90
#define GPUMEM_PEER_MARGIN_HOST 0.85
/* The margin of a metric; 0: the metric is not compared. */
double gpumem_report_peer_margin(int metric);
/* Each row's vs against the GPUs of rows[0..n) (those with a GPU); 0, -1 out of memory. */
int gpumem_report_peers(struct gpumem_report_row *const *rows, size_t n);
/* "slow vs fleet: triad 0.80x of 511 peers" into buf ("" when not slow); as snprintf. */
int gpumem_report_vs_text(const struct gpumem_report_row *r, char *buf, size_t len);

/* ------------------------------------------------------------ picture */
struct gpumem_report_svg_opts {
	int metric;                     /* enum gpumem_report_metric_id */
	size_t max_panels;              /* 0: all */
	const char *source;             /* named in the subtitle (the directory) */
};

/*
 * Draw rows (any order) as small multiples, one panel per GPU.  Returns the
 * number of panels drawn and sets *total to the number there were.
 */
int gpumem_report_svg(FILE *f, struct gpumem_report_row *const *rows, size_t n,
		      const struct gpumem_report_svg_opts *o, size_t *total);
/*
 * The same into file PATH ("-": stdout), and one line on stderr saying what
 * was drawn; 0, or -1 (said) when it cannot be written.
 */
int gpumem_report_write_svg(const char *path, struct gpumem_report_row *const *rows, size_t n,
			    const struct gpumem_report_svg_opts *o);


/* ------------------------------------------------------------ reading (report_load.c) */
/* One reader's file buffer and JSON tokener, kept from file to file. */
struct gpumem_report_buf {
	char *data;
	size_t cap;
	struct json_tokener *tok;
};

/* One file of the directory into set: 0, 1 when older than want's min_mtime, -1 (warned). */
int gpumem_report_load_file(struct gpumem_report_set *set, int dfd, const char *dir,
			    const char *name, const struct gpumem_report_want *want,
			    struct gpumem_report_buf *b);
/* A report's own fields, as read, into a new file (report_build.c). */
struct gpumem_report_fields {
	const char *name, *node, *phase, *time, *status, *verdict, *user, *policy, *gpus, *reason;
	const char *step;
	char stepbuf[32];               /* a numeric step, as text */
	long long job, uid, exit_code;
	int has_uid, has_exit_code, drained;
	time_t t;
};
struct gpumem_report_file *gpumem_report_file_of(const struct gpumem_report_fields *h);
/*
 * A GPU's row of file f, at CUDA ordinal index, its metrics not yet set;
 * reasons (malloc'd, taken; NULL: none) is why it is not a pass.  NULL:
 * out of memory.
 */
struct gpumem_report_row *gpumem_report_gpu_row(struct gpumem_report_set *set,
						 const struct gpumem_report_file *f, int index,
						 const char *name, const char *uuid, const char *pci,
						 const char *verdict, char *reasons);
/* A metric from its compact form: verdict (NULL: none), best, median, reference, threshold, warn floor. */
void gpumem_report_set_metric(struct gpumem_report_metric *rm, const char *verdict,
			      const double v[5]);
/* The row of a report without a GPU: skipped, timed out, no devices.  0, -1 out of memory. */
int gpumem_report_nogpu_row(struct gpumem_report_set *set, const struct gpumem_report_file *f,
			    const char *check_reason);
/*
 * The head line of data (its first len bytes; report_scan.c) read without
 * json-c, for a head as the plugin writes it: 0 with the file and its rows
 * in set (*fp: the file); 1 when the head is anything else (nothing added:
 * the caller parses it with json-c, which says what is wrong); -1 out of
 * memory.
 */
int gpumem_report_scan_head(struct gpumem_report_set *set, const char *name, const char *data,
			    size_t len, struct gpumem_report_file **fp);
/* This thread's warnings go to f (NULL: stderr). */
void gpumem_report_warn_to(FILE *f);
/* The set's pieces, for the cache (report_cache.c) and the reader threads. */
int gpumem_report_add_row(struct gpumem_report_set *set, struct gpumem_report_row **out);
int gpumem_report_add_file(struct gpumem_report_set *set, struct gpumem_report_file *f);
void gpumem_report_file_free(struct gpumem_report_file *f);
void gpumem_report_row_free(struct gpumem_report_row *r);
void gpumem_report_stamp_of(const struct stat *st, struct gpumem_report_stamp *s);

void gpumem_report_print_table(struct gpumem_report_row *const *rows, size_t n);
void gpumem_report_print_json(FILE *out, struct gpumem_report_row *const *rows, size_t n);

/* ------------------------------------------------------------ the cache */
struct gpumem_report_cache_run {
	int cfd;                        /* the cache directory, -1: no cache */
	char *real;                     /* the report directory's real path */
	int stale;                      /* the cache no longer matches the directory */
};

/*
 * For each of the n sorted names: its rows from the cache into set when
 * the file is unchanged since it was cached, else its name into todo (room
 * for n) for the readers.  Files older than min_mtime are left out.
 */
int gpumem_report_cache_pass(struct gpumem_report_cache_run *run, const char *dir, int dfd,
			     char **names, size_t n, time_t min_mtime,
			     struct gpumem_report_set *set, char **todo, size_t *ntodo);
/*
 * Rewrite the cache when set is the whole directory (complete) and it
 * changed: on a thread of its own while the caller lists the set, which
 * it must not change until gpumem_report_cache_wait (set_free waits too).
 */
void gpumem_report_cache_done(struct gpumem_report_cache_run *run,
			      struct gpumem_report_set *set, int complete);
void gpumem_report_cache_wait(struct gpumem_report_set *set);

/* ------------------------------------------------------------ the fleet */
struct gpumem_fleet_gpu {
	const struct gpumem_report_row *last;   /* its newest row */
	size_t nrows, nbad;             /* its rows; those warn, fail, unusable or error */
	double frac;                    /* newest figure / reference; NaN: none */
	double threshold_frac;          /* the pass threshold the check used, same scale */
};

struct gpumem_fleet_model {
	const char *name;
	size_t ngpus;
	size_t count[GPUMEM_REPORT_NV]; /* GPUs by newest verdict */
	double *fracs;                  /* sorted, one per GPU with a figure */
	size_t nfracs;
	size_t below;                   /* GPUs whose newest figure is under its threshold */
	double reference;               /* GB/s; NaN: none */
	double *thrs;                   /* sorted, the GPUs' threshold fractions */
	size_t nthrs;
	double threshold_frac;          /* their median: the model's usual threshold; NaN */
};

struct gpumem_fleet {
	int metric;
	size_t nrows, nnodes;
	size_t count[GPUMEM_REPORT_NV]; /* rows by verdict */
	time_t first, last;
	struct gpumem_fleet_gpu *gpus;
	size_t ngpus;
	struct gpumem_fleet_gpu **worst; /* every GPU, worst first */
	struct gpumem_fleet_model *models;
	size_t nmodels;
	const struct gpumem_report_file **drained; /* newest drained report per node */
	size_t ndrained;
};

int gpumem_fleet_build(struct gpumem_report_row *const *rows, size_t n, int metric,
		       struct gpumem_fleet *fl);
/* One GPU, by its UUID, else node and index; qsort by GPU, newest first within one. */
int gpumem_fleet_same_gpu(const struct gpumem_report_row *a, const struct gpumem_report_row *b);
int gpumem_fleet_cmp_by_gpu(const void *pa, const void *pb);
/* How many GPUs' newest row is slow against its peers. */
size_t gpumem_fleet_nslow(const struct gpumem_fleet *fl);
void gpumem_fleet_free(struct gpumem_fleet *fl);
/* Its newest figure is under the threshold its check applied. */
int gpumem_fleet_below(const struct gpumem_fleet_gpu *g);
size_t gpumem_fleet_count_nodes(struct gpumem_report_row *const *rows, size_t n);
double gpumem_fleet_quantile(const double *sorted, size_t n, double q);

/* The summary before the rows: text, or one JSON object. */
void gpumem_report_print_summary(FILE *out, const struct gpumem_fleet *fl, const char *dir,
				 size_t worst);
void gpumem_report_print_summary_json(FILE *out, const struct gpumem_fleet *fl, size_t worst);

/* --prometheus: each GPU against its peers, worst first, in the Prometheus text format. */
void gpumem_report_print_prom(FILE *out, const struct gpumem_fleet *fl);

/* ------------------------------------------------------------ profiles (report_profile.c) */
/*
 * ROOT's "profile" into F->prof: a gpumem-profile/1 document is checked
 * (gpumem_profile_check), compacted as the accounting record keeps it, and
 * each GPU's advice taken with ROOT's "effective" policy, so the figures
 * are those `gpumem job` shows; one refused, skipped or not run is kept as
 * not usable.  No "profile": F->prof stays NULL.  0, -1 out of memory.
 */
int gpumem_report_keep_profile(struct gpumem_report_file *f, struct json_object *root);
void gpumem_report_prof_free(struct gpumem_report_prof *p);

/* --sort: the order of --profiles, each the largest first (time: newest). */
enum gpumem_report_prof_key {
	GPUMEM_REPORT_BY_DRAM, GPUMEM_REPORT_BY_SM, GPUMEM_REPORT_BY_RX, GPUMEM_REPORT_BY_MEM,
	GPUMEM_REPORT_BY_TIME
};
int gpumem_report_prof_key(const char *name);   /* -1: unknown */

struct gpumem_report_prof_opts {
	int key;                        /* enum gpumem_report_prof_key */
	size_t limit;                   /* 0: none */
	int json;
	int (*keep)(const struct gpumem_report_file *f, const void *arg);      /* the filters */
	const void *arg;
};

/*
 * One row per (report with a profile that ran, GPU) of SET's files that
 * keep keeps, as a table or a JSON array on stdout; how many of those
 * files had a profile that is not usable, in one line on stderr.  0, or -1
 * out of memory (said).
 */
int gpumem_report_print_profiles(const struct gpumem_report_set *set, const char *dir,
				 const struct gpumem_report_prof_opts *o);

#endif

/*
 * gpumem report: the administrators' view of the per-job-step reports the
 * plugin writes (schema gpumem-report/1, see REPORT-JSON.md).  report.c is
 * the command; json.h reads JSON, report_load.c turns a directory of
 * report files into rows (one per report and GPU), report_model.c holds the
 * names and times they share, report_svg.c draws them.
 */
#ifndef GPUMEM_REPORT_H
#define GPUMEM_REPORT_H

#include <stddef.h>
#include <stdio.h>
#include <time.h>
#include "json.h"

#define GPUMEM_REPORT_SCHEMA    "gpumem-report/1"
#define GPUMEM_REPORT_DEFAULT_DIR "/var/lib/gpumem/reports"

/*
 * Caps for one report file.  A report embeds a whole gpumem-check document
 * (about 150 values and 5 KiB per GPU), so the policy parser's 64 KiB and
 * 4096 nodes are too tight for an 8-GPU node; these still keep a broken or
 * hostile file to one bounded, linear read.
 */
#define GPUMEM_REPORT_MAX_FILE_BYTES (1024 * 1024)
#define GPUMEM_REPORT_JSON_MAX_DEPTH 64
#define GPUMEM_REPORT_JSON_MAX_VALUES (128 * 1024)
/*
 * Caps for the gpumem-check document the plugin takes from the check (and
 * embeds in a report): the report's, less room for what wraps it (under
 * 8 KiB of fields, even escaped; 16 values; one level), so every document
 * accepted here makes a report that `gpumem report` reads: 200 GPUs or more.
 */
#define GPUMEM_CHECK_MAX_BYTES (GPUMEM_REPORT_MAX_FILE_BYTES - 16 * 1024)
#define GPUMEM_CHECK_JSON_MAX_DEPTH (GPUMEM_REPORT_JSON_MAX_DEPTH - 1)
#define GPUMEM_CHECK_JSON_MAX_VALUES (GPUMEM_REPORT_JSON_MAX_VALUES - 64)

int gpumem_report_main(int argc, char **argv);

/* ------------------------------------------------------------ rows */
/* Verdict classes, in the order "worst first" sorts them. */
enum gpumem_report_vclass {
	GPUMEM_REPORT_V_FAIL, GPUMEM_REPORT_V_UNUSABLE, GPUMEM_REPORT_V_ERROR,
	GPUMEM_REPORT_V_WARN, GPUMEM_REPORT_V_SKIPPED, GPUMEM_REPORT_V_NOT_RUN,
	GPUMEM_REPORT_V_PASS, GPUMEM_REPORT_NV
};

enum gpumem_report_metric_id {
	GPUMEM_REPORT_M_READ, GPUMEM_REPORT_M_WRITE, GPUMEM_REPORT_M_COPY,
	GPUMEM_REPORT_M_TRIAD, GPUMEM_REPORT_M_D2D, GPUMEM_REPORT_M_H2D,
	GPUMEM_REPORT_M_D2H, GPUMEM_REPORT_NMETRICS
};

/* What says a file is the one read before (report_cache.c). */
struct gpumem_report_stamp {
	unsigned long long ino, size;
	long long mtime_ns, ctime_ns;
};

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
};

struct gpumem_report_metric {
	int present;                    /* the check document has this metric */
	enum gpumem_report_vclass vclass;
	char *verdict;                  /* as written, or NULL */
	double best, median, reference, threshold, warn_floor; /* NaN: not known */
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
};

extern const char *const gpumem_report_metric_names[GPUMEM_REPORT_NMETRICS];

/*
 * The head line of a report file (report_head.c, doc/REPORT-JSON.md).
 * gpumem_report_rows_of: CHECK's devices as compact rows (a new array in
 * *rows), CHECK NULL giving none; -1 with err for a check of the wrong
 * shape.  gpumem_report_check_reason: check.overall.reason or NULL.
 * gpumem_report_text: the file's text: HEAD (the report's own fields; it
 * gains "rows" and "check_reason", made from CHECK_DOC, the parsed CHECK)
 * on the first line, ending with a comma, then "effective" and "check" as
 * the texts given (NULL: null); malloc'd, or NULL.
 */
struct json_object;
int gpumem_report_rows_of(struct json_object *check, struct json_object **rows, char *err,
			  size_t errlen);
const char *gpumem_report_check_reason(struct json_object *check);
char *gpumem_report_text(struct json_object *head, const char *effective, const char *check,
			 struct json_object *check_doc);
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

/* The node's GPU index when the report says it, else the CUDA ordinal. */
int gpumem_report_gpu_index(const struct gpumem_report_row *r);
/* A GPU model without its "NVIDIA " ("?" for NULL). */
const char *gpumem_report_short_model(const char *name);
/* "YYYY-MM-DD HH:MM", UTC. */
void gpumem_report_utc(time_t t, char *buf, size_t len);

/* Natural order for node names: gpu2 before gpu10. */
int gpumem_report_natcmp(const char *a, const char *b);

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

#endif

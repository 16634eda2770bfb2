/*
 * What the files of `gpumem report` share among themselves (plugin/cli
 * only; the rows and the directory loader are in plugin/core/report.h):
 * reading one file (report_load.c), the cache (report_cache.c), the table
 * and JSON writers (report_table.c), the fleet summary (report_summary.c)
 * and the per-GPU view that the summary and the picture's overview both
 * draw from (report_fleet.c).
 */
#ifndef GPUMEM_REPORT_CLI_H
#define GPUMEM_REPORT_CLI_H

#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include "report.h"

/* ------------------------------------------------------------ reading (report_load.c) */
/* One reader's file buffer and JSON tokener, kept from file to file. */
struct gpumem_report_buf {
	char *data;
	size_t cap;
	struct json_tokener *tok;
};

/* One file of the directory into set: 0, 1 when older than min_mtime, -1 (warned). */
int gpumem_report_load_file(struct gpumem_report_set *set, int dfd, const char *dir,
			    const char *name, time_t min_mtime, struct gpumem_report_buf *b);
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
/* Rewrite the cache when set is the whole directory (complete) and it changed. */
void gpumem_report_cache_done(struct gpumem_report_cache_run *run,
			      const struct gpumem_report_set *set, int complete);

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
void gpumem_fleet_free(struct gpumem_fleet *fl);
/* Its newest figure is under the threshold its check applied. */
int gpumem_fleet_below(const struct gpumem_fleet_gpu *g);
size_t gpumem_fleet_count_nodes(struct gpumem_report_row *const *rows, size_t n);
double gpumem_fleet_quantile(const double *sorted, size_t n, double q);

/* The summary before the rows: text, or one JSON object. */
void gpumem_report_print_summary(FILE *out, const struct gpumem_fleet *fl, const char *dir,
				 size_t worst);
void gpumem_report_print_summary_json(FILE *out, const struct gpumem_fleet *fl, size_t worst);

#endif

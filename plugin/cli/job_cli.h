/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem job and gpumem advise (gpumem(1)): both read the records
 * gpumem-acct leaves in sacct's AdminComment (job.c); the profile block
 * and the advice from a record's "prof" are job_profile.c's, the advice
 * table in force job_rules.c's.
 */
#ifndef GPUMEM_JOB_CLI_H
#define GPUMEM_JOB_CLI_H
#include "core_base.h"

struct gpumem_advice_table;

int gpumem_job_main(int argc, char **argv);
int gpumem_advise_main(int argc, char **argv);
/*
 * S for a terminal (trust.h's cleaner), "-" when NULL or empty; a copy in
 * one of a few rotating buffers, so one printf may take several.
 */
const char *gpumem_job_text(const char *s);
/*
 * Report file PATH the caller named, parsed under the report caps, or NULL
 * with ERR: never through a link (gpumem_caller_file_open); as root, no
 * message quotes the file.
 */
struct json_object *gpumem_job_load_report(const char *path, char *err, size_t elen);
/*
 * The advice table in force (job_rules.c): load it from the site file
 * (PATH, else $GPUMEM_SITE, else the installed one; -1 with the errors
 * printed), the table (the built-in one until loaded), and --rules.
 */
int gpumem_job_rules_load(const char *cmd, const char *path);
const struct gpumem_advice_table *gpumem_job_rules(void);
/* The site's advised.by_default (GPUMEM_BY_DEFAULT_*; off without a site file) and advised.days. */
int gpumem_job_by_default(void);
int gpumem_job_advised_days(void);
/* The loaded site file's report.dir, else the default (gpumem job JOBID --svg). */
const char *gpumem_job_report_dir(void);
int gpumem_job_rules_print(int json);
/* The profile block of a record (checked: gpumem_acct_check), with each GPU's advice. */
void gpumem_job_print_profile(struct json_object *rec);
/* The advice lines only, one per GPU ("gpumem advise"). */
void gpumem_job_print_advice(struct json_object *rec);
/* The record's advice, a new array of gpumem_advice_json objects ([] without "prof"). */
struct json_object *gpumem_job_advice(struct json_object *rec);
/* gpumem advise JOBID: the history of the advised runs of the job's name (job_history.c). */
void gpumem_job_print_history(const char *job, const char *user);
/*
 * ... with --json: {"name", "days", "runs": [...]}, {"error"} where the
 * lookup failed, NULL where there is nothing to say (doc/REPORT-JSON.md).
 */
struct json_object *gpumem_job_history_json(const char *job, const char *user);
/* The runs of an advised history as that "runs" array (a new array, or NULL). */
struct gpumem_advised;
struct json_object *gpumem_job_history_runs(const struct gpumem_advised *a);
#endif

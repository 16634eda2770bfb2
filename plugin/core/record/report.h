/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The report file the plugin writes for each check of a job (schema
 * gpumem-report/1, doc/REPORT-JSON.md): its caps, its reading under them
 * and the check document's (report_read.c), and its head line
 * (report_head.c), which the plugin writes and `gpumem report` reads.
 * Core defines all of it; the reader's rows, loader and pictures are the
 * CLI's (plugin/cli/report_cli.h).
 */
#ifndef GPUMEM_REPORT_H
#define GPUMEM_REPORT_H

#include <stddef.h>
#include <stdio.h>
#include <time.h>
#include "core_base.h"

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

/* ------------------------------------------------------------ reading (report_read.c) */
/* A gpumem-report/1 file under the report caps above (json.h's parse). */
int gpumem_json_parse_report(const char *buf, size_t len, struct json_object **out,
			     char *err, size_t errlen);
int gpumem_json_parse_report_with(struct json_tokener **keep, const char *buf, size_t len,
				  struct json_object **out, char *err, size_t errlen);
/*
 * A gpumem-check/1 document (doc/CHECK-JSON.md) under the GPUMEM_CHECK_*
 * caps: an object whose "schema" is "gpumem-check/1".
 */
int gpumem_json_parse_check(const char *buf, size_t len, struct json_object **out,
			    char *err, size_t errlen);

/* ------------------------------------------------------------ the head line's rows */
enum gpumem_report_metric_id {
	GPUMEM_REPORT_M_READ, GPUMEM_REPORT_M_WRITE, GPUMEM_REPORT_M_COPY,
	GPUMEM_REPORT_M_TRIAD, GPUMEM_REPORT_M_D2D, GPUMEM_REPORT_M_H2D,
	GPUMEM_REPORT_M_D2H, GPUMEM_REPORT_NMETRICS
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
 * the texts given (NULL: null), then "profile" when PROFILE is not NULL
 * (the job's profile, doc/REPORT-JSON.md); malloc'd, or NULL.
 */
struct json_object;
int gpumem_report_rows_of(struct json_object *check, struct json_object **rows, char *err,
			  size_t errlen);
const char *gpumem_report_check_reason(struct json_object *check);
/*
 * What a check's device DEV judged its figures NAMES (N of them) against,
 * from each metric's "basis", in short into BUF: "site reference", "read
 * 0.85, triad 0.82 of this GPU's peak", with any figure not judged and why
 * ("h2d not judged: ..."), "; " between; "" when no figure says.  For the
 * slurmd log line and the accounting record (gpumem job).
 */
void gpumem_report_basis(struct json_object *dev, const char *const *names, size_t n, char *buf,
			 size_t len);
char *gpumem_report_text(struct json_object *head, const char *effective, const char *check,
			 struct json_object *check_doc, const char *profile);
#endif

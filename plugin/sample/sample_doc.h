/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The gpumem-profile/1 document gpumem-sample writes (checked
 * by plugin/core/record/profile.c when the epilog reads it): one compact JSON line
 * built from the run and its GPUs' statistics.  Kept apart from the main
 * loop so the shape of the document is in one place.
 */
#ifndef GPUMEM_SAMPLE_DOC_H
#define GPUMEM_SAMPLE_DOC_H
#include <stddef.h>
#include "core_base.h"
#include "sample_nvml.h"

#define SAMPLE_SCHEMA "gpumem-profile/1"
#define SAMPLE_REASON_MAX 128           /* the reader's cap on strings */

struct sample_run {
	const char *reason;                     /* NULL: "ran", else "skipped" and why */
	long interval_ms;
	char started[32];                       /* ISO 8601 UTC */
	double seconds, cpu_s;
	const struct sample_gpu *gpus;
	size_t ngpus;
};

/* The document of R, a new object (NULL when out of memory). */
struct json_object *sample_doc(const struct sample_run *r);
#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The advised source of a job: which policy --gpumem-policy=advised gave
 * it, advised from which job and rule, and where the policy stood when it
 * was given (new, kept or on probation).  Fields, not text:
 *
 *   srun forwards   {"job":1240,"rule":"faulting","policy":"zerocopy.yaml",
 *                    "standing":"new"} (SPANK_GPUMEM_POLICY_ADVISED);
 *   the record has  the same object as member "adv" (acct.h, version 2);
 *   the label       "zerocopy.yaml (advised from job 1240: faulting)" is
 *                   made from the fields for people and never read back.
 *
 * Version 1 records have no "adv": their label, the record's "policy",
 * is read by gpumem_advsrc_of_record (those are the records already in
 * sites' databases); a version 2 record's label is never parsed, so a
 * label forged in a job's name or policy changes nothing.  The fields
 * are the submitting user's, as the label was: they speak for that
 * user's own jobs of the name only (the lookup reads that user's jobs).
 */
#ifndef GPUMEM_ADVSRC_H
#define GPUMEM_ADVSRC_H
#include <stddef.h>
#include "core_base.h"

#define GPUMEM_ADVSRC_ENV "GPUMEM_POLICY_ADVISED"     /* the forwarded fields (SPANK_...) */
#define GPUMEM_ADVSRC_MAX_JSON 400

struct gpumem_advsrc {
	long long job;          /* the job it was advised from */
	char rule[32];          /* that job's winning rule */
	char policy[72];        /* the policy file's name */
	char standing[16];      /* "new", "kept", "probation" */
	int unasked;            /* its job named no policy: advised.by_default ("unasked": true) */
};

/* The fields as the compact JSON srun forwards (malloc'd), or NULL. */
char *gpumem_advsrc_json(const struct gpumem_advsrc *s);
/* An object with S's fields, new; NULL out of memory. */
struct json_object *gpumem_advsrc_object(const struct gpumem_advsrc *s);
/* Is V an advised source's object?  0 with *S filled, or -1 with why. */
int gpumem_advsrc_from_object(struct json_object *v, struct gpumem_advsrc *s, char *err,
			      size_t len);
/* TEXT (forwarded JSON) -> *S: 0, or -1 with why. */
int gpumem_advsrc_parse(const char *text, struct gpumem_advsrc *s, char *err, size_t len);
/* The label for people: "POLICY (advised from job A: RULE)", "(advised by default from ..." unasked. */
void gpumem_advsrc_label(const struct gpumem_advsrc *s, char *out, size_t len);
/*
 * The advised source of a checked record REC: its "adv" (version 2), or
 * for a version 1 record its label in "policy".  1 with *S, 0 when the
 * job did not run advised.
 */
int gpumem_advsrc_of_record(struct json_object *rec, struct gpumem_advsrc *s);
/* Record JSON (a checked version 2 record) with S as its "adv": malloc'd, or NULL and why. */
char *gpumem_advsrc_into_record(const char *json, const struct gpumem_advsrc *s, char *err,
				size_t len);
#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The advised source as fields (advsrc.h): what srun forwards, what the
 * accounting record keeps, the label made from them, and the one reader
 * of the old labels, for version 1 records only.  Every field is checked
 * by the same rules wherever it comes from: a job ID, a rule name, a
 * policy file name, a standing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "acct.h"
#include "advsrc.h"

#define TAG " (advised from job "
#define MAX_JOB 9000000000000000LL
#define POLICY_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"
#define RULE_CHARS "abcdefghijklmnopqrstuvwxyz0123456789-"

static const char *const STANDINGS[] = { "new", "kept", "probation" };

static int word_ok(const char *w, const char *set, size_t cap)
{
	return w && *w && strlen(w) < cap && strspn(w, set) == strlen(w) && w[0] != '.';
}

static int standing_ok(const char *w)
{
	for (size_t i = 0; w && i < sizeof(STANDINGS) / sizeof(STANDINGS[0]); i++)
		if (!strcmp(w, STANDINGS[i]))
			return 1;
	return 0;
}

struct json_object *gpumem_advsrc_object(const struct gpumem_advsrc *s)
{
	struct json_object *o = json_object_new_object();

	if (o == NULL)
		return NULL;
	gpumem_json_add(o, "job", gpumem_json_int(s->job));
	gpumem_json_add(o, "rule", gpumem_json_string(s->rule));
	gpumem_json_add(o, "policy", gpumem_json_string(s->policy));
	gpumem_json_add(o, "standing", gpumem_json_string(s->standing[0] ? s->standing : "new"));
	if (s->unasked)
		gpumem_json_add(o, "unasked", gpumem_json_bool(1));
	return o;
}

char *gpumem_advsrc_json(const struct gpumem_advsrc *s)
{
	struct json_object *o = gpumem_advsrc_object(s);
	char *text = o ? gpumem_json_dump(o, GPUMEM_JSON_COMPACT) : NULL;

	json_object_put(o);
	if (text)
		text[strcspn(text, "\n")] = '\0';
	return text;
}

int gpumem_advsrc_from_object(struct json_object *v, struct gpumem_advsrc *s, char *err,
			      size_t len)
{
	const char *rule = gpumem_json_str(v, "rule"), *pol = gpumem_json_str(v, "policy");
	const char *st = gpumem_json_str(v, "standing");
	struct json_object *job = gpumem_json_get(v, "job");
	long long id = gpumem_json_is(job, json_type_int) ? json_object_get_int64(job) : 0;
	struct json_object *un = gpumem_json_get(v, "unasked");

	memset(s, 0, sizeof(*s));
	/* "unasked" (optional, true): the job named no policy (advised.by_default). */
	if (!gpumem_json_is(v, json_type_object) ||
	    json_object_object_length(v) != 4 + (un != NULL) ||
	    (un && (!gpumem_json_is(un, json_type_boolean) || !json_object_get_boolean(un)))) {
		snprintf(err, len, "adv: not {job, rule, policy, standing[, unasked: true]}");
		return -1;
	}
	s->unasked = un != NULL;
	if (id <= 0 || id > MAX_JOB || !word_ok(rule, RULE_CHARS, sizeof(s->rule)) ||
	    !word_ok(pol, POLICY_CHARS, sizeof(s->policy)) || !standing_ok(st)) {
		snprintf(err, len, "adv: %s", id <= 0 || id > MAX_JOB ? "job: not a job ID" :
			 !word_ok(rule, RULE_CHARS, sizeof(s->rule)) ? "rule: not a rule name" :
			 !standing_ok(st) ? "standing: not new, kept or probation" :
			 "policy: not a policy file name");
		return -1;
	}
	s->job = id;
	snprintf(s->rule, sizeof(s->rule), "%s", rule);
	snprintf(s->policy, sizeof(s->policy), "%s", pol);
	snprintf(s->standing, sizeof(s->standing), "%s", st);
	return 0;
}

int gpumem_advsrc_parse(const char *text, struct gpumem_advsrc *s, char *err, size_t len)
{
	struct gpumem_json_caps caps = { GPUMEM_ADVSRC_MAX_JSON, 2, 16, "an advised source" };
	struct json_object *v = NULL;
	char why[200];
	int rv;

	if (text == NULL || gpumem_json_parse(text, strlen(text), &caps, &v, why, sizeof(why)) < 0) {
		snprintf(err, len, "%s", text ? why : "none");
		return -1;
	}
	rv = gpumem_advsrc_from_object(v, s, err, len);
	json_object_put(v);
	return rv;
}

void gpumem_advsrc_label(const struct gpumem_advsrc *s, char *out, size_t len)
{
	snprintf(out, len, "%s%s%lld: %s)", s->policy, s->unasked ? " (advised by default from job " :
		 TAG, s->job, s->rule);
}

/* A version 1 record's label "POLICY (advised from job A: RULE)...": 0, or -1. */
static int old_label(const char *name, struct gpumem_advsrc *s)
{
	const char *t = name ? strstr(name, TAG) : NULL, *r;
	char *end;
	size_t pl, rl;

	if (t == NULL || t == name)
		return -1;
	pl = (size_t)(t - name);
	if (pl >= sizeof(s->policy) || strspn(name, POLICY_CHARS) < pl || name[0] == '.')
		return -1;
	t += strlen(TAG);
	if (*t < '1' || *t > '9')
		return -1;
	s->job = strtoll(t, &end, 10);
	if (end[0] != ':' || end[1] != ' ' || s->job <= 0 || s->job > MAX_JOB)
		return -1;
	r = end + 2;
	rl = strspn(r, RULE_CHARS);
	if (rl == 0 || rl >= sizeof(s->rule) || r[rl] != ')')
		return -1;
	snprintf(s->policy, sizeof(s->policy), "%.*s", (int)pl, name);
	snprintf(s->rule, sizeof(s->rule), "%.*s", (int)rl, r);
	snprintf(s->standing, sizeof(s->standing), "new");
	return 0;
}

int gpumem_advsrc_of_record(struct json_object *rec, struct gpumem_advsrc *s)
{
	double v = 0;
	char err[200];

	memset(s, 0, sizeof(*s));
	if (gpumem_json_num(rec, "v", &v) == 0 && v >= 2)
		return json_object_object_get_ex(rec, "adv", NULL) &&
			gpumem_advsrc_from_object(gpumem_json_get(rec, "adv"), s, err,
						  sizeof(err)) == 0;
	if (old_label(gpumem_json_str(rec, "policy"), s) == 0)
		return 1;
	memset(s, 0, sizeof(*s));
	return 0;
}

char *gpumem_advsrc_into_record(const char *json, const struct gpumem_advsrc *s, char *err,
				size_t len)
{
	struct json_object *rec = NULL, *o = NULL;
	char *text = NULL;

	if (gpumem_acct_parse(json, &rec, err, len) < 0)
		return NULL;
	if ((o = gpumem_advsrc_object(s)) == NULL) {
		snprintf(err, len, "out of memory");
		goto fail;
	}
	gpumem_json_add(rec, "adv", o);
	text = gpumem_json_dump(rec, GPUMEM_JSON_COMPACT);
	if (text)
		text[strcspn(text, "\n")] = '\0';
	else
		snprintf(err, len, "out of memory");
fail:
	json_object_put(rec);
	return text;
}

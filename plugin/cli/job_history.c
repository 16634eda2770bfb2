/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem advise JOBID: after the advice, the history of the advised runs
 * of the job's name (core/advice/advice_history.h: which policy was tried, from which
 * job, the gain, kept or not advised again), from the same sacct query
 * --gpumem-policy=advised makes at submission, run as the caller (Slurm
 * decides what they may see) for the job's user.  Names and texts reach
 * the terminal through gpumem_job_text (trust.h's cleaner); --json gets
 * the same history as fields (gpumem_job_history_json, and per name for
 * advise --mine: gpumem_job_history_runs; doc/REPORT-JSON.md).
 *
 * Builds: gpumem (plugin/cli/cli.am).  Includes plugin/core's headers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core_advice.h"
#include "job_cli.h"
#include "core_policy.h"
#include "core_base.h"

#define DEFAULT_SITE GPUMEM_SYSCONFDIR "/slurm/gpumem.yaml"

/* advised.days of the site file gpumem reads (gpumem(1)), else 30. */
static int days_of_site(void)
{
	struct gpumem_site site;
	struct gpumem_diags d = { 0 };
	int have = 0, days = 30;

	gpumem_site_init(&site);
	if (gpumem_site_load_default(NULL, DEFAULT_SITE, &site, &have, &d) == 0 && have)
		days = site.advised.days;
	gpumem_site_free(&site);
	gpumem_diags_free(&d);
	return days;
}

/*
 * The job's name from ROWS (JobIDRaw|JobName, the job then its steps): the
 * job's, or where Slurm's database named it "allocation" (advice_history.h), its
 * first step's.  0, or -1.
 */
static int name_of(char *rows, char *name, size_t len)
{
	char *save = NULL, *line = strtok_r(rows, "\n", &save), *bar;

	if (line == NULL || (bar = strchr(line, '|')) == NULL)
		return -1;
	snprintf(name, len, "%s", bar + 1);
	if (strcmp(name, "allocation") != 0)
		return 0;
	while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
		bar = strchr(line, '|');
		if (bar && strchr(line, '.') && strchr(line, '.') < bar &&
		    strcmp(bar + 1, "batch") && strcmp(bar + 1, "extern")) {
			snprintf(name, len, "%s", bar + 1);
			break;
		}
	}
	return 0;
}

/*
 * The history of JOB's name for USER: A read (gpumem_advised_free it), its
 * name and window in NAME and DAYS; 0, or -1 with why in WHY ("" where
 * nothing is to be said: no such job, a user sacct did not name).
 */
static int lookup(const char *job, const char *user, char *name, size_t nlen, int *days,
		  struct gpumem_advised *a, char *why, size_t wlen)
{
	char err[512], buf[512], *argv[16], *out = NULL;
	char *nargv[] = { "sacct", "-n", "-P", "-j", (char *)job, "-o", "JobIDRaw,JobName", NULL };
	char rows[8192];
	int rv = -1;

	why[0] = '\0';
	*days = days_of_site();
	if (user == NULL || !*user || *user == '-' ||
	    strspn(user, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
	    strlen(user))
		return -1;
	if (gpumem_run_capture(nargv, rows, sizeof(rows), err, sizeof(err), 60) != 0 ||
	    name_of(rows, name, nlen) < 0)
		return -1;
	if (gpumem_advised_argv(name, user, *days, buf, sizeof(buf), argv,
				sizeof(argv) / sizeof(argv[0]), why, wlen) < 0)
		return -1;
	out = malloc(GPUMEM_ADVISED_SACCT_CAP);
	if (out == NULL || gpumem_run_capture(argv, out, GPUMEM_ADVISED_SACCT_CAP, err, sizeof(err),
					      60) != 0 || gpumem_advised_read(out, name, gpumem_job_rules(), a) < 0) {
		snprintf(why, wlen, "sacct failed: %s", out ? err : "out of memory");
		goto fail;
	}
	rv = 0;
fail:
	free(out);
	return rv;
}

void gpumem_job_print_history(const char *job, const char *user)
{
	char name[256], why[600];
	struct gpumem_advised a;
	int days;

	if (lookup(job, user, name, sizeof(name), &days, &a, why, sizeof(why)) < 0) {
		if (why[0])
			printf("history: %s\n", gpumem_job_text(why));
		return;
	}
	printf("history of advised runs of jobs named %s (last %d days):%s\n",
	       gpumem_job_text(name), days, a.nhist ? "" : " none");
	for (size_t i = 0; i < a.nhist; i++)
		printf("  %s\n", gpumem_job_text(a.hist[i].text));
	gpumem_advised_free(&a);
}

struct json_object *gpumem_job_history_runs(const struct gpumem_advised *a)
{
	struct json_object *arr = json_object_new_array();

	for (size_t i = 0; arr && i < a->nhist; i++) {
		const struct gpumem_advised_history *h = &a->hist[i];
		struct json_object *o = json_object_new_object();

		if (o == NULL || json_object_array_add(arr, o) < 0) {
			json_object_put(o);
			json_object_put(arr);
			return NULL;
		}
		gpumem_json_add(o, "job", gpumem_json_int(h->job->id));
		gpumem_json_add(o, "policy", gpumem_json_string(h->job->from_policy));
		gpumem_json_add(o, "from_job", gpumem_json_int(h->job->from));
		gpumem_json_add(o, "rule", gpumem_json_string(h->job->from_rule));
		gpumem_json_add(o, "unasked", gpumem_json_bool(h->job->unasked));
		gpumem_json_add(o, "verdict", gpumem_json_string(h->verdict == GPUMEM_V_KEPT ?
			"kept" : h->verdict == GPUMEM_V_DROPPED ? "not advised again" :
			h->verdict == GPUMEM_V_PROBATION ? "probation" : "not judged"));
		gpumem_json_add(o, "outcome", gpumem_json_string(h->outcome));
		gpumem_json_add(o, "ratio", h->ratio > 0 ? gpumem_json_number(h->ratio) : NULL);
		gpumem_json_add(o, "elapsed_s", gpumem_json_int(h->job->elapsed));
		gpumem_json_add(o, "from_elapsed_s", h->from ? gpumem_json_int(h->from->elapsed) :
				NULL);
		gpumem_json_add(o, "text", gpumem_json_string(h->text));
	}
	return arr;
}

struct json_object *gpumem_job_history_json(const char *job, const char *user)
{
	char name[256], why[600];
	struct gpumem_advised a;
	struct json_object *o;
	int days;

	if (lookup(job, user, name, sizeof(name), &days, &a, why, sizeof(why)) < 0) {
		if (!why[0] || (o = json_object_new_object()) == NULL)
			return NULL;
		gpumem_json_add(o, "error", gpumem_json_string(why));
		return o;
	}
	if ((o = json_object_new_object()) != NULL) {
		gpumem_json_add(o, "name", gpumem_json_string(name));
		gpumem_json_add(o, "days", gpumem_json_int(days));
		gpumem_json_add(o, "runs", gpumem_job_history_runs(&a));
	}
	gpumem_advised_free(&a);
	return o;
}

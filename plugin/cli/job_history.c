/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem advise JOBID: after the advice, the history of the advised runs
 * of the job's name (core/advised.h: which policy was tried, from which
 * job, the gain, kept or not advised again), from the same sacct query
 * --gpumem-policy=advised makes at submission, run as the caller (Slurm
 * decides what they may see) for the job's user.  Names and texts reach
 * the terminal through gpumem_job_text (trust.h's cleaner).
 *
 * Builds: gpumem (plugin/cli/cli.am).  Includes plugin/core's headers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "advised.h"
#include "job_cli.h"
#include "policy.h"
#include "proc.h"

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
 * job's, or where Slurm's database named it "allocation" (advised.h), its
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

void gpumem_job_print_history(const char *job, const char *user)
{
	char name[256], err[512], buf[512], why[200], *argv[16], *out;
	char *nargv[] = { "sacct", "-n", "-P", "-j", (char *)job, "-o", "JobIDRaw,JobName", NULL };
	char rows[8192];
	struct gpumem_advised a;
	int days = days_of_site();

	if (user == NULL || !*user || *user == '-' ||
	    strspn(user, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
	    strlen(user))
		return;
	if (gpumem_run_capture(nargv, rows, sizeof(rows), err, sizeof(err), 60) != 0 ||
	    name_of(rows, name, sizeof(name)) < 0)
		return;
	if (gpumem_advised_argv(name, user, days, buf, sizeof(buf), argv,
				sizeof(argv) / sizeof(argv[0]), why, sizeof(why)) < 0) {
		printf("history: %s\n", gpumem_job_text(why));
		return;
	}
	out = malloc(GPUMEM_ADVISED_SACCT_CAP);
	if (out == NULL || gpumem_run_capture(argv, out, GPUMEM_ADVISED_SACCT_CAP, err, sizeof(err),
					      60) != 0 || gpumem_advised_read(out, name, gpumem_job_rules(), &a) < 0) {
		printf("history: sacct failed: %s\n", out ? gpumem_job_text(err) : "out of memory");
		free(out);
		return;
	}
	printf("history of advised runs of jobs named %s (last %d days):%s\n",
	       gpumem_job_text(name), days, a.nhist ? "" : " none");
	for (size_t i = 0; i < a.nhist; i++)
		printf("  %s\n", gpumem_job_text(a.hist[i].text));
	gpumem_advised_free(&a);
	free(out);
}

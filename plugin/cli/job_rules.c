/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The advice table `gpumem job` and `gpumem advise` use: the
 * site file's advice: section (--site FILE, $GPUMEM_SITE, else the
 * installed file when it exists), else the built-in table (advise.h).  A
 * site file that does not parse is an error naming file:line:col, as in
 * `gpumem validate`.  `gpumem advise --rules [--json]` prints the table in
 * force, in the order it is evaluated, as the site file's advice: section
 * would say it (so it can be copied into one), and checks that each policy
 * it advises is in the site's policy_dir.
 *
 * Builds: gpumem (plugin/cli/cli.am).  Includes plugin/core's headers.
 */
#include <stdio.h>
#include <string.h>
#include "core_advice.h"
#include "job_cli.h"
#include "core_record.h"
#include "core_policy.h"

#define DEFAULT_SITE GPUMEM_SYSCONFDIR "/slurm/gpumem.yaml"

static struct gpumem_site site;
static int have_site;

int gpumem_job_rules_load(const char *cmd, const char *path)
{
	struct gpumem_diags d = { 0 };
	int rv = 0;

	if (gpumem_site_load_default(path, DEFAULT_SITE, &site, &have_site, &d) < 0) {
		fprintf(stderr, "gpumem: %s: the site file's advice rules cannot be read:\n", cmd);
		gpumem_diags_print(&d, stderr);
		rv = -1;
	}
	gpumem_diags_free(&d);
	return rv;
}

const struct gpumem_advice_table *gpumem_job_rules(void)
{
	return gpumem_site_advice(have_site ? &site : NULL);
}

int gpumem_job_by_default(void)
{
	return have_site ? site.advised.by_default : GPUMEM_BY_DEFAULT_OFF;
}

int gpumem_job_advised_days(void)
{
	return have_site ? site.advised.days : 30;
}

const char *gpumem_job_report_dir(void)
{
	return have_site && site.report.dir ? site.report.dir : GPUMEM_REPORT_DEFAULT_DIR;
}

int gpumem_job_rules_print(int json)
{
	const struct gpumem_advice_table *t = gpumem_job_rules();
	struct gpumem_diags d = { 0 };
	int rv = 0;

	if (have_site && gpumem_advice_check_policies(&site, &d) < 0) {
		gpumem_diags_print(&d, stderr);
		rv = -1;
	}
	gpumem_diags_free(&d);
	if (json) {
		struct json_object *o = gpumem_advice_table_json(t);

		if (o == NULL || gpumem_json_write(stdout, o, GPUMEM_JSON_SPACED) < 0 ||
		    putchar('\n') == EOF)
			rv = -1;
		json_object_put(o);
		return rv;
	}
	if (site.advice)
		printf("# The advice rules in force: the site file's (%s).\n",
		       gpumem_job_text(site.path));
	else
		printf("# The advice rules in force: the built-in table (%s%s%s).\n",
		       have_site ? "no advice: section in " : "no site file",
		       have_site ? gpumem_job_text(site.path) : "", have_site ? "" : " found");
	printf("# In this order, the first that matches wins; a GPU that was not sampled\n"
	       "# is \"unsampled\" before any rule.\n");
	gpumem_advice_table_yaml(t, stdout);
	return rv;
}

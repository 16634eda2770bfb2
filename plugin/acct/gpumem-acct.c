/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-acct: puts what each job got on this node into Slurm's accounting
 * (doc/admin/reports.md, "Accounting").  Run as root from the node's job Epilog
 * (after gpumem.so's job epilog, which Slurm runs first): it builds this
 * node's record of the job from the node's own report files, and merges it
 * into the job's AdminComment with sacctmgr, keeping every other byte there
 * (other nodes' records, another tool's content such as jobstats' "JS1:").
 * Nodes write at the same time and sacctmgr has no compare-and-set, so each
 * write is read back after a pause and redone when another node's write
 * took ours away (bounded).  That costs slurmdbd calls that grow with the
 * square of the job's nodes (bench/acct-scale), so a site with a directory
 * that the nodes and slurmctld's host share can move the merge to one
 * place: with --spool, each node's Epilog only leaves its record (or word
 * that it has none) there, and the slurmctld mode, run once per job from
 * EpilogSlurmctld, waits for every node of the job and merges all of them
 * with one read, one write and one read-back.  Each controller run then
 * sweeps the spool: records that came after their job's merge are merged,
 * what stays a day is reaped (spool.c).  Every write addresses exactly one
 * job record, an array task's or a het component's own (dbd.c).  An
 * epilog that fails drains the node: the epilog modes always exit 0 and
 * say what happened on stderr and syslog.
 *
 * Builds: gpumem-acct (plugin/acct/acct.am) with dbd.c and spool.c.  Includes
 * plugin/core's headers.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include "core_record.h"
#include "acctcmd.h"
#include "config.h"
#include "core_policy.h"

#define DEFAULT_SITE GPUMEM_SYSCONFDIR "/slurm/gpumem.yaml"
#define SPOOL_WAIT_S 60
#define SPOOL_REAP_S 86400

void gpumem_acct_say(const struct opts *o, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "gpumem: acct: job %lld on %s: %s\n", o->job, o->node, msg);
	syslog(LOG_NOTICE, "job %lld on %s: %s", o->job, o->node, msg);
}

void gpumem_acct_pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: gpumem-acct [epilog] [--site FILE] [--dir DIR] [--job ID] [--node NAME] [--spool DIR]\n"
		"       gpumem-acct slurmctld --spool DIR [--job ID] [--nodes LIST] [--wait S] [--reap S]\n"
		"       gpumem-acct sweep --spool DIR [--wait S] [--reap S]\n"
		"       gpumem-acct record [--site FILE] [--dir DIR] --job ID --node NAME\n"
		"epilog  (the default; run as root from slurm.conf's Epilog) put this node's\n"
		"        record of the job (SLURM_JOB_ID, SLURMD_NODENAME) into its\n"
		"        AdminComment; with --spool only leave it in DIR; always exits 0\n"
		"slurmctld  (from EpilogSlurmctld, once per job) wait for every node's word\n"
		"        in DIR (SLURM_JOB_NODELIST, at most S seconds, default %d) and\n"
		"        merge all records into the AdminComment at once, then sweep;\n"
		"        always exits 0\n"
		"sweep   merge the records of other jobs left in DIR unchanged for --wait\n"
		"        seconds (late), reap what stays unchanged for --reap seconds\n"
		"        (default %d)\n"
		"record  print the record's JSON and its AdminComment segment\n"
		"--dir: where the reports are (default: report.dir of --site, %s)\n",
		SPOOL_WAIT_S, SPOOL_REAP_S, DEFAULT_SITE);
}

/* One non-negative decimal number of at most 10 digits, or NULL. */
static const char *number(const char *s)
{
	size_t n = s ? strspn(s, "0123456789") : 0;

	return n > 0 && n <= 10 && s[n] == '\0' ? s : NULL;
}

/*
 * What selects exactly this job's record in accounting, from
 * EpilogSlurmctld's environment (slurmctld's job_mgr.c sets the array and
 * het variables for a task or component, nothing of them otherwise): "A_T",
 * "H+O", or the plain id.  The node's Epilog has no such variables: there
 * dbd.c asks sacct.
 */
static void ctld_jobspec(struct opts *o)
{
	const char *aj = number(getenv("SLURM_ARRAY_JOB_ID"));
	const char *at = number(getenv("SLURM_ARRAY_TASK_ID"));
	const char *hj = number(getenv("SLURM_HET_JOB_ID"));
	const char *ho = number(getenv("SLURM_HET_JOB_OFFSET"));

	if (aj && at)
		snprintf(o->jobspec, sizeof(o->jobspec), "%s_%s", aj, at);
	else if (hj && ho && strcmp(hj, "0") != 0)
		snprintf(o->jobspec, sizeof(o->jobspec), "%s+%s", hj, ho);
	else if (!getenv("SLURM_ARRAY_JOB_ID") && !getenv("SLURM_HET_JOB_ID"))
		snprintf(o->jobspec, sizeof(o->jobspec), "%lld", o->job);
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "site", required_argument, 0, 's' }, { "dir", required_argument, 0, 'd' },
		{ "job", required_argument, 0, 'j' }, { "node", required_argument, 0, 'n' },
		{ "spool", required_argument, 0, 'p' }, { "nodes", required_argument, 0, 'N' },
		{ "wait", required_argument, 0, 'w' }, { "reap", required_argument, 0, 'r' },
		{ "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 }
	};
	const char *job = getenv("SLURM_JOB_ID"), *given = NULL;
	static char host[256];
	int c;

	o->node = o->ctld || o->sweep ? "slurmctld" : getenv("SLURMD_NODENAME");
	o->nodes = getenv("SLURM_JOB_NODELIST");
	o->wait_s = SPOOL_WAIT_S;
	o->reap_s = SPOOL_REAP_S;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's': o->site = optarg; break;
		case 'd': o->dir = optarg; break;
		case 'j': job = given = optarg; break;
		case 'n': o->node = optarg; break;
		case 'p': o->spool = optarg; break;
		case 'N': o->nodes = optarg; break;
		case 'w': o->wait_s = number(optarg) ? atoi(optarg) : -1; break;
		case 'r': o->reap_s = number(optarg) ? atoi(optarg) : -1; break;
		case 'h': usage(stdout); exit(0);
		default: return -1;
		}
	}
	if (o->sweep)
		job = "0";
	if (optind != argc || job == NULL || *job == '\0') {
		fprintf(stderr, "gpumem: acct: %s\n", optind != argc ? "unexpected argument" :
			"no job: give --job ID or run from the Epilog (SLURM_JOB_ID)");
		return -1;
	}
	if (o->spool && o->spool[0] != '/') {
		fprintf(stderr, "gpumem: acct: --spool '%s' is no absolute path\n", o->spool);
		return -1;
	}
	if ((o->ctld || o->sweep) && (o->spool == NULL || (o->ctld && (o->nodes == NULL || *o->nodes == '\0')) ||
				      o->wait_s < 0 || o->wait_s > 3600 ||
				      o->reap_s < o->wait_s || o->reap_s > 30 * 86400)) {
		fprintf(stderr, "gpumem: acct: %s: %s\n", o->ctld ? "slurmctld" : "sweep",
			o->spool == NULL ? "give --spool DIR" : o->wait_s < 0 || o->wait_s > 3600 ?
			"--wait is 0 to 3600 seconds" : o->reap_s < o->wait_s || o->reap_s > 30 * 86400 ?
			"--reap is --wait to 2592000 seconds (30 days)" :
			"no nodes: give --nodes LIST or run from EpilogSlurmctld (SLURM_JOB_NODELIST)");
		return -1;
	}
	char *end;
	o->job = strtoll(job, &end, 10);
	if (*end || o->job < 0 || (o->job == 0 && !o->sweep)) {
		fprintf(stderr, "gpumem: acct: --job '%s' is no job ID\n", job);
		return -1;
	}
	if (o->ctld && given == NULL)
		ctld_jobspec(o);
	if (o->node == NULL || *o->node == '\0') {
		if (gethostname(host, sizeof(host) - 1) < 0)
			return -1;
		host[strcspn(host, ".")] = '\0';
		o->node = host;
	}
	return 0;
}

static char *report_dir(const struct opts *o)
{
	struct gpumem_site site;
	struct gpumem_diags d = { 0 };
	char *dir = NULL;
	int have = 0;

	if (o->dir)
		return strdup(o->dir);
	gpumem_site_init(&site);
	if (gpumem_site_load_default(o->site, DEFAULT_SITE, &site, &have, &d) < 0) {
		char *msg = gpumem_diags_join(&d, 1);

		gpumem_acct_say(o, "site file unusable: %s", msg ? msg : "");
		free(msg);
	} else {
		dir = strdup(site.report.dir ? site.report.dir : GPUMEM_REPORT_DEFAULT_DIR);
	}
	gpumem_diags_free(&d);
	gpumem_site_free(&site);
	return dir;
}

/*
 * The advised source srun forwarded (advsrc.h) into the record *JSON:
 * Slurm gives the job's SPANK_ variables to the node's epilog.  The
 * fields are the job's user's and checked like any of theirs; fields
 * that do not check are said and left out (the record is kept).  0, or
 * -1 out of memory.
 */
static int with_advised(struct opts *o, char **json)
{
	const char *text = getenv("SPANK_" GPUMEM_ADVSRC_ENV);
	struct gpumem_advsrc s;
	char err[300], *j;

	if (text == NULL || !*text || o->sweep)
		return 0;
	if (gpumem_advsrc_parse(text, &s, err, sizeof(err)) < 0) {
		gpumem_acct_say(o, "the forwarded advised source is left out: %s", err);
		return 0;
	}
	j = gpumem_advsrc_into_record(*json, &s, err, sizeof(err));
	if (j == NULL) {
		gpumem_acct_say(o, "%s", err);
		return -1;
	}
	free(*json);
	*json = j;
	return 0;
}

static int run(struct opts *o, int print)
{
	char err[512], *dir = report_dir(o), *json = NULL, *seg = NULL;
	int n = 0, rv = -1;

	if (dir == NULL)
		goto fail;
	json = gpumem_acct_build(dir, o->job, o->node, &n, err, sizeof(err));
	if (json == NULL) {
		if (n == 0 && !print)
			rv = 0; /* no check ran for this job here: nothing to say */
		else if (n == 0)
			gpumem_acct_say(o, "no report of this job in %s", dir);
		else
			gpumem_acct_say(o, "%s", err);
		goto fail;
	}
	if (with_advised(o, &json) < 0)
		goto fail;
	seg = gpumem_acct_encode(json, err, sizeof(err));
	if (seg == NULL) {
		gpumem_acct_say(o, "%s", err);
		goto fail;
	}
	if (print) {
		printf("%s\n%s\n", json, seg);
		rv = 0;
	} else if (o->spool) {
		rv = gpumem_acct_spool_put(o, seg);
	} else {
		rv = gpumem_acct_store(o, &(struct rec){ (char *)o->node, seg }, 1,
				       GPUMEM_ACCT_ATTEMPTS);
	}
fail:
	/* With --spool the controller waits for each node's word: "none" too. */
	if (o->spool && !print && seg == NULL)
		gpumem_acct_spool_put(o, NULL);
	free(dir);
	free(json);
	free(seg);
	return rv;
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	int print = 0;

	if (argc > 1 && strcmp(argv[1], "record") == 0) {
		print = 1;
		argv++, argc--;
	} else if (argc > 1 && strcmp(argv[1], "epilog") == 0) {
		argv++, argc--;
	} else if (argc > 1 && strcmp(argv[1], "slurmctld") == 0) {
		o.ctld = 1;
		argv++, argc--;
	} else if (argc > 1 && strcmp(argv[1], "sweep") == 0) {
		o.sweep = 1;
		argv++, argc--;
	}
	if (parse(argc, argv, &o) < 0) {
		usage(stderr);
		return print ? 64 : 0;
	}
	openlog("gpumem-acct", LOG_PID, LOG_DAEMON);
	if (print)
		return run(&o, 1) == 0 ? 0 : 1;
	if (o.ctld)
		gpumem_acct_ctld(&o);
	if (o.ctld || o.sweep)
		gpumem_acct_sweep(&o);  /* other jobs' late records, old leftovers */
	else
		run(&o, 0);
	return 0;       /* an epilog's failure would drain the node */
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-acct: puts what each job got on this node into Slurm's accounting
 * (doc/ADMIN.md, "Accounting").  Run as root from the node's job Epilog
 * (after gpumem.so's job epilog, which Slurm runs first): it builds this
 * node's record of the job from the node's own report files, and merges it
 * into the job's AdminComment with sacctmgr, keeping every other byte there
 * (other nodes' records, another tool's content such as jobstats' "JS1:").
 * Nodes write at the same time and sacctmgr has no compare-and-set, so each
 * write is read back after a pause and redone when another node's write
 * took ours away (bounded).  An epilog that fails drains the node: the
 * epilog mode always exits 0 and says what happened on stderr and syslog.
 *
 * Builds: gpumem-acct (plugin/acct/acct.am).  Includes plugin/core's headers.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include "acct.h"
#include "proc.h"
#include "config.h"
#include "policy.h"

#define DEFAULT_SITE GPUMEM_SYSCONFDIR "/slurm/gpumem.yaml"
#define COMMENT_CAP (64 * 1024 + 2)
#define ATTEMPTS 6
#define TIMEOUT_S 30

struct opts {
	const char *site, *dir, *node;
	char jobspec[64];       /* what sacct/sacctmgr call the job: "12" or "10_3" */
	long long job;
	int quiet;
};

__attribute__((format(printf, 2, 3)))
static void say(const struct opts *o, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "gpumem: acct: job %s on %s: %s\n", o->jobspec, o->node, msg);
	syslog(LOG_NOTICE, "job %s on %s: %s", o->jobspec, o->node, msg);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: gpumem-acct [epilog] [--site FILE] [--dir DIR] [--job ID] [--node NAME]\n"
		"       gpumem-acct record [--site FILE] [--dir DIR] --job ID --node NAME\n"
		"epilog  (the default; run as root from slurm.conf's Epilog) put this node's\n"
		"        record of the job (SLURM_JOB_ID, SLURMD_NODENAME) into its\n"
		"        AdminComment; always exits 0\n"
		"record  print the record's JSON and its AdminComment segment\n"
		"DIR: the site file's report.dir (default %s)\n", DEFAULT_SITE);
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "site", required_argument, 0, 's' }, { "dir", required_argument, 0, 'd' },
		{ "job", required_argument, 0, 'j' }, { "node", required_argument, 0, 'n' },
		{ "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 }
	};
	const char *job = getenv("SLURM_JOB_ID"), *aj = getenv("SLURM_ARRAY_JOB_ID");
	const char *at = getenv("SLURM_ARRAY_TASK_ID");
	static char host[256];
	int c;

	o->node = getenv("SLURMD_NODENAME");
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's': o->site = optarg; break;
		case 'd': o->dir = optarg; break;
		case 'j': job = optarg; aj = NULL; break;
		case 'n': o->node = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: return -1;
		}
	}
	if (optind != argc || job == NULL || *job == '\0') {
		fprintf(stderr, "gpumem: acct: %s\n", optind != argc ? "unexpected argument" :
			"no job: give --job ID or run from the Epilog (SLURM_JOB_ID)");
		return -1;
	}
	char *end;
	o->job = strtoll(job, &end, 10);
	if (*end || o->job <= 0) {
		fprintf(stderr, "gpumem: acct: --job '%s' is no job ID\n", job);
		return -1;
	}
	/* The last task of an array has the array's own ID: name it by task. */
	if (aj && at && strcmp(aj, job) == 0 && strspn(at, "0123456789") == strlen(at) && *at)
		snprintf(o->jobspec, sizeof(o->jobspec), "%lld_%s", o->job, at);
	else
		snprintf(o->jobspec, sizeof(o->jobspec), "%lld", o->job);
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

		say(o, "site file unusable: %s", msg ? msg : "");
		free(msg);
	} else {
		dir = strdup(site.report.dir ? site.report.dir : GPUMEM_REPORT_DEFAULT_DIR);
	}
	gpumem_diags_free(&d);
	gpumem_site_free(&site);
	return dir;
}

/* sacctmgr before 23.02 lower-cases what it sets. */
static int sacctmgr_lowers(void)
{
	char out[256], err[256];
	char *argv[] = { "sacctmgr", "-V", NULL };
	int major = 0, minor = 0;

	if (gpumem_run_capture(argv, out, sizeof(out), err, sizeof(err), TIMEOUT_S) != 0 ||
	    sscanf(out, "slurm %d.%d", &major, &minor) != 2)
		return 1;       /* unknown: assume the strict rule */
	return major < 23 || (major == 23 && minor < 2);
}

/* The job's AdminComment now: 0, 1 when the job is not (yet) in accounting, -1. */
static int read_comment(const struct opts *o, char *buf, size_t cap, char *err, size_t errlen)
{
	char *argv[] = { "sacct", "-X", "-n", "-P", "-j", (char *)o->jobspec, "-o",
			 "AdminComment", NULL };
	int rc = gpumem_run_capture(argv, buf, cap, err, errlen, TIMEOUT_S);

	if (rc != 0) {
		if (rc > 0 && !err[0])
			snprintf(err, errlen, "sacct exited with %d", rc);
		return -1;
	}
	if (buf[0] == '\0')
		return 1;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int write_comment(const struct opts *o, const char *value, char *err, size_t errlen)
{
	char where[96], *set = NULL, out[1024];
	int rc;

	snprintf(where, sizeof(where), "jobid=%s", o->jobspec);
	if (asprintf(&set, "AdminComment=%s", value) < 0)
		return -1;
	char *argv[] = { "sacctmgr", "-i", "modify", "job", "where", where, "set", set, NULL };
	rc = gpumem_run_capture(argv, out, sizeof(out), err, errlen, TIMEOUT_S);
	free(set);
	if (rc != 0 && rc > 0 && !err[0])
		snprintf(err, errlen, "sacctmgr exited with %d: %.200s", rc, out);
	return rc == 0 ? 0 : -1;
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * Read, merge, write, pause, read back: done when our segment is there.
 * A node that wrote between our read and our write took ours away, and
 * the read-back sees it.  0, or -1 when it gave up.
 */
static int store(const struct opts *o, const char *seg)
{
	static char cur[COMMENT_CAP];
	char err[512];
	int lowers = sacctmgr_lowers();

	srand((unsigned)(getpid() ^ time(NULL)));
	for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
		char *merged;
		int rc = read_comment(o, cur, sizeof(cur), err, sizeof(err));

		if (rc != 0) {
			say(o, "attempt %d: %s", attempt, rc > 0 ? "job not in accounting yet" : err);
			pause_ms(500L * attempt + rand() % 500);
			continue;
		}
		merged = gpumem_acct_merge(cur, o->node, seg);
		if (merged == NULL)
			return -1;
		if (gpumem_acct_storable(merged, lowers, err, sizeof(err)) < 0) {
			say(o, "not written: the job's AdminComment would not survive sacctmgr "
			    "unchanged (%s); another tool's content is never altered", err);
			free(merged);
			return -1;
		}
		if (strlen(merged) > COMMENT_CAP - 2) {
			say(o, "not written: AdminComment would be %zu bytes, past the "
			    "database's 65535", strlen(merged));
			free(merged);
			return -1;
		}
		rc = strcmp(merged, cur) == 0 ? 0 : write_comment(o, merged, err, sizeof(err));
		free(merged);
		if (rc < 0)
			say(o, "attempt %d: %s", attempt, err);
		pause_ms(200 + rand() % 600);
		if (rc == 0 && read_comment(o, cur, sizeof(cur), err, sizeof(err)) == 0 &&
		    strstr(cur, seg) != NULL) {
			say(o, "recorded (%zu bytes, attempt %d)", strlen(seg), attempt);
			return 0;
		}
	}
	say(o, "gave up after %d attempts: no record in accounting", ATTEMPTS);
	return -1;
}

static int run(const struct opts *o, int print)
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
			say(o, "no report of this job in %s", dir);
		else
			say(o, "%s", err);
		goto fail;
	}
	seg = gpumem_acct_encode(json, err, sizeof(err));
	if (seg == NULL) {
		say(o, "%s", err);
		goto fail;
	}
	if (print) {
		printf("%s\n%s\n", json, seg);
		rv = 0;
	} else {
		rv = store(o, seg);
	}
fail:
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
	}
	if (parse(argc, argv, &o) < 0) {
		usage(stderr);
		return print ? 64 : 0;
	}
	openlog("gpumem-acct", LOG_PID, LOG_DAEMON);
	if (print)
		return run(&o, 1) == 0 ? 0 : 1;
	run(&o, 0);
	return 0;       /* an epilog's failure would drain the node */
}

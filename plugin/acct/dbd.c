/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-acct's side of slurmdbd (doc/admin/reports.md, "Accounting"): read, merge,
 * write and read back the AdminComment of exactly one job record.
 *
 * `sacct -j ID` and `sacctmgr modify job where jobid=ID` select with one
 * query (as_mysql_jobacct_process.c, _setup_job_cond_selected_steps, the
 * same in 22.05, 24.11 and 26.05): "id_job=ID || het_job_id=ID ||
 * id_array_job=ID".  The id of an array's last task is the array's id, and
 * a het job's first component has the het job's id: there ID alone names
 * every task or component, and a write would rewrite all of them.  Only
 * "A_T" (id_array_job, id_array_task) and "H+O" (het_job_id,
 * het_job_offset) name one.  So the job is always addressed as sacct names
 * it: EpilogSlurmctld's environment says it (SLURM_ARRAY_JOB_ID/_TASK_ID,
 * SLURM_HET_JOB_ID/_OFFSET: job_mgr.c), the node's Epilog does not (no
 * array variables, SLURM_HET_JOB_ID without the offset: prep_script_slurmd.c),
 * so there it is looked up once: the row of `squeue -j ID -o %A|%i` (or,
 * once slurmctld has forgotten the job, `sacct -j ID -o JobIDRaw,JobID`)
 * whose first field is the job's own id.  Every read then checks that it got
 * that one row and nothing else; anything else is not written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core_record.h"
#include "acctcmd.h"
#include "core_base.h"

#define COMMENT_CAP (64 * 1024 + 2)
/* sacct's answer for every task of an array (-o JobIDRaw,JobID): 1 MiB, about 40,000 tasks. */
#define RESOLVE_CAP (1024 * 1024)

int gpumem_acct_spec_ok(const char *spec)
{
	size_t n = strspn(spec, "0123456789");

	if (n == 0 || n > 10)
		return 0;
	if (spec[n] == '\0')
		return 1;
	if (spec[n] != '_' && spec[n] != '+')
		return 0;
	spec += n + 1;
	n = strspn(spec, "0123456789");
	return n > 0 && n <= 10 && spec[n] == '\0';
}

/*
 * sacctmgr before 23.02 lower-cases what it sets.  `sacctmgr -V` says
 * "slurm 24.11.5" as SchedMD builds it and "slurm-wlm 24.11.5" as Debian
 * does: the version is the word after the name.
 */
static int sacctmgr_lowers(void)
{
	char out[256], err[256];
	char *argv[] = { "sacctmgr", "-V", NULL };
	int major = 0, minor = 0;
	const char *v;

	if (gpumem_run_capture(argv, out, sizeof(out), err, sizeof(err), GPUMEM_ACCT_TIMEOUT_S) != 0 ||
	    strncmp(out, "slurm", 5) != 0)
		return 1;       /* unknown: assume the strict rule */
	v = strchr(out, ' ');
	if (v == NULL || sscanf(v, " %d.%d", &major, &minor) != 2)
		return 1;
	return major < 23 || (major == 23 && minor < 2);
}

/*
 * Lines "RAW|REST" of OUT: REST of the line whose RAW is the job's own id
 * (cut at its newline; REST points into OUT), and how many lines there were.
 */
static char *own_row(const struct opts *o, char *out, int *rows)
{
	char id[24], *mine = NULL;
	size_t il = (size_t)snprintf(id, sizeof(id), "%lld", o->job);

	*rows = 0;
	for (char *line = out; line && *line; ) {
		char *nl = strchr(line, '\n');

		if (nl)
			*nl++ = '\0';
		(*rows)++;
		if (strncmp(line, id, il) == 0 && line[il] == '|')
			mine = line + il + 1;
		line = nl;
	}
	return mine;
}

/*
 * o->jobspec from the row of ARGV's answer ("RAW|SPEC" lines) that is the
 * job's own.  0, 1 when it has no such row, -1.
 */
static int spec_from(struct opts *o, char *const argv[], char *err, size_t errlen)
{
	char *out = malloc(RESOLVE_CAP), *spec;
	int rc, rows, full;

	if (out == NULL)
		return -1;
	rc = gpumem_run_capture(argv, out, RESOLVE_CAP, err, errlen, GPUMEM_ACCT_TIMEOUT_S);
	if (rc != 0) {
		if (rc > 0 && !err[0])
			snprintf(err, errlen, "%s exited with %d", argv[0], rc);
		free(out);
		return -1;
	}
	full = strlen(out) >= RESOLVE_CAP - 1;
	spec = own_row(o, out, &rows);
	if (spec && !gpumem_acct_spec_ok(spec)) {
		snprintf(err, errlen, "%s calls job %lld '%.40s': not understood", argv[0], o->job, spec);
		free(out);
		return -1;
	}
	if (spec)
		snprintf(o->jobspec, sizeof(o->jobspec), "%s", spec);
	else if (full)
		snprintf(err, errlen, "%s -j %lld answered over %d bytes without the job's own row",
			 argv[0], o->job, RESOLVE_CAP - 1);
	free(out);
	return spec ? 0 : full ? -1 : 1;
}

/*
 * o->jobspec: what slurmctld calls the job while it still has it (squeue's
 * %i: "10_3", "20+1", "12"; the node's Epilog runs while the job is
 * completing), else what the database calls it (sacct's JobID).  Not the
 * database first: slurmctld tells slurmdbd about a job asynchronously, and
 * near the job's end the database may not know yet that it is an array
 * task.  0, 1 when neither knows the job (yet), -1.
 */
static int resolve(struct opts *o, char *err, size_t errlen)
{
	char id[24];
	char *squeue[] = { "squeue", "-h", "-t", "all", "-j", id, "-o", "%A|%i", NULL };
	char *sacct[] = { "sacct", "-X", "-n", "-P", "-j", id, "-o", "JobIDRaw,JobID", NULL };
	int rc;

	snprintf(id, sizeof(id), "%lld", o->job);
	rc = spec_from(o, squeue, err, errlen);
	return rc == 0 ? 0 : spec_from(o, sacct, err, errlen);
}

/* The job's AdminComment now: 0, 1 when the job is not (yet) in accounting, -1. */
static int read_comment(struct opts *o, char *buf, size_t cap, char *err, size_t errlen)
{
	char *argv[] = { "sacct", "-X", "-n", "-P", "-j", o->jobspec, "-o",
			 "JobIDRaw,AdminComment", NULL };
	char *mine;
	int rc, rows;

	if (o->jobspec[0] == '\0' && (rc = resolve(o, err, errlen)) != 0)
		return rc;
	rc = gpumem_run_capture(argv, buf, cap, err, errlen, GPUMEM_ACCT_TIMEOUT_S);
	if (rc != 0) {
		if (rc > 0 && !err[0])
			snprintf(err, errlen, "sacct exited with %d", rc);
		return -1;
	}
	if (buf[0] == '\0')
		return 1;
	mine = own_row(o, buf, &rows);
	if (mine == NULL || rows != 1) {
		/* A write would reach every row sacct -j SPEC names: never more than ours. */
		snprintf(err, errlen, "sacct -j %s names %d job records%s: not written",
			 o->jobspec, rows, mine ? "" : ", none of them this job's own");
		return -1;
	}
	memmove(buf, mine, strlen(mine) + 1);
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
	rc = gpumem_run_capture(argv, out, sizeof(out), err, errlen, GPUMEM_ACCT_TIMEOUT_S);
	free(set);
	if (rc != 0 && rc > 0 && !err[0])
		snprintf(err, errlen, "sacctmgr exited with %d: %.200s", rc, out);
	return rc == 0 ? 0 : -1;
}

/* CUR with every record of R merged in (malloc'd), or NULL (said why). */
static char *merged_value(const struct opts *o, const char *cur, const struct rec *r, int n,
			  int lowers)
{
	char err[512], *merged = strdup(cur);

	for (int i = 0; i < n && merged; i++) {
		char *m = gpumem_acct_merge(merged, r[i].node, r[i].seg);

		free(merged);
		merged = m;
	}
	if (merged == NULL)
		return NULL;
	if (gpumem_acct_storable(merged, lowers, err, sizeof(err)) < 0) {
		gpumem_acct_say(o, "not written: the job's AdminComment would not survive sacctmgr "
				"unchanged (%s); another tool's content is never altered", err);
	} else if (strlen(merged) > COMMENT_CAP - 2) {
		gpumem_acct_say(o, "not written: AdminComment would be %zu bytes, past the "
				"database's 65535", strlen(merged));
	} else {
		return merged;
	}
	free(merged);
	return NULL;
}

/*
 * Read, merge, write, pause, read back: done when every record of R is
 * there.  A writer between our read and our write took ours away, and the
 * read-back sees it.  0, or -1 when it gave up.
 */
int gpumem_acct_store(struct opts *o, const struct rec *r, int n, int attempts)
{
	static char cur[COMMENT_CAP + 32];
	char err[512];
	int lowers = sacctmgr_lowers();
	size_t bytes = 0;

	for (int i = 0; i < n; i++)
		bytes += strlen(r[i].seg);
	srand((unsigned)(getpid() ^ time(NULL)));
	for (int attempt = 1; attempt <= attempts; attempt++) {
		char *merged;
		int rc = read_comment(o, cur, sizeof(cur), err, sizeof(err)), all = 1;

		if (rc != 0) {
			gpumem_acct_say(o, "attempt %d: %s", attempt,
					rc > 0 ? "job not in accounting yet" : err);
			gpumem_acct_pause_ms(500L * attempt + rand() % 500);
			continue;
		}
		merged = merged_value(o, cur, r, n, lowers);
		if (merged == NULL)
			return -1;
		rc = strcmp(merged, cur) == 0 ? 0 : write_comment(o, merged, err, sizeof(err));
		free(merged);
		if (rc < 0)
			gpumem_acct_say(o, "attempt %d: %s", attempt, err);
		gpumem_acct_pause_ms(200 + rand() % 600);
		if (rc == 0 && read_comment(o, cur, sizeof(cur), err, sizeof(err)) == 0) {
			for (int i = 0; i < n; i++)
				all = all && strstr(cur, r[i].seg) != NULL;
			if (all && o->ctld)
				gpumem_acct_say(o, "recorded %d node records as %s (%zu bytes, attempt %d)",
						n, o->jobspec, bytes, attempt);
			else if (all)
				gpumem_acct_say(o, "recorded as %s (%zu bytes, attempt %d)",
						o->jobspec, bytes, attempt);
			if (all)
				return 0;
		}
	}
	gpumem_acct_say(o, "gave up after %d attempts: no record in accounting", attempts);
	return -1;
}

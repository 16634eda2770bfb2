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
 * took ours away (bounded).  That costs slurmdbd calls that grow with the
 * square of the job's nodes (bench/acct-scale), so a site with a directory
 * that the nodes and slurmctld's host share can move the merge to one
 * place: with --spool, each node's Epilog only leaves its record (or word
 * that it has none) there, and the slurmctld mode, run once per job from
 * EpilogSlurmctld, waits for every node of the job and merges all of them
 * with one read, one write and one read-back.  An epilog that fails drains
 * the node: the epilog modes always exit 0 and say what happened on stderr
 * and syslog.
 *
 * Builds: gpumem-acct (plugin/acct/acct.am).  Includes plugin/core's headers.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>
#include "acct.h"
#include "proc.h"
#include "config.h"
#include "policy.h"
#include "trust.h"

#define DEFAULT_SITE GPUMEM_SYSCONFDIR "/slurm/gpumem.yaml"
#define COMMENT_CAP (64 * 1024 + 2)
#define ATTEMPTS 6
#define TIMEOUT_S 30
#define SPOOL_WAIT_S 60
#define MAX_NODES 4096

/* One node's record: its node and its segment "{~...~}". */
struct rec {
	char *node, *seg;
};

struct opts {
	const char *site, *dir, *node, *spool, *nodes;
	char jobspec[64];       /* what sacct/sacctmgr call the job: "12" or "10_3" */
	long long job;
	int ctld;               /* the slurmctld mode (EpilogSlurmctld) */
	int wait_s;
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
		"Usage: gpumem-acct [epilog] [--site FILE] [--dir DIR] [--job ID] [--node NAME] [--spool DIR]\n"
		"       gpumem-acct slurmctld --spool DIR [--job ID] [--nodes LIST] [--wait S]\n"
		"       gpumem-acct record [--site FILE] [--dir DIR] --job ID --node NAME\n"
		"epilog  (the default; run as root from slurm.conf's Epilog) put this node's\n"
		"        record of the job (SLURM_JOB_ID, SLURMD_NODENAME) into its\n"
		"        AdminComment; with --spool only leave it in DIR; always exits 0\n"
		"slurmctld  (from EpilogSlurmctld, once per job) wait for every node's word\n"
		"        in DIR (SLURM_JOB_NODELIST, at most S seconds, default %d) and\n"
		"        merge all records into the AdminComment at once; always exits 0\n"
		"record  print the record's JSON and its AdminComment segment\n"
		"--dir: where the reports are (default: report.dir of --site, %s)\n", SPOOL_WAIT_S, DEFAULT_SITE);
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "site", required_argument, 0, 's' }, { "dir", required_argument, 0, 'd' },
		{ "job", required_argument, 0, 'j' }, { "node", required_argument, 0, 'n' },
		{ "spool", required_argument, 0, 'p' }, { "nodes", required_argument, 0, 'N' },
		{ "wait", required_argument, 0, 'w' }, { "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 }
	};
	const char *job = getenv("SLURM_JOB_ID"), *aj = getenv("SLURM_ARRAY_JOB_ID");
	const char *at = getenv("SLURM_ARRAY_TASK_ID");
	static char host[256];
	int c;

	o->node = o->ctld ? "slurmctld" : getenv("SLURMD_NODENAME");
	o->nodes = getenv("SLURM_JOB_NODELIST");
	o->wait_s = SPOOL_WAIT_S;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's': o->site = optarg; break;
		case 'd': o->dir = optarg; break;
		case 'j': job = optarg; aj = NULL; break;
		case 'n': o->node = optarg; break;
		case 'p': o->spool = optarg; break;
		case 'N': o->nodes = optarg; break;
		case 'w': o->wait_s = atoi(optarg); break;
		case 'h': usage(stdout); exit(0);
		default: return -1;
		}
	}
	if (optind != argc || job == NULL || *job == '\0') {
		fprintf(stderr, "gpumem: acct: %s\n", optind != argc ? "unexpected argument" :
			"no job: give --job ID or run from the Epilog (SLURM_JOB_ID)");
		return -1;
	}
	if (o->spool && o->spool[0] != '/') {
		fprintf(stderr, "gpumem: acct: --spool '%s' is no absolute path\n", o->spool);
		return -1;
	}
	if (o->ctld && (o->spool == NULL || o->nodes == NULL || *o->nodes == '\0' ||
			o->wait_s < 0 || o->wait_s > 3600)) {
		fprintf(stderr, "gpumem: acct: slurmctld: %s\n", o->spool == NULL ?
			"give --spool DIR" : o->wait_s < 0 || o->wait_s > 3600 ?
			"--wait is 0 to 3600 seconds" :
			"no nodes: give --nodes LIST or run from EpilogSlurmctld (SLURM_JOB_NODELIST)");
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
 * Read, merge, write, pause, read back: done when every record of R is
 * there.  A writer between our read and our write took ours away, and the
 * read-back sees it.  0, or -1 when it gave up.
 */
static int store(const struct opts *o, const struct rec *r, int n)
{
	static char cur[COMMENT_CAP];
	char err[512];
	int lowers = sacctmgr_lowers();
	size_t bytes = 0;

	for (int i = 0; i < n; i++)
		bytes += strlen(r[i].seg);
	srand((unsigned)(getpid() ^ time(NULL)));
	for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
		char *merged;
		int rc = read_comment(o, cur, sizeof(cur), err, sizeof(err)), all = 1;

		if (rc != 0) {
			say(o, "attempt %d: %s", attempt, rc > 0 ? "job not in accounting yet" : err);
			pause_ms(500L * attempt + rand() % 500);
			continue;
		}
		merged = strdup(cur);
		for (int i = 0; i < n && merged; i++) {
			char *m = gpumem_acct_merge(merged, r[i].node, r[i].seg);

			free(merged);
			merged = m;
		}
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
		if (rc == 0 && read_comment(o, cur, sizeof(cur), err, sizeof(err)) == 0) {
			for (int i = 0; i < n; i++)
				all = all && strstr(cur, r[i].seg) != NULL;
			if (all && o->ctld)
				say(o, "recorded %d node records (%zu bytes, attempt %d)", n, bytes, attempt);
			else if (all)
				say(o, "recorded (%zu bytes, attempt %d)", bytes, attempt);
			if (all)
				return 0;
		}
	}
	say(o, "gave up after %d attempts: no record in accounting", ATTEMPTS);
	return -1;
}

/*
 * An open spool directory fit for root: a directory (no link) that only its
 * owner, root or EUID, may write; the job's own below it when JOB is set
 * (created 0755 by the epilog mode).  fd, -1 (the reason said unless the
 * job's directory is only not there yet), or -2 when the spool is refused.
 */
static int spool_open(const struct opts *o, int create)
{
	struct stat st;
	int fd = open(o->spool, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), jfd = -1;

	if (fd < 0 || fstat(fd, &st) < 0)
		goto bad;
	if ((st.st_mode & 022) || (st.st_uid != 0 && st.st_uid != geteuid())) {
		say(o, "spool %s refused: writable by group or others, or owned by uid %u",
		    o->spool, (unsigned)st.st_uid);
		close(fd);
		return -2;
	}
	if (create && mkdirat(fd, o->jobspec, 0755) < 0 && errno != EEXIST)
		goto bad;
	jfd = openat(fd, o->jobspec, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (jfd < 0 && (create || errno != ENOENT))
		goto bad;
	if (jfd >= 0 && (fstat(jfd, &st) < 0 || (st.st_mode & 022) ||
			 (st.st_uid != 0 && st.st_uid != geteuid()))) {
		say(o, "spool %s/%s refused: writable by others, or not ours", o->spool, o->jobspec);
		close(jfd);
		jfd = -2;
	}
	close(fd);
	return jfd;
bad:
	say(o, "spool %s/%s: %s", o->spool, o->jobspec, strerror(errno));
	if (fd >= 0)
		close(fd);
	return -1;
}

/* NODE's word in the job's spool directory: its record SEG, or NONE (no record); 300 bytes each. */
static void word_names(const char *node, char seg[300], char none[300])
{
	snprintf(seg, 300, "%s.seg", node);
	snprintf(none, 300, "%s.none", node);
	gpumem_safe_name(seg);
	gpumem_safe_name(none);
}

/* The epilog mode with --spool: NODE.seg holds SEG, or NODE.none says "no record". */
static int spool_put(const struct opts *o, const char *seg)
{
	char segname[300], nonename[300], tmp[320], *name = seg ? segname : nonename;
	int jfd = spool_open(o, 1), fd = -1, rv = -1;
	size_t len = seg ? strlen(seg) : 0;

	if (jfd < 0)
		return -1;
	word_names(o->node, segname, nonename);
	snprintf(tmp, sizeof(tmp), ".%s.%ld", name, (long)getpid());
	fd = openat(jfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || (len && write(fd, seg, len) != (ssize_t)len) || close(fd) < 0 ||
	    renameat(jfd, tmp, jfd, name) < 0) {
		say(o, "spool %s/%s/%s: %s", o->spool, o->jobspec, name, strerror(errno));
		unlinkat(jfd, tmp, 0);
		goto fail;
	}
	if (seg)
		say(o, "spooled (%zu bytes) in %s/%s", len, o->spool, o->jobspec);
	rv = 0;
fail:
	close(jfd);
	return rv;
}

/* NODE's segment from the spool, checked to be a record of NODE; NULL if none. */
static char *spool_get(const struct opts *o, int jfd, const char *node)
{
	char name[300], none[300], buf[GPUMEM_ACCT_MAX_SEGMENT + 1], err[256], *json = NULL;
	struct json_object *v = NULL, *jn;
	struct stat st;
	ssize_t len;
	int fd;

	word_names(node, name, none);
	fd = openat(jfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	len = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, buf, sizeof(buf)) : -1;
	close(fd);
	if (len < 4 || len > GPUMEM_ACCT_MAX_SEGMENT || strncmp(buf, GPUMEM_ACCT_OPEN, 2) ||
	    strncmp(buf + len - 2, GPUMEM_ACCT_CLOSE, 2)) {
		say(o, "node %s's spooled record refused: not one segment", node);
		return NULL;
	}
	buf[len] = '\0';
	json = gpumem_acct_decode(buf + 2, (size_t)len - 4, err, sizeof(err));
	if (json == NULL || gpumem_acct_parse(json, &v, err, sizeof(err)) < 0 ||
	    !json_object_object_get_ex(v, "node", &jn) ||
	    strcmp(json_object_get_string(jn) ? json_object_get_string(jn) : "", node) != 0) {
		say(o, "node %s's spooled record refused: %s", node, json ? err : "undecodable");
		free(json);
		json_object_put(v);
		return NULL;
	}
	free(json);
	json_object_put(v);
	return strdup(buf);
}

/* rmdir of the job's spool directory (empty by now). */
static int unlinkdirat_job(const struct opts *o)
{
	int fd = open(o->spool, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), rc;

	if (fd < 0)
		return -1;
	rc = unlinkat(fd, o->jobspec, AT_REMOVEDIR);
	close(fd);
	return rc;
}


/*
 * The slurmctld mode: every node of the job (scontrol show hostnames) has
 * left NODE.seg or NODE.none, or WAIT seconds passed; then one merge of
 * all records.  The job's spool goes when they are stored.
 */
static int ctld(const struct opts *o)
{
	static char list[65536];
	char err[512], *names[MAX_NODES], *save = NULL;
	struct rec r[MAX_NODES];
	char *argv[] = { "scontrol", "show", "hostnames", (char *)o->nodes, NULL };
	int n = 0, nr = 0, rv = -1, jfd = -1, missing = 0;
	struct timespec t0, t;

	if (gpumem_run_capture(argv, list, sizeof(list), err, sizeof(err), TIMEOUT_S) != 0) {
		say(o, "scontrol show hostnames %.100s: %s", o->nodes, err);
		return -1;
	}
	for (char *p = strtok_r(list, "\n", &save); p && n < MAX_NODES; p = strtok_r(NULL, "\n", &save))
		names[n++] = p;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		missing = 0;
		if (jfd < 0)
			jfd = spool_open(o, 0);
		if (jfd == -2)
			return -1;
		for (int i = 0; i < n; i++) {
			char a[300], b[300];

			word_names(names[i], a, b);
			missing += jfd < 0 || (faccessat(jfd, a, F_OK, AT_SYMLINK_NOFOLLOW) < 0 &&
					       faccessat(jfd, b, F_OK, AT_SYMLINK_NOFOLLOW) < 0);
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (missing == 0 || t.tv_sec - t0.tv_sec >= o->wait_s)
			break;
		pause_ms(200);
	}
	if (missing)
		say(o, "%d of %d nodes left no word in %s/%s in %d s: their records are not written",
		    missing, n, o->spool, o->jobspec, o->wait_s);
	if (jfd < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		char *seg = spool_get(o, jfd, names[i]);

		if (seg)
			r[nr++] = (struct rec){ names[i], seg };
	}
	if (nr == 0)
		say(o, "no node of the job left a record");
	rv = nr ? store(o, r, nr) : 0;
	if (rv == 0) {
		for (int i = 0; i < n; i++) {
			char a[300], b[300];

			word_names(names[i], a, b);
			unlinkat(jfd, a, 0);
			unlinkat(jfd, b, 0);
		}
		if (unlinkdirat_job(o) < 0 && errno != ENOTEMPTY && errno != EEXIST)
			say(o, "spool %s/%s not removed: %s", o->spool, o->jobspec, strerror(errno));
	}
	for (int i = 0; i < nr; i++)
		free(r[i].seg);
	close(jfd);
	return rv;
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
	} else if (o->spool) {
		rv = spool_put(o, seg);
	} else {
		rv = store(o, &(struct rec){ (char *)o->node, seg }, 1);
	}
fail:
	/* With --spool the controller waits for each node's word: "none" too. */
	if (o->spool && !print && seg == NULL)
		spool_put(o, NULL);
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
	}
	if (parse(argc, argv, &o) < 0) {
		usage(stderr);
		return print ? 64 : 0;
	}
	openlog("gpumem-acct", LOG_PID, LOG_DAEMON);
	if (print)
		return run(&o, 1) == 0 ? 0 : 1;
	if (o.ctld)
		ctld(&o);
	else
		run(&o, 0);
	return 0;       /* an epilog's failure would drain the node */
}

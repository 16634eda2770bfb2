/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-acct's spool (doc/admin/reports.md, "Many-node jobs"): a directory the
 * nodes and slurmctld's host share.  Each node's Epilog leaves its record
 * of the job in SPOOL/JOB/NODE.seg, or NODE.none (no record here), JOB
 * being the job's own id (SLURM_JOB_ID: an array task's or het
 * component's own, which both sides are given).  EpilogSlurmctld's run
 * waits for every node's word (--wait), merges what is there once, and
 * removes what it merged.  A node later than that is not lost: every
 * controller run then sweeps the spool: a job directory nobody changed for
 * --wait seconds holds records that came after (or without) their job's
 * merge, and is merged then; one unchanged for --reap seconds (default a
 * day) is reaped whatever it holds, with a log line naming it.  So the
 * spool never grows past a day of leftovers.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>
#include "core_record.h"
#include "acctcmd.h"
#include "core_base.h"

/* Late job directories merged (each one slurmdbd pass) per controller run. */
#define SWEEP_MAX 8

/* Only root or we (SlurmUser) may write it. */
static int fit(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && !(st.st_mode & 022) &&
		(st.st_uid == 0 || st.st_uid == geteuid());
}

/* The spool, checked: fd, -1 (said), or -2 when it is refused. */
static int spool_root(const struct opts *o)
{
	int fd = open(o->spool, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0) {
		gpumem_acct_say(o, "spool %s: %s", o->spool, strerror(errno));
		return -1;
	}
	if (!fit(fd)) {
		gpumem_acct_say(o, "spool %s refused: writable by group or others, or owned by "
				"another user", o->spool);
		close(fd);
		return -2;
	}
	return fd;
}

/* The job directory NAME under the spool FD, checked: fd, -1 (errno), -2 refused (said). */
static int job_open(const struct opts *o, int fd, const char *name)
{
	int jfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (jfd >= 0 && !fit(jfd)) {
		gpumem_acct_say(o, "spool %s/%s refused: writable by others, or not ours", o->spool, name);
		close(jfd);
		return -2;
	}
	return jfd;
}

/*
 * The job's own directory: fd, -1 (the reason said unless it is only not
 * there yet), or -2 when the spool is refused.  CREATE: made 0755 first.
 */
static int spool_open(const struct opts *o, int create)
{
	char name[24];
	int fd = spool_root(o), jfd;

	if (fd < 0)
		return fd;
	snprintf(name, sizeof(name), "%lld", o->job);
	if (create && mkdirat(fd, name, 0755) < 0 && errno != EEXIST)
		jfd = -1;
	else
		jfd = job_open(o, fd, name);
	if (jfd == -1 && (create || errno != ENOENT))
		gpumem_acct_say(o, "spool %s/%s: %s", o->spool, name, strerror(errno));
	close(fd);
	return jfd;
}

/* NODE's word in the job's spool directory: its record SEG, or NONE (no record); 300 bytes each. */
static void word_names(const char *node, char seg[300], char none[300])
{
	snprintf(seg, 300, "%s.seg", node);
	snprintf(none, 300, "%s.none", node);
	gpumem_safe_name(seg);
	gpumem_safe_name(none);
}

static int put_once(const struct opts *o, const char *seg, const char *name)
{
	char tmp[320];
	int jfd = spool_open(o, 1), fd, rv = -1;
	size_t len = seg ? strlen(seg) : 0;

	if (jfd < 0)
		return jfd == -2 ? -2 : -1;
	snprintf(tmp, sizeof(tmp), ".%s.%ld", name, (long)getpid());
	fd = openat(jfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || (len && write(fd, seg, len) != (ssize_t)len) || close(fd) < 0 ||
	    renameat(jfd, tmp, jfd, name) < 0)
		unlinkat(jfd, tmp, 0);
	else
		rv = 0;
	close(jfd);
	return rv;
}

/*
 * The epilog mode with --spool: NODE.seg holds SEG, or NODE.none says "no
 * record".  Tried twice: a sweep may remove the job's directory between
 * our mkdir and our write.
 */
int gpumem_acct_spool_put(const struct opts *o, const char *seg)
{
	char segname[300], nonename[300], *name = seg ? segname : nonename;
	int rc = -1;

	word_names(o->node, segname, nonename);
	for (int i = 0; i < 2 && rc == -1; i++)
		rc = put_once(o, seg, name);
	if (rc == -1)
		gpumem_acct_say(o, "spool %s/%lld/%s: %s", o->spool, o->job, name, strerror(errno));
	else if (rc == 0 && seg)
		gpumem_acct_say(o, "spooled (%zu bytes) in %s/%lld", strlen(seg), o->spool, o->job);
	return rc == 0 ? 0 : -1;
}

/* NODE's segment from the spool, checked to be a record of NODE and of the job; NULL if none. */
static char *spool_get(const struct opts *o, int jfd, const char *node)
{
	char name[300], none[300], buf[GPUMEM_ACCT_MAX_SEGMENT + 1], err[256], *json = NULL;
	struct json_object *v = NULL, *jn, *jj;
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
		gpumem_acct_say(o, "node %s's spooled record refused: not one segment", node);
		return NULL;
	}
	buf[len] = '\0';
	json = gpumem_acct_decode(buf + 2, (size_t)len - 4, err, sizeof(err));
	if (json == NULL || gpumem_acct_parse(json, &v, err, sizeof(err)) < 0 ||
	    !json_object_object_get_ex(v, "node", &jn) || !json_object_object_get_ex(v, "job", &jj) ||
	    strcmp(json_object_get_string(jn) ? json_object_get_string(jn) : "", node) != 0 ||
	    json_object_get_int64(jj) != o->job) {
		gpumem_acct_say(o, "node %s's spooled record refused: %s", node,
				json == NULL ? "undecodable" : v == NULL ? err :
				"not a record of this node and job");
		free(json);
		json_object_put(v);
		return NULL;
	}
	free(json);
	json_object_put(v);
	return strdup(buf);
}

/* rmdir of the job's spool directory NAME (empty by now, or a late word came). */
static void remove_dir(const struct opts *o, const char *name)
{
	int fd = open(o->spool, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0 && unlinkat(fd, name, AT_REMOVEDIR) < 0 && errno != ENOTEMPTY &&
	    errno != EEXIST && errno != ENOENT)
		gpumem_acct_say(o, "spool %s/%s not removed: %s", o->spool, name, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* Has every node of NAMES left its word?  The number that have not. */
static int missing_words(int jfd, char *const *names, int n)
{
	int missing = 0;

	for (int i = 0; i < n; i++) {
		char a[300], b[300];

		word_names(names[i], a, b);
		missing += jfd < 0 || (faccessat(jfd, a, F_OK, AT_SYMLINK_NOFOLLOW) < 0 &&
				       faccessat(jfd, b, F_OK, AT_SYMLINK_NOFOLLOW) < 0);
	}
	return missing;
}

/*
 * Merge the records of NAMES (N nodes) in the job's directory JFD; 0 when
 * stored (*STORED of them: 0 when none was there), -1.  Removes only the words it read: one that
 * comes after is left for a later sweep.
 */
static int merge_words(struct opts *o, int jfd, char *const *names, int n, int attempts, int *stored)
{
	struct rec r[GPUMEM_ACCT_MAX_NODES];
	unsigned char had[GPUMEM_ACCT_MAX_NODES];
	int nr = 0, rv;

	for (int i = 0; i < n; i++) {
		char a[300], b[300], *seg;

		word_names(names[i], a, b);
		had[i] = (faccessat(jfd, a, F_OK, AT_SYMLINK_NOFOLLOW) == 0) |
			(faccessat(jfd, b, F_OK, AT_SYMLINK_NOFOLLOW) == 0) << 1;
		if ((had[i] & 1) && (seg = spool_get(o, jfd, names[i])) != NULL)
			r[nr++] = (struct rec){ names[i], seg };
	}
	rv = nr ? gpumem_acct_store(o, r, nr, attempts) : 0;
	for (int i = 0; i < n && rv == 0; i++) {
		char a[300], b[300];

		word_names(names[i], a, b);
		if (had[i] & 1)
			unlinkat(jfd, a, 0);
		if (had[i] & 2)
			unlinkat(jfd, b, 0);
	}
	for (int i = 0; i < nr; i++)
		free(r[i].seg);
	*stored = rv == 0 ? nr : 0;
	return rv;
}

/*
 * The slurmctld mode: every node of the job (scontrol show hostnames) has
 * left NODE.seg or NODE.none, or WAIT seconds passed; then one merge of
 * all records.  The job's spool goes when they are stored.
 */
int gpumem_acct_ctld(struct opts *o)
{
	static char list[65536];
	char err[512], *names[GPUMEM_ACCT_MAX_NODES], *save = NULL, dir[24];
	char *argv[] = { "scontrol", "show", "hostnames", (char *)o->nodes, NULL };
	int n = 0, rv = -1, jfd = -1, missing = 0, nr = 0;
	struct timespec t0, t;

	if (gpumem_run_capture(argv, list, sizeof(list), err, sizeof(err), GPUMEM_ACCT_TIMEOUT_S) != 0) {
		gpumem_acct_say(o, "scontrol show hostnames %.100s: %s", o->nodes, err);
		return -1;
	}
	for (char *p = strtok_r(list, "\n", &save); p && n < GPUMEM_ACCT_MAX_NODES;
	     p = strtok_r(NULL, "\n", &save))
		names[n++] = p;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (jfd < 0)
			jfd = spool_open(o, 0);
		if (jfd == -2)
			return -1;
		missing = missing_words(jfd, names, n);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (missing == 0 || t.tv_sec - t0.tv_sec >= o->wait_s)
			break;
		gpumem_acct_pause_ms(200);
	}
	if (missing)
		gpumem_acct_say(o, "%d of %d nodes left no word in %s/%lld in %d s: a later "
				"gpumem-acct slurmctld run merges what they leave", missing, n,
				o->spool, o->job, o->wait_s);
	if (jfd < 0)
		return -1;
	rv = merge_words(o, jfd, names, n, GPUMEM_ACCT_ATTEMPTS, &nr);
	if (rv == 0 && nr == 0)
		gpumem_acct_say(o, "no node of the job left a record");
	close(jfd);
	snprintf(dir, sizeof(dir), "%lld", o->job);
	if (rv == 0)
		remove_dir(o, dir);
	return rv;
}

/* WORD appended to the list BUF (CAP bytes), space-separated, cut with "..." when full. */
static void list_add(char *buf, size_t cap, const char *word)
{
	size_t at = strlen(buf), wl = strlen(word) + (at ? 1 : 0);

	if (at + wl + 4 > cap) {
		if (at + 4 <= cap && (at < 3 || strcmp(buf + at - 3, "...") != 0))
			memcpy(buf + at, "...", 4);
		return;
	}
	snprintf(buf + at, cap - at, "%s%s", at ? " " : "", word);
}

/* The job a spool entry is the directory of (its name, digits only), or 0. */
static long long dir_job(const char *name)
{
	size_t n = strspn(name, "0123456789");

	return n > 0 && n < 19 && name[n] == '\0' ? atoll(name) : 0;
}

/*
 * The records in job directory NAME, which nobody changed for AGE s: they
 * came after their job's merge (or without one).  Merged with one pass;
 * the words read are removed, the directory too when that leaves it empty.
 * 1 when it took a slurmdbd pass, else 0.
 */
static int late(const struct opts *o, int fd, const char *name, long long job, long age)
{
	struct opts lo = *o;
	char *names[GPUMEM_ACCT_MAX_NODES], list[200] = "";
	int jfd, n = 0, nr = 0;
	struct dirent *e;
	DIR *d;

	lo.job = job;
	lo.jobspec[0] = '\0';
	lo.ctld = 1;
	if ((jfd = job_open(&lo, fd, name)) < 0)
		return 0;
	d = fdopendir(fcntl(jfd, F_DUPFD_CLOEXEC, 3));
	while (d && (e = readdir(d)) && n < GPUMEM_ACCT_MAX_NODES) {
		size_t l = strlen(e->d_name);

		if (e->d_name[0] == '.')
			continue;
		if (l > 5 && strcmp(e->d_name + l - 5, ".none") == 0)
			unlinkat(jfd, e->d_name, 0);    /* no record: nobody waits for it now */
		else if (l > 4 && strcmp(e->d_name + l - 4, ".seg") == 0 &&
			 (names[n] = strndup(e->d_name, l - 4)) != NULL)
			n++;
	}
	if (d)
		closedir(d);
	for (int i = 0; i < n; i++)
		list_add(list, sizeof(list), names[i]);
	if (n)
		gpumem_acct_say(&lo, "late: the records of %d nodes (%s) came after the job's merge "
				"or without one (unchanged for %ld s): merging", n, list, age);
	if (n && merge_words(&lo, jfd, names, n, 1, &nr) < 0)
		gpumem_acct_say(&lo, "late records not stored: tried again by the next run, "
				"reaped after %d s", o->reap_s);
	close(jfd);
	for (int i = 0; i < n; i++)
		free(names[i]);
	remove_dir(&lo, name);
	return n > 0;
}

/* Job directory NAME, unchanged for AGE s: removed, whatever it holds, and said. */
static void reap(const struct opts *o, int fd, const char *name, long long job, long age)
{
	struct opts lo = *o;
	char list[240] = "";
	struct dirent *e;
	int jfd;
	DIR *d;

	lo.job = job;
	if ((jfd = job_open(&lo, fd, name)) < 0)
		return;
	d = fdopendir(fcntl(jfd, F_DUPFD_CLOEXEC, 3));
	while (d && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (unlinkat(jfd, e->d_name, 0) < 0)
			unlinkat(jfd, e->d_name, AT_REMOVEDIR);
		list_add(list, sizeof(list), e->d_name);
	}
	if (d)
		closedir(d);
	close(jfd);
	remove_dir(&lo, name);
	gpumem_acct_say(&lo, "reaped %s/%s, unchanged for %ld s (--reap %d): %s; the records "
			"in it were never stored", o->spool, name, age, o->reap_s,
			list[0] ? list : "empty");
}

void gpumem_acct_sweep(const struct opts *o)
{
	int fd = spool_root(o), passes = 0;
	time_t now = time(NULL);
	struct dirent *e;
	DIR *d;

	if (fd < 0)
		return;
	d = fdopendir(fcntl(fd, F_DUPFD_CLOEXEC, 3));
	while (d && (e = readdir(d)) && passes < SWEEP_MAX) {
		long long job = dir_job(e->d_name);
		struct stat st;
		long age;

		if (job <= 0 || (job == o->job && !o->sweep) ||
		    fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		age = (long)(now - st.st_mtime);
		if (age < o->wait_s)
			continue;       /* its own controller run may still be at it */
		passes += late(o, fd, e->d_name, job, age);
		if (age >= o->reap_s && fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			reap(o, fd, e->d_name, job, age);
	}
	if (d)
		closedir(d);
	close(fd);
}

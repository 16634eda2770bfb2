/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * check.min_interval: a before-check (never an after-check: jobctx.c) is
 * skipped when every GPU of the job passed a check on this node less than
 * that many minutes ago, after the previous job on it ended: the previous
 * job's after-check, or a later check, never a check from before or during
 * that job, and never a skip.  The end is root's record of the GPU
 * (gpustate.c: ended.NODE.GPU, written when the job's epilog begins); a GPU
 * with no such record (none since state_dir was made, e.g. at boot) is
 * checked.  The evidence is the node's own reports (root wrote them in
 * report.dir, their time is when the check ended): a report names the GPUs
 * the check ran on ("gpus", physical indexes as Slurm gave them) and the
 * check's document lists the devices in that order, each with its UUID and
 * verdict.  Where the probe cache knows a GPU's UUID, the UUID must match
 * too, so a GPU swapped in since is checked again.  A suspect GPU
 * (gpustate.c) is never skipped: its before-check is forced.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "json.h"
#include "statedir.h"
#include "jobctx.h"
#include "report.h"

/* Mark in PASSED[j] each job GPU that this report shows passing. */
static void scan_report(const struct gpumem_jobctx *c, const struct gpumem_node *node,
			const char *text, int *passed)
{
	struct json_object *doc = NULL, *devs;
	char err[200], gl[GPUMEM_GPU_LIST_MAX], *save = NULL, *tok;
	char phys[GPUMEM_MAX_GPUS][64];
	const char *gpus;
	int np = 0;

	if (gpumem_json_parse_report(text, strlen(text), &doc, err, sizeof(err)) < 0)
		return;
	gpus = gpumem_json_str(doc, "gpus");
	snprintf(gl, sizeof(gl), "%s", gpus ? gpus : "");
	for (tok = strtok_r(gl, ",", &save); tok && np < GPUMEM_MAX_GPUS;
	     tok = strtok_r(NULL, ",", &save))
		snprintf(phys[np++], 64, "%s", tok);
	devs = gpumem_json_get(gpumem_json_get(doc, "check"), "devices");
	for (size_t i = 0; i < gpumem_json_len(devs); i++) {
		struct json_object *d = gpumem_json_at(devs, i);
		const char *v = gpumem_json_str(d, "verdict"), *uuid = gpumem_json_str(d, "uuid");
		double idx;

		if (!v || strcmp(v, "pass") || !uuid || gpumem_json_num(d, "index", &idx) < 0 ||
		    idx < 0 || idx >= np)
			continue;
		for (int j = 0; j < c->ngpus; j++)
			if (!strcmp(phys[(int)idx], c->list[j]) &&
			    (node->ngpus != c->ngpus || !strcmp(node->gpus[j].uuid, uuid)))
				passed[j] = 1;
	}
	json_object_put(doc);
}

/* Was A (a report's time) strictly after B (a job's end)? */
static int after(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec > b->tv_nsec);
}

int gpumem_interval_passed(const struct gpumem_jobctx *c, const struct gpumem_node *node,
			   char *when, size_t len)
{
	time_t newest[GPUMEM_MAX_GPUS] = { 0 }, cutoff, oldest = 0;
	struct timespec ended[GPUMEM_MAX_GPUS];
	int all = 1, fd;
	char suffix[96];
	struct dirent *e;
	DIR *d;

	if (!c->have_site || c->site.check_min_interval_min <= 0 || !c->site.report.dir ||
	    c->ngpus <= 0)
		return 0;
	/* Only what ran after the last job on each GPU ended: without that record, nothing. */
	for (int j = 0; j < c->ngpus; j++)
		if (gpumem_gpu_ended_at(c, j, &ended[j]) < 0)
			return 0;
	cutoff = time(NULL) - 60 * (time_t)c->site.check_min_interval_min;
	fd = open(c->site.report.dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	snprintf(suffix, sizeof(suffix), ".%s.", c->ji.node);
	while ((e = readdir(d))) {
		struct stat sb;
		int mine[GPUMEM_MAX_GPUS] = { 0 };
		char *text;

		/* job<ID>.<STEP>.<NODE>.<PHASE>.json of this node, recent enough */
		if (strncmp(e->d_name, "job", 3) || !strstr(e->d_name, suffix) ||
		    fstatat(fd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 || sb.st_mtime < cutoff ||
		    !(text = gpumem_state_read(fd, e->d_name, GPUMEM_REPORT_MAX_FILE_BYTES)))
			continue;
		scan_report(c, node, text, mine);
		free(text);
		for (int j = 0; j < c->ngpus; j++)
			if (mine[j] && after(&sb.st_mtim, &ended[j]) && sb.st_mtime > newest[j])
				newest[j] = sb.st_mtime;
	}
	closedir(d);
	/* When the least recently checked GPU of the job last passed. */
	for (int j = 0; j < c->ngpus; j++) {
		all &= newest[j] != 0;
		if (oldest == 0 || newest[j] < oldest)
			oldest = newest[j];
	}
	if (all) {
		struct tm tm;

		gmtime_r(&oldest, &tm);
		strftime(when, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
	}
	return all;
}

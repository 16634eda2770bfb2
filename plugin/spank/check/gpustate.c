/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Root's memory of each GPU of this node between jobs (gpustate.h), in
 * state_dir/gpus/ (root's, mode 0700: no user reads it), one file per GPU
 * and node (nodes of one host share state_dir), named by the GPU's
 * physical index as Slurm gives it ("all" with plugstack gpus=all):
 *
 *   suspect.NODE.GPU  a check the job's policy asked for (or one forced by
 *                     this very mark) gave no verdict: killed, crashed,
 *                     timed out, no valid document.  "JOB STEP PHASE KIND
 *                     REASON", KIND "own" (the check's own end) or "cut"
 *                     (stopped at the hook's time limit, which time spent
 *                     on the user's MPS daemon may have eaten).  The next
 *                     job's prolog forces a before-check on the GPU; a
 *                     pass (or warn) at least as strict as the site's
 *                     default min_fraction clears the mark (a laxer one
 *                     leaves it: evidence_rules.h); a second no-verdict
 *                     in a row, both "own", drains the node naming both
 *                     jobs (the site's drain settings allow it), else logs.
 *   pass.NODE.GPU, hbmlow.NODE.GPU: evidence.c's (the last measured pass
 *                     and its NVML evidence; a profile that showed low HBM).
 *
 * The checks run as the site's check_user, out of the user's reach, so a
 * user can neither cause a no-verdict at will (to drain nodes) nor turn a
 * failing check into one (to hide a failed GPU).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "checkserve.h"
#include "drain.h"
#include "gpustate.h"
#include "log.h"
#include "core_base.h"
#include "statedir.h"

#define GPUDIR GPUMEM_SF_GPUS

/*
 * state_dir/gpus, made root's and 0700 where needed (trust.c); an fd, or -1
 * with WHY.  evidence.c keeps its files beside these, through these two.
 */
int gpumem_gpudir_open(const struct gpumem_check_ctx *c, char *why, size_t wlen)
{
	char path[4200];

	snprintf(why, wlen, "no state directory");
	if (c->state.dfd < 0)
		return -1;
	if (mkdirat(c->state.dfd, GPUDIR, 0700) < 0 && errno != EEXIST) {
		snprintf(why, wlen, "%s", strerror(errno));
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s", c->state.dir, GPUDIR);
	return gpumem_dir_open_mode(path, 0700, why, wlen);
}

/* The file name KIND.NODE.GPU of the job's GPU J (J < 0: "all"). */
void gpumem_gpu_name(const struct gpumem_check_ctx *c, const char *kind, int j, char *buf,
		     size_t len)
{
	gpumem_sf_gpu(buf, len, kind, c->node.name, j >= 0 ? c->gpus.list[j] : NULL);
}

/* The job's GPUs as mark keys: its list, or "all" (one key, J = -1). */
static int nkeys(const struct gpumem_check_ctx *c)
{
	return c->gpus.n < 0 ? 1 : c->gpus.n;
}

static int key_of(const struct gpumem_check_ctx *c, int k)
{
	return c->gpus.n < 0 ? -1 : k;
}

int gpumem_suspect_find(const struct gpumem_check_ctx *c, char *what, size_t len)
{
	char name[160], why[600], *text = NULL;
	int fd = gpumem_gpudir_open(c, why, sizeof(why));

	what[0] = '\0';
	for (int k = 0; fd >= 0 && k < nkeys(c) && !text; k++) {
		gpumem_gpu_name(c, GPUMEM_SF_SUSPECT, key_of(c, k), name, sizeof(name));
		text = gpumem_state_read(fd, name, 4096);
	}
	if (fd >= 0)
		close(fd);
	if (!text)
		return 0;
	text[strcspn(text, "\n")] = '\0';
	gpumem_escape(what, len, text);
	free(text);
	return 1;
}

/* Drain the node for two no-verdicts in a row: PREV (the mark's text) and this one. */
static void drain_twice(const struct gpumem_check_ctx *c, const struct gpumem_node *node,
			const char *prev, const char *now, struct gpumem_checkrun *r)
{
	char reason[1400], gpus[600] = "", msg[1600];
	size_t o = 0;

	/* The GPUs by UUID where the probe cache knows them: a pass resumes only those. */
	if (c->gpus.n > 0 && node->ngpus == c->gpus.n) {
		for (int j = 0; j < c->gpus.n && o < sizeof(gpus); j++)
			o += (size_t)snprintf(gpus + o, sizeof(gpus) - o, "%s%s", j ? "," : " {",
					      node->gpus[j].uuid);
		if (o < sizeof(gpus))
			snprintf(gpus + o, sizeof(gpus) - o, "}");
	} else {
		snprintf(gpus, sizeof(gpus), " (GPUs %s)", c->gpus.text[0] ? c->gpus.text : "all");
	}
	snprintf(reason, sizeof(reason), "gpumem: GPU check gave no verdict twice in a row%s "
		 "(job %.300s; job %.300s)", gpus, prev, now);
	if (!c->drain.enabled || !c->node.name[0]) {
		gpumem_error("gpumem: job %u: NOT DRAINED (drain.enabled is off in the site file): "
			     "%s", c->job.id, reason);
		return;
	}
	r->drained = gpumem_drain(c->node.name, reason, msg, sizeof(msg)) == 1;
	if (r->drained)
		gpumem_checkserve_stop(c);
	gpumem_error("gpumem: job %u: %s", c->job.id, msg);
}

void gpumem_suspect_update(const struct gpumem_check_ctx *c, const struct gpumem_node *node,
			   struct gpumem_checkrun *r)
{
	char name[160], prev[700], now[700], why[520], derr[600];
	const char *kind;
	int fd, had;

	if (!strcmp(r->status, "skipped") || !strcmp(r->status, "not_run"))
		return;         /* no check ran: nothing learnt of the GPU */
	fd = gpumem_gpudir_open(c, derr, sizeof(derr));
	if (fd < 0) {
		gpumem_error("gpumem: job %u: cannot keep the GPUs' state in %s/%s: %s", c->job.id,
			     c->state.dir, GPUDIR, derr);
		return;
	}
	had = gpumem_suspect_find(c, prev, sizeof(prev));
	if (gpumem_jobcheck_no_verdict(r)) {
		kind = r->cut ? "cut" : "own";
		gpumem_escape(why, sizeof(why), r->reason);
		snprintf(now, sizeof(now), "%u.%s %s %s %s", c->job.id, c->job.hook, r->phase, kind,
			 why);
		gpumem_error("gpumem: job %u: check %s gave no verdict (%s): GPUs %s marked suspect, "
			     "the next job's before-check is forced", c->job.id, r->phase, why,
			     c->gpus.text[0] ? c->gpus.text : "all");
		/* Two in a row, neither cut short by the hook's limit: drain. */
		if (had && !r->cut && !strstr(prev, " cut "))
			drain_twice(c, node, prev, now, r);
		for (int k = 0; k < nkeys(c); k++) {
			gpumem_gpu_name(c, GPUMEM_SF_SUSPECT, key_of(c, k), name, sizeof(name));
			strcat(now, "\n");
			if (gpumem_state_write(fd, name, now) < 0)
				gpumem_error("gpumem: job %u: cannot mark GPU suspect in %s/%s: %s",
					     c->job.id, c->state.dir, GPUDIR,
					     strerror(errno));
			now[strcspn(now, "\n")] = '\0';
		}
	} else if ((!strncmp(r->verdict, "pass", 4) || !strcmp(r->verdict, "warn")) &&
		   !c->check.strict) {
		if (had)
			gpumem_info("gpumem: job %u: check %s passed at min_fraction %g, below the "
				    "site's default: GPUs %s stay suspect (job %s)", c->job.id, r->phase,
				    c->check.min_fraction, c->gpus.text[0] ? c->gpus.text : "all",
				    prev);
	} else if (!strncmp(r->verdict, "pass", 4) || !strcmp(r->verdict, "warn")) {
		for (int k = 0; k < nkeys(c); k++) {
			gpumem_gpu_name(c, GPUMEM_SF_SUSPECT, key_of(c, k), name, sizeof(name));
			unlinkat(fd, name, 0);
		}
		if (had)
			gpumem_info("gpumem: job %u: check %s passed: GPUs %s no longer suspect "
				    "(was: job %s)", c->job.id, r->phase, c->gpus.text[0] ? c->gpus.text :
				    "all", prev);
	}
	close(fd);
}



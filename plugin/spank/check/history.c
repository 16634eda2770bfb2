/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A GPU against its own history, as root, after every measured check
 * (doc/admin/checks.md, "The GPU against its own history").  A GPU whose
 * figure falls more than a margin below its own median of recent passes
 * is worse than it was, even where it still clears the site's reference
 * or its peak's floor: a warn that names the figure, the margin and the
 * passes.  The figures of each GPU's passes are kept by its UUID (the
 * check numbers the GPUs in CUDA's order, which need not be Slurm's), in
 * root's state_dir/gpus/hist.NODE.UUID; only a pass adds to them, so a
 * slow GPU does not pull its own median down.  The check's document is
 * check_user's program's output: a UUID that is not a plain token names
 * no file, a figure that is not a number counts as not measured.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "history.h"
#include "history_rules.h"
#include "jobcheck.h"
#include "core_base.h"
#include "gpustate.h"
#include "log.h"
#include "statedir.h"
#include "statefiles.h"

/* A UUID fit for a file name: "GPU-" and letters, digits, '-'. */
static int plain_uuid(const char *u)
{
	return u && !strncmp(u, "GPU-", 4) && strlen(u) < 80 &&
		strspn(u, "GPU-0123456789abcdefABCDEF") == strlen(u);
}

/* Device DEV's figures now (best_gbps of each, 0 where none). */
static void figures_of(struct json_object *dev, struct gpumem_hist_pass *p)
{
	struct json_object *metrics = gpumem_json_get(dev, "metrics");

	p->sec = (long long)time(NULL);
	for (int i = 0; i < GPUMEM_HIST_NFIG; i++) {
		double v = 0;

		if (gpumem_json_num(gpumem_json_get(metrics, gpumem_hist_name(i)), "best_gbps", &v) < 0 ||
		    !(v > 0) || v > 1e7)
			v = 0;
		p->fig[i] = v;
	}
}

/* Device DEV (node's GPU IDX) warns: its verdict, its reasons, R's verdict and reason. */
static void warn(const struct gpumem_check_ctx *c, struct gpumem_checkrun *r, struct json_object *dev,
		 const char *idx, const char *why)
{
	char reason[640];
	struct json_object *reasons = gpumem_json_get(dev, "reasons");

	snprintf(reason, sizeof(reason), "history: %.600s", why);
	json_object_object_add(dev, "verdict", json_object_new_string("warn"));
	if (gpumem_json_is(reasons, json_type_array))
		json_object_array_add(reasons, json_object_new_string(reason));
	if (!strncmp(r->verdict, "pass", 4))
		snprintf(r->verdict, sizeof(r->verdict), "warn");
	if (!r->reason[0])
		snprintf(r->reason, sizeof(r->reason), "gpu%.16s: %.480s", idx, reason);
	gpumem_info("gpumem: check %s job %u node %s: GPU %s warns: %s", r->phase, c->job.id,
		    c->node.name, idx, reason);
}

/* One device of the check: judged against, then added to, its history in FD. */
static void judge_device(const struct gpumem_check_ctx *c, struct gpumem_checkrun *r, int fd,
			 struct json_object *dev)
{
	const char *uuid = gpumem_json_str(dev, "uuid"), *v = gpumem_json_str(dev, "verdict");
	char name[200], why[600], text[GPUMEM_HIST_KEEP * 120], nbuf[64], *old;
	const char *idx = gpumem_jobcheck_node_index(c->gpus.text, gpumem_json_text(
		gpumem_json_get(dev, "index")), nbuf, sizeof(nbuf));
	struct gpumem_hist h;
	struct gpumem_hist_pass now;

	if (!plain_uuid(uuid) || !v || strncmp(v, "pass", 4) ||
	    gpumem_sf_gpu(name, sizeof(name), GPUMEM_SF_HIST, c->node.name, uuid) < 0)
		return;         /* only a pass is judged against, and added to, its history */
	idx = idx ? idx : "?";
	figures_of(dev, &now);
	old = gpumem_state_read(fd, name, sizeof(text));
	if (gpumem_hist_parse(old, &h, why, sizeof(why)) < 0)
		gpumem_error("gpumem: %s/%s/%s: %s: its history starts afresh", c->state.dir,
			     GPUMEM_SF_GPUS, name, why);
	free(old);
	if (gpumem_hist_below(&h, &now, why, sizeof(why))) {
		warn(c, r, dev, idx, why);
		return;
	}
	gpumem_hist_add(&h, &now);
	if (gpumem_hist_format(&h, text, sizeof(text)) < 0 || gpumem_state_write(fd, name, text) < 0)
		gpumem_error("gpumem: job %u: cannot keep GPU %s's figures in %s/%s", c->job.id, idx,
			     c->state.dir, GPUMEM_SF_GPUS);
}

void gpumem_history_judge(const struct gpumem_check_ctx *c, struct gpumem_checkrun *r)
{
	struct json_object *devs;
	char err[600];
	int fd;

	if (!r->doc || strcmp(r->status, "ran"))
		return;         /* nothing measured here */
	fd = gpumem_gpudir_open(c, err, sizeof(err));
	if (fd < 0) {
		gpumem_error("gpumem: job %u: no GPU history: %s", c->job.id, err);
		return;
	}
	devs = gpumem_json_get(r->doc, "devices");
	for (size_t i = 0; i < gpumem_json_len(devs); i++)
		judge_device(c, r, fd, gpumem_json_at(devs, i));
	close(fd);
}

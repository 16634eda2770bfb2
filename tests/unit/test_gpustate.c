/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Root's memory of the job's GPUs between jobs (plugin/spank/check/
 * gpustate.c), against the check's contract alone (check_ctx.h), without
 * Slurm: a check with no verdict marks the job's GPUs suspect (the next
 * job's before-check is forced), a pass at least as strict as the site's
 * default clears the mark, a laxer one or no check at all leaves it, and
 * a second no-verdict in a row, both the check's own, is a drain (here
 * refused by the site's drain settings, so no scontrol runs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check_fixture.h"
#include "gpustate.h"
#include "core_base.h"
#include "tap.h"

/* The node's GPUs as a node without a probe cache knows them: by index only. */
static const struct gpumem_node unprobed = { .ngpus = -1 };

/* A check of PHASE that ended with STATUS, VERDICT and REASON; CUT: at the hook's limit. */
static void ended(struct gpumem_checkrun *r, const char *status, const char *verdict,
		  const char *reason, int cut)
{
	memset(r, 0, sizeof(*r));
	r->done = 1;
	r->exit_code = -1;
	snprintf(r->phase, sizeof(r->phase), "before");
	snprintf(r->status, sizeof(r->status), "%s", status);
	snprintf(r->verdict, sizeof(r->verdict), "%s", verdict);
	snprintf(r->reason, sizeof(r->reason), "%s", reason);
	r->cut = cut;
	/* A check that ran gave a document: without one it gave no verdict. */
	if (!strcmp(status, "ran"))
		r->doc = json_object_new_object();
}

/* Is GPU J's suspect mark there? */
static int marked(const struct gpumem_check_ctx *c, const char *gpu)
{
	char name[64], *text;

	snprintf(name, sizeof(name), "suspect.node1.%s", gpu);
	text = fixture_gpufile(c, name);
	free(text);
	return text != NULL;
}

static void names(struct gpumem_check_ctx *c)
{
	char name[160], why[600];
	struct stat st;
	int fd;

	gpumem_gpu_name(c, GPUMEM_SF_SUSPECT, 1, name, sizeof(name));
	is_str(name, "suspect.node1.1", "GPU 1's mark: KIND.NODE.GPU");
	gpumem_gpu_name(c, GPUMEM_SF_PASS, -1, name, sizeof(name));
	is_str(name, "pass.node1.all", "every GPU of the node: .all");
	fd = gpumem_gpudir_open(c, why, sizeof(why));
	ok(fd >= 0, "state_dir/gpus opened (%s)", fd < 0 ? why : "made");
	if (fd >= 0)
		close(fd);
	snprintf(name, sizeof(name), "%s/%s", c->state.dir, GPUMEM_SF_GPUS);
	ok(stat(name, &st) == 0 && (st.st_mode & 07777) == 0700 && st.st_uid == 0,
	   "... root's, mode 0700: no user reads the GPUs' marks");
}

static void no_verdict(struct gpumem_check_ctx *c)
{
	struct gpumem_checkrun r;
	char what[700];

	is_int(gpumem_suspect_find(c, what, sizeof(what)), 0, "no mark: no GPU is suspect");
	is_str(what, "", "... and nothing said");
	ended(&r, "timed_out", "error", "killed: no answer within 35 s", 0);
	gpumem_suspect_update(c, &unprobed, &r);
	ok(marked(c, "0") && marked(c, "1"), "a check with no verdict marks both GPUs suspect");
	like(last_log, "check before gave no verdict (killed: no answer within 35 s): GPUs 0,1 marked "
	     "suspect", "... logged");
	is_int(r.drained, 0, "... the first time: no drain");
	is_int(gpumem_suspect_find(c, what, sizeof(what)), 1, "the next job finds them suspect");
	is_str(what, "7.prolog before own killed: no answer within 35 s",
	       "... with the job, hook, phase, kind and why");
}

static void kept(struct gpumem_check_ctx *c)
{
	struct gpumem_checkrun r;

	ended(&r, "skipped", "pass", "no GPU device on this node", 0);
	gpumem_suspect_update(c, &unprobed, &r);
	ok(marked(c, "0"), "a skipped check learnt nothing: the mark stays");
	ended(&r, "not_run", "error", "check_user is the job's own user", 0);
	gpumem_suspect_update(c, &unprobed, &r);
	ok(marked(c, "0"), "a check not run: the mark stays");
	ended(&r, "ran", "fail", "gpu0: triad 1200 GB/s below threshold", 0);
	gpumem_suspect_update(c, &unprobed, &r);
	gpumem_jobcheck_free(&r);
	ok(marked(c, "0") && marked(c, "1"), "a fail is a verdict: the mark stays");
	like(last_log, "check before gave no verdict (killed", "... no new mark, nothing logged");
	ended(&r, "ran", "fail", "gpu0: no report", 0);
	json_object_put(r.doc);
	r.doc = NULL;
	gpumem_suspect_update(c, &unprobed, &r);
	like(last_log, "NOT DRAINED (drain.enabled is off in the site file): gpumem: GPU check gave "
	     "no verdict twice in a row (GPUs 0,1) (job 7.prolog before own killed",
	     "a check that printed no valid report is a second no-verdict: a drain by GPU index "
	     "(no probe cache), refused by the site");
	is_int(r.drained, 0, "... not drained");
	c->check.strict = 0;
	ended(&r, "ran", "pass", "", 0);
	gpumem_suspect_update(c, &unprobed, &r);
	gpumem_jobcheck_free(&r);
	ok(marked(c, "0") && marked(c, "1"), "a pass laxer than the site's default: still suspect");
	like(last_log, "below the site's default: GPUs 0,1 stay suspect", "... logged");
	c->check.strict = 1;
}

static void cleared(struct gpumem_check_ctx *c)
{
	struct gpumem_checkrun r;
	char what[700];

	ended(&r, "ran", "pass", "", 0);
	gpumem_suspect_update(c, &unprobed, &r);
	gpumem_jobcheck_free(&r);
	ok(!marked(c, "0") && !marked(c, "1"), "a strict pass clears both marks");
	like(last_log, "GPUs 0,1 no longer suspect (was: job 7.prolog before own", "... logged");
	is_int(gpumem_suspect_find(c, what, sizeof(what)), 0, "the next job's check is not forced");
	ended(&r, "timed_out", "error", "killed", 0);
	gpumem_suspect_update(c, &unprobed, &r);
	ended(&r, "ran", "warn", "gpu1: slower than usual", 0);
	gpumem_suspect_update(c, &unprobed, &r);
	gpumem_jobcheck_free(&r);
	ok(!marked(c, "0") && !marked(c, "1"), "a warn is a verdict too: cleared");
}

static void twice(struct gpumem_check_ctx *c)
{
	struct gpumem_node node;
	struct gpumem_checkrun r;

	memset(&node, 0, sizeof(node));
	node.ngpus = 2;
	snprintf(node.gpus[0].uuid, sizeof(node.gpus[0].uuid), "GPU-a");
	snprintf(node.gpus[1].uuid, sizeof(node.gpus[1].uuid), "GPU-b");
	ended(&r, "timed_out", "error", "stopped at the job prolog's time limit", 1);
	gpumem_suspect_update(c, &node, &r);
	c->job.id = 8;
	ended(&r, "failed", "error", "gpumem-check was killed by signal 9", 0);
	r.exit_code = 137;
	gpumem_suspect_update(c, &node, &r);
	like(last_log, "marked suspect", "the first cut short by the hook's limit: no drain");
	is_int(r.drained, 0, "... not drained");
	c->job.id = 9;
	ended(&r, "timed_out", "error", "killed: no answer within 35 s", 0);
	gpumem_suspect_update(c, &node, &r);
	like(last_log, "NOT DRAINED (drain.enabled is off in the site file): gpumem: GPU check gave "
	     "no verdict twice in a row {GPU-a,GPU-b} (job 8.prolog before own",
	     "two of the check's own in a row: a drain naming the GPUs and both jobs, refused by "
	     "the site");
	is_int(r.drained, 0, "... not drained");
	c->gpus.n = -1;
	c->gpus.text[0] = '\0';
	ended(&r, "timed_out", "error", "killed", 0);
	gpumem_suspect_update(c, &node, &r);
	ok(marked(c, "all"), "every GPU of the node (gpus=all): one mark, .all");
	like(last_log, "GPUs all marked suspect", "... logged");
	c->gpus.n = 2;
	snprintf(c->gpus.text, sizeof(c->gpus.text), "0,1");
}

static void no_state(struct gpumem_check_ctx *c)
{
	struct gpumem_checkrun r;
	char what[700];
	int dfd = c->state.dfd;

	c->state.dfd = -1;
	ended(&r, "timed_out", "error", "killed", 0);
	gpumem_suspect_update(c, &unprobed, &r);
	like(last_log, "cannot keep the GPUs' state in", "no state directory: the hook says so");
	is_int(gpumem_suspect_find(c, what, sizeof(what)), 0, "... and finds no mark");
	c->state.dfd = dfd;
}

int main(void)
{
	char base[] = "/tmp/gpumem-test-gpustate.XXXXXX";
	struct gpumem_check_ctx c;

	fixture_need_root();
	if (mkdtemp(base) == NULL || fixture_ctx(&c, base) < 0) {
		printf("Bail out! cannot make the test's state directory\n");
		return 1;
	}
	names(&c);
	no_verdict(&c);
	kept(&c);
	cleared(&c);
	twice(&c);
	no_state(&c);
	return fixture_done(&c, base);
}

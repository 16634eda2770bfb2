/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reuse that rests on evidence (plugin/spank/check/evidence.c), against the
 * check's contract alone (check_ctx.h), without Slurm: a stand-in
 * gpumem-health (its document from a file) run as check_user, root's
 * state directory of the test's own.  A measured pass is kept with what
 * it was judged at; the next check rests on it only while nothing it was
 * judged on changed: the threshold, the site's references, the GPU's NVML
 * evidence, its age, a low-HBM mark, the check's own job and phase.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "check_fixture.h"
#include "evidence.h"
#include "core_base.h"
#include "tap.h"

static char base[] = "/tmp/gpumem-test-evidence.XXXXXX";

#define EV0 "uuid=GPU-a ecc.volatile.corrected=0 pcie.max=16"
#define EV1 "uuid=GPU-b ecc.volatile.corrected=0 pcie.max=16"

/* BASE/libexec/NAME holds TEXT, mode MODE (check_user reads it). */
static void put(const char *name, const char *text, mode_t mode)
{
	char path[400];
	FILE *f;

	snprintf(path, sizeof(path), "%s/libexec/%s", base, name);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		printf("# cannot write %s\n", path);
	chmod(path, mode);
}

/* What the stand-in gpumem-health prints next: devices 0 and 1, E0 and E1, ALARM1 on 1. */
static void health(const char *e0, const char *e1, const char *alarm1)
{
	char doc[1024];

	snprintf(doc, sizeof(doc), "{\"schema\":\"gpumem-health/1\",\"devices\":["
		 "{\"gpu\":\"0\",\"evidence\":\"%s\",\"alarms\":[]},"
		 "{\"gpu\":\"1\",\"evidence\":\"%s\",\"alarms\":[%s%s%s]}],"
		 "\"node_held\":false,\"node_held_why\":\"no process holds a GPU\"}\n",
		 e0, e1, alarm1 ? "\"" : "", alarm1 ? alarm1 : "", alarm1 ? "\"" : "");
	put("health.json", doc, 0644);
}

/* A measured check of PHASE whose devices gave VERDICT0 and VERDICT1. */
static void measured(struct gpumem_checkrun *r, const char *phase, const char *v0,
		     const char *v1)
{
	char doc[200];

	memset(r, 0, sizeof(*r));
	r->done = 1;
	snprintf(r->phase, sizeof(r->phase), "%s", phase);
	snprintf(r->status, sizeof(r->status), "ran");
	snprintf(r->verdict, sizeof(r->verdict), "%s", strcmp(v0, "pass") ? v0 : v1);
	snprintf(doc, sizeof(doc), "{\"devices\":[{\"verdict\":\"%s\"},{\"verdict\":\"%s\"}]}", v0,
		 v1);
	r->doc = json_tokener_parse(doc);
}

/* Decide for PHASE (FORCED: a GPU is suspect): 1 reuse, 0 measure; the basis said. */
static int decide(const struct gpumem_check_ctx *c, const char *phase, int forced,
		  struct gpumem_evidence *ev)
{
	int rv = gpumem_evidence_decide(c, phase, forced, ev);

	printf("# %s\n", ev->basis);
	return rv;
}

/* Keep the measured pass of job 7's before-check on both GPUs. */
static void keep_pass(struct gpumem_check_ctx *c, struct gpumem_evidence *ev)
{
	struct gpumem_checkrun r;

	decide(c, "before", 0, ev);
	measured(&r, "before", "pass", "pass");
	gpumem_evidence_record(c, ev, &r);
	gpumem_jobcheck_free(&r);
}

static void pass_record(struct gpumem_check_ctx *c, struct gpumem_evidence *ev)
{
	struct gpumem_checkrun r;
	struct gpumem_pass p;
	char *text;
	int rv;

	rv = decide(c, "before", 0, ev);
	is_int(rv, 0, "no pass on record: measured");
	like(ev->basis, "measured: gpu0: no measured pass on record", "... saying so");
	ok(ev->have, "... the NVML health read all the same (the pass keeps it)");
	is_str(ev->now[1], EV1, "... GPU 1's evidence as gpumem-health gave it");
	measured(&r, "before", "pass", "pass");
	gpumem_evidence_record(c, ev, &r);
	is_str(r.basis, ev->basis, "the report says what the measured check rested on");
	gpumem_jobcheck_free(&r);
	text = fixture_gpufile(c, "pass.node1.1");
	ok(text != NULL, "a pass on every GPU: GPU 1 keeps it (gpus/pass.node1.1)");
	ok(text && gpumem_pass_parse(text, &p) == 0, "... a pass record that parses");
	is_int(text ? p.job : 0, 7, "... of job 7");
	is_str(text ? p.phase : "", "before", "... its before-check");
	is_str(text ? p.evidence : "", EV1, "... with GPU 1's NVML evidence read before it");
	ok(text && p.judged && p.min_fraction == c->check.min_fraction,
	   "... judged at the check's min_fraction (%g)", c->check.min_fraction);
	is_str(text ? p.refs : "", c->check.refs, "... against the site's references' digest");
	free(text);
}

static void reuse(struct gpumem_check_ctx *c, struct gpumem_evidence *ev)
{
	struct gpumem_checkrun r;

	c->job.id = 8;
	is_int(decide(c, "before", 0, ev), 1, "job 8, nothing changed: rests on job 7's pass");
	like(ev->basis, "reused: bandwidth measured 0 min ago before job 7, NVML health unchanged",
	     "... saying what it rests on");
	is_int(ev->pass_job, 7, "... job 7's pass");
	memset(&r, 0, sizeof(r));
	gpumem_evidence_reused(ev, &r);
	is_str(r.verdict, "pass", "a reused check's verdict: pass");
	is_int(r.pass_job, 7, "... its pass for the report");
	ok(r.node_free, "... gpumem-health's word that no process holds a GPU");
	c->check.min_fraction = 0.5;
	is_int(decide(c, "before", 0, ev), 1, "a laxer check (0.5) rests on a stricter pass");
}

static void refused(struct gpumem_check_ctx *c, struct gpumem_evidence *ev)
{
	char refs[GPUMEM_PASS_REFS_LEN];

	c->check.min_fraction = 0.95;
	is_int(decide(c, "before", 0, ev), 0, "the threshold went up (0.95): measured");
	like(ev->basis, "job 7's pass was measured at min_fraction 0.85, this check asks 0.95",
	     "... saying which threshold the pass was judged at");
	c->check.min_fraction = fixture_eff.check.min_fraction;
	snprintf(refs, sizeof(refs), "%s", c->check.refs);
	snprintf(c->check.refs, sizeof(c->check.refs), "0123456789abcdef");
	is_int(decide(c, "before", 0, ev), 0, "the references' digest differs: measured");
	like(ev->basis, "judged against other references", "... saying so");
	snprintf(c->check.refs, sizeof(c->check.refs), "%s", refs);
	health("uuid=GPU-a ecc.volatile.corrected=3 pcie.max=16", EV1, NULL);
	is_int(decide(c, "before", 0, ev), 0, "GPU 0's NVML state changed: measured");
	like(ev->basis, "gpu0: NVML health changed since job 7's pass (ecc.volatile.corrected 0 -> 3)",
	     "... naming the counter that moved");
	health(EV0, EV1, "row remapping pending");
	is_int(decide(c, "before", 0, ev), 0, "an NVML alarm on GPU 1: measured");
	like(ev->basis, "gpu1: NVML: row remapping pending", "... naming it");
	health(EV0, EV1, NULL);
	is_int(decide(c, "before", 1, ev), 0, "a suspect GPU (forced): measured");
	like(ev->basis, "forced: a GPU is suspect", "... saying so");
	c->job.id = 7;
	is_int(decide(c, "after", 0, ev), 0, "job 7's after-check on its own before-check: measured");
	like(ev->basis, "never reused for its after-check", "... saying so");
	c->job.id = 8;
	is_int(decide(c, "before", 0, ev), 1, "all as it was: job 8 rests on the pass again");
}

static void marks(struct gpumem_check_ctx *c, struct gpumem_evidence *ev)
{
	char text[200], *low;

	ok(fixture_gpuput(c, "hbmlow.node1.1", "9 50 45 10\n") == 0, "job 9's profile marks GPU 1 low");
	is_int(decide(c, "before", 0, ev), 0, "a low-HBM mark: measured");
	like(ev->basis, "gpu1: job 9's profile streamed HBM at a low ceiling (DRAM p95 50%",
	     "... naming the job and its figures");
	c->check.strict = 0;
	keep_pass(c, ev);
	ok((low = fixture_gpufile(c, "hbmlow.node1.1")) != NULL,
	   "a pass laxer than the site's default leaves the mark");
	free(low);
	c->check.strict = 1;
	keep_pass(c, ev);
	ok((low = fixture_gpufile(c, "hbmlow.node1.1")) == NULL, "a strict pass clears it");
	free(low);
	snprintf(text, sizeof(text), "7 before %lld\n" EV0 "\njudged min_fraction=0.85 references=%s\n",
		 (long long)time(NULL) - 7200, c->check.refs);
	fixture_gpuput(c, "pass.node1.0", text);
	is_int(decide(c, "before", 0, ev), 0, "a pass two hours old (min_interval 60): measured");
	like(ev->basis, "gpu0: bandwidth last measured 120 min ago", "... saying how old");
	snprintf(text, sizeof(text), "7 before %lld\n" EV0 "\n", (long long)time(NULL));
	fixture_gpuput(c, "pass.node1.0", text);
	is_int(decide(c, "before", 0, ev), 0, "a pass that says nothing of its threshold: measured");
	like(ev->basis, "does not say what it was measured at", "... an older gpumem's");
}

static void forgotten(struct gpumem_check_ctx *c, struct gpumem_evidence *ev)
{
	struct gpumem_checkrun r;
	char *text;

	keep_pass(c, ev);
	is_int(decide(c, "before", 0, ev), 1, "a fresh pass answers");
	measured(&r, "before", "pass", "pass");
	snprintf(r.status, sizeof(r.status), "skipped");
	gpumem_evidence_record(c, ev, &r);
	gpumem_jobcheck_free(&r);
	is_int(decide(c, "before", 0, ev), 1, "a skipped check learnt nothing: the pass stays");
	decide(c, "before", 1, ev);
	measured(&r, "before", "pass", "fail");
	gpumem_evidence_record(c, ev, &r);
	gpumem_jobcheck_free(&r);
	text = fixture_gpufile(c, "pass.node1.0");
	ok(text == NULL, "GPU 1 failed: GPU 0's pass is forgotten too (CUDA's order is not Slurm's)");
	free(text);
	is_int(decide(c, "before", 0, ev), 0, "... and the next check is measured");
}

static void no_evidence(struct gpumem_check_ctx *c, struct gpumem_evidence *ev)
{
	const char *libexec = c->as.libexecdir;

	keep_pass(c, ev);
	put("health.json", "{\"schema\":", 0644);
	is_int(decide(c, "before", 0, ev), 0, "gpumem-health printed no valid document: measured");
	like(ev->basis, "no NVML evidence: gpumem-health gave no valid document", "... saying so");
	health(EV0, EV1, NULL);
	c->as.libexecdir = "/nonexistent";
	is_int(decide(c, "before", 0, ev), 0, "gpumem-health not installed: measured");
	like(ev->basis, "gpumem-health is not installed", "... saying so");
	c->as.libexecdir = libexec;
	c->gpus.n = -1;
	is_int(decide(c, "before", 0, ev), 0, "every GPU of the node (gpus=all): measured");
	like(ev->basis, "always measured", "... saying so");
	c->gpus.n = 2;
	c->check.min_interval_min = 0;
	is_int(decide(c, "before", 0, ev), 0, "check.min_interval 0: measured");
	is_str(ev->basis, "measured: check.min_interval is 0", "... saying so");
	ok(!ev->have, "... and no gpumem-health ran");
	c->check.min_interval_min = 60;
	is_int(decide(c, "before", 0, ev), 1, "min_interval back: the pass answers again");
}

int main(void)
{
	struct gpumem_check_ctx c;
	struct gpumem_evidence ev;

	fixture_need_root();
	if (mkdtemp(base) == NULL || fixture_ctx(&c, base) < 0) {
		printf("Bail out! cannot make the test's state directory\n");
		return 1;
	}
	/* The stand-in gpumem-health: the document above, as check_user reads it. */
	put("gpumem-health", "#!/bin/sh\nexec cat \"${0%/*}/health.json\"\n", 0755);
	health(EV0, EV1, NULL);
	pass_record(&c, &ev);
	reuse(&c, &ev);
	refused(&c, &ev);
	marks(&c, &ev);
	forgotten(&c, &ev);
	no_evidence(&c, &ev);
	return fixture_done(&c, base);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --gpumem-policy=advised's choice (plugin/core/advised.c) on sacct answers
 * built here from real records (gpumem_acct_encode): which GPU wins, the
 * loop (kept, slower, still faulting, did not complete), names sacct's
 * database changed (a backquote for a quote, '?' for other UTF-8), a job
 * the database named "allocation", forged segments, the advised name's
 * parser, and sacct's arguments.  tests/slurm/advised.sh runs the same
 * through the real Slurm.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "acct.h"
#include "advised.h"
#include "tap.h"

/* Figures of one GPU: [index, samples, "gpm", dram mean, p95, sm mean, p95, occ, rx mean, p95, tx, nvrx, nvtx, mem]. */
#define FAULT "5, 5, 20, 20, 10, 5.4, 5.4, 4.0, 0, 0, 7.5"
#define LINK "5, 5, 20, 20, 10, 45, 45, 0.1, 0, 0, 7.5"
#define HBM "90, 90, 50, 50, 30, 0.1, 0.1, 0.1, 0, 0, 7.5"
#define IDLE "0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.5"
#define BUSY "20, 20, 90, 95, 60, 0.1, 0.1, 0.1, 0, 0, 7.5"

static char text[1 << 16];

/* A sacct line of job ID: its record (POLICY, GPUs G0 and, unless NULL, G1) as a segment. */
static void row(long id, long elapsed, const char *state, const char *name, const char *policy,
		const char *g0, const char *g1)
{
	char json[2048], err[200], *seg;

	snprintf(json, sizeof(json), "{\"v\":1,\"node\":\"gpu%02ld\",\"job\":%ld,\"user\":\"u\","
		 "\"policy\":\"%s\",\"eff\":{\"l2\":null,\"mps\":null,\"daemon\":\"none\","
		 "\"um\":\"none\"},\"checks\":[],\"drained\":false,\"prof\":{\"st\":\"ran\","
		 "\"why\":null,\"s\":30,\"src\":\"gpm\",\"g\":[[0,30,\"gpm\",%s]%s%s%s]}}",
		 id, id, policy, g0, g1 ? ",[1,30,\"gpm\"," : "", g1 ? g1 : "", g1 ? "]" : "");
	seg = gpumem_acct_encode(json, err, sizeof(err));
	if (seg == NULL) {
		printf("# encode: %s\n", err);
		return;
	}
	snprintf(text + strlen(text), sizeof(text) - strlen(text), "%ld|%ld|%s|%s|%s\n%ld.0|%ld|%s|%s|\n",
		 id, elapsed, state, name, seg, id, elapsed, state, name);
	free(seg);
}

/* The choice for NAME from the rows so far; TEXT emptied. */
static const char *choose(const char *name, struct gpumem_advised *a)
{
	static char line[1400];

	gpumem_advised_read(text, name, NULL, a);
	gpumem_advised_choose(a, name, 30);
	snprintf(line, sizeof(line), "%s", a->line);
	text[0] = '\0';
	return line;
}

int main(void)
{
	struct gpumem_advised a;
	char buf[512], why[200], *argv[16];

	/* No history, and forged records only. */
	like(choose("train", &a), "no profiled job named train in the last 30 days: site defaults", "no rows");
	is_str(a.policy, "", "... no policy");
	gpumem_advised_free(&a);
	strcpy(text, "7|5|COMPLETED|train|{~!!!!!~} {~,,zz~}\n");
	like(choose("train", &a), "no profiled job named train in the last 30 days (its records have no profile, or were refused)", "forged segments: refused");
	gpumem_advised_free(&a);

	/* History: the newest profiled job's advice, the name forwarded. */
	row(11, 30, "COMPLETED", "train", "site defaults", FAULT, NULL);
	like(choose("train", &a), "gpumem: advised: zerocopy.yaml, from job 11 on gpu11 (faulting: ", "job 11 faulted: zerocopy.yaml");
	is_str(a.fwd_name, "zerocopy.yaml (advised from job 11: faulting)", "... forwarded under its advised name");
	gpumem_advised_free(&a);

	/* Which GPU wins. */
	row(12, 30, "COMPLETED", "multi", "site defaults", IDLE, HBM);
	like(choose("multi", &a), "stream.yaml, from job 12 on gpu12 (hbm-bound", "idle GPU 0, HBM-bound GPU 1: a used GPU wins");
	gpumem_advised_free(&a);
	row(13, 30, "COMPLETED", "multi", "site defaults", HBM, FAULT);
	like(choose("multi", &a), "zerocopy.yaml, from job 13", "HBM-bound GPU 0, faulting GPU 1: the rule earlier in the order");
	gpumem_advised_free(&a);
	row(14, 30, "COMPLETED", "multi", "site defaults", IDLE, IDLE);
	like(choose("multi", &a), "job 14 on gpu14 left its GPUs idle (idle: ", "every GPU idle: no policy, the idle advice's reason");
	like(a.line, "(ask for fewer GPUs): site defaults", "... ask for fewer GPUs, the site's defaults");
	is_str(a.policy, "", "... no policy forwarded");
	gpumem_advised_free(&a);
	row(15, 30, "COMPLETED", "multi", "site defaults", BUSY, IDLE);
	like(choose("multi", &a), "job 15 on gpu15 (compute-bound: nothing to gain", "compute-bound beside an idle GPU: nothing to advise");
	like(a.line, ": no policy to advise: site defaults", "... the site's defaults");
	gpumem_advised_free(&a);

	/* The loop: gained, kept from the first job. */
	row(21, 30, "COMPLETED", "t", "site defaults", FAULT, NULL);
	row(22, 6, "COMPLETED", "t", "zerocopy.yaml (advised from job 21: faulting) (as forwarded)", LINK, NULL);
	like(choose("t", &a), "zerocopy.yaml, from job 21 on gpu21 (faulting: ", "a run that gained: the policy again, from the first job");
	like(a.line, "; kept: zerocopy.yaml tried in job 22 (advised from job 21, faulting): 5.0x faster (6 s against 30 s): kept", "... and why");
	is_int(a.nhist, 1, "... one run in the history");
	is_str(a.hist[0].outcome, "gained", "... its outcome, as --json gives it");
	gpumem_advised_free(&a);
	/* Within the margin (5 % and sacct's one-second tick): kept; past it: not advised again. */
	row(21, 100, "COMPLETED", "t", "site defaults", FAULT, NULL);
	row(22, 106, "COMPLETED", "t", "zerocopy.yaml (advised from job 21: faulting) (as forwarded)", LINK, NULL);
	like(choose("t", &a), ": kept", "106 s against 100 s: within the margin, kept");
	gpumem_advised_free(&a);
	row(21, 7, "COMPLETED", "t", "site defaults", FAULT, NULL);
	row(22, 8, "COMPLETED", "t", "zerocopy.yaml (advised from job 21: faulting) (as forwarded)", LINK, NULL);
	like(choose("t", &a), ": kept", "8 s against 7 s: one tick of sacct's whole seconds, kept (seen on an H100)");
	gpumem_advised_free(&a);
	row(21, 100, "COMPLETED", "t", "site defaults", FAULT, NULL);
	row(22, 107, "COMPLETED", "t", "zerocopy.yaml (advised from job 21: faulting) (as forwarded)", LINK, NULL);
	like(choose("t", &a), "job 21 advises zerocopy.yaml (faulting), but zerocopy.yaml tried in job 22 (advised from job 21, faulting): 0.93x (slower) (107 s against 100 s): not advised again: site defaults", "107 s against 100 s: not advised again");
	is_str(a.policy, "", "... the site's defaults");
	is_str(a.hist[0].outcome, "slower", "... outcome slower");
	gpumem_advised_free(&a);
	/* Never twice: a later un-advised run of the name advises it again; still dropped. */
	row(21, 100, "COMPLETED", "t", "site defaults", FAULT, NULL);
	row(22, 200, "COMPLETED", "t", "zerocopy.yaml (advised from job 21: faulting) (as forwarded)", LINK, NULL);
	row(23, 100, "COMPLETED", "t", "site defaults", FAULT, NULL);
	like(choose("t", &a), "job 23 advises zerocopy.yaml (faulting), but zerocopy.yaml tried in job 22", "a policy that made the name slower is not advised again, whichever job advises it");
	gpumem_advised_free(&a);
	/* Still faulting, however fast; did not complete. */
	row(21, 30, "COMPLETED", "t", "site defaults", FAULT, NULL);
	row(22, 10, "COMPLETED", "t", "zerocopy.yaml (advised from job 21: faulting) (as forwarded)", FAULT, NULL);
	like(choose("t", &a), "(advised from job 21, faulting): still faulting: not advised again: site defaults", "still faulting under the policy: not advised again");
	is_str(a.hist[0].outcome, "still", "... outcome still");
	gpumem_advised_free(&a);
	row(21, 30, "COMPLETED", "t", "site defaults", FAULT, NULL);
	row(22, 3, "FAILED", "t", "zerocopy.yaml (advised from job 21: faulting) (as forwarded)", LINK, NULL);
	like(choose("t", &a), "it did not complete: not advised again", "a run that failed: not advised again, however short");
	is_str(a.hist[0].outcome, "incomplete", "... outcome incomplete");
	gpumem_advised_free(&a);
	/* The first job out of the window: not judged, the run's own advice. */
	row(22, 3, "COMPLETED", "t", "zerocopy.yaml (advised from job 21: faulting) (as forwarded)", HBM, NULL);
	like(choose("t", &a), "stream.yaml, from job 22", "the first job gone: the advised run's own advice");
	is_str(a.nhist ? a.hist[0].outcome : "", "unjudged", "... outcome unjudged");
	like(a.hist[0].text, "job 21 is no longer in the window: not judged", "... and the history says so");
	gpumem_advised_free(&a);

	/* Names as Slurm's database keeps them; "allocation". */
	row(31, 30, "COMPLETED", "a`b?c", "site defaults", FAULT, NULL);
	like(choose("a\"b\xc2\x9b" "c", &a), "from job 31", "a quote stored as a backquote, a C1 control as '?': the same name");
	gpumem_advised_free(&a);
	row(32, 30, "COMPLETED", "a|b", "site defaults", FAULT, NULL);
	like(choose("a", &a), "no profiled job named a ", "a name is matched whole ('a' is not 'a|b')");
	gpumem_advised_free(&a);
	row(33, 30, "COMPLETED", "allocation", "site defaults", FAULT, NULL);
	snprintf(text + strlen(text) - strlen("33.0|30|COMPLETED|allocation|\n"), 64, "33.0|30|COMPLETED|x|\n");
	like(choose("x", &a), "from job 33", "a job the database named allocation: its step's name");
	gpumem_advised_free(&a);

	/* sacct's arguments. */
	ok(gpumem_advised_argv("train", "1000", 30, buf, sizeof(buf), argv, 16, why, sizeof(why)) == 0 &&
	   !strcmp(argv[5], "--user=1000") && !strcmp(argv[6], "-Snow-30days") &&
	   !strcmp(argv[7], "--name=train,allocation") && argv[8] == NULL, "a plain name: sacct filters it");
	ok(gpumem_advised_argv("a,b", "1000", 7, buf, sizeof(buf), argv, 16, why, sizeof(why)) == 0 &&
	   !strcmp(argv[6], "-Snow-7days") && argv[7] == NULL, "a comma: no filter, matched here");
	ok(gpumem_advised_argv("a\nb", "1000", 7, buf, sizeof(buf), argv, 16, why, sizeof(why)) < 0, "a line break: not looked up");
	like(why, "line break", "... and why");
	return tap_done();
}

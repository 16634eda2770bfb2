/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --gpumem-policy=advised's choice (plugin/core/advice/advice_history.c) on sacct answers
 * built here from real records (gpumem_acct_encode): which GPU wins, the
 * loop (the judge on the .batch step's time: kept, even, probation after
 * one loss, dropped after two or on harm, not judged; version 1 records
 * by their label, version 2 by their fields), names sacct's
 * database changed (a backquote for a quote, '?' for other UTF-8), a job
 * the database named "allocation", forged segments, the advised name's
 * parser, and sacct's arguments.  tests/slurm/advised.sh runs the same
 * through the real Slurm.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core_record.h"
#include "core_advice.h"
#include "tap.h"

/* Figures of one GPU: [index, samples, "gpm", dram mean, p95, sm mean, p95, occ, rx mean, p95, tx, nvrx, nvtx, mem]. */
#define FAULT "5, 5, 20, 20, 10, 5.4, 5.4, 4.0, 0, 0, 7.5"
#define LINK "5, 5, 20, 20, 10, 45, 45, 0.1, 0, 0, 7.5"
#define HBM "90, 90, 50, 50, 30, 0.1, 0.1, 0.1, 0, 0, 7.5"
#define IDLE "0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.5"
#define ADV21 "zerocopy.yaml (advised from job 21: faulting) (as forwarded)"
#define BUSY "20, 20, 90, 95, 60, 0.1, 0.1, 0.1, 0, 0, 7.5"

static char text[1 << 16];
static long batch = -1;         /* >= 0: the job's .batch step took this, not its elapsed */
static const char *adv;         /* non-NULL: a version 2 record, with this "adv" unless "" */
static int samples = 30;
static const char *command;     /* non-NULL: the job row's "WORKDIR|SUBMITLINE" after its comment */

/* A sacct line of job ID: its record (POLICY, GPUs G0 and, unless NULL, G1) as a segment. */
static void row(long id, long elapsed, const char *state, const char *name, const char *policy,
		const char *g0, const char *g1)
{
	char json[2048], err[200], *seg;

	snprintf(json, sizeof(json), "{\"v\":%d,\"node\":\"gpu%02ld\",\"job\":%ld,\"user\":\"u\","
		 "\"policy\":\"%s\",\"eff\":{\"l2\":null,\"mps\":null,\"daemon\":\"none\","
		 "\"um\":\"none\"},\"checks\":[],\"drained\":false,\"prof\":{\"st\":\"ran\","
		 "\"why\":null,\"s\":30,\"src\":\"gpm\",\"g\":[[0,%d,\"gpm\",%s]%s%s%s]}%s%s}",
		 adv ? 2 : 1, id, id, policy, samples, g0, g1 ? ",[1,30,\"gpm\"," : "", g1 ? g1 : "",
		 g1 ? "]" : "", adv && *adv ? ",\"adv\":" : "", adv ? adv : "");
	seg = gpumem_acct_encode(json, err, sizeof(err));
	if (seg == NULL) {
		printf("# encode: %s\n", err);
		return;
	}
	snprintf(text + strlen(text), sizeof(text) - strlen(text), "%ld|%ld|%s|%s|%s%s%s\n%ld.%s|%ld|%s|%s|\n",
		 id, elapsed, state, name, seg, command ? "|" : "", command ? command : "",
		 id, batch >= 0 ? "batch" : "0",
		 batch >= 0 ? batch : elapsed, state, batch >= 0 ? "batch" : name);
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

	/* The loop: gained, kept from the first job; the label's numbers from the fields. */
	row(21, 30, "COMPLETED", "t", "site defaults", FAULT, NULL);
	row(22, 6, "COMPLETED", "t", ADV21, LINK, NULL);
	like(choose("t", &a), "zerocopy.yaml, from job 21 on gpu21 (faulting: ", "a run that gained: the policy again, from the first job");
	like(a.line, "; kept: zerocopy.yaml tried in job 22 (advised from job 21, faulting): 5.0x faster: work 6 s against 30 s (median of 1, noise 4 s); gpumem's own time 0 s against 0 s: kept", "... and why, the work's figures and gpumem's own time apart");
	is_int(a.nhist, 1, "... one run in the history");
	is_str(a.hist[0].outcome, "gained", "... its outcome, as --json gives it");
	like(a.src_json, "\"standing\":\"kept\"", "... forwarded as kept");
	gpumem_advised_free(&a);
	/* The .batch step's time, not the job's (which has the prolog in it). */
	batch = 10;
	row(21, 30, "COMPLETED", "t", "site defaults", FAULT, NULL);
	batch = 25;
	row(22, 40, "COMPLETED", "t", ADV21, LINK, NULL);
	batch = -1;
	like(choose("t", &a), "0.40x (slower): work 25 s against 10 s", "the .batch step's elapsed is judged, not the job's");
	like(a.line, "gpumem's own time 15 s against 20 s", "... the rest is gpumem's own time, said apart");
	gpumem_advised_free(&a);
	/* The floor: one reference doubles it (10 % of 100 s here). */
	row(21, 100, "COMPLETED", "t", "site defaults", FAULT, NULL);
	row(22, 108, "COMPLETED", "t", ADV21, LINK, NULL);
	like(choose("t", &a), "no gain beyond the noise: work 108 s against 100 s (median of 1, noise 10 s)", "108 s against 100 s, one reference: within the noise");
	is_str(a.policy, "zerocopy.yaml", "... kept");
	gpumem_advised_free(&a);
	/* One loss: probation, said; a second in a row: dropped. */
	row(21, 100, "COMPLETED", "t", "site defaults", FAULT, NULL);
	row(22, 125, "COMPLETED", "t", ADV21, LINK, NULL);
	like(choose("t", &a), "; on probation: zerocopy.yaml tried in job 22 (advised from job 21, faulting): 0.80x (slower): work 125 s", "one loss: still advised, on probation");
	like(a.line, ": on probation (one loss; another in a row drops it)", "... the line says so");
	is_str(a.policy, "zerocopy.yaml", "... the policy stays");
	like(a.src_json, "\"standing\":\"probation\"", "... forwarded as on probation");
	is_str(a.hist[0].outcome, "slower", "... outcome slower");
	gpumem_advised_free(&a);
	row(21, 100, "COMPLETED", "t", "site defaults", FAULT, NULL);
	row(22, 125, "COMPLETED", "t", ADV21, LINK, NULL);
	row(23, 125, "COMPLETED", "t", ADV21, LINK, NULL);
	like(choose("t", &a), "job 21 advises zerocopy.yaml (faulting), but zerocopy.yaml tried in job 23 (advised from job 21, faulting): 0.80x (slower)", "two losses in a row: dropped");
	like(a.line, "a second loss in a row: not advised again: site defaults", "... the line says why");
	is_str(a.policy, "", "... the site's defaults");
	gpumem_advised_free(&a);
	row(21, 100, "COMPLETED", "t", "site defaults", FAULT, NULL);
	row(22, 125, "COMPLETED", "t", ADV21, LINK, NULL);
	row(23, 40, "COMPLETED", "t", ADV21, LINK, NULL);
	row(24, 125, "COMPLETED", "t", ADV21, LINK, NULL);
	like(choose("t", &a), "; on probation: zerocopy.yaml tried in job 24", "loss, gain, loss: not in a row, on probation");
	gpumem_advised_free(&a);
	/* Dropped stays dropped whichever default run advises it again. */
	row(21, 100, "COMPLETED", "t", "site defaults", FAULT, NULL);
	row(22, 200, "COMPLETED", "t", ADV21, LINK, NULL);
	row(23, 200, "COMPLETED", "t", ADV21, LINK, NULL);
	row(25, 100, "COMPLETED", "t", "site defaults", FAULT, NULL);
	like(choose("t", &a), "job 25 advises zerocopy.yaml (faulting), but zerocopy.yaml tried in job 23", "a dropped policy is not advised again, whichever job advises it");
	gpumem_advised_free(&a);
	/* The work changed (now on two GPUs): the history starts again. */
	row(21, 100, "COMPLETED", "t", "site defaults", FAULT, NULL);
	row(22, 200, "COMPLETED", "t", ADV21, LINK, NULL);
	row(23, 200, "COMPLETED", "t", ADV21, LINK, NULL);
	row(24, 100, "COMPLETED", "t", "site defaults", FAULT, FAULT);
	like(choose("t", &a), "gpumem: advised: zerocopy.yaml, from job 24 on gpu24", "a drop on one GPU does not hold for the name's work on two");
	like(a.hist[0].text, "not counted: another command, GPU count or model than the name's newest run", "... the old runs say why they no longer count");
	gpumem_advised_free(&a);
	/* The command changed (accounting's WorkDir|SubmitLine): not judged, and the history starts again. */
	command = "/home/u|sbatch a.sh";
	row(21, 100, "COMPLETED", "t", "site defaults", FAULT, NULL);
	command = "/home/u|sbatch --wrap 'true | cat'";
	row(22, 40, "COMPLETED", "t", ADV21, LINK, NULL);
	choose("t", &a);
	like(a.hist[0].text, "not judged: no comparable run under the site's defaults (another command)",
	     "another command (a '|' in it too): not judged, never a gain");
	gpumem_advised_free(&a);
	command = "/home/u|sbatch a.sh";
	row(21, 100, "COMPLETED", "t", "site defaults", FAULT, NULL);
	row(22, 200, "COMPLETED", "t", ADV21, LINK, NULL);
	row(23, 200, "COMPLETED", "t", ADV21, LINK, NULL);
	command = "/home/u|sbatch b.sh";
	row(24, 100, "COMPLETED", "t", "site defaults", FAULT, NULL);
	like(choose("t", &a), "gpumem: advised: zerocopy.yaml, from job 24 on gpu24", "a drop under one command does not hold for another");
	like(a.hist[0].text, "not counted: another command", "... the old runs say why");
	gpumem_advised_free(&a);
	command = "/home/u|sbatch a.sh";
	row(21, 100, "COMPLETED", "t", "site defaults", FAULT, NULL);
	command = "/home/u|sbatch --gpumem-policy=advised a.sh";
	row(22, 125, "COMPLETED", "t", ADV21, LINK, NULL);
	command = "/home/u|sbatch --gpumem-policy advised  a.sh";
	row(23, 100, "COMPLETED", "t", ADV21, LINK, NULL);
	like(choose("t", &a), "; kept: zerocopy.yaml tried in job 23 (advised from job 21, faulting): no gain beyond the noise", "gpumem's own option is no other command (both spellings): judged, a loss then even");
	like(a.hist[1].text, "0.80x (slower)", "... the advised run judged against the defaults' run");
	gpumem_advised_free(&a);
	command = "|";
	row(21, 100, "COMPLETED", "t", "site defaults", FAULT, NULL);
	command = "/home/u|sbatch b.sh";
	row(22, 125, "COMPLETED", "t", ADV21, LINK, NULL);
	command = NULL;
	like(choose("t", &a), "; on probation: zerocopy.yaml tried in job 22", "a command accounting has not filled in yet (22.05): compared without it");
	gpumem_advised_free(&a);
	/* Still faulting: a loss however fast; failed: harm, dropped at once. */
	row(21, 30, "COMPLETED", "t", "site defaults", FAULT, NULL);
	row(22, 10, "COMPLETED", "t", ADV21, FAULT, NULL);
	like(choose("t", &a), "still faulting", "still faulting under the policy: a loss");
	like(a.line, "on probation", "... on probation");
	is_str(a.hist[0].outcome, "still", "... outcome still");
	gpumem_advised_free(&a);
	row(21, 30, "COMPLETED", "t", "site defaults", FAULT, NULL);
	row(22, 3, "FAILED", "t", ADV21, LINK, NULL);
	like(choose("t", &a), "it failed where the runs under the site's defaults completed: clear harm: not advised again: site defaults", "a run that failed where the defaults did not: dropped at once");
	is_str(a.hist[0].outcome, "failed", "... outcome failed");
	gpumem_advised_free(&a);
	/* Not judged: a near-zero run, another GPU count, no reference. */
	row(21, 30, "COMPLETED", "t", "site defaults", FAULT, NULL);
	samples = 0;
	row(22, 0, "COMPLETED", "t", ADV21, IDLE, NULL);
	samples = 30;
	like(choose("t", &a), "zerocopy.yaml, from job 21", "`true` under advised: the policy stays");
	like(a.hist[0].text, "not judged: its profile has 0 samples (fewer than 10): still new", "... not judged, no ratio");
	is_str(a.hist[0].outcome, "not judged", "... outcome not judged");
	gpumem_advised_free(&a);
	row(21, 30, "COMPLETED", "t", "site defaults", FAULT, NULL);
	row(22, 90, "COMPLETED", "t", ADV21, LINK, LINK);
	choose("t", &a);
	like(a.hist[0].text, "not judged: no comparable run under the site's defaults (another GPU count)", "another GPU count: not judged");
	gpumem_advised_free(&a);
	row(22, 3, "COMPLETED", "t", ADV21, HBM, NULL);
	like(choose("t", &a), "zerocopy.yaml, from job 21 (faulting; that job is out of the window)", "the first job gone: its policy goes on");
	like(a.hist[0].text, "not judged: no run under the site's defaults to compare with", "... not judged");
	gpumem_advised_free(&a);
	/* A version 2 record: the fields decide, a forged label changes nothing. */
	row(21, 30, "COMPLETED", "t", "site defaults", FAULT, NULL);
	adv = "{\"job\":21,\"rule\":\"faulting\",\"policy\":\"zerocopy.yaml\",\"standing\":\"new\"}";
	row(22, 6, "COMPLETED", "t", "z.yaml", LINK, NULL);
	adv = NULL;
	like(choose("t", &a), "; kept: zerocopy.yaml tried in job 22", "a version 2 record: its adv read");
	gpumem_advised_free(&a);
	row(21, 30, "COMPLETED", "t", "site defaults", FAULT, NULL);
	adv = "";
	row(22, 6, "COMPLETED", "t", "z (advised from job 21: faulting).yaml", LINK, NULL);
	adv = NULL;
	choose("t", &a);
	is_int(a.nhist, 0, "a version 2 record with a forged label and no adv: no advised run");
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

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The GPU check around a step, without Slurm: gpumem_jobcheck_run forks
 * the stand-in check of the real-Slurm tests (tests/slurm/standin-check)
 * through the plugin's own helper runner, and gpumem_jobreport_check
 * writes the report and the node_exporter textfiles.  The case that
 * matters: a node of 64 GPUs, whose gpumem-check document (about 170 KiB,
 * 9,600 values) is past what the policy parser and the 64 KiB default of
 * the runner take; every GPU must reach the written report.  Bad,
 * truncated and oversized output keeps its one message.
 */
#include <dirent.h>
#include <errno.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "args.h"
#include "jobctx.h"
#include "core_record.h"
#include "jobcheck.h"
#include "jobreport.h"
#include "slurm_log.h"
#include "statefiles.h"
#include "tap.h"

/* ------------------------------------------------------------ helpers */
static char dir[256];

static void put(const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
		printf("Bail out! cannot write %s: %s\n", path, strerror(errno));
		exit(1);
	}
}

static void drop(const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
}

/* The file as a string (malloc'd), or NULL. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t n = 0, cap = 0;

	if (f == NULL)
		return NULL;
	for (;;) {
		size_t got;

		if (cap - n < 4096) {
			char *b = realloc(buf, cap = cap ? cap * 2 : 65536);

			if (b == NULL)
				break;
			buf = b;
		}
		got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
		if (got == 0)
			break;
	}
	fclose(f);
	if (buf)
		buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

static size_t count_values(struct json_object *v)
{
	size_t n = 1;

	if (gpumem_json_is(v, json_type_object)) {
		json_object_object_foreach(v, key, item) {
			(void)key;
			n += count_values(item);
		}
	}
	for (size_t i = 0; i < gpumem_json_len(v); i++)
		n += count_values(gpumem_json_at(v, i));
	return n;
}

static int count_files(const char *d, const char *suffix)
{
	DIR *dp = opendir(d);
	struct dirent *e;
	int n = 0;
	size_t sl = strlen(suffix);

	if (dp == NULL)
		return -1;
	while ((e = readdir(dp)) != NULL) {
		size_t l = strlen(e->d_name);

		if (l > sl && !strcmp(e->d_name + l - sl, suffix))
			n++;
	}
	closedir(dp);
	return n;
}

static void clear_dir(const char *d)
{
	DIR *dp = opendir(d);
	struct dirent *e;
	char path[1024];

	if (dp == NULL)
		return;
	while ((e = readdir(dp)) != NULL) {
		if (e->d_name[0] == '.' && (!e->d_name[1] || !strcmp(e->d_name, "..")))
			continue;
		snprintf(path, sizeof(path), "%s/%s", d, e->d_name);
		unlink(path);
	}
	closedir(dp);
}

static struct gpumem_args args;
static struct gpumem_check_ctx jc;  /* the check's contract (check_ctx.h), as jobctx.c makes it */
static struct gpumem_policy eff_policy;
static char reports[300], textfiles[300];

/* Run the check and write the report; *doc is the report read back. */
static int check(struct gpumem_checkrun *r, struct json_object **doc, char *err, size_t elen)
{
	char path[600], *buf;
	size_t len;
	int rv;

	clear_dir(reports);
	clear_dir(textfiles);
	gpumem_jobcheck_run(&jc, "after", 0, r);
	gpumem_jobreport_check(&jc, r, NULL);
	snprintf(path, sizeof(path), "%s/job42.batch.node1.after.json", reports);
	buf = slurp(path, &len);
	if (buf == NULL) {
		snprintf(err, elen, "%.200s: %s", path, strerror(errno));
		*doc = NULL;
		return -1;
	}
	/* Read as `gpumem report` reads a report. */
	rv = gpumem_json_parse_report(buf, len, doc, err, elen);
	free(buf);
	return rv;
}

/* ok() on check(), with the reason it could not read the report. */
#define CHECK_OK(r, doc, ...) do { \
	char err_[1024]; \
	int rv_ = check(r, doc, err_, sizeof(err_)); \
	ok(rv_ == 0, __VA_ARGS__); \
	if (rv_ != 0) \
		printf("#   %s\n", err_); \
} while (0)

/* Devices of the report's check document, or NULL. */
static struct json_object *devices(struct json_object *doc)
{
	struct json_object *d = gpumem_json_get(gpumem_json_get(doc, "check"), "devices");

	return gpumem_json_is(d, json_type_array) ? d : NULL;
}

static char *prom(const char *uuid)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/gpumem_%s.prom", textfiles, uuid);
	return slurp(path, NULL);
}

int main(void)
{
	const char *src = getenv("top_srcdir");
	char standin[300], cmd[1200], *text;
	struct gpumem_checkrun r;
	struct json_object *doc, *devs, *c, *eff;
	double num;

	snprintf(dir, sizeof(dir), "%s/gpumem-jobcheck.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(dir) == NULL) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	snprintf(standin, sizeof(standin), "%s/standin-check", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s/tests/slurm/standin-check' '%s' && mkdir '%s/fail'",
		 src ? src : "../..", standin, dir);
	if (system(cmd) != 0) {
		printf("Bail out! %s failed\n", cmd);
		return 1;
	}
	snprintf(reports, sizeof(reports), "%s/reports", dir);
	snprintf(textfiles, sizeof(textfiles), "%s/textfile", dir);
	mkdir(textfiles, 0755);

	jc.node.has_dev = 1;
	jc.state.dfd = -1;
	gpumem_policy_init(&eff_policy);
	jc.check.min_fraction = eff_policy.check.min_fraction;
	jc.check.l2_ab = eff_policy.check.l2_ab;
	jc.check.on_fail = eff_policy.check.on_fail;
	jc.as.check = standin;
	jc.as.nomps = GPUMEM_MPS_NOMPS_NONE;
	jc.check.timeout_s = 30;
	jc.report.dir = reports;
	jc.report.textfile_dir = textfiles;
	jc.job.id = 42;
	snprintf(jc.job.hook, sizeof(jc.job.hook), "batch");
	snprintf(jc.node.name, sizeof(jc.node.name), "node1");
	snprintf(jc.job.user, sizeof(jc.job.user), "someone");
	/* The check runs as check_user: here this test's own ids, the job's another uid. */
	jc.as.uid = getuid();
	jc.as.gid = getgid();
	jc.job.uid = getuid() + 1;
	jc.job.gid = getgid();
	snprintf(jc.job.policy, sizeof(jc.job.policy), "after.yaml");

	/* --- the stand-in as the real-Slurm tests use it: one short device ----- */
	CHECK_OK(&r, &doc, "one GPU: report written and readable");
	is_str(r.status, "ran", "one GPU: status ran");
	is_str(r.verdict, "pass", "one GPU: verdict pass from exit 0");
	is_int(r.exit_code, 0, "one GPU: exit code 0");
	is_str(r.reason, "", "one GPU: no reason");
	is_str(r.figures, "gpu0 pass triad 4100 GB/s (site reference)", "one GPU: figures for the log, with their basis");
	devs = devices(doc);
	is_int(gpumem_json_len(devs), 1, "one GPU: one device in the report");
	text = prom("GPU-00000000-0000-0000-0000-00000000000node1");
	like(text, "gpumem_bandwidth_gbps{node=\"node1\",gpu=\"0\",uuid=\"GPU-00000000-0000-0000-"
	     "0000-00000000000node1\",metric=\"triad\"} 4100.0\n",
	     "one GPU: textfile keeps the figure as the check wrote it");
	like(text, "gpumem_check_verdict{node=\"node1\",gpu=\"0\",uuid=\"GPU-00000000-0000-0000-"
	     "0000-00000000000node1\"} 0\n", "one GPU: textfile verdict 0");
	free(text);
	ok(json_object_object_get_ex(doc, "effective", &eff) && eff == NULL,
	   "no effective policy: \"effective\" is null");
	json_object_put(doc);
	ok(gpumem_jobcheck_no_verdict(&r) == NULL, "one GPU: a verdict of its own");
	gpumem_jobcheck_free(&r);

	/* --- check_user is the job's own user: never run ------------------- */
	jc.job.uid = jc.as.uid;
	gpumem_jobcheck_run(&jc, "after", 0, &r);
	is_str(r.status, "not_run", "check_user = the job's user: not run");
	like(r.reason, "is the job's own user", "... saying why");
	like(gpumem_jobcheck_no_verdict(&r), "could not run", "... no verdict: counted as failed");
	gpumem_jobcheck_free(&r);
	jc.job.uid = getuid() + 1;

	/* --- check_user's account missing: never run, never another uid -------- */
	args.check_missing = 1;
	jc.as.missing = gpumem_args_check_missing(&args);
	gpumem_jobcheck_run(&jc, "after", 0, &r);
	is_str(r.status, "not_run", "no gpumem-check account: not run");
	like(r.reason, "the account gpumem-check (made by gpumem's package) is missing", "... saying the package's account "
	     "is missing");
	like(gpumem_jobcheck_no_verdict(&r), "could not run", "... no verdict: counted as failed");
	gpumem_jobcheck_free(&r);
	args.check_missing = 0;
	jc.as.missing = NULL;

	/* --- check_user= (plugstack): a name, UID[:GID], never root ------------ */
	{
		struct gpumem_args a;
		char arg[64];
		static const char *const bad[] = { "check_user=root", "check_user=0",
						   "check_user=100:0", "check_user=",
						   "check_user=no-such-user-here", "check_user=12x",
						   "check_user=-5" };

		struct passwd *pw;

		/* The default: the package's account by name, never 65534 in its place. */
		ok(gpumem_args_parse(&a, 0, NULL) == 0, "no arguments: parsed");
		pw = getpwnam("gpumem-check");
		if (pw) {
			ok(a.check_uid == pw->pw_uid && a.check_gid == pw->pw_gid &&
			   !gpumem_args_check_missing(&a), "check_user: the gpumem-check account "
			   "(uid %u) by default", (unsigned)pw->pw_uid);
		} else {
			ok(a.check_uid == (uid_t)-1 && gpumem_args_check_missing(&a),
			   "check_user: no gpumem-check account here: none (not 65534)");
			like(gpumem_args_check_missing(&a), "the account gpumem-check (made by gpumem's package) is missing",
			     "... saying so");
		}
		ok(a.check_uid != 65534, "check_user's default is not nobody's uid");
		pw = getpwnam("gpumem-sample");
		if (pw)
			ok(a.sample_uid == pw->pw_uid && a.sample_gid == pw->pw_gid &&
			   !gpumem_args_sample_missing(&a), "sample_user: the gpumem-sample account "
			   "(uid %u) by default", (unsigned)pw->pw_uid);
		else
			ok(a.sample_uid == (uid_t)-1 && gpumem_args_sample_missing(&a),
			   "sample_user: no gpumem-sample account here: none (not 65534)");
		ok(a.sample_uid != 65534 && (a.sample_uid != a.check_uid || a.sample_uid == (uid_t)-1),
		   "the sampler's default is its own, not nobody's nor check_user's");
		gpumem_args_free(&a);
		snprintf(arg, sizeof(arg), "sample_user=4323:4324");
		ok(gpumem_args_parse(&a, 1, (char *[]){ arg }) == 0 && a.sample_uid == 4323 &&
		   a.sample_gid == 4324 && !gpumem_args_sample_missing(&a), "sample_user=4323:4324");
		gpumem_args_free(&a);
		snprintf(arg, sizeof(arg), "sample_user=0");
		ok(gpumem_args_parse(&a, 1, (char *[]){ arg }) < 0, "sample_user=0: refused");
		like(last_log, "'sample_user=0': the site's helpers must not run as root", "... the message names it");
		snprintf(arg, sizeof(arg), "check_user=4321:4322");
		ok(gpumem_args_parse(&a, 1, (char *[]){ arg }) == 0 && a.check_uid == 4321 &&
		   a.check_gid == 4322, "check_user=4321:4322");
		gpumem_args_free(&a);
		snprintf(arg, sizeof(arg), "check_user=nobody");
		ok(gpumem_args_parse(&a, 1, (char *[]){ arg }) == 0 && a.check_uid == 65534,
		   "check_user=nobody: its uid");
		gpumem_args_free(&a);
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			snprintf(arg, sizeof(arg), "%s", bad[i]);
			ok(gpumem_args_parse(&a, 1, (char *[]){ arg }) < 0, "%s: refused", bad[i]);
			like(last_log, "check_user", "... the message names it");
		}
	}

	/* --- killed: no verdict -------------------------------------------------- */
	put("fail/killed", "");
	gpumem_jobcheck_run(&jc, "after", 0, &r);
	is_str(r.status, "failed", "killed by SIGKILL: failed");
	like(gpumem_jobcheck_no_verdict(&r), "did not finish", "... no verdict: did not finish");
	gpumem_jobcheck_free(&r);
	drop("fail/killed");

	/* --- the effective policy in the report (for the accounting record) ---- */
	jc.job.eff = &eff_policy;
	CHECK_OK(&r, &doc, "effective policy: report written and readable");
	eff = gpumem_json_get(doc, "effective");
	ok(gpumem_json_is(gpumem_json_get(eff, "l2"), json_type_object) &&
	   gpumem_json_is(gpumem_json_get(eff, "mps"), json_type_object) &&
	   gpumem_json_is(gpumem_json_get(eff, "unified_memory"), json_type_object),
	   "effective: the policy's l2, mps and unified_memory objects");
	is_int(gpumem_json_num(eff, "version", &num) == 0 ? (long long)num : -1, 1,
	       "effective: version 1, as gpumem show --json writes it");
	json_object_put(doc);
	gpumem_jobcheck_free(&r);
	jc.job.eff = NULL;

	/* --- 64 GPUs: every one reaches the report and a textfile ------------- */
	put("gpus", "64\n");
	CHECK_OK(&r, &doc, "64 GPUs: report written and readable");
	ok(r.json && strlen(r.json) > 64 * 1024, "64 GPUs: the check document (%zu bytes) is "
	   "past 64 KiB", r.json ? strlen(r.json) : 0);
	is_str(r.status, "ran", "64 GPUs: status ran");
	is_str(r.verdict, "pass", "64 GPUs: verdict pass");
	is_str(r.reason, "", "64 GPUs: no reason");
	like(r.figures, "gpu0 pass read 4200 copy 3950 triad 4100 h2d 54 d2h 54 GB/s; gpu1 pass "
	     "read 4201 ", "64 GPUs: figures for the log, as far as they hold");
	is_str(gpumem_json_str(doc, "verdict"), "pass", "64 GPUs: report verdict pass");
	devs = devices(doc);
	is_int(gpumem_json_len(devs), 64, "64 GPUs: all 64 devices in the written report");
	ok(count_values(gpumem_json_get(doc, "check")) > 4096,
	   "64 GPUs: past the policy parser's 4096 nodes (%zu values)",
	   count_values(gpumem_json_get(doc, "check")));
	if (gpumem_json_len(devs) == 64) {
		int in_order = 1;

		for (size_t i = 0; i < 64; i++) {
			char uuid[64];

			snprintf(uuid, sizeof(uuid), "GPU-%08zu-0000-0000-0000-%012zu", i, i);
			if (gpumem_json_num(gpumem_json_at(devs, i), "index", &num) < 0 ||
			    num != (double)i ||
			    !gpumem_json_str(gpumem_json_at(devs, i), "uuid") ||
			    strcmp(gpumem_json_str(gpumem_json_at(devs, i), "uuid"), uuid) != 0)
				in_order = 0;
		}
		ok(in_order, "64 GPUs: indexes 0..63 with their UUIDs, in order");
	}
	is_int(count_files(textfiles, ".prom"), 64, "64 GPUs: one node_exporter textfile per GPU");
	text = prom("GPU-00000063-0000-0000-0000-000000000063");
	like(text, "gpu=\"63\",uuid=\"GPU-00000063-0000-0000-0000-000000000063\",metric=\"read\"} "
	     "4263.00\n", "64 GPUs: gpu63's textfile has its figures");
	free(text);
	json_object_put(doc);
	gpumem_jobcheck_free(&r);

	/* --- 64 GPUs, the last one fails: its reason, past the figures -------- */
	put("fail/node1", "63\n");
	CHECK_OK(&r, &doc, "gpu63 fails: report written");
	is_int(r.exit_code, 2, "gpu63 fails: exit code 2");
	is_str(r.verdict, "fail", "gpu63 fails: verdict fail");
	is_str(r.reason, "gpu63: triad 1200.0 GB/s below threshold 3508.0 (stand-in)",
	       "gpu63 fails: the reason names gpu63, beyond what the figures hold");
	devs = devices(doc);
	is_int(gpumem_json_len(devs), 64, "gpu63 fails: all 64 devices in the report");
	is_str(gpumem_json_len(devs) == 64 ? gpumem_json_str(gpumem_json_at(devs, 63), "verdict") : NULL,
	       "fail", "gpu63 fails: its device verdict in the report");
	text = prom("GPU-00000063-0000-0000-0000-000000000063");
	like(text, "gpumem_check_verdict{node=\"node1\",gpu=\"63\",uuid=\"GPU-00000063-0000-0000-"
	     "0000-000000000063\"} 2\n", "gpu63 fails: textfile verdict 2");
	free(text);
	like(last_log, "node node1: gpu0 pass read 4200", "gpu63 fails: figures logged");
	json_object_put(doc);
	gpumem_jobcheck_free(&r);
	drop("fail/node1");

	/* --- output that is not a check document: one message, no document ---- */
	{
		static const struct { const char *what, *out; } bad[] = {
			{ "empty", "" },
			{ "not JSON", "hello\n" },
			{ "YAML, not JSON", "schema: gpumem-check/1\ndevices: []\n" },
			{ "truncated", "{\"schema\":\"gpumem-check/1\",\"devices\":[{\"index\":0," },
			{ "another schema", "{\"schema\":\"gpumem-check/2\",\"devices\":[]}" },
			{ "no schema", "{\"devices\":[]}" },
			{ "not an object", "[\"gpumem-check/1\"]" },
			{ "trailing garbage", "{\"schema\":\"gpumem-check/1\",\"devices\":[]} x" },
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			put("output", bad[i].out);
			CHECK_OK(&r, &doc, "%s: report written", bad[i].what);
			is_str(r.reason, "gpumem-check printed no valid report", "%s: the reason says so",
			       bad[i].what);
			ok(r.json == NULL && json_object_object_get_ex(doc, "check", &c) && c == NULL,
			   "%s: no check document in the report", bad[i].what);
			is_str(r.verdict, "pass", "%s: the verdict still follows the exit code",
			       bad[i].what);
			json_object_put(doc);
			gpumem_jobcheck_free(&r);
		}
		drop("output");
	}
	/* Cut short: the 64-GPU document less its last bytes. */
	{
		char *full;
		size_t len;

		put("gpus", "64\n");
		snprintf(cmd, sizeof(cmd), "SLURMD_NODENAME=node1 '%s' >'%s/full.json'", standin, dir);
		ok(system(cmd) == 0, "the stand-in writes a 64-GPU document");
		snprintf(cmd, sizeof(cmd), "%s/full.json", dir);
		full = slurp(cmd, &len);
		ok(full && len > 100, "... of %zu bytes", full ? len : 0);
		if (full && len > 100) {
			full[len - 3] = '\0';
			put("output", full);
			CHECK_OK(&r, &doc, "64 GPUs truncated: report written");
			is_str(r.reason, "gpumem-check printed no valid report",
			       "64 GPUs truncated: the reason says so");
			ok(r.json == NULL, "64 GPUs truncated: no check document");
			json_object_put(doc);
			gpumem_jobcheck_free(&r);
			drop("output");
		}
		free(full);
	}
	/* Past the cap (about 1 MiB): refused whole, never cut to fit. */
	put("gpus", "500\n");
	CHECK_OK(&r, &doc, "500 GPUs (1.3 MB): report written");
	is_str(r.reason, "gpumem-check printed no valid report", "500 GPUs: too large, says so");
	ok(r.json == NULL, "500 GPUs: no check document");
	is_int(r.exit_code, 0, "500 GPUs: exit code kept");
	json_object_put(doc);
	gpumem_jobcheck_free(&r);
	drop("gpus");

	/* The check's exit codes, as before. */
	put("output", "{\"schema\":\"gpumem-check/1\",\"devices\":[],"
	    "\"overall\":{\"verdict\":\"skipped\",\"exit_code\":3,\"reason\":\"no GPU visible\"}}");
	put("fail/node1", "");
	CHECK_OK(&r, &doc, "empty devices: report written");
	is_str(r.verdict, "fail", "exit 2: verdict fail");
	is_str(r.reason, "no GPU visible", "overall.reason when no device gives one");
	json_object_put(doc);
	gpumem_jobcheck_free(&r);

	/*
	 * A check that lies (it runs as the user): a label or a sample that
	 * would add lines or labels to the node_exporter textfile is dropped.
	 */
	drop("fail/node1");
	put("output", "{\"schema\":\"gpumem-check/1\",\"devices\":["
	    "{\"index\":0,\"uuid\":\"GPU-evil\\\"} 1\\nfake_metric{x=\\\"1\",\"verdict\":\"pass\","
	    "\"metrics\":{\"read\":{\"best_gbps\":1}}},"
	    "{\"index\":1,\"uuid\":\"GPU-ok\",\"verdict\":\"pass\","
	    "\"metrics\":{\"read\":{\"best_gbps\":\"2\\ninjected 1\"},\"copy\":{\"best_gbps\":3.5}}}],"
	    "\"overall\":{\"verdict\":\"pass\",\"exit_code\":0,\"reason\":null}}");
	CHECK_OK(&r, &doc, "lying check: report written");
	is_int(count_files(textfiles, ".prom"), 1, "lying check: no textfile for a UUID that is not a plain token");
	text = prom("GPU-ok");
	ok(text && !strstr(text, "injected") && !strstr(text, "metric=\"read\""),
	   "lying check: a best_gbps that is not a number is left out");
	ok(text && strstr(text, "metric=\"copy\"} 3.5\n"), "lying check: a plain number is kept");
	free(text);
	json_object_put(doc);
	gpumem_jobcheck_free(&r);

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	return tap_done();
}

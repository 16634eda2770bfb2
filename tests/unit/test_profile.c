/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The GPU memory profile (plugin/core/record/profile.c, acct_record.c): a good
 * gpumem-profile/1 document passes and a table of broken or hostile ones
 * is refused, each naming the member; the compact summary and its check;
 * the accounting record's "prof" (newest profile of an "after" or "job"
 * report, a "job" report never a check, none without a profile) and an
 * 8-GPU record with before and after checks within one segment.  The
 * advice rules: test_advise.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core_record.h"
#include "tap.h"

#define M(name, unit, mean, p95, mx, lv) \
	"\"" name "\":{\"unit\":\"" unit "\",\"source\":\"gpm\",\"mean\":" mean ",\"median\":" mean \
	",\"p95\":" p95 ",\"max\":" mx ",\"above\":{" lv "},\"timeline\":[12.0,80.1,null]}"
#define PCT_LV "\"25\":0.9,\"50\":0.7,\"80\":0.3"
#define GBS_LV "\"1\":0.9,\"10\":0.2,\"25\":0.0"

static const char good[] =
	"{\"schema\":\"gpumem-profile/1\",\"state\":\"ran\",\"reason\":null,\"interval_ms\":1000,"
	"\"started\":\"2026-11-25T16:00:00Z\",\"seconds\":12.0,\"cpu_s\":0.03,\"gpus\":[{\"index\":3,"
	"\"uuid\":\"GPU-a\",\"name\":\"NVIDIA H100 80GB HBM3\",\"source\":\"gpm\",\"note\":null,"
	"\"samples\":12,\"timeline_step_s\":1.0,\"metrics\":{"
	M("dram_bw_util", "%", "61.2", "91.0", "93.5", PCT_LV) ","
	M("sm_util", "%", "97.4", "99.0", "100.0", PCT_LV) ","
	M("sm_occupancy", "%", "79.0", "85.0", "90.0", PCT_LV) ","
	M("pcie_rx", "GB/s", "7.54", "12.0", "20.0", GBS_LV) ","
	M("pcie_tx", "GB/s", "15.0", "22.0", "25.0", GBS_LV) ","
	"\"nvlink_rx\":null,\"nvlink_tx\":null,"
	"\"mem_used\":{\"unit\":\"GiB\",\"source\":\"nvml-memory\",\"mean\":5.0,\"max\":7.94,"
	"\"timeline\":[5.0]}}}]}";

/* GOOD with the first FIND replaced by REPL; malloc'd. */
static char *with(const char *find, const char *repl)
{
	const char *at = strstr(good, find);
	size_t n = strlen(good) + strlen(repl) + 1;
	char *s = malloc(n);

	if (at == NULL) {
		printf("# '%s' is not in the good document\n", find);
		snprintf(s, n, "%s", good);
		return s;
	}
	snprintf(s, n, "%.*s%s%s", (int)(at - good), good, repl, at + strlen(find));
	return s;
}

/* OPEN, N copies of ITEM separated by SEP, CLOSE; malloc'd. */
static char *series(int n, const char *item, const char *sep, const char *open,
		    const char *close)
{
	size_t len = strlen(open) + strlen(close) + (size_t)n * (strlen(item) + strlen(sep)) + 1;
	char *s = malloc(len);

	strcpy(s, open);
	for (int i = 0; i < n; i++) {
		strcat(s, i ? sep : "");
		strcat(s, item);
	}
	strcat(s, close);
	return s;
}

static int check_text(const char *text, char *err, size_t len)
{
	struct json_object *d = NULL;
	int rc = gpumem_profile_parse(text, strlen(text), &d, err, len);

	json_object_put(d);
	return rc;
}

static void bad_documents(void)
{
	static const struct {
		const char *find, *repl, *want;
	} t[] = {
		{ "gpumem-profile/1", "gpumem-profile/2", "schema: not \"gpumem-profile/1\"" },
		{ "\"state\":\"ran\"", "\"state\":\"running\"", "state: not \"ran\" or \"skipped\"" },
		{ "\"interval_ms\":1000", "\"interval_ms\":\"1000\"", "interval_ms: not a number" },
		{ "\"interval_ms\":1000", "\"interval_ms\":50", "interval_ms: 50 is out of range" },
		{ "\"seconds\":12.0", "\"seconds\":1e300", "seconds: 1e+300 is out of range" },
		{ "\"seconds\":12.0", "\"seconds\":-1", "seconds: -1 is out of range" },
		{ "\"seconds\":12.0", "\"seconds\":NaN", "number out of range: NaN" },
		{ "\"seconds\":12.0", "\"seconds\":1e400", "number out of range: 1e400" },
		{ "\"seconds\":12.0,", "", "seconds: missing or null" },
		{ "\"cpu_s\":0.03", "\"cpu_s\":true", "cpu_s: not a number" },
		{ "\"reason\":null", "\"reason\":7", "reason: not a string or null" },
		{ "\"gpus\":[{", "\"gpus\":{},\"x\":[{", "gpus: not an array" },
		{ "\"gpus\":[{", "\"gpus\":[1,{", "gpus[0]: not an object" },
		{ "\"index\":3", "\"index\":-1", "gpus[0].index: -1 is out of range" },
		{ "\"index\":3", "\"index\":0.5", "gpus[0].index: 0.5 is not a whole number" },
		{ "\"index\":3", "\"index\":\"3\"", "gpus[0].index: not a number" },
		{ "\"samples\":12", "\"samples\":-3", "gpus[0].samples: -3 is out of range" },
		{ "\"samples\":12,", "", "gpus[0].samples: missing or null" },
		{ "\"source\":\"gpm\",\"note\"", "\"source\":\"GPM\\u001b[31m\",\"note\"",
		  "gpus[0].source: not a name of lower-case letters" },
		{ "\"note\":null", "\"note\":[]", "gpus[0].note: not a string or null" },
		{ "\"timeline_step_s\":1.0", "\"timeline_step_s\":-1",
		  "gpus[0].timeline_step_s: -1 is out of range" },
		{ "\"metrics\":{", "\"metrics\":7,\"x\":{", "gpus[0].metrics: not an object or null" },
		{ "\"dram_bw_util\":{", "\"dram_bw_util\":[],\"x\":{",
		  "gpus[0].metrics.dram_bw_util: not an object or null" },
		{ "\"unit\":\"%\"", "\"unit\":\"GB/s\"", "gpus[0].metrics.dram_bw_util.unit: not \"%\"" },
		{ "\"p95\":91.0", "\"p95\":100.6",
		  "gpus[0].metrics.dram_bw_util.p95: 100.6 is out of range (0..100.5)" },
		{ "\"mean\":61.2", "\"mean\":-0.1", "gpus[0].metrics.dram_bw_util.mean: -0.1 is out" },
		{ "\"mean\":61.2,", "", "gpus[0].metrics.dram_bw_util.mean: missing or null" },
		{ "\"p95\":12.0", "\"p95\":100001",
		  "gpus[0].metrics.pcie_rx.p95: 100001 is out of range (0..100000)" },
		{ "\"max\":7.94", "\"max\":1e9", "gpus[0].metrics.mem_used.max: 1e+09 is out of range" },
		{ "[12.0,80.1,null]", "[12.0,\"x\",null]",
		  "gpus[0].metrics.dram_bw_util.timeline[1]: not null or a number in 0..100.5" },
		{ "[12.0,80.1,null]", "[12.0,101,null]",
		  "gpus[0].metrics.dram_bw_util.timeline[1]: not null" },
		{ "[12.0,80.1,null]", "{}", "gpus[0].metrics.dram_bw_util.timeline: not an array" },
		{ "\"25\":0.9", "\"25\":1.5", "gpus[0].metrics.dram_bw_util.above.25: 1.5 is out of range" },
		{ "\"25\":0.9", "\"x5\":0.9", "gpus[0].metrics.dram_bw_util.above: a level that is not" },
		{ "\"above\":{", "\"above\":[],\"y\":{", "gpus[0].metrics.dram_bw_util.above: not an object" },
		{ "\"source\":\"nvml-memory\"", "\"source\":\"a b\"",
		  "gpus[0].metrics.mem_used.source: not a name" },
	};
	char err[256];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char *doc = with(t[i].find, t[i].repl);

		err[0] = '\0';
		is_int(check_text(doc, err, sizeof(err)), -1, "refused: %s -> %s", t[i].find, t[i].repl);
		like(err, t[i].want, "  and says so: %s", t[i].want);
		free(doc);
	}
}

static void limits(void)
{
	char err[256], *tl, *doc, *gpu, *gpus;
	struct json_object *d;
	const char *g0 = strstr(good, "{\"index\"");
	size_t glen = strlen(g0) - 2;   /* the first GPU, without "]}" */

	is_int(check_text(good, err, sizeof(err)), 0, "the good document passes");
	d = json_object_new_array();
	is_int(gpumem_profile_check(d, err, sizeof(err)), -1, "an array is refused");
	like(err, "not a JSON object", "  as not an object");
	json_object_put(d);
	/* NaN in a document built in memory (the parser refuses it in text). */
	gpumem_profile_parse(good, strlen(good), &d, err, sizeof(err));
	json_object_object_add(d, "seconds", json_object_new_double(NAN));
	is_int(gpumem_profile_check(d, err, sizeof(err)), -1, "a NaN built in memory is refused");
	like(err, "seconds: not a finite number", "  naming it");
	json_object_put(d);

	tl = series(120, "1.5", ",", "[", "]");
	doc = with("[12.0,80.1,null]", tl);
	is_int(check_text(doc, err, sizeof(err)), 0, "120 timeline points pass");
	free(doc);
	free(tl);
	tl = series(121, "1.5", ",", "[", "]");
	doc = with("[12.0,80.1,null]", tl);
	is_int(check_text(doc, err, sizeof(err)), -1, "121 timeline points are refused");
	like(err, "gpus[0].metrics.dram_bw_util.timeline: more than 120 points", "  naming it");
	free(doc);
	free(tl);
	doc = with("\"p95\":91.0", "\"p95\":100.5");
	is_int(check_text(doc, err, sizeof(err)), 0, "percent 100.5 passes (rounding)");
	free(doc);

	tl = series(128, "\xc3\xa9", "", "\"", "\"");
	doc = with("\"GPU-a\"", tl);
	is_int(check_text(doc, err, sizeof(err)), 0, "a 128-character uuid (256 bytes) passes");
	free(doc);
	free(tl);
	tl = series(129, "x", "", "\"", "\"");
	doc = with("\"GPU-a\"", tl);
	is_int(check_text(doc, err, sizeof(err)), -1, "a 129-character uuid is refused");
	like(err, "gpus[0].uuid: longer than 128 characters", "  naming it");
	free(doc);
	free(tl);
	tl = series(129, "x", "", "\"", "\"");
	doc = malloc(strlen(good) + 200);
	sprintf(doc, "{\"schema\":\"gpumem-profile/1\",\"state\":\"skipped\",\"reason\":%s}", tl);
	is_int(check_text(doc, err, sizeof(err)), -1, "a 129-character reason is refused");
	like(err, "reason: longer than 128 characters", "  naming it");
	free(doc);
	free(tl);

	/* 64 GPUs pass, 65 are refused. */
	gpu = malloc(glen + 2);
	memcpy(gpu, g0, glen);
	gpu[glen] = '\0';
	for (int n = 64; n <= 65; n++) {
		size_t cap = (size_t)n * (glen + 1) + 256;

		gpus = malloc(cap);
		strcpy(gpus, "{\"schema\":\"gpumem-profile/1\",\"state\":\"ran\",\"interval_ms\":1000,"
		       "\"seconds\":1,\"gpus\":[");
		for (int i = 0; i < n; i++) {
			strcat(gpus, i ? "," : "");
			strcat(gpus, gpu);
		}
		strcat(gpus, "]}");
		is_int(check_text(gpus, err, sizeof(err)), n == 64 ? 0 : -1, "%d GPUs: %s", n,
		       n == 64 ? "pass" : "refused");
		if (n == 65)
			like(err, "gpus: more than 64 GPUs", "  naming it");
		free(gpus);
	}
	free(gpu);
	doc = "{\"schema\":\"gpumem-profile/1\",\"state\":\"skipped\",\"reason\":\"no libnvidia-ml.so.1\"}";
	is_int(check_text(doc, err, sizeof(err)), 0, "a skipped document without GPUs passes");
	tl = malloc(GPUMEM_PROFILE_MAX_BYTES + 16);
	memset(tl, ' ', GPUMEM_PROFILE_MAX_BYTES + 8);
	memcpy(tl, good, strlen(good));
	tl[GPUMEM_PROFILE_MAX_BYTES + 8] = '\0';
	is_int(check_text(tl, err, sizeof(err)), -1, "a document past 256 KiB is refused");
	free(tl);
}

static char *dump(struct json_object *o)
{
	char *s = gpumem_json_dump(o, GPUMEM_JSON_COMPACT);

	if (s)
		s[strcspn(s, "\n")] = '\0';
	return s;
}

static void compact(void)
{
	struct json_object *d, *c;
	struct gpumem_prof_gpu g;
	char err[256], *s, *doc;

	gpumem_profile_parse(good, strlen(good), &d, err, sizeof(err));
	c = gpumem_profile_compact(d);
	s = dump(c);
	is_str(s, "{\"st\":\"ran\",\"why\":null,\"s\":12,\"src\":\"gpm\",\"g\":[{\"gpu\":3,\"n\":12,"
	       "\"src\":\"gpm\",\"dram\":61,\"dram95\":91,\"sm\":97,\"sm95\":99,\"occ\":79,\"rx\":7.5,"
	       "\"rx95\":12.0,\"tx\":15.0,\"nvrx\":null,\"nvtx\":null,\"mem\":7.9,"
	       "\"model\":\"NVIDIA H100 80GB HBM3\"}]}", "the compact summary: named rows");
	is_int(gpumem_profile_compact_check(c, err, sizeof(err)), 0, "  passes its check");
	is_int(gpumem_prof_gpu_of(gpumem_json_at(gpumem_json_get(c, "g"), 0), &g), 0, "  a row reads");
	ok(g.index == 3 && g.samples == 12 && !strcmp(g.source, "gpm") && g.dram_mean == 61 &&
	   g.rx_mean == 7.5 && g.tx_mean == 15 && isnan(g.nvrx_mean) && g.mem_max == 7.9 &&
	   g.note[0] == '\0', "  into its figures, NAN for null");
	free(s);
	json_object_put(c);
	json_object_put(d);

	doc = with("\"source\":\"gpm\",\"note\":null", "\"source\":null,\"note\":\"MIG: per-instance "
		   "sampling not supported\"");
	gpumem_profile_parse(doc, strlen(doc), &d, err, sizeof(err));
	json_object_object_add(json_object_array_get_idx(gpumem_json_get(d, "gpus"), 0), "metrics",
			       NULL);
	c = gpumem_profile_compact(d);
	s = dump(c);
	like(s, "\"src\":null,\"g\":[{\"gpu\":3,\"n\":12,\"src\":null,\"dram\":null,\"dram95\":null,"
	     "\"sm\":null,\"sm95\":null,\"occ\":null,\"rx\":null,\"rx95\":null,\"tx\":null,\"nvrx\":null,"
	     "\"nvtx\":null,\"mem\":null,\"model\":\"NVIDIA H100 80GB HBM3\",\"note\":\"MIG: per-instance "
	     "sampling not supported\"}]", "a MIG GPU: no figures, its note");
	is_int(gpumem_profile_compact_check(c, err, sizeof(err)), 0, "  passes the check");
	free(s);
	free(doc);
	json_object_put(c);
	json_object_put(d);

	d = json_tokener_parse("{\"state\":\"refused\",\"reason\":\"gpus[0].samples: missing\"}");
	c = gpumem_profile_compact(d);
	s = dump(c);
	is_str(s, "{\"st\":\"refused\",\"why\":\"gpus[0].samples: missing\",\"s\":null,\"src\":null,"
	       "\"g\":[]}", "the plugin's refusal in place of a document");
	free(s);
	json_object_put(c);
	json_object_put(d);
	doc = with("\"p95\":91.0", "\"p95\":300");
	d = json_tokener_parse(doc);
	c = gpumem_profile_compact(d);
	is_str(gpumem_json_str(c, "st"), "refused", "a bad document in a report: st refused");
	like(gpumem_json_str(c, "why"), "gpus[0].metrics.dram_bw_util.p95: 300 is out of range",
	     "  why names the member");
	free(doc);
	json_object_put(c);
	json_object_put(d);
	d = json_object_new_int(7);
	c = gpumem_profile_compact(d);
	is_str(gpumem_json_str(c, "st"), "refused", "a number in place of a profile: refused");
	json_object_put(c);
	json_object_put(d);

	static const struct {
		const char *json, *want;
	} bad[] = {
		{ "{\"st\":\"maybe\",\"g\":[]}", "prof.st: not ran" },
		{ "{\"st\":\"ran\",\"why\":3}", "prof.why: not a reason" },
		{ "{\"st\":\"ran\",\"s\":-1}", "prof.s: not seconds" },
		{ "{\"st\":\"ran\",\"g\":{}}", "prof.g: not an array" },
		{ "{\"st\":\"ran\",\"g\":[[0,1,\"gpm\",1,2,3,4,5,6,7,8,9,10]]}", "prof.g[0]: not [index" },
		{ "{\"st\":\"ran\",\"g\":[[0,1,\"gpm\",1,2,3,4,5,6,-7,8,9,10,11]]}",
		  "prof.g[0][9]: not null or a figure" },
		{ "{\"st\":\"ran\",\"g\":[[0,1,\"gpm\",1,2,3,4,5,6,7,8,9,10,1e30]]}",
		  "prof.g[0][13]: not null or a figure" },
		{ "{\"st\":\"ran\",\"g\":[[-1,1,\"gpm\",1,2,3,4,5,6,7,8,9,10,11]]}",
		  "prof.g[0][0]: not a GPU index" },
		{ "{\"st\":\"ran\",\"g\":[[0,1,7,1,2,3,4,5,6,7,8,9,10,11]]}", "prof.g[0][2]: not a source" },
		{ "{\"st\":\"ran\",\"g\":[[0,1,\"gpm\",1,2,3,4,5,6,7,8,9,10,11,null]]}",
		  "prof.g[0][14]: not a note" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		d = json_tokener_parse(bad[i].json);
		err[0] = '\0';
		is_int(gpumem_profile_compact_check(d, err, sizeof(err)), -1, "compact refused: %s",
		       bad[i].json);
		like(err, bad[i].want, "  %s", bad[i].want);
		json_object_put(d);
	}
}

/* ------------------------------------------------------------ the record */
static unsigned lcg = 12345;

static double rnd(double lo, double hi)
{
	lcg = lcg * 1103515245u + 12345u;
	return lo + (hi - lo) * ((lcg >> 8) & 0xffff) / 65535.0;
}

/* A profile document of N GPUs with full timelines, varied figures. */
static void profile_doc(FILE *f, int n)
{
	static const char *const names[] = { "dram_bw_util", "sm_util", "sm_occupancy", "pcie_rx",
					     "pcie_tx", "nvlink_rx", "nvlink_tx" };

	fprintf(f, "{\"schema\":\"gpumem-profile/1\",\"state\":\"ran\",\"reason\":null,"
		"\"interval_ms\":1000,\"started\":\"2026-11-25T16:00:00Z\",\"seconds\":86400.0,"
		"\"cpu_s\":12.5,\"gpus\":[");
	for (int i = 0; i < n; i++) {
		fprintf(f, "%s{\"index\":%d,\"uuid\":\"GPU-%08x-1234-5678-9abc-def012345678\","
			"\"name\":\"NVIDIA H100 80GB HBM3\",\"source\":\"gpm\",\"note\":null,"
			"\"samples\":86400,\"timeline_step_s\":1024.0,\"metrics\":{", i ? "," : "", i,
			lcg);
		for (int k = 0; k < 7; k++) {
			double hi = k < 3 ? 100 : 60;

			fprintf(f, "\"%s\":{\"unit\":\"%s\",\"source\":\"gpm\",\"mean\":%.2f,\"median\":%.2f,"
				"\"p95\":%.2f,\"max\":%.2f,\"above\":{\"%s\":%.2f,\"%s\":%.2f,\"%s\":%.2f},"
				"\"timeline\":[", names[k], k < 3 ? "%" : "GB/s", rnd(0, hi), rnd(0, hi),
				rnd(0, hi), rnd(0, hi), k < 3 ? "25" : "1", rnd(0, 1),
				k < 3 ? "50" : "10", rnd(0, 1), k < 3 ? "80" : "25", rnd(0, 1));
			for (int p = 0; p < 120; p++)
				fprintf(f, "%s%.2f", p ? "," : "", rnd(0, hi));
			fprintf(f, "]},");
		}
		fprintf(f, "\"mem_used\":{\"unit\":\"GiB\",\"source\":\"nvml-memory\",\"mean\":%.2f,"
			"\"max\":%.2f,\"timeline\":[1.0]}}}", rnd(0, 80), rnd(0, 80));
	}
	fprintf(f, "]}");
}

/* Report DIR/job7.<hook>.gpu01.<PHASE>.json at TIME with NGPUS failing GPUs and PROFILE. */
static void report(const char *dir, const char *hook, const char *phase, const char *time,
		   int ngpus, int profile)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/job7.%s.gpu01.%s.json", dir, hook, phase);
	f = fopen(path, "w");
	fprintf(f, "{\"schema\":\"gpumem-report/1\",\"job\":7,\"step\":\"%s\",\"node\":\"gpu01\","
		"\"user\":\"someone-with-a-long-name\",\"uid\":1000,\"policy\":"
		"\"/shared/apps/gpumem/policies/team-hydro/stream-and-prefetch.yaml\",\"phase\":\"%s\","
		"\"time\":\"%s\",\"gpus\":\"0,1,2,3,4,5,6,7\",\"status\":\"%s\",\"reason\":%s,"
		"\"exit_code\":2,\"verdict\":\"%s\",\"drained\":false,\"effective\":{\"l2\":"
		"{\"persisting_limit\":\"0\"},\"mps\":{\"active_thread_percentage\":50,\"daemon\":\"job\"},"
		"\"unified_memory\":{\"preferred_location\":\"gpu\",\"accessed_by\":[\"cpu\",\"gpu\"],"
		"\"read_mostly\":true,\"prefetch\":\"gpu\",\"placement\":\"stripe\",\"gpu_fraction\":0.5}},"
		"\"evidence\":{\"basis\":\"measured\",\"text\":\"measured: gpu7: NVML health changed "
		"since job 4411's pass (ecc.volatile.corrected 18446744073709551 -> 18446744073709552)\","
		"\"pass_job\":null,\"pass_phase\":null,\"pass_age_s\":null},\"check\":", hook, phase, time, ngpus ? "ran" : "not_run",
		ngpus ? "\"one or more GPUs below the site's reference figures\"" : "null",
		ngpus ? "fail" : "not_run");
	if (ngpus == 0) {
		fprintf(f, "null");
	} else {
		fprintf(f, "{\"devices\":[");
		for (int i = 0; i < ngpus; i++)
			fprintf(f, "%s{\"index\":%d,\"verdict\":\"fail\",\"reasons\":[\"triad %.1f GB/s "
				"below %.1f (0.75 of %.1f) on GPU-%08x\"],\"metrics\":{\"read\":"
				"{\"best_gbps\":%.1f},\"triad\":{\"best_gbps\":%.1f},\"h2d\":{\"best_gbps\":"
				"%.1f},\"d2h\":{\"best_gbps\":%.1f}}}", i ? "," : "", i, rnd(2000, 3000),
				rnd(3000, 3500), rnd(4000, 4500), lcg, rnd(3000, 4400), rnd(2000, 4100),
				rnd(20, 56), rnd(20, 56));
		fprintf(f, "]}");
	}
	if (profile == 1) {
		fprintf(f, ",\"profile\":");
		profile_doc(f, 8);
	} else if (profile == 2) {
		fprintf(f, ",\"profile\":{\"state\":\"skipped\",\"reason\":\"profile.enabled is false\"}");
	}
	fprintf(f, "}\n");
	fclose(f);
}

static void record(void)
{
	char dir[] = "/tmp/gpumem-test-profile.XXXXXX", err[320], *json, *seg, cmd[600];
	struct json_object *r = NULL;
	int n;

	if (mkdtemp(dir) == NULL) {
		ok(0, "mkdtemp");
		return;
	}
	report(dir, "prolog", "before", "2026-11-25T16:00:00Z", 8, 0);
	report(dir, "epilog", "after", "2026-11-25T17:00:00Z", 8, 1);
	json = gpumem_acct_build(dir, 7, "gpu01", &n, err, sizeof(err));
	ok(json != NULL, "a record from an 8-GPU before, after and profile");
	is_int(n, 2, "  from 2 reports");
	is_int(json ? gpumem_acct_parse(json, &r, err, sizeof(err)) : -1, 0, "  it passes the check");
	is_int(gpumem_json_len(gpumem_json_get(r, "checks")), 2, "  two checks");
	{
		const char *ev = gpumem_json_str(gpumem_json_at(gpumem_json_get(r, "checks"), 0), "ev");

		like(ev ? ev : "", "measured: gpu7: NVML health changed since job 4411", "  each "
		     "check says what it rests on (ev)");
		ok(ev && strlen(ev) <= 100, "  ev cut to 100 characters (%zu)", ev ? strlen(ev) : 0);
	}
	is_str(gpumem_json_str(gpumem_json_get(r, "prof"), "st"), "ran", "  prof: ran");
	is_int(gpumem_json_len(gpumem_json_get(gpumem_json_get(r, "prof"), "g")), 8, "  8 GPUs");
	json_object_put(r);
	seg = json ? gpumem_acct_encode(json, err, sizeof(err)) : NULL;
	ok(seg && strlen(seg) <= GPUMEM_ACCT_MAX_SEGMENT, "8 GPUs, before, after and prof: one "
	   "segment of %zu bytes (JSON %zu), cap %d", seg ? strlen(seg) : 0, json ? strlen(json) : 0,
	   GPUMEM_ACCT_MAX_SEGMENT);
	free(seg);
	free(json);

	/* A newer "job" report (no after-check ran) has the newest profile; it is no check. */
	report(dir, "epilog", "job", "2026-11-25T18:00:00Z", 0, 2);
	json = gpumem_acct_build(dir, 7, "gpu01", &n, err, sizeof(err));
	gpumem_acct_parse(json, &r, err, sizeof(err));
	is_int(n, 3, "with a job report: 3 reports");
	is_int(gpumem_json_len(gpumem_json_get(r, "checks")), 2, "  still two checks (job is none)");
	is_str(gpumem_json_str(gpumem_json_get(r, "prof"), "st"), "skipped", "  the newest profile");
	is_str(gpumem_json_str(gpumem_json_get(r, "prof"), "why"), "profile.enabled is false",
	       "  with its reason");
	json_object_put(r);
	free(json);

	/* Only a "job" report. */
	snprintf(cmd, sizeof(cmd), "%s/job7.prolog.gpu01.before.json", dir);
	unlink(cmd);
	snprintf(cmd, sizeof(cmd), "%s/job7.epilog.gpu01.after.json", dir);
	unlink(cmd);
	json = gpumem_acct_build(dir, 7, "gpu01", &n, err, sizeof(err));
	is_int(json ? gpumem_acct_parse(json, &r, err, sizeof(err)) : -1, 0,
	       "a job report alone makes a record");
	is_int(gpumem_json_len(gpumem_json_get(r, "checks")), 0, "  with no check");
	like(json, "\"user\":\"someone-with-a-long-name\"", "  the user from it");
	like(json, "\"prof\":{\"st\":\"skipped\"", "  and its profile");
	json_object_put(r);
	free(json);

	/* No profile anywhere: no "prof". */
	snprintf(cmd, sizeof(cmd), "%s/job7.epilog.gpu01.job.json", dir);
	unlink(cmd);
	report(dir, "epilog", "after", "2026-11-25T17:00:00Z", 1, 0);
	json = gpumem_acct_build(dir, 7, "gpu01", &n, err, sizeof(err));
	ok(json && strstr(json, "\"prof\"") == NULL, "no profile in any report: no prof");
	is_int(json ? gpumem_acct_parse(json, &r, err, sizeof(err)) : -1, 0, "  and the record passes");
	json_object_put(r);
	free(json);
	snprintf(cmd, sizeof(cmd), "%s/job7.epilog.gpu01.after.json", dir);
	unlink(cmd);
	rmdir(dir);

	is_int(gpumem_acct_parse("{\"v\":1,\"node\":\"x\",\"job\":1,\"drained\":false,\"checks\":[],"
				 "\"prof\":{\"st\":\"maybe\"}}", &r, err, sizeof(err)), -1,
	       "a record with a bad prof is refused");
	like(err, "prof.st", "  naming it");
	is_int(gpumem_acct_parse("{\"v\":1,\"node\":\"x\",\"job\":1,\"drained\":false,\"checks\":[],"
				 "\"prof\":null}", &r, err, sizeof(err)), -1, "a null prof is refused");
}

int main(void)
{
	bad_documents();
	limits();
	compact();
	record();
	return tap_done();
}

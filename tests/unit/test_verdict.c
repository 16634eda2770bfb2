/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-check without a GPU: verdict rules, MPS scaling, how device
 * verdicts combine into the exit code, JSON escaping and the shape of the
 * document (checked with core's strict json-c parser, gpumem_json_parse).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "check.h"
#include "core_base.h"
#include "verdict_fixture.h"

/* Strict JSON (RFC 8259), by the parser the plugin reads these documents with. */
static int json_valid(const char *s)
{
	static const struct gpumem_json_caps caps = { 1 << 20, 32, 100000, "a test document" };
	struct json_object *v = NULL;
	char err[256];
	int rv = gpumem_json_parse(s, strlen(s), &caps, &v, err, sizeof(err));

	json_object_put(v);
	return rv == 0;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (hay = strstr(hay, needle); hay; hay = strstr(hay + 1, needle))
		n++;
	return n;
}

/* ------------------------------------------------------------ helpers */
static char *esc(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	gpumem_json_write_string(f, s);
	fclose(f);
	return buf;
}

/* ------------------------------------------------------------ tests */
static void test_names(void)
{
	is_str(gpumem_check_verdict_name(GPUMEM_CHECK_V_NOREF), "pass (no reference)",
	       "unknown model is labelled 'pass (no reference)'");
	is_str(gpumem_check_verdict_name(GPUMEM_CHECK_V_UNUSABLE), "unusable", "unusable name");
	is_str(gpumem_check_metric_name(GPUMEM_CHECK_TRIAD), "triad", "metric names");
	is_str(gpumem_check_metric_name(GPUMEM_CHECK_D2H), "d2h", "metric names (last)");
	is_int(gpumem_check_exit_code(GPUMEM_CHECK_V_PASS), 0, "exit pass 0");
	is_int(gpumem_check_exit_code(GPUMEM_CHECK_V_NOREF), 0, "exit no-reference 0");
	is_int(gpumem_check_exit_code(GPUMEM_CHECK_V_WARN), 1, "exit warn 1");
	is_int(gpumem_check_exit_code(GPUMEM_CHECK_V_FAIL), 2, "exit fail 2");
	is_int(gpumem_check_exit_code(GPUMEM_CHECK_V_SKIPPED), 3, "exit skipped 3");
	is_int(gpumem_check_exit_code(GPUMEM_CHECK_V_UNUSABLE), 4, "exit unusable 4");
	is_int(gpumem_check_exit_code(GPUMEM_CHECK_V_NOTRUN), 2, "nothing run is never a pass");
}

static void test_mps_scale(void)
{
	double measured25 = 2379.0 / 3964.0;    /* H200, copy, 25% share */
	double s25 = gpumem_check_mps_scale(GPUMEM_CHECK_COPY, 25);
	double prev = 0, p;
	int monotonic = 1;

	ok(fabs(gpumem_check_mps_scale(GPUMEM_CHECK_COPY, 100) - 1.0) < 1e-12, "100%% share: 1");
	ok(fabs(s25 - 0.5) < 1e-12, "25%% share: sqrt -> 0.50 (got %.4f)", s25);
	ok(s25 < measured25, "25%% scaling %.2f is below the measured %.2f (conservative)", s25,
	   measured25);
	ok(fabs(gpumem_check_mps_scale(GPUMEM_CHECK_TRIAD, 50) - sqrt(0.5)) < 1e-12, "50%% share: 0.71");
	is_int((int)(gpumem_check_mps_scale(GPUMEM_CHECK_H2D, 25) * 1000), 1000,
	       "H2D is not scaled (copy engines)");
	is_int((int)(gpumem_check_mps_scale(GPUMEM_CHECK_D2H, 10) * 1000), 1000, "D2H is not scaled");
	is_int((int)(gpumem_check_mps_scale(GPUMEM_CHECK_D2D, 25) * 1000), 500, "D2D is scaled");
	is_int((int)(gpumem_check_mps_scale(GPUMEM_CHECK_READ, 0) * 1000), 1000, "0 -> 1 (ignored)");
	is_int((int)(gpumem_check_mps_scale(GPUMEM_CHECK_READ, -5) * 1000), 1000, "negative -> 1");
	is_int((int)(gpumem_check_mps_scale(GPUMEM_CHECK_READ, 150) * 1000), 1000, "over 100 -> 1");
	is_int((int)(gpumem_check_mps_scale(GPUMEM_CHECK_READ, NAN) * 1000), 1000, "NaN -> 1");
	for (p = 1; p <= 100; p += 1) {
		double s = gpumem_check_mps_scale(GPUMEM_CHECK_COPY, p);
		if (s < prev || s > 1)
			monotonic = 0;
		prev = s;
	}
	ok(monotonic, "scaling is monotonic in the share and never above 1");
}

static void test_metric_verdicts(void)
{
	struct gpumem_check_device d;
	struct gpumem_check_metric *c = &d.metric[GPUMEM_CHECK_COPY];

	healthy(&d, 0);
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_PASS, "at reference: pass");
	is_int(d.nreasons, 0, "a pass has no reasons");
	ok(fabs(c->threshold - 3969 * 0.85) < 1e-9, "threshold = ref x fraction");
	ok(fabs(c->warn_floor - 3969 * 0.75) < 1e-9, "warn floor = ref x (fraction - 0.10)");

	healthy(&d, 0);
	c->best = 3969 * 0.85;
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_PASS, "exactly at the threshold: pass");

	healthy(&d, 0);
	c->best = 3969 * 0.80;
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_WARN, "0.80 of reference: warn");
	is_int(c->verdict, GPUMEM_CHECK_V_WARN, "the copy figure itself warns");
	ok(has_reason(&d, "copy"), "the reason names the figure");

	healthy(&d, 0);
	c->best = 3969 * 0.70;
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_FAIL, "0.70 of reference: fail");

	/* MPS: the measured 25% copy figure passes with scaling, fails without. */
	healthy(&d, 0);
	c->best = 2379;
	is_int(judge(&d, &h200, 25), GPUMEM_CHECK_V_PASS, "25%% MPS share: 2379 GB/s copy passes");
	ok(fabs(c->scale - 0.5) < 1e-12 && fabs(c->threshold - 3969 * 0.5 * 0.85) < 1e-9,
	   "scaled threshold %.1f", c->threshold);
	healthy(&d, 0);
	c->best = 2379;
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_FAIL, "same figure at 100%% share: fail");
	healthy(&d, 0);
	d.metric[GPUMEM_CHECK_H2D].best = 30;
	is_int(judge(&d, &h200, 25), GPUMEM_CHECK_V_FAIL, "H2D is judged unscaled under MPS");

	/* custom fraction */
	healthy(&d, 0);
	c->best = 3969 * 0.92;
	gpumem_check_judge_device(&d, &h200, 0.95, 100);
	is_int(d.verdict, GPUMEM_CHECK_V_WARN, "--min-fraction 0.95: 0.92 warns");

	/* errors */
	healthy(&d, 0);
	c->measured = 0;
	snprintf(c->error, sizeof(c->error), "bandwidth kernels: an illegal memory access");
	c->fatal = 1;
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_FAIL, "a CUDA error in a kernel: fail");
	healthy(&d, 0);
	d.metric[GPUMEM_CHECK_H2D].measured = 0;
	snprintf(d.metric[GPUMEM_CHECK_H2D].error, GPUMEM_CHECK_MSG, "no pinned host memory");
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_WARN, "no pinned host memory: warn");
	healthy(&d, 0);
	d.metric[GPUMEM_CHECK_H2D].measured = 0;
	d.metric[GPUMEM_CHECK_D2H].measured = 0;
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_PASS, "figures not asked for: still a pass");
}

static void test_references(void)
{
	struct gpumem_check_device d;
	struct gpumem_ref partial = h200;

	healthy(&d, 0);
	d.health.nv.max_gen = -1;     /* NVML gave no figure to compute a peak from */
	is_int(judge(&d, NULL, 100), GPUMEM_CHECK_V_NOREF, "unknown model, no NVML figures: "
	       "pass (no reference)");
	ok(has_reason(&d, "no site reference"), "and says why");
	ok(has_reason(&d, "NVML gave no memory bus width"), "and what was missing");
	is_int(d.metric[GPUMEM_CHECK_READ].verdict, GPUMEM_CHECK_V_NOREF, "each figure: no reference");
	ok(d.metric[GPUMEM_CHECK_READ].threshold == 0, "no threshold without a reference");

	healthy(&d, 0);
	d.health.nv.ecc[0][1] = 1;
	is_int(judge(&d, NULL, 100), GPUMEM_CHECK_V_FAIL, "unknown model still fails on health");

	healthy(&d, 0);
	partial.h2d = partial.d2h = 0;
	is_int(judge(&d, &partial, 100), GPUMEM_CHECK_V_PASS,
	       "a reference without H2D: the rest against it, H2D against the GPU's PCIe peak");
	is_str(d.metric[GPUMEM_CHECK_READ].basis, "site reference", "read: site reference");
	is_str(d.metric[GPUMEM_CHECK_H2D].basis, "0.78 of this GPU's peak", "H2D: the peak's floor");
	d.metric[GPUMEM_CHECK_H2D].best = 1;
	is_int(judge(&d, &partial, 100), GPUMEM_CHECK_V_FAIL, "H2D at 1 GB/s of a gen5 x16 link: fail");
	ok(has_reason(&d, "h2d 1.0 GB/s below 42.8 (0.68 of this GPU's peak 63.0)"),
	   "the reason names the peak and the fraction");
	ok(d.has_reference && !strcmp(d.ref_model, "NVIDIA H200"), "reference model recorded");
}

static void test_health(void)
{
	struct gpumem_check_device d;

	healthy(&d, 0);
	d.health.nv.ecc[0][1] = 2;
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_FAIL, "uncorrectable ECC: fail");
	ok(has_reason(&d, "uncorrectable ECC"), "reason: uncorrectable ECC");
	is_int(d.health.verdict, GPUMEM_CHECK_V_FAIL, "health verdict fail");

	healthy(&d, 0);
	d.health.nv.ecc[0][0] = 1000;
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_PASS, "corrected ECC only: pass");

	healthy(&d, 0);
	d.health.nv.remap_pending = 1;
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_FAIL, "row remap pending: fail");
	healthy(&d, 0);
	d.health.nv.remap_failure = 1;
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_FAIL, "row remap failure: fail");
	healthy(&d, 0);
	d.health.nv.retired_pending = 1;
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_FAIL, "page retirement pending: fail");

	healthy(&d, 0);
	d.health.context_ok = 0;
	snprintf(d.health.context_error, GPUMEM_CHECK_MSG, "unknown error");
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_FAIL, "context failure: fail");
	healthy(&d, 0);
	d.health.context_ok = 0;
	d.health.busy = 1;
	snprintf(d.health.context_error, GPUMEM_CHECK_MSG, "CUDA-capable device(s) is/are busy");
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_UNUSABLE, "busy / exclusive-process: unusable");

	healthy(&d, 0);
	d.health.nv.mig_mode = 1;
	d.metric[GPUMEM_CHECK_COPY].best = 100;         /* a slice's figure */
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_UNUSABLE,
	       "MIG mode: unusable, low slice figures do not turn it into a fail");
	ok(has_reason(&d, "MIG"), "reason: MIG");
	healthy(&d, 0);
	d.health.mig_instance = 1;
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_UNUSABLE, "a MIG instance: unusable");
	healthy(&d, 0);
	d.health.nv.mig_mode = 1;
	d.health.nv.ecc[0][1] = 1;
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_FAIL, "MIG and uncorrectable ECC: fail wins");
	healthy(&d, 0);
	d.health.compute_mode = 2;
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_UNUSABLE, "compute mode prohibited: unusable");
	healthy(&d, 0);
	snprintf(d.health.unusable, GPUMEM_CHECK_MSG, "only 100 MiB of device memory free");
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_UNUSABLE, "no free memory: unusable");

	healthy(&d, 0);
	d.health.nv.width = 8;
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_WARN, "PCIe x8 of x16: warn");
	ok(has_reason(&d, "PCIe link at gen5 x8"), "reason names the link");
	healthy(&d, 0);
	d.health.nv.gen = 3;
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_WARN, "PCIe gen3 of gen5: warn");
	healthy(&d, 0);
	d.health.nv.gen = -1;
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_PASS, "unknown PCIe: no verdict from it");

	healthy(&d, 0);
	d.health.nv.clocks = GPUMEM_HEALTH_HW_SLOWDOWN | GPUMEM_HEALTH_GPU_IDLE;
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_WARN, "hardware slowdown: warn");
	ok(has_reason(&d, "hw_slowdown") && !has_reason(&d, "gpu_idle"),
	   "reason names the slowdown, not idle");
	healthy(&d, 0);
	d.health.nv.clocks = GPUMEM_HEALTH_SW_POWER_CAP | GPUMEM_HEALTH_APP_CLOCKS;
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_PASS, "power cap / app clocks: pass");

	healthy(&d, 0);
	d.health.nvml = GPUMEM_CHECK_NVML_MISSING;
	d.health.nv.ecc[0][1] = d.health.nv.ecc[0][0] = -1;
	d.health.nv.remap_pending = d.health.nv.remap_failure = -1;
	d.health.nv.gen = d.health.nv.clocks = d.health.nv.mig_mode = -1;
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_PASS, "no NVML: the rest still decides");
}

static void test_memtest(void)
{
	struct gpumem_check_device d;

	healthy(&d, 0);
	d.memtest.mismatches = 1;
	d.memtest.first_offset = 0x1000;
	d.memtest.first_address = 0x7f0000001000ull;
	d.memtest.bad_bits = 1ull << 17;
	d.memtest.planted = 1;
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_FAIL, "one mismatch: fail");
	ok(has_reason(&d, "1 mismatch") && has_reason(&d, "0x1000") && has_reason(&d, "planted"),
	   "reason: count, first offset, planted");
	is_int(d.memtest.verdict, GPUMEM_CHECK_V_FAIL, "memtest verdict fail");

	healthy(&d, 0);
	d.memtest.mismatches = 5;
	d.health.nv.mig_mode = 1;
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_FAIL, "mismatches on a MIG GPU: still fail");

	healthy(&d, 0);
	d.memtest.run = 0;
	is_int(judge(&d, &h200, 100), GPUMEM_CHECK_V_PASS, "--no-memtest: pass");
	is_int(d.memtest.verdict, GPUMEM_CHECK_V_NOTRUN, "memtest not run");
}

static void test_report(void)
{
	struct gpumem_check_device d[3];
	struct gpumem_check_report r;

	memset(&r, 0, sizeof(r));
	r.devices = d;

	healthy(&d[0], 0);
	healthy(&d[1], 1);
	d[1].metric[GPUMEM_CHECK_READ].best = 4373 * 0.8;
	judge(&d[0], &h200, 100);
	judge(&d[1], &h200, 100);
	r.ndevices = 2;
	gpumem_check_judge_report(&r);
	is_int(r.verdict, GPUMEM_CHECK_V_WARN, "pass + warn: warn");
	is_int(r.exit_code, 1, "exit 1");

	healthy(&d[2], 2);
	d[2].health.nv.mig_mode = 1;
	judge(&d[2], &h200, 100);
	r.ndevices = 3;
	gpumem_check_judge_report(&r);
	is_int(r.exit_code, 4, "pass + warn + unusable: exit 4");

	d[1].metric[GPUMEM_CHECK_READ].best = 10;
	judge(&d[1], &h200, 100);
	gpumem_check_judge_report(&r);
	is_int(r.exit_code, 2, "a fail outranks unusable: exit 2");

	healthy(&d[0], 0);
	healthy(&d[1], 1);
	d[0].health.nv.max_gen = d[1].health.nv.max_gen = -1;
	judge(&d[0], NULL, 100);
	judge(&d[1], NULL, 100);
	r.ndevices = 2;
	gpumem_check_judge_report(&r);
	is_int(r.verdict, GPUMEM_CHECK_V_NOREF, "all without reference: pass (no reference)");
	is_int(r.exit_code, 0, "exit 0");
	judge(&d[1], &h200, 100);
	gpumem_check_judge_report(&r);
	is_int(r.verdict, GPUMEM_CHECK_V_PASS, "one judged, one not: pass");

	r.ndevices = 0;
	gpumem_check_judge_report(&r);
	is_int(r.exit_code, 3, "no device: skipped, exit 3");
}

static void test_helpers(void)
{
	double v[] = { 5, 1, 4, 2, 3 };
	double w[] = { 4, 1, 3, 2 };

	ok(gpumem_check_median(v, 5) == 3, "median of 5");
	ok(gpumem_check_median(w, 4) == 2.5, "median of 4");
	ok(gpumem_check_median(v, 0) == 0, "median of none");
	ok(gpumem_check_max(v, 5) == 5, "best");
}

static void test_escape(void)
{
	char *s;

	s = esc("plain");
	is_str(s, "\"plain\"", "plain string"); free(s);
	s = esc("a\"b\\c/d");
	is_str(s, "\"a\\\"b\\\\c/d\"", "quote and backslash"); free(s);
	s = esc("l1\nl2\tx\r\b\f");
	is_str(s, "\"l1\\nl2\\tx\\r\\b\\f\"", "named control characters"); free(s);
	s = esc("\x01\x1f\x7f");
	is_str(s, "\"\\u0001\\u001f\\u007f\"", "other control characters as \\u"); free(s);
	s = esc("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	is_str(s, "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"", "valid UTF-8 kept"); free(s);
	s = esc("a\xff" "b");
	is_str(s, "\"a\\ufffdb\"", "invalid byte replaced"); free(s);
	s = esc("\xc0\x80");
	is_str(s, "\"\\ufffd\\ufffd\"", "overlong NUL replaced"); free(s);
	s = esc("\xed\xa0\x80");
	is_str(s, "\"\\ufffd\\ufffd\\ufffd\"", "UTF-16 surrogate replaced"); free(s);
	s = esc("x\xe2\x82");
	is_str(s, "\"x\\ufffd\\ufffd\"", "truncated sequence replaced"); free(s);
	s = esc("\xf4\x90\x80\x80");
	ok(!strncmp(s, "\"\\ufffd", 7), "above U+10FFFF replaced"); free(s);
	s = esc(NULL);
	is_str(s, "null", "NULL is null"); free(s);
	s = esc("");
	is_str(s, "\"\"", "empty string"); free(s);
}

static char *render(const struct gpumem_check_report *r, int table)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (table)
		gpumem_check_table_write(f, r);
	else
		gpumem_check_json_write(f, r);
	fclose(f);
	return buf;
}

static void test_json_shape(void)
{
	struct gpumem_check_device d[2];
	struct gpumem_check_report r;
	char *j, *t;

	memset(&r, 0, sizeof(r));
	snprintf(r.version, sizeof(r.version), "0.1.0");
	snprintf(r.host, sizeof(r.host), "node\"01\n");         /* hostile on purpose */
	snprintf(r.time, sizeof(r.time), "2025-01-01T00:00:00Z");
	r.site_path = "/etc/slurm/gpumem.yaml";
	r.min_fraction = 0.85;
	r.mps_share = 25;
	r.mps_share_source = "environment";
	r.memtest = 1;
	r.l2ab = 1;
	r.mem_bytes = 1ull << 30;
	r.cuda_driver = 13000;
	r.cuda_runtime = 13000;
	r.wall_s = 0.43;
	healthy(&d[0], 0);
	healthy(&d[1], 1);
	d[1].memtest.mismatches = 1;
	d[1].memtest.first_offset = 8;
	d[1].metric[GPUMEM_CHECK_READ].best = NAN;              /* must not leak as NaN */
	d[0].l2ab.run = 1;
	d[0].l2ab.ms_with = 0.2;
	d[0].l2ab.ms_without = 0.1;
	d[0].l2ab.speedup = 0.5;
	snprintf(d[1].l2ab.error, GPUMEM_CHECK_MSG, "the GPU has no \"persisting\" L2");
	snprintf(d[0].numa.note, GPUMEM_CHECK_MSG, "host buffer and thread on NUMA node 0");
	d[0].numa.node = 0;
	d[0].numa.placed = 1;
	judge(&d[0], &h200, 25);
	judge(&d[1], &h200, 25);
	r.devices = d;
	r.ndevices = 2;
	gpumem_check_judge_report(&r);

	j = render(&r, 0);
	ok(json_valid(j), "the document is valid JSON");
	if (!json_valid(j))
		printf("# %s\n", j);
	like(j, "\"schema\":\"gpumem-check/1\"", "versioned schema");
	like(j, "\"host\":\"node\\\"01\\n\"", "host escaped");
	is_int(count(j, "\"index\":"), 2, "two devices");
	/* per device: health, memtest, 7 metrics, device = 10 verdicts; +1 overall */
	is_int(count(j, "\"verdict\":"), 2 * 10 + 1, "a verdict for every part, device and overall");
	like(j, "\"overall\":{\"verdict\":\"fail\",\"exit_code\":2", "overall verdict and exit code");
	like(j, "\"mps_share_pct\":25", "MPS share recorded");
	like(j, "\"mps_share_source\":\"environment\"", "and where it came from");
	like(j, "\"mps_scale\":0.5000", "scale per figure");
	like(j, "\"best_gbps\":null", "NaN written as null");
	ok(!strstr(j, "nan") && !strstr(j, "inf"), "no nan/inf tokens");
	like(j, "\"first_offset\":8", "first mismatch offset");
	like(j, "\"speedup\":0.5000", "L2 A/B speedup");
	like(j, "\"reference\":{\"model\":\"NVIDIA H200\"}", "reference model");
	like(j, "\"reasons\":[", "reasons list");
	like(j, "\"uuid\":\"GPU-01234567-89ab-cdef-0123-456789abcdef\"", "identity: UUID");
	like(j, "\"pci_bus_id\":\"0000:3B:00.0\"", "identity: PCI bus id");
	like(j, "\"throttle\":{\"mask\":\"0x1\",\"reasons\":[\"gpu_idle\"]}", "throttle decoded");
	free(j);

	t = render(&r, 1);
	like(t, "overall: FAIL (exit 2)", "table: overall line");
	like(t, "GPU 1  NVIDIA H200", "table: device line");
	like(t, "window speedup 0.50x (slower)", "table: honest L2 A/B");
	like(t, "MPS share 25% (environment)", "table: MPS share");
	free(t);

	/* --l2-setaside: the set-aside's own cost, measured or why not. */
	r.l2_setaside_pct = 50;
	d[0].l2ab.sa.asked = d[1].l2ab.sa.asked = 1;
	d[0].l2ab.sa.run = 1;
	d[0].l2ab.sa.percent = 50;
	d[0].l2ab.sa.bytes = 31457280;
	d[0].l2ab.sa.gbps_without = 4170;
	d[0].l2ab.sa.gbps_with = 3127.5;
	d[0].l2ab.sa.ratio = 0.75;
	d[0].l2ab.sa.repeats = 6;
	j = render(&r, 0);
	ok(json_valid(j), "with a set-aside: valid JSON");
	like(j, "\"l2_setaside\":\"50%\"", "  the setting, as given");
	like(j, "\"setaside\":{\"run\":true,\"percent\":50.00,\"bytes\":31457280,\"repeats\":6,"
	     "\"triad_without_gbps\":4170.00,\"triad_with_gbps\":3127.50,\"ratio\":0.7500,\"error\":null}",
	     "  l2_ab.setaside: both arms, the ratio");
	like(j, "\"setaside\":{\"run\":false,\"percent\":null,\"bytes\":null,\"repeats\":0,"
	     "\"triad_without_gbps\":null,\"triad_with_gbps\":null,\"ratio\":null,"
	     "\"error\":\"the GPU has no \\\"persisting\\\" L2\"}", "  not run: why (the A/B's)");
	free(j);
	t = render(&r, 1);
	like(t, "set-aside 50.0% of L2: triad 3128 GB/s with, 4170 without (0.75x)", "table: the set-aside's cost");
	free(t);
	r.l2_setaside_pct = 0;

	/* The "skipped" document the program writes when there is no GPU. */
	memset(&r, 0, sizeof(r));
	snprintf(r.version, sizeof(r.version), "0.1.0");
	r.verdict = GPUMEM_CHECK_V_SKIPPED;
	r.exit_code = 3;
	snprintf(r.reason, sizeof(r.reason), "no NVIDIA driver (libcuda.so.1 not found)");
	j = render(&r, 0);
	ok(json_valid(j), "skipped document is valid JSON");
	like(j, "\"devices\":[]", "no devices");
	like(j, "\"overall\":{\"verdict\":\"skipped\",\"exit_code\":3,\"reason\":\"no NVIDIA driver",
	     "skipped with its reason");
	like(j, "\"site\":null", "no site: null");
	free(j);
}

static void test_parser_self(void)
{
	ok(json_valid("{\"a\":[1,2.5,-3e2,true,null,\"x\\u00e9\"]}"), "validator accepts JSON");
	ok(!json_valid("{\"a\":nan}"), "validator rejects nan");
	ok(!json_valid("{\"a\":1,}"), "validator rejects a trailing comma");
	ok(!json_valid("{\"a\":\"x\ny\"}"), "validator rejects a raw newline in a string");
	ok(!json_valid("[1] 2"), "validator rejects trailing data");
}

int main(void)
{
	test_parser_self();
	test_names();
	test_mps_scale();
	test_metric_verdicts();
	test_references();
	test_health();
	test_memtest();
	test_report();
	test_helpers();
	test_escape();
	test_json_shape();
	return tap_done();
}

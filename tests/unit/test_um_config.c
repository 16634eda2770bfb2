/* SPDX-License-Identifier: GPL-2.0-or-later */
/* GPUMEM_UM_ADVICE parsing (kernels/um/um_config.c), as libgpumem-um reads it. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "um_config.h"

static struct gpumem_um_config c;
static char err[160];

static int parse(const char *s)
{
	return gpumem_um_config_parse(s, &c, err, sizeof(err));
}

/* A rejected value: -1, a reason containing 'why', the config left at defaults. */
static void bad(const char *s, const char *why)
{
	struct gpumem_um_config dflt;

	gpumem_um_config_init(&dflt);
	c.preferred = GPUMEM_UM_GPU;    /* must be reset by the parser */
	is_int(parse(s), -1, "rejects '%s'", s);
	like(err, why, "  says why: %s", why);
	ok(memcmp(&c, &dflt, sizeof(c)) == 0, "  and advises nothing");
	ok(strchr(err, '\n') == NULL, "  in one line");
}

/* The plan as "G:off+len C:off+len ..." (MiB), for exact comparison. */
static const char *plan_str(uint64_t n, uint64_t gran, uint64_t g)
{
	static char out[4096];
	struct gpumem_um_range r[GPUMEM_UM_MAX_RANGES];
	int nr = gpumem_um_plan(n, gran, g, r);
	size_t o = 0;

	out[0] = '\0';
	for (int i = 0; i < nr && o < sizeof(out); i++)
		o += (size_t)snprintf(out + o, sizeof(out) - o, "%s%c:%llu+%llu", i ? " " : "",
				      r[i].gpu ? 'G' : 'C', (unsigned long long)(r[i].off >> 20),
				      (unsigned long long)(r[i].len >> 20));
	return out;
}

/* Every byte once, in order, ranges alternating; the GPU bytes as asked. */
static void plan_check(uint64_t n, uint64_t gran, uint64_t g, const char *what)
{
	struct gpumem_um_range r[GPUMEM_UM_MAX_RANGES];
	int nr = gpumem_um_plan(n, gran, g, r), good = 1;
	uint64_t at = 0, gpu = 0, want = g * gran;

	for (int i = 0; i < nr; i++) {
		good &= r[i].off == at && r[i].len > 0 && (i == 0 || r[i].gpu != r[i - 1].gpu);
		at += r[i].len;
		gpu += r[i].gpu ? r[i].len : 0;
	}
	if (want > n)
		want = n;
	/* A short last granule can be a GPU one: then a little less than asked. */
	ok(good && at == n && gpu <= want && gpu + gran > want && nr <= GPUMEM_UM_MAX_RANGES,
	   "plan %s: %d ranges cover all, GPU bytes %llu (want %llu)", what, nr,
	   (unsigned long long)gpu, (unsigned long long)want);
}

static void plan_tests(void)
{
	const uint64_t M = 1 << 20, G = 1ull << 30;
	struct gpumem_um_config pc;

	/* 16 MiB in 2 MiB granules: 8 periods of one granule, dealt as the study does. */
	is_str(plan_str(16 * M, 2 * M, 0), "C:0+16", "fraction 0: one CPU range");
	is_str(plan_str(16 * M, 2 * M, 8), "G:0+16", "fraction 1: one GPU range");
	is_str(plan_str(16 * M, 2 * M, 4), "C:0+2 G:2+2 C:4+2 G:6+2 C:8+2 G:10+2 C:12+2 G:14+2",
	       "fraction 0.5 of 8 granules: alternate");
	is_str(plan_str(16 * M, 2 * M, 2), "C:0+6 G:6+2 C:8+6 G:14+2",
	       "fraction 0.25 of 8 granules: one in four, spread");
	/* 8 GiB: 4096 granules in 64 periods of 64 (128 MiB). */
	is_str(plan_str(8 * G, 2 * M, 1024) + 0, plan_str(8 * G, 2 * M, 1024), "deterministic");
	ok(strncmp(plan_str(8 * G, 2 * M, 1024), "G:0+32 C:32+96 G:128+32 C:160+96 ", 33) == 0,
	   "8 GiB, 0.25: 32 MiB on the GPU, 96 on the CPU, per 128 MiB period");
	{
		const char *p = plan_str(8 * G, 2 * M, 1024), *end = " G:8064+32 C:8096+96";

		ok(strlen(p) > strlen(end) && strcmp(p + strlen(p) - strlen(end), end) == 0,
		   "  to the end");
	}
	plan_check(8 * G, 2 * M, 1024, "8 GiB 0.25");
	plan_check(8 * G, 2 * M, 2048, "8 GiB 0.5");
	plan_check(8 * G, 2 * M, 3072, "8 GiB 0.75");
	plan_check(8 * G, 2 * M, 4095, "8 GiB all but one granule");
	plan_check(8 * G + 12345, 2 * M, 4097, "a short last granule, all on the GPU");
	plan_check(8 * G + 12345, 2 * M, 17, "a short last granule, 17 on the GPU");
	plan_check(3 * M, 2 * M, 1, "3 MiB, one granule on the GPU");
	plan_check(1, 2 * M, 1, "one byte on the GPU");
	plan_check(1ull << 50, 1ull << 30, 333333, "1 PiB in 1 GiB granules");
	is_int(gpumem_um_plan(0, 2 * M, 0, NULL), 0, "0 bytes: no ranges");
	{
		struct gpumem_um_range r[GPUMEM_UM_MAX_RANGES];
		int most = 0;

		for (uint64_t g = 0; g <= 4096; g += 7) {
			int nr = gpumem_um_plan(8 * G, 2 * M, g, r);

			most = nr > most ? nr : most;
		}
		ok(most <= GPUMEM_UM_MAX_RANGES && most > 64, "at most %d ranges for any share of 8 GiB (%d)",
		   GPUMEM_UM_MAX_RANGES, most);
	}

	/* How many granules: fixed fractions round down, auto fits free - reserve. */
	gpumem_um_config_init(&pc);
	pc.placement = GPUMEM_UM_PLACE_STRIPE;
	pc.gpu_ppm = 250000;
	ok(gpumem_um_gpu_granules(8 * G, &pc, 0) == 1024, "0.25 of 4096 granules: 1024");
	pc.gpu_ppm = 333333;
	ok(gpumem_um_gpu_granules(8 * G, &pc, 0) == 1365, "0.333333 of 4096: 1365 (rounded down)");
	pc.gpu_ppm = 1000000;
	ok(gpumem_um_gpu_granules(8 * G + 1, &pc, 0) == 4097, "1 of 4096 and a bit: 4097");
	pc.max_ppm = 500000;
	ok(gpumem_um_gpu_granules(8 * G, &pc, 0) == 2048, "gpu_max 0.5 caps a fraction of 1");
	pc.max_ppm = GPUMEM_UM_PPM;
	pc.gpu_ppm = GPUMEM_UM_AUTO;
	pc.reserve = G;
	ok(gpumem_um_gpu_granules(8 * G, &pc, 5 * G) == 2048, "auto: 5 GiB free - 1 GiB reserve: 4 GiB");
	ok(gpumem_um_gpu_granules(8 * G, &pc, 5 * G + M) == 2048, "auto: a part-granule left over is not used");
	ok(gpumem_um_gpu_granules(8 * G, &pc, 80 * G) == 4096, "auto: all of it when it fits");
	ok(gpumem_um_gpu_granules(8 * G, &pc, G / 2) == 0, "auto: free below the reserve: nothing");
	ok(gpumem_um_gpu_granules(8 * G + 1, &pc, 9 * G + M) == 4096,
	   "auto: a short last granule needs a whole free granule");
	pc.max_ppm = 250000;
	ok(gpumem_um_gpu_granules(8 * G, &pc, 80 * G) == 1024, "auto under gpu_max 0.25: 1024");
}

int main(void)
{
	char buf[256];
	struct gpumem_um_config back;

	/* What the plugin writes (plugin/core/policy/env.c, gpumem_um_format). */
	is_int(parse("v1;preferred=cpu;accessed_by=gpu;read_mostly=0;prefetch=none;min_bytes=1048576"),
	       0, "the plugin's string parses");
	is_int(c.preferred, GPUMEM_UM_CPU, "preferred=cpu");
	is_int(c.accessed_by, GPUMEM_UM_BY_GPU, "accessed_by=gpu");
	is_int(c.read_mostly, 0, "read_mostly=0");
	is_int(c.prefetch, GPUMEM_UM_NONE, "prefetch=none");
	is_int(c.min_bytes, 1048576, "min_bytes=1048576");
	is_int(c.verbose, 0, "verbose defaults to 0");
	ok(gpumem_um_config_active(&c), "that is advice to apply");

	is_int(parse("v1;verbose=1;min_bytes=0;prefetch=gpu;read_mostly=1;accessed_by=cpu,gpu;preferred=gpu"),
	       0, "fields in any order");
	is_int(c.preferred, GPUMEM_UM_GPU, "preferred=gpu");
	is_int(c.accessed_by, GPUMEM_UM_BY_CPU | GPUMEM_UM_BY_GPU, "accessed_by=cpu,gpu");
	is_int(c.read_mostly, 1, "read_mostly=1");
	is_int(c.prefetch, GPUMEM_UM_GPU, "prefetch=gpu");
	is_int(c.min_bytes, 0, "min_bytes=0");
	is_int(c.verbose, 1, "verbose=1");

	is_int(parse("v1;accessed_by=gpu,cpu;prefetch=cpu"), 0, "accessed_by=gpu,cpu");
	is_int(c.accessed_by, GPUMEM_UM_BY_CPU | GPUMEM_UM_BY_GPU, "  is both");
	is_int(c.prefetch, GPUMEM_UM_CPU, "prefetch=cpu");
	is_int(parse("v1;accessed_by=none;preferred=none"), 0, "none is a value");
	is_int(c.accessed_by, 0, "  accessed_by=none");
	ok(!gpumem_um_config_active(&c), "  and nothing to apply");

	is_int(parse("v1"), 0, "bare v1 is valid");
	ok(!gpumem_um_config_active(&c), "  and advises nothing");
	is_int(c.min_bytes, 0, "  min_bytes defaults to 0");
	is_int(parse("v1;preferred=cpu;"), 0, "a trailing ';' is ignored");
	is_int(parse("v1;;preferred=cpu"), 0, "an empty field is ignored");
	is_int(c.preferred, GPUMEM_UM_CPU, "  and the rest still read");
	is_int(parse("v1;min_bytes=18446744073709551615"), 0, "min_bytes up to 2^64-1");
	ok(c.min_bytes == UINT64_MAX, "  is exact");

	/* Everything else is refused, with the reason. */
	bad("", "does not start with 'v1'");
	bad("preferred=cpu", "does not start with 'v1'");
	bad("v3;preferred=cpu", "version 'v3' is not supported");
	bad("v10", "version 'v10' is not supported");
	bad("v1x;preferred=cpu", "does not start with 'v1'");
	bad(";v1;preferred=cpu", "does not start with 'v1'");
	bad("V1;preferred=cpu", "does not start with 'v1'");
	bad("v1;colour=blue", "unknown field 'colour'");
	bad("v1;preferred", "field 'preferred' is not NAME=VALUE");
	bad("v1;=cpu", "unknown field ''");
	bad("v1;preferred=host", "preferred='host': want cpu, gpu or none");
	bad("v1;preferred=CPU", "preferred='CPU'");
	bad("v1;preferred=", "preferred='': want");
	bad("v1;preferred=cpu;preferred=gpu", "field 'preferred' given twice");
	bad("v1;prefetch=both", "prefetch='both'");
	bad("v1;accessed_by=", "accessed_by='': want");
	bad("v1;accessed_by=gpu,", "accessed_by='gpu,'");
	bad("v1;accessed_by=cpu,cpu", "accessed_by='cpu,cpu'");
	bad("v1;accessed_by=none,gpu", "accessed_by='none,gpu'");
	bad("v1;accessed_by=gpu0", "accessed_by='gpu0'");
	bad("v1;read_mostly=yes", "read_mostly='yes': want 0 or 1");
	bad("v1;read_mostly=2", "read_mostly='2'");
	bad("v1;verbose=true", "verbose='true'");
	bad("v1;min_bytes=1M", "min_bytes='1M': want a decimal byte count");
	bad("v1;min_bytes=-1", "min_bytes='-1'");
	bad("v1;min_bytes= 1", "min_bytes=' 1'");
	bad("v1;min_bytes=", "min_bytes=''");
	bad("v1;min_bytes=18446744073709551616", "min_bytes='18446744073709551616'");
	bad("v1; preferred=cpu", "unknown field ' preferred'");
	bad("v1;preferred=cpu;extra=1", "unknown field 'extra'");
	/* v2 fields are not v1's: an old plugin never wrote them. */
	bad("v1;placement=stripe", "unknown field 'placement' (a v2 field in v1)");
	bad("v2;placement=spread", "placement='spread': want none or stripe");
	bad("v2;placement=stripe;gpu_fraction=1.5", "gpu_fraction='1.5': want auto or a decimal from 0 to 1");
	bad("v2;gpu_fraction=1.0000001", "gpu_fraction='1.0000001'");
	bad("v2;gpu_fraction=0.", "gpu_fraction='0.'");
	bad("v2;gpu_fraction=.5", "gpu_fraction='.5'");
	bad("v2;gpu_fraction=-0", "gpu_fraction='-0'");
	bad("v2;gpu_fraction=0,5", "gpu_fraction='0,5'");
	bad("v2;gpu_fraction=AUTO", "gpu_fraction='AUTO'");
	bad("v2;gpu_fraction=2", "gpu_fraction='2'");
	bad("v2;gpu_max=auto", "gpu_max='auto': want a decimal from 0 to 1");
	bad("v2;reserve=1G", "reserve='1G': want a decimal byte count");
	bad("v2;granularity=3000000", "granularity='3000000': want a power of two from 4096 to 1073741824");
	bad("v2;granularity=2048", "granularity='2048'");
	bad("v2;granularity=2147483648", "granularity='2147483648'");
	bad("v2;gpu_fraction=0.5;gpu_fraction=0.5", "field 'gpu_fraction' given twice");
	/* Only printable ASCII from the environment reaches stderr. */
	bad("v1;preferred=\x1b[31mred", "preferred='?[31mred'");
	bad("v1;preferred=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	    "...': want");

	{
		char big[GPUMEM_UM_MAX_LEN + 8];

		memset(big, ';', sizeof(big) - 1);
		big[0] = 'v';
		big[1] = '1';
		big[sizeof(big) - 1] = '\0';
		bad(big, "longer than");
	}
	is_int(gpumem_um_config_parse(NULL, &c, err, sizeof(err)), -1, "NULL is refused");
	is_int(gpumem_um_config_parse("x", &c, NULL, 0), -1, "no error buffer is fine");

	/* v2: placement by size. */
	is_int(parse("v2;preferred=none;accessed_by=none;read_mostly=0;prefetch=none;min_bytes=1048576;"
		     "placement=stripe;gpu_fraction=0.25;gpu_max=1;reserve=1073741824;granularity=2097152"),
	       0, "the plugin's v2 string parses");
	is_int(c.placement, GPUMEM_UM_PLACE_STRIPE, "placement=stripe");
	is_int(c.gpu_ppm, 250000, "gpu_fraction=0.25 is 250000 ppm");
	is_int(c.max_ppm, 1000000, "gpu_max=1");
	ok(c.reserve == 1073741824, "reserve");
	ok(c.granularity == 2097152, "granularity");
	ok(gpumem_um_config_active(&c), "a placement alone is advice to apply");
	is_int(parse("v2;placement=stripe"), 0, "v2 with defaults");
	is_int(c.gpu_ppm, GPUMEM_UM_AUTO, "  gpu_fraction defaults to auto");
	ok(c.granularity == GPUMEM_UM_GRAN_DEFAULT && c.reserve == 0 && c.max_ppm == GPUMEM_UM_PPM,
	   "  2 MiB granules, no reserve, no cap");
	is_int(parse("v2;gpu_fraction=0.000001;gpu_max=0.5"), 0, "6 decimals");
	is_int(c.gpu_ppm, 1, "  0.000001 is 1 ppm");
	is_int(c.max_ppm, 500000, "  gpu_max=0.5");
	is_int(parse("v2;gpu_fraction=1.000000"), 0, "1.000000");
	is_int(c.gpu_ppm, 1000000, "  is 10^6");
	is_int(parse("v2;gpu_fraction=0"), 0, "0");
	is_int(c.gpu_ppm, 0, "  is 0");
	is_int(parse("v2;placement=none;preferred=cpu"), 0, "v2 with placement=none");
	is_int(gpumem_um_config_format(&c, buf, sizeof(buf)), 0, "  formats");
	ok(strncmp(buf, "v1;preferred=cpu;", 17) == 0, "  as v1: an older library still reads it (%s)", buf);
	is_int(parse("v2;placement=stripe;gpu_fraction=0.125;gpu_max=0.75;reserve=5;granularity=65536;verbose=1"),
	       0, "a full v2 string");
	is_int(gpumem_um_config_format(&c, buf, sizeof(buf)), 0, "  formats");
	is_str(buf, "v2;preferred=none;accessed_by=none;read_mostly=0;prefetch=none;min_bytes=0;verbose=1;"
	       "placement=stripe;gpu_fraction=0.125;gpu_max=0.75;reserve=5;granularity=65536", "  canonical v2");
	is_int(gpumem_um_config_parse(buf, &back, err, sizeof(err)), 0, "  parses back");
	ok(memcmp(&c, &back, sizeof(c)) == 0, "  to the same advice");
	is_int(gpumem_um_config_format(&c, buf, 120), -1, "  a buffer short of the v2 part is an error");

	plan_tests();

	/* The canonical form parses back to the same advice. */
	is_int(parse("v1;accessed_by=cpu,gpu;preferred=gpu;read_mostly=1;prefetch=cpu;min_bytes=42;verbose=1"),
	       0, "a full string parses");
	is_int(gpumem_um_config_format(&c, buf, sizeof(buf)), 0, "and formats");
	is_str(buf, "v1;preferred=gpu;accessed_by=cpu,gpu;read_mostly=1;prefetch=cpu;min_bytes=42;verbose=1",
	       "canonical form");
	is_int(gpumem_um_config_parse(buf, &back, err, sizeof(err)), 0, "which parses back");
	ok(memcmp(&c, &back, sizeof(c)) == 0, "  to the same advice");
	is_int(gpumem_um_config_format(&c, buf, 10), -1, "a short buffer is an error");
	is_str(gpumem_um_where_name(GPUMEM_UM_NONE), "none", "where names: none");

	return tap_done();
}

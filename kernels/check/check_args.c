/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-check's command line: the options, their checks (every bad value
 * is a usage error naming the option, exit 64) and the syntax of the
 * --devices selectors, which are matched against the devices only after
 * the driver probe (gpumem_check_selector_matches).  Kept apart from main()
 * so that main() reads as its steps.
 */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "check_main.h"
#include "core_policy.h"

#define PFX GPUMEM_CHECK_PFX
#define DEFAULT_SITE GPUMEM_CHECK_DEFAULT_SITE
#define MAX_DEVICES GPUMEM_CHECK_MAX_DEVICES

#define MIB (1024ull * 1024ull)
#define DEFAULT_MEM_BYTES   (1024 * MIB)
/*
 * 1 GiB arrays, 8 timed repeats: the one-element-per-thread kernels reach
 * the long run's triad at this size (bench/kernel-shapes.cu), where the
 * grid-stride kernels needed bigger arrays, and fewer, smaller passes keep
 * the check short on nodes of several GPUs.  Capped by free memory.
 */
#define DEFAULT_ARRAY_BYTES (1024 * MIB)
/*
 * 32 MiB: pinning is the longest host step of the check and grows with the
 * buffer, and 32 MiB already reads a PCIe 5 link as fast as a bigger one.
 */
#define DEFAULT_HOST_BYTES  (32 * MIB)
#define DEFAULT_REPEATS     8

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " GPUMEM_CHECK_PROG " [OPTION]...\n"
"Check the health, memory and bandwidth of the node's GPUs (all in parallel)\n"
"against the site reference figures.\n"
"\n"
"  -d, --devices LIST     CUDA ordinals, PCI bus ids or UUIDs, comma-separated\n"
"                         (default: every visible GPU)\n"
"  -s, --site FILE        site configuration (default " DEFAULT_SITE ";\n"
"                         '-': standard input)\n"
"  -j, --json FILE        also write the JSON report to FILE ('-': stdout; the\n"
"                         table then goes to stderr)\n"
"  -q, --quick            bandwidth only: no memory test, no NVML counters\n"
"      --no-memtest       skip the memory pattern test\n"
"      --mem-bytes N      memory test region (default 1GiB; suffixes KiB MiB GiB)\n"
"      --plant-error      flip one word between write and verify (test the test)\n"
"      --l2-ab            measure a persisting L2 access-policy window (A/B)\n"
"      --l2-setaside N    with --l2-ab: the job's persisting-L2 set-aside, N%%\n"
"                         of L2 or a size; also measure triad without and\n"
"                         with it, and run the window A/B at it\n"
"      --l2-reset         at the end, reset the GPUs' persisting L2 lines and\n"
"                         set-aside, as gpumem-l2reset would (no verdict)\n"
"      --min-fraction F   pass at F x reference (default: site, else 0.85);\n"
"                         warn down to F-0.10, fail below\n"
"      --mps-share PCT    MPS active-thread share of this job (default:\n"
"                         $" GPUMEM_ENV_MPS_PCT ", else 100)\n"
"      --timeout S        give up after S seconds with a fail (default: site,\n"
"                         else 60; 0: never)\n"
"      --array-bytes N    size of each bandwidth array (default 1GiB)\n"
"      --host-bytes N     size of the pinned buffer of the PCIe figures\n"
"                         (default 32MiB, at most the array size)\n"
"      --repeats N        timed repeats per figure (default 8, max 64)\n"
"  -h, --help             this text\n"
"  -V, --version          the version\n"
"\n"
"Exit: 0 pass, 1 warn, 2 fail, 3 skipped (no GPU/driver/CUDA), 4 GPU unusable\n"
"for the check (MIG, busy, exclusive-process), 64 usage error.\n");
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs(PFX, stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n" PFX "try '" GPUMEM_CHECK_PROG " --help'\n", stderr);
	return -1;
}

static int parse_double(const char *opt, const char *s, double lo_excl, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (!*s || isspace((unsigned char)*s) || *end || errno || !(v > lo_excl) || !(v <= hi))
		return usage_error("%s: '%s' is not a number in (%g, %g]", opt, s, lo_excl, hi);
	*out = v;
	return 0;
}

static int parse_int(const char *opt, const char *s, long lo, long hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (!*s || isspace((unsigned char)*s) || *end || errno || v < lo || v > hi)
		return usage_error("%s: '%s' is not an integer in [%ld, %ld]", opt, s, lo, hi);
	*out = (int)v;
	return 0;
}

static int parse_bytes(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	const char *why = NULL;
	char a[32], b[32];
	uint64_t v;

	if (gpumem_parse_size(s, &v, &why) < 0)
		return usage_error("%s: '%s': %s", opt, s, why ? why : "not a size");
	if (v < lo || v > hi) {
		gpumem_format_size(lo, a, sizeof(a));
		gpumem_format_size(hi, b, sizeof(b));
		return usage_error("%s: '%s' is outside [%s, %s]", opt, s, a, b);
	}
	*out = v;
	return 0;
}

/* --l2-setaside: "N%" (percent of L2, 0 < N <= 100) or a size (1 byte to 1 GiB). */
static int parse_setaside(const char *s, struct gpumem_check_opts *o)
{
	size_t n = strlen(s);
	char num[32];

	o->l2_setaside_pct = 0;
	o->l2_setaside_bytes = 0;
	if (n && s[n - 1] == '%') {
		if (n - 1 >= sizeof(num) || n == 1)
			return usage_error("--l2-setaside: '%s' is not a percentage of L2", s);
		snprintf(num, sizeof(num), "%.*s", (int)(n - 1), s);
		return parse_double("--l2-setaside", num, 0, 100, &o->l2_setaside_pct);
	}
	return parse_bytes("--l2-setaside", s, 1, 1024 * MIB, &o->l2_setaside_bytes);
}

static int is_hex_or(const char *s, const char *extra)
{
	for (; *s; s++)
		if (!isxdigit((unsigned char)*s) && !strchr(extra, *s))
			return 0;
	return 1;
}

/* Syntax only; the devices are matched after the driver probe. */
static int parse_devices(struct gpumem_check_args *a, const char *list)
{
	char buf[4096], *tok, *save = NULL;
	size_t len;

	if (strlen(list) >= sizeof(buf))
		return usage_error("--devices: list too long");
	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct gpumem_check_selector *s;

		while (isspace((unsigned char)*tok))
			tok++;
		if (!*tok)
			continue;
		if (a->nsel >= MAX_DEVICES)
			return usage_error("--devices: more than %d devices", MAX_DEVICES);
		s = &a->sel[a->nsel];
		len = strlen(tok);
		if (len >= sizeof(s->text))
			return usage_error("--devices: '%.40s...' is too long", tok);
		memcpy(s->text, tok, len + 1);
		if (strspn(tok, "0123456789") == strlen(tok)) {
			if (parse_int("--devices", tok, 0, 1000000, &s->ordinal) < 0)
				return -1;
			s->kind = GPUMEM_CHECK_SEL_ORDINAL;
		} else if ((!strncasecmp(tok, "GPU-", 4) || !strncasecmp(tok, "MIG-", 4)) &&
			   is_hex_or(tok + 4, "-") && strlen(tok) > 8) {
			s->kind = GPUMEM_CHECK_SEL_UUID;
		} else if (strchr(tok, ':') && is_hex_or(tok, ":.")) {
			s->kind = GPUMEM_CHECK_SEL_PCI;
		} else {
			return usage_error("--devices: '%s' is not a CUDA ordinal, a PCI bus id "
					   "(0000:3b:00.0) or a UUID (GPU-...)", tok);
		}
		a->nsel++;
	}
	if (!a->nsel)
		return usage_error("--devices: empty list");
	return 0;
}

enum {
	OPT_NO_MEMTEST = 256, OPT_MEM_BYTES, OPT_PLANT, OPT_L2AB, OPT_L2RESET, OPT_MIN_FRACTION,
	OPT_MPS_SHARE, OPT_TIMEOUT, OPT_ARRAY_BYTES, OPT_HOST_BYTES, OPT_REPEATS, OPT_L2SETASIDE,
};

static const struct option long_opts[] = {
	{ "devices", required_argument, NULL, 'd' },
	{ "site", required_argument, NULL, 's' },
	{ "json", required_argument, NULL, 'j' },
	{ "quick", no_argument, NULL, 'q' },
	{ "no-memtest", no_argument, NULL, OPT_NO_MEMTEST },
	{ "mem-bytes", required_argument, NULL, OPT_MEM_BYTES },
	{ "plant-error", no_argument, NULL, OPT_PLANT },
	{ "l2-ab", no_argument, NULL, OPT_L2AB },
	{ "l2-setaside", required_argument, NULL, OPT_L2SETASIDE },
	{ "l2-reset", no_argument, NULL, OPT_L2RESET },
	{ "min-fraction", required_argument, NULL, OPT_MIN_FRACTION },
	{ "mps-share", required_argument, NULL, OPT_MPS_SHARE },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "array-bytes", required_argument, NULL, OPT_ARRAY_BYTES },
	{ "host-bytes", required_argument, NULL, OPT_HOST_BYTES },
	{ "repeats", required_argument, NULL, OPT_REPEATS },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static const char *opt_name(int c)
{
	const struct option *o;

	for (o = long_opts; o->name; o++)
		if (o->val == c)
			return o->name;
	return "?";
}

/* One option from getopt_long: 0 go on; 1 done (help/version printed); -1 usage error. */
static int parse_opt(int c, char **argv, struct gpumem_check_args *a)
{
	switch (c) {
	case 'd':
		a->devices = optarg;
		a->nsel = 0;
		if (parse_devices(a, optarg) < 0)
			return -1;
		break;
	case 's':
		if (!*optarg)
			return usage_error("--site: empty file name");
		a->site = optarg;
		break;
	case 'j':
		if (!*optarg)
			return usage_error("--json: empty file name");
		a->json = optarg;
		break;
	case 'q':
		a->o.quick = 1;
		break;
	case OPT_NO_MEMTEST:
		a->o.memtest = 0;
		break;
	case OPT_MEM_BYTES:
		if (parse_bytes("--mem-bytes", optarg, 64 * 1024, 1ull << 40, &a->o.mem_bytes) < 0)
			return -1;
		a->o.mem_bytes &= ~15ull;
		break;
	case OPT_PLANT:
		a->o.plant_error = 1;
		break;
	case OPT_L2AB:
		a->o.l2ab = 1;
		break;
	case OPT_L2SETASIDE:
		if (parse_setaside(optarg, &a->o) < 0)
			return -1;
		break;
	case OPT_L2RESET:
		a->o.l2_reset = 1;
		break;
	case OPT_MIN_FRACTION:
		if (parse_double("--min-fraction", optarg, 0, 1, &a->min_fraction) < 0)
			return -1;
		break;
	case OPT_MPS_SHARE:
		if (parse_double("--mps-share", optarg, 0, 100, &a->mps_share) < 0)
			return -1;
		break;
	case OPT_TIMEOUT:
		if (parse_int("--timeout", optarg, 0, 86400, &a->timeout_s) < 0)
			return -1;
		break;
	case OPT_ARRAY_BYTES:
		if (parse_bytes("--array-bytes", optarg, 16 * MIB, 16384 * MIB,
				&a->o.array_bytes) < 0)
			return -1;
		break;
	case OPT_HOST_BYTES:
		if (parse_bytes("--host-bytes", optarg, 1 * MIB, 16384 * MIB, &a->o.host_bytes) < 0)
			return -1;
		break;
	case OPT_REPEATS:
		if (parse_int("--repeats", optarg, 1, 64, &a->o.repeats) < 0)
			return -1;
		break;
	case 'h':
		usage(stdout);
		return 1;
	case 'V':
		printf("%s %s\n", GPUMEM_CHECK_PROG, PACKAGE_VERSION);
		return 1;
	case ':':
		if (optopt >= 256)
			return usage_error("--%s needs a value", opt_name(optopt));
		if (optopt)
			return usage_error("-%c needs a value (--%s)", optopt, opt_name(optopt));
		return usage_error("'%s' needs a value", argv[optind - 1]);
	default:
		if (optopt && optopt < 256)
			return usage_error("unknown option '-%c'", optopt);
		return usage_error("unknown option '%s'", argv[optind - 1]);
	}
	return 0;
}

/* 0: run; 1: done (help/version printed); -1: usage error (printed). */
int gpumem_check_parse_args(int argc, char **argv, struct gpumem_check_args *a)
{
	int c, r;

	memset(a, 0, sizeof(*a));
	a->o.memtest = 1;
	a->o.mem_bytes = DEFAULT_MEM_BYTES;
	a->o.array_bytes = DEFAULT_ARRAY_BYTES;
	a->o.host_bytes = DEFAULT_HOST_BYTES;
	a->o.repeats = DEFAULT_REPEATS;
	a->min_fraction = -1;
	a->mps_share = -1;
	a->timeout_s = -1;
	opterr = 0;             /* our own messages, with our prefix */
	while ((c = getopt_long(argc, argv, ":d:s:j:qhV", long_opts, NULL)) != -1)
		if ((r = parse_opt(c, argv, a)) != 0)
			return r;
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (a->o.plant_error && (!a->o.memtest || a->o.quick))
		return usage_error("--plant-error needs the memory test (not with --quick or "
				   "--no-memtest)");
	if (a->o.l2ab && a->o.quick)
		return usage_error("--l2-ab is not run with --quick");
	if ((a->o.l2_setaside_pct > 0 || a->o.l2_setaside_bytes) && !a->o.l2ab)
		return usage_error("--l2-setaside needs --l2-ab");
	return 0;
}

static int pci_parse(const char *s, unsigned v[4])
{
	char tail;

	if (sscanf(s, "%x:%x:%x.%x%c", &v[0], &v[1], &v[2], &v[3], &tail) == 4)
		return 0;
	v[0] = 0;
	if (sscanf(s, "%x:%x.%x%c", &v[1], &v[2], &v[3], &tail) == 3)
		return 0;
	return -1;
}

int gpumem_check_selector_matches(const struct gpumem_check_selector *s,
				  const struct gpumem_check_device *d)
{
	unsigned x[4], y[4];

	switch (s->kind) {
	case GPUMEM_CHECK_SEL_ORDINAL:
		return s->ordinal == d->index;
	case GPUMEM_CHECK_SEL_UUID:
		/* "MIG-" and "GPU-" name the same 16 bytes; compare what follows */
		return strlen(d->uuid) > 4 && !strcasecmp(s->text + 4, d->uuid + 4);
	case GPUMEM_CHECK_SEL_PCI:
		return pci_parse(s->text, x) == 0 && pci_parse(d->pci_bus_id, y) == 0 &&
			!memcmp(x, y, sizeof(x));
	}
	return 0;
}

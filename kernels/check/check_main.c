/*
 * gpumem-check: CUDA health and bandwidth check of the GPUs of a node.
 * Forked by the gpumem SPANK plugin (never run inside slurmstepd) and run
 * by administrators by hand.  See gpumem-check(8) and CHECK-JSON.md.
 *
 * The order of main() is set by two promises: a node without a GPU gets
 * its answer (exit 3) in milliseconds, so nothing heavy happens before the
 * driver probe; and the whole check of one GPU stays within 0.5 s, so NVML
 * and hwloc start in their own threads while CUDA creates the contexts.
 *
 * Builds: gpumem-check (kernels/check/check.am).  Runs as the job's user
 * (forked by the plugin) or as an admin by hand.  Includes: this folder's
 * headers, plugin/core's public headers, CUDA's.
 */
#include <config.h>

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "check_gpu.h"

#ifndef GPUMEM_SYSCONFDIR
#define GPUMEM_SYSCONFDIR "/etc"
#endif
#define DEFAULT_SITE GPUMEM_SYSCONFDIR "/slurm/gpumem.yaml"

#define MIB (1024ull * 1024ull)
#define DEFAULT_MEM_BYTES   (1024 * MIB)
/*
 * 1 GiB arrays, 8 timed repeats.  With the grid-stride kernels of 0.1.0,
 * 256 MiB arrays read only 87% of the H200's datasheet peak and the triad
 * 3.6% under a 4 GiB run (tests/gpu/results/2026-11-22-h200x2-f), so 2 GiB
 * were used; the one-element-per-thread kernels reach 4310 GB/s triad even
 * at 256 MiB (bench/kernel-shapes.cu), and halving the arrays and cutting
 * two repeats buys back ~35 ms of the two-GPU budget (0.6 s).  Capped by
 * free memory.
 */
#define DEFAULT_ARRAY_BYTES (1024 * MIB)
#define DEFAULT_HOST_BYTES  (64 * MIB)
#define DEFAULT_REPEATS     8
#define DEFAULT_TIMEOUT_S   60
#define MAX_DEVICES         GPUMEM_MAX_GPUS

#define PFX GPUMEM_CHECK_PROG ": "

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------ options */
struct selector {
	enum { SEL_ORDINAL, SEL_UUID, SEL_PCI } kind;
	char text[96];
	int ordinal;
};

struct args {
	struct gpumem_check_opts o;
	const char *site;
	const char *json;
	const char *devices;
	struct selector sel[MAX_DEVICES];
	int nsel;
	double min_fraction;            /* < 0: from the site */
	double mps_share;               /* < 0: from the environment */
	int timeout_s;                  /* < 0: from the site */
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " GPUMEM_CHECK_PROG " [OPTION]...\n"
"Check the health, memory and bandwidth of the node's GPUs (all in parallel)\n"
"against the site reference figures.\n"
"\n"
"  -d, --devices LIST     CUDA ordinals, PCI bus ids or UUIDs, comma-separated\n"
"                         (default: every visible GPU)\n"
"  -s, --site FILE        site configuration (default " DEFAULT_SITE ")\n"
"  -j, --json FILE        also write the JSON report to FILE ('-': stdout; the\n"
"                         table then goes to stderr)\n"
"  -q, --quick            bandwidth only: no memory test, no NVML counters\n"
"      --no-memtest       skip the memory pattern test\n"
"      --mem-bytes N      memory test region (default 1GiB; suffixes KiB MiB GiB)\n"
"      --plant-error      flip one word between write and verify (test the test)\n"
"      --l2-ab            measure a persisting L2 access-policy window (A/B)\n"
"      --min-fraction F   pass at F x reference (default: site, else 0.85);\n"
"                         warn down to F-0.10, fail below\n"
"      --mps-share PCT    MPS active-thread share of this job (default:\n"
"                         $CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, else 100)\n"
"      --timeout S        give up after S seconds with a fail (default: site,\n"
"                         else 60; 0: never)\n"
"      --array-bytes N    size of each bandwidth array (default 1GiB)\n"
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

static int is_hex_or(const char *s, const char *extra)
{
	for (; *s; s++)
		if (!isxdigit((unsigned char)*s) && !strchr(extra, *s))
			return 0;
	return 1;
}

/* Syntax only; the devices are matched after the driver probe. */
static int parse_devices(struct args *a, const char *list)
{
	char buf[4096], *tok, *save = NULL;
	size_t len;

	if (strlen(list) >= sizeof(buf))
		return usage_error("--devices: list too long");
	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct selector *s;

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
			s->kind = SEL_ORDINAL;
		} else if ((!strncasecmp(tok, "GPU-", 4) || !strncasecmp(tok, "MIG-", 4)) &&
			   is_hex_or(tok + 4, "-") && strlen(tok) > 8) {
			s->kind = SEL_UUID;
		} else if (strchr(tok, ':') && is_hex_or(tok, ":.")) {
			s->kind = SEL_PCI;
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
	OPT_NO_MEMTEST = 256, OPT_MEM_BYTES, OPT_PLANT, OPT_L2AB, OPT_MIN_FRACTION,
	OPT_MPS_SHARE, OPT_TIMEOUT, OPT_ARRAY_BYTES, OPT_REPEATS,
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
	{ "min-fraction", required_argument, NULL, OPT_MIN_FRACTION },
	{ "mps-share", required_argument, NULL, OPT_MPS_SHARE },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "array-bytes", required_argument, NULL, OPT_ARRAY_BYTES },
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

/* 0: run; 1: done (help/version printed); -1: usage error (printed). */
static int parse_args(int argc, char **argv, struct args *a)
{
	int c;

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
	while ((c = getopt_long(argc, argv, ":d:s:j:qhV", long_opts, NULL)) != -1) {
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
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (a->o.plant_error && (!a->o.memtest || a->o.quick))
		return usage_error("--plant-error needs the memory test (not with --quick or "
				   "--no-memtest)");
	if (a->o.l2ab && a->o.quick)
		return usage_error("--l2-ab is not run with --quick");
	return 0;
}

/* ------------------------------------------------------------ timeout */
static char timeout_msg[160];
static size_t timeout_len;

static void on_alarm(int sig)
{
	ssize_t w;

	(void)sig;
	w = write(STDERR_FILENO, timeout_msg, timeout_len);
	(void)w;
	_exit(GPUMEM_CHECK_EXIT_FAIL);
}

static void arm_timeout(int seconds)
{
	struct sigaction sa;

	if (seconds <= 0)
		return;
	snprintf(timeout_msg, sizeof(timeout_msg),
		 PFX "fail: timed out after %d s (--timeout); a GPU or the driver is hanging\n",
		 seconds);
	timeout_len = strlen(timeout_msg);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	alarm((unsigned)seconds);
}

/* ------------------------------------------------------------ driver probe */
typedef int (*cu_init_fn)(unsigned int);
typedef int (*cu_count_fn)(int *);
typedef int (*cu_errname_fn)(int, const char **);

/* Is there a GPU device node?  Tells "no GPU" from "a GPU CUDA cannot use". */
static int have_dev_nvidia(void)
{
	char path[32];
	int i;

	for (i = 0; i < 64; i++) {
		snprintf(path, sizeof(path), "/dev/nvidia%d", i);
		if (access(path, F_OK) == 0)
			return 1;
	}
	return 0;
}

/*
 * Is there a driver with a GPU?  Only dlopen + cuInit + cuDeviceGetCount:
 * milliseconds where there is none.  Returns 0 to go on, else the exit
 * code (3 skipped, 2 fail: a GPU is there but the driver will not start)
 * with 'why' filled.
 */
static int probe_driver(char *why, size_t len)
{
	cu_init_fn init;
	cu_count_fn count;
	cu_errname_fn errname;
	const char *name = NULL;
	void *lib, *p;
	int r, n = 0;

	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(why, len, "no NVIDIA driver (libcuda.so.1 not found)");
		return GPUMEM_CHECK_EXIT_SKIPPED;
	}
	p = dlsym(lib, "cuInit");
	memcpy(&init, &p, sizeof(p));
	p = dlsym(lib, "cuDeviceGetCount");
	memcpy(&count, &p, sizeof(p));
	p = dlsym(lib, "cuGetErrorName");
	memcpy(&errname, &p, sizeof(p));
	if (!init || !count) {
		snprintf(why, len, "no usable NVIDIA driver (libcuda.so.1 lacks cuInit)");
		return GPUMEM_CHECK_EXIT_SKIPPED;
	}
	r = init(0);
	if (r != 0) {
		if (!errname || errname(r, &name) != 0 || !name)
			name = "unknown error";
		if (r == 100 /* CUDA_ERROR_NO_DEVICE */ || !have_dev_nvidia()) {
			snprintf(why, len, "no GPU (cuInit: %s)", name);
			return GPUMEM_CHECK_EXIT_SKIPPED;
		}
		/* e.g. CUDA_ERROR_SYSTEM_NOT_READY: fabric manager down on an NVSwitch node */
		snprintf(why, len, "a GPU is present but the CUDA driver will not start (cuInit: %s)",
			 name);
		return GPUMEM_CHECK_EXIT_FAIL;
	}
	if (count(&n) != 0 || n <= 0) {
		snprintf(why, len, "no GPU visible%s", getenv("CUDA_VISIBLE_DEVICES") ?
			 " (CUDA_VISIBLE_DEVICES is set)" : "");
		return GPUMEM_CHECK_EXIT_SKIPPED;
	}
	/* The handle stays open: the CUDA runtime opens the same library. */
	return 0;
}

/* ------------------------------------------------------------ helpers */
static void *topo_thread(void *arg)
{
	struct gpumem_check_future *f = arg;
	struct gpumem_check_topo *t = gpumem_check_topo_load(f->why, sizeof(f->why));

	gpumem_check_future_set(f, t);
	return NULL;
}

/*
 * NVML starts once every context exists: nvmlInit and context creation
 * both go through the driver's locks, and the contexts are on the critical
 * path while NVML is needed only later, with the GPUs busy.
 */
static void *nvml_thread(void *arg)
{
	struct gpumem_check_shared *sh = arg;
	struct gpumem_check_future *f = &sh->nvml;
	struct gpumem_check_nvml *n;

	gpumem_check_ctx_wait(sh);
	n = calloc(1, sizeof(*n));

	if (n)
		gpumem_check_nvml_open(n);
	else
		snprintf(f->why, sizeof(f->why), "out of memory");
	gpumem_check_future_set(f, n);
	return NULL;
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

static int selector_matches(const struct selector *s, const struct gpumem_check_device *d)
{
	unsigned x[4], y[4];

	switch (s->kind) {
	case SEL_ORDINAL:
		return s->ordinal == d->ordinal;
	case SEL_UUID:
		/* "MIG-" and "GPU-" name the same 16 bytes; compare what follows */
		return strlen(d->uuid) > 4 && !strcasecmp(s->text + 4, d->uuid + 4);
	case SEL_PCI:
		return pci_parse(s->text, x) == 0 && pci_parse(d->pci_bus_id, y) == 0 &&
			!memcmp(x, y, sizeof(x));
	}
	return 0;
}

static void print_diags(const struct gpumem_diags *dg)
{
	const struct gpumem_diag *g;
	const char *sev;

	for (g = dg->head; g; g = g->next) {
		sev = g->sev == GPUMEM_SEV_ERROR ? "error" : "warning";
		if (g->file && g->line)
			fprintf(stderr, PFX "%s:%d:%d: %s: %s\n", g->file, g->line, g->col, sev,
				g->msg ? g->msg : "");
		else if (g->file)
			fprintf(stderr, PFX "%s: %s: %s\n", g->file, sev, g->msg ? g->msg : "");
		else
			fprintf(stderr, PFX "%s: %s\n", sev, g->msg ? g->msg : "");
	}
}

static void fill_identity(struct gpumem_check_report *r)
{
	struct tm tm;
	time_t t = time(NULL);

	snprintf(r->version, sizeof(r->version), "%s", PACKAGE_VERSION);
	if (gethostname(r->host, sizeof(r->host)) < 0)
		snprintf(r->host, sizeof(r->host), "unknown");
	r->host[sizeof(r->host) - 1] = '\0';
	if (gmtime_r(&t, &tm))
		strftime(r->time, sizeof(r->time), "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int write_json(const char *path, FILE *f, const struct gpumem_check_report *r)
{
	int rv = 0;

	if (!f)
		return 0;
	if (gpumem_check_json_write(f, r) < 0)
		rv = -1;
	if (f != stdout) {
		if (fclose(f) != 0)
			rv = -1;
	} else if (fflush(f) != 0) {
		rv = -1;
	}
	if (rv < 0)
		fprintf(stderr, PFX "cannot write %s: %s\n", path, strerror(errno));
	return rv;
}

/* ------------------------------------------------------------ main */
int main(int argc, char **argv)
{
	struct gpumem_check_report rep;
	struct gpumem_site site;
	struct gpumem_diags dg;
	struct gpumem_check_shared sh;
	struct gpumem_check_job *jobs = NULL;
	struct gpumem_check_device *devs = NULL;
	pthread_t *tids = NULL, topo_tid, nvml_tid;
	struct gpumem_check_nvml *nvml = NULL;
	struct args a;
	FILE *json = NULL, *table = stdout;
	char why[GPUMEM_CHECK_MSG];
	const char *env;
	double t0 = now(), t;
	int i, j, n = 0, ndev = 0, threads_started = 0, rc = GPUMEM_CHECK_EXIT_USAGE;
	int site_inited = 0, cuda_count = 0;
	cudaError_t e = cudaSuccess;

	memset(&rep, 0, sizeof(rep));
	memset(&dg, 0, sizeof(dg));
	i = parse_args(argc, argv, &a);
	if (i)
		return i > 0 ? 0 : GPUMEM_CHECK_EXIT_USAGE;

	/* Site configuration: references, default fraction and timeout. */
	gpumem_site_init(&site);
	site_inited = 1;
	if (a.site || access(DEFAULT_SITE, F_OK) == 0) {
		const char *path = a.site ? a.site : DEFAULT_SITE;

		if (gpumem_site_load(path, &site, &dg) != 0 || dg.nerrors) {
			print_diags(&dg);
			fprintf(stderr, PFX "cannot use the site configuration %s\n", path);
			goto fail;
		}
		print_diags(&dg);       /* warnings */
		rep.site_path = path;
	}
	if (a.min_fraction < 0) {
		double f = site.defaults.check.min_fraction;
		a.min_fraction = f > 0 && f <= 1 ? f : GPUMEM_CHECK_DEFAULT_FRACTION;
	}
	rep.mps_share_source = "option";
	if (a.mps_share < 0) {
		rep.mps_share_source = "default";
		a.mps_share = 100;
		env = getenv(GPUMEM_ENV_MPS_PCT);
		if (env && *env) {
			char *end;
			double v;

			errno = 0;
			v = strtod(env, &end);
			if (*end || errno || !(v > 0) || v > 100) {
				fprintf(stderr, PFX "ignoring %s='%s': not a percentage in (0, 100]\n",
					GPUMEM_ENV_MPS_PCT, env);
			} else {
				a.mps_share = v;
				rep.mps_share_source = "environment";
			}
		}
	}
	if (a.timeout_s < 0)
		a.timeout_s = site.check_timeout_s > 0 ? site.check_timeout_s : DEFAULT_TIMEOUT_S;

	if (a.json) {
		if (!strcmp(a.json, "-")) {
			json = stdout;
			table = stderr;         /* keep stdout pure JSON */
		} else if (!(json = fopen(a.json, "w"))) {
			fprintf(stderr, PFX "--json: cannot open %s: %s\n", a.json, strerror(errno));
			goto fail;
		}
	}
	fill_identity(&rep);
	rep.min_fraction = a.min_fraction;
	rep.mps_share = a.mps_share;
	rep.quick = a.o.quick;
	rep.memtest = a.o.memtest && !a.o.quick;
	rep.mem_bytes = a.o.mem_bytes;
	rep.l2ab = a.o.l2ab;
	rep.plant_error = a.o.plant_error;
	arm_timeout(a.timeout_s);
	/*
	 * One stream per GPU needs one hardware work queue; CUDA's default of 8
	 * doubles the context's creation time (H200: 0.11 s -> 0.05 s with 1,
	 * bench/check-timing).  A value the caller set is kept.
	 */
	setenv("CUDA_DEVICE_MAX_CONNECTIONS", "1", 0);

	/* Nothing heavy before this: a node without a GPU answers at once. */
	why[0] = '\0';
	t = now();
	rc = probe_driver(why, sizeof(why));
	rep.t.driver = now() - t;
	if (rc == 0) {
		t = now();
		e = cudaGetDeviceCount(&cuda_count);
		rep.t.runtime = now() - t;
		if (e == cudaErrorInsufficientDriver) {
			int drv = 0, rt = 0;

			cudaDriverGetVersion(&drv);
			cudaRuntimeGetVersion(&rt);
			snprintf(why, sizeof(why), "the CUDA %d.%d runtime needs a newer driver "
				 "(this one supports CUDA %d.%d)", rt / 1000, rt % 1000 / 10,
				 drv / 1000, drv % 1000 / 10);
			rc = GPUMEM_CHECK_EXIT_SKIPPED;
		} else if (e == cudaErrorNoDevice || (e == cudaSuccess && cuda_count <= 0)) {
			snprintf(why, sizeof(why), "no GPU visible to CUDA");
			rc = GPUMEM_CHECK_EXIT_SKIPPED;
		} else if (e != cudaSuccess) {
			snprintf(why, sizeof(why), "the CUDA runtime cannot start: %s (%s)",
				 cudaGetErrorString(e), cudaGetErrorName(e));
			rc = GPUMEM_CHECK_EXIT_FAIL;
		}
	}
	if (rc != 0) {
		int skipped = rc == GPUMEM_CHECK_EXIT_SKIPPED;

		fprintf(stderr, PFX "%s: %s\n", skipped ? "skipped" : "fail", why);
		rep.verdict = skipped ? GPUMEM_CHECK_V_SKIPPED : GPUMEM_CHECK_V_FAIL;
		rep.exit_code = rc;
		snprintf(rep.reason, sizeof(rep.reason), "%s", why);
		rep.wall_s = now() - t0;
		write_json(a.json, json, &rep);
		json = NULL;
		goto fail;
	}
	rc = GPUMEM_CHECK_EXIT_USAGE;

	/* hwloc starts while the GPU threads create their contexts; NVML after. */
	gpumem_check_future_init(&sh.topo);
	gpumem_check_future_init(&sh.nvml);
	pthread_mutex_init(&sh.ctx_mu, NULL);
	pthread_cond_init(&sh.ctx_cv, NULL);
	sh.ctx_pending = 0;
	sh.opts = &a.o;
	if (pthread_create(&topo_tid, NULL, topo_thread, &sh.topo) != 0) {
		snprintf(sh.topo.why, sizeof(sh.topo.why), "cannot start a thread");
		gpumem_check_future_set(&sh.topo, NULL);
	} else {
		threads_started |= 1;
	}
	cudaDriverGetVersion(&rep.cuda_driver);
	cudaRuntimeGetVersion(&rep.cuda_runtime);
	n = cuda_count > MAX_DEVICES ? MAX_DEVICES : cuda_count;
	devs = calloc((size_t)n, sizeof(*devs));
	jobs = calloc((size_t)n, sizeof(*jobs));
	tids = calloc((size_t)n, sizeof(*tids));
	if (!devs || !jobs || !tids) {
		fprintf(stderr, PFX "out of memory\n");
		rc = GPUMEM_CHECK_EXIT_FAIL;
		goto fail;
	}
	/* Identify all (no context yet), then keep the selected ones in order. */
	t = now();
	for (i = 0; i < n; i++) {
		struct gpumem_check_device tmp;
		int keep = !a.nsel;

		gpumem_check_device_init(&tmp, i);
		gpumem_check_identify(i, &tmp);
		for (j = 0; j < a.nsel && !keep; j++)
			keep = selector_matches(&a.sel[j], &tmp);
		if (keep)
			devs[ndev++] = tmp;
	}
	for (j = 0; j < a.nsel; j++) {
		int found = 0;

		for (i = 0; i < ndev && !found; i++)
			found = selector_matches(&a.sel[j], &devs[i]);
		if (!found) {
			fprintf(stderr, PFX "--devices: no CUDA device matches '%s' (%d visible)\n",
				a.sel[j].text, cuda_count);
			goto fail;
		}
	}

	rep.t.identify = now() - t;
	t = now();
	sh.ctx_pending = ndev;
	for (i = 0; i < ndev; i++) {
		jobs[i].shared = &sh;
		jobs[i].dev = &devs[i];
		if (pthread_create(&tids[i], NULL, gpumem_check_device_main, &jobs[i]) != 0) {
			snprintf(devs[i].health.context_error, sizeof(devs[i].health.context_error),
				 "cannot start a thread");
			devs[i].health.context_ok = 0;
			jobs[i].dev = NULL;     /* not started: not joined */
			gpumem_check_ctx_done(&sh);
		}
	}
	if (pthread_create(&nvml_tid, NULL, nvml_thread, &sh) != 0)
		gpumem_check_future_set(&sh.nvml, NULL);
	else
		threads_started |= 2;
	for (i = 0; i < ndev; i++)
		if (jobs[i].dev)
			pthread_join(tids[i], NULL);
	rep.t.devices = now() - t;
	nvml = gpumem_check_future_wait(&sh.nvml);
	if (nvml && nvml->driver[0])
		snprintf(rep.nvml_driver, sizeof(rep.nvml_driver), "%s", nvml->driver);

	for (i = 0; i < ndev; i++)
		gpumem_check_judge_device(&devs[i], gpumem_site_ref(&site, devs[i].name),
					  a.min_fraction, a.mps_share);
	rep.devices = devs;
	rep.ndevices = ndev;
	gpumem_check_judge_report(&rep);
	rep.wall_s = now() - t0;
	gpumem_check_table_write(table, &rep);
	fflush(table);
	rc = rep.exit_code;
	if (write_json(a.json, json, &rep) < 0 && rc < GPUMEM_CHECK_EXIT_FAIL)
		rc = GPUMEM_CHECK_EXIT_FAIL;    /* the caller relies on the file */
	json = NULL;
fail:
	if (json && json != stdout) {
		/* a usage error found late (--devices): leave no empty report behind */
		fclose(json);
		unlink(a.json);
	}
	if (threads_started & 1) {
		pthread_join(topo_tid, NULL);
		gpumem_check_topo_free(gpumem_check_future_wait(&sh.topo));
	}
	if (threads_started & 2) {
		pthread_join(nvml_tid, NULL);
		/*
		 * No nvmlShutdown: _exit below ends the process, and the driver
		 * releases NVML's handles with it, sooner than a shutdown would.
		 */
		free(gpumem_check_future_wait(&sh.nvml));
	}
	free(devs);
	free(jobs);
	free(tids);
	gpumem_diags_free(&dg);
	if (site_inited)
		gpumem_site_free(&site);
	alarm(0);               /* only now: the joins above could hang too */
	/*
	 * Leave without the CUDA runtime's exit handlers: tearing down each
	 * context at exit costs tens of milliseconds per GPU, and the driver
	 * reclaims everything when the process ends anyway.
	 */
	fflush(NULL);
	_exit(rc);
}

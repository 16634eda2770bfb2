/* SPDX-License-Identifier: GPL-2.0-or-later */
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
 * One check is gpumem_check_run_one(), a row of named steps in that
 * order that leaves no process state behind but what CUDA keeps (its
 * contexts, which the caller ends: main() by _exit, the warm server,
 * check_serve.c, by a device reset after its reply); main() is the
 * one-shot command around it.  The options are in
 * check_args.c, the narrowing of CUDA_VISIBLE_DEVICES to a --devices list
 * of ordinals (before cuInit) in check_visible.c, the driver probe in
 * check_probe.c, the check of one GPU in check_gpu.c.
 *
 * Builds: gpumem-check (kernels/check/check.am).  Runs as the job's user
 * (forked by the plugin) or as an admin by hand.  Includes: this folder's
 * headers, plugin/core's public headers, CUDA's.
 */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check_main.h"
#include "core_policy.h"

#define DEFAULT_SITE      GPUMEM_CHECK_DEFAULT_SITE
#define SITE_STDIN        "the site file (standard input)"
#define DEFAULT_TIMEOUT_S 60
#define MAX_DEVICES       GPUMEM_CHECK_MAX_DEVICES
#define PFX               GPUMEM_CHECK_PFX

/* Everything main()'s steps share, and what finish() releases. */
struct run {
	struct gpumem_check_report rep;
	struct gpumem_site site;
	struct gpumem_diags dg;
	struct gpumem_check_shared sh;
	struct gpumem_check_job *jobs;
	struct gpumem_check_device *devs;
	pthread_t *tids, topo_tid, nvml_tid;
	struct gpumem_check_args a;
	struct gpumem_check_io *io;
	FILE *json, *table;
	double t0;
	int ndev, threads_started, site_inited, cuda_count;
};

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

static int write_json(const struct run *run, const char *path, FILE *f,
		      const struct gpumem_check_report *r)
{
	int rv = 0;

	if (!f)
		return 0;
	if (gpumem_check_json_write(f, r) < 0)
		rv = -1;
	if (f != run->io->json_out) {
		if (fclose(f) != 0)
			rv = -1;
	} else if (fflush(f) != 0) {
		rv = -1;
	}
	if (rv < 0)
		fprintf(stderr, PFX "cannot write %s: %s\n", path, strerror(errno));
	return rv;
}


/* ------------------------------------------------------------ options and site */
/*
 * The site file from standard input (--site -): what the plugin hands its
 * checks, the site file as the job prolog read it (its job record).
 */
static int site_stdin(const struct gpumem_check_io *io, struct gpumem_site *s,
		      struct gpumem_diags *d)
{
	char *buf = malloc(GPUMEM_MAX_FILE_BYTES + 2);
	size_t len = 0;
	int rv = -1;

	if (buf && io->site_text) {     /* the warm server: the request's text */
		len = io->site_len > GPUMEM_MAX_FILE_BYTES + 1 ? GPUMEM_MAX_FILE_BYTES + 1 :
			io->site_len;
		memcpy(buf, io->site_text, len);
	}
	if (buf == NULL || (!io->site_text &&
			    gpumem_read_fd(0, buf, GPUMEM_MAX_FILE_BYTES + 1, &len) < 0))
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, SITE_STDIN, 0, 0, "cannot read it");
	else if (len > GPUMEM_MAX_FILE_BYTES)
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, SITE_STDIN, 0, 0,
				"larger than the %d-byte limit", GPUMEM_MAX_FILE_BYTES);
	else
		rv = gpumem_site_parse(buf, len, SITE_STDIN, s, d);
	free(buf);
	return rv;
}

/* The site configuration: references, default fraction and timeout. */
static int site_load(struct run *r)
{
	struct gpumem_check_args *a = &r->a;

	gpumem_site_init(&r->site);
	r->site_inited = 1;
	if (a->site || access(DEFAULT_SITE, F_OK) == 0) {
		const char *path = a->site ? a->site : DEFAULT_SITE;
		int stdin_site = !strcmp(path, "-");

		if (stdin_site)
			path = SITE_STDIN;
		if ((stdin_site ? site_stdin(r->io, &r->site, &r->dg) :
		     gpumem_site_load(path, &r->site, &r->dg)) != 0 || r->dg.nerrors) {
			print_diags(&r->dg);
			fprintf(stderr, PFX "cannot use the site configuration %s\n", path);
			return -1;
		}
		print_diags(&r->dg);    /* warnings */
		r->rep.site_path = path;
	}
	if (a->min_fraction < 0) {
		double f = r->site.defaults.check.min_fraction;
		a->min_fraction = f > 0 && f <= 1 ? f : GPUMEM_CHECK_DEFAULT_FRACTION;
	}
	return 0;
}

/* The MPS share: --mps-share, else $CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, else 100. */
static void mps_share_pick(struct run *r)
{
	const char *env;

	r->rep.mps_share_source = "option";
	if (r->a.mps_share < 0) {
		r->rep.mps_share_source = "default";
		r->a.mps_share = 100;
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
				r->a.mps_share = v;
				r->rep.mps_share_source = "environment";
			}
		}
	}
}

static int json_open(struct run *r)
{
	if (r->a.json) {
		if (!strcmp(r->a.json, "-")) {
			r->json = r->io->json_out;
			r->table = stderr;      /* keep stdout pure JSON */
		} else if (!(r->json = fopen(r->a.json, "w"))) {
			fprintf(stderr, PFX "--json: cannot open %s: %s\n", r->a.json, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* Options, site and output: cheap; 0 to go on, -1 on a usage error (printed). */
static int options_settle(struct run *r)
{
	if (site_load(r) < 0)
		return -1;
	mps_share_pick(r);
	if (r->a.timeout_s < 0)
		r->a.timeout_s = r->site.check_timeout_s > 0 ? r->site.check_timeout_s :
			DEFAULT_TIMEOUT_S;
	return json_open(r);
}

static void report_start(struct run *r)
{
	struct gpumem_check_report *rep = &r->rep;
	const struct gpumem_check_args *a = &r->a;

	fill_identity(rep);
	rep->min_fraction = a->min_fraction;
	rep->mps_share = a->mps_share;
	rep->quick = a->o.quick;
	rep->memtest = a->o.memtest && !a->o.quick;
	rep->mem_bytes = a->o.mem_bytes;
	rep->l2ab = a->o.l2ab;
	rep->l2_setaside_pct = a->o.l2_setaside_pct;
	rep->l2_setaside_bytes = a->o.l2_setaside_bytes;
	rep->l2_reset = a->o.l2_reset;
	rep->plant_error = a->o.plant_error;
	arm_timeout(a->timeout_s);
	/*
	 * One stream per GPU needs one hardware work queue; CUDA's default of 8
	 * doubles the context's creation time (H200: 0.11 s -> 0.05 s with 1,
	 * bench/check-timing).  A value the caller set is kept.
	 */
	setenv(GPUMEM_ENV_MAX_CONN, "1", 0);
}

/* ------------------------------------------------------------ driver probe */
/* 0 to go on; else the exit code, with the answer printed and written. */
static int driver_probe(struct run *r)
{
	struct gpumem_check_report *rep = &r->rep;
	char why[GPUMEM_CHECK_MSG];
	int rc, skipped;

	rc = gpumem_check_probe(rep, &r->cuda_count, why, sizeof(why));
	if (rc == 0 && r->io->nord >= 0 && gpumem_check_io_ordinals(r->io, r->cuda_count) == 0) {
		/* what cuInit says where CUDA_VISIBLE_DEVICES names no device */
		snprintf(why, sizeof(why), "no GPU (cuInit: CUDA_ERROR_NO_DEVICE)");
		rc = GPUMEM_CHECK_EXIT_SKIPPED;
	}
	if (rc == 0)
		return 0;
	skipped = rc == GPUMEM_CHECK_EXIT_SKIPPED;
	fprintf(stderr, PFX "%s: %s\n", skipped ? "skipped" : "fail", why);
	rep->verdict = skipped ? GPUMEM_CHECK_V_SKIPPED : GPUMEM_CHECK_V_FAIL;
	rep->exit_code = rc;
	snprintf(rep->reason, sizeof(rep->reason), "%s", why);
	rep->wall_s = gpumem_check_now() - r->t0;
	write_json(r, r->a.json, r->json, rep);
	r->json = NULL;
	return rc;
}

/* ------------------------------------------------------------ devices */
/* hwloc starts now, while the GPU threads create their contexts; NVML after. */
static void topo_start(struct run *r)
{
	struct gpumem_check_shared *sh = &r->sh;

	gpumem_check_future_init(&sh->topo);
	gpumem_check_future_init(&sh->nvml);
	pthread_mutex_init(&sh->ctx_mu, NULL);
	pthread_cond_init(&sh->ctx_cv, NULL);
	sh->ctx_pending = 0;
	sh->opts = &r->a.o;
	if (pthread_create(&r->topo_tid, NULL, topo_thread, &sh->topo) != 0) {
		snprintf(sh->topo.why, sizeof(sh->topo.why), "cannot start a thread");
		gpumem_check_future_set(&sh->topo, NULL);
	} else {
		r->threads_started |= 1;
	}
}

/*
 * Identify all (no context yet), then keep the selected ones in order.
 * 0 to go on; else the exit code (usage: a --devices entry matches none).
 */
static int devices_select(struct run *r)
{
	struct gpumem_check_args *a = &r->a;
	int i, j, k, n;
	double t;

	cudaDriverGetVersion(&r->rep.cuda_driver);
	cudaRuntimeGetVersion(&r->rep.cuda_runtime);
	n = r->cuda_count > MAX_DEVICES ? MAX_DEVICES : r->cuda_count;
	if (r->io->nord >= 0)   /* the warm server: the request's GPUs, numbered as CUDA would */
		n = gpumem_check_io_ordinals(r->io, r->cuda_count);
	r->devs = calloc((size_t)n, sizeof(*r->devs));
	r->jobs = calloc((size_t)n, sizeof(*r->jobs));
	r->tids = calloc((size_t)n, sizeof(*r->tids));
	if (!r->devs || !r->jobs || !r->tids) {
		fprintf(stderr, PFX "out of memory\n");
		return GPUMEM_CHECK_EXIT_FAIL;
	}
	t = gpumem_check_now();
	for (k = 0; k < n; k++) {
		struct gpumem_check_device tmp;
		int keep = !a->nsel;

		i = r->io->nord >= 0 ? r->io->ordinals[k] : k;
		gpumem_check_device_init(&tmp, i);
		tmp.index = r->io->nord >= 0 ? k : gpumem_check_visible_index(a, i);
		gpumem_check_identify(i, &tmp);
		for (j = 0; j < a->nsel && !keep; j++)
			keep = gpumem_check_selector_matches(&a->sel[j], &tmp);
		if (keep)
			r->devs[r->ndev++] = tmp;
	}
	for (j = 0; j < a->nsel; j++) {
		int found = 0;

		for (i = 0; i < r->ndev && !found; i++)
			found = gpumem_check_selector_matches(&a->sel[j], &r->devs[i]);
		if (!found) {
			fprintf(stderr, PFX "--devices: no CUDA device matches '%s' (%d visible)\n",
				a->sel[j].text, r->cuda_count);
			return GPUMEM_CHECK_EXIT_USAGE;
		}
	}
	r->rep.t.identify = gpumem_check_now() - t;
	return 0;
}

/* One thread per GPU creates its context and checks it; NVML starts beside them. */
static void devices_run(struct run *r)
{
	struct gpumem_check_shared *sh = &r->sh;
	struct gpumem_check_nvml *nvml;
	int i;
	double t;

	t = gpumem_check_now();
	sh->ctx_pending = r->ndev;
	for (i = 0; i < r->ndev; i++) {
		struct gpumem_check_device *d = &r->devs[i];

		r->jobs[i].shared = sh;
		r->jobs[i].dev = d;
		if (pthread_create(&r->tids[i], NULL, gpumem_check_device_main, &r->jobs[i]) != 0) {
			snprintf(d->health.context_error, sizeof(d->health.context_error),
				 "cannot start a thread");
			d->health.context_ok = 0;
			r->jobs[i].dev = NULL;  /* not started: not joined */
			gpumem_check_ctx_done(sh);
		}
	}
	if (pthread_create(&r->nvml_tid, NULL, nvml_thread, sh) != 0)
		gpumem_check_future_set(&sh->nvml, NULL);
	else
		r->threads_started |= 2;
	for (i = 0; i < r->ndev; i++)
		if (r->jobs[i].dev)
			pthread_join(r->tids[i], NULL);
	r->rep.t.devices = gpumem_check_now() - t;
	nvml = gpumem_check_future_wait(&sh->nvml);
	if (nvml && nvml->driver[0])
		snprintf(r->rep.nvml_driver, sizeof(r->rep.nvml_driver), "%s", nvml->driver);
}

/* ------------------------------------------------------------ verdict and output */
/* Judge every GPU and the whole run, write the table and the JSON; the exit code. */
static int judge_and_write(struct run *r)
{
	struct gpumem_check_report *rep = &r->rep;
	int i, rc;

	for (i = 0; i < r->ndev; i++)
		gpumem_check_judge_device(&r->devs[i], gpumem_site_ref(&r->site, r->devs[i].name),
					  r->a.min_fraction, r->a.mps_share);
	rep->devices = r->devs;
	rep->ndevices = r->ndev;
	gpumem_check_judge_report(rep);
	rep->wall_s = gpumem_check_now() - r->t0;
	gpumem_check_table_write(r->table, rep);
	fflush(r->table);
	rc = rep->exit_code;
	if (write_json(r, r->a.json, r->json, rep) < 0 && rc < GPUMEM_CHECK_EXIT_FAIL)
		rc = GPUMEM_CHECK_EXIT_FAIL;    /* the caller relies on the file */
	r->json = NULL;
	return rc;
}

/* Join the helper threads, free; 'rc' back, and the ordinals that have a context. */
static int finish(struct run *r, int rc)
{
	int i;

	if (r->json && r->json != r->io->json_out) {
		/* a usage error found late (--devices): leave no empty report behind */
		fclose(r->json);
		unlink(r->a.json);
	}
	if (r->threads_started & 1) {
		pthread_join(r->topo_tid, NULL);
		gpumem_check_topo_free(gpumem_check_future_wait(&r->sh.topo));
	}
	if (r->threads_started & 2) {
		pthread_join(r->nvml_tid, NULL);
		/*
		 * No nvmlShutdown: the one-shot check _exits, and the driver
		 * releases NVML's handles with it, sooner than a shutdown would;
		 * the warm server keeps the process's one NVML started for its
		 * next checks and health requests (gpumem_health_shared).
		 */
		free(gpumem_check_future_wait(&r->sh.nvml));
	}
	r->io->nused = 0;
	for (i = 0; i < r->ndev; i++)
		r->io->used[r->io->nused++] = r->devs[i].ordinal;
	free(r->devs);
	free(r->jobs);
	free(r->tids);
	gpumem_diags_free(&r->dg);
	if (r->site_inited)
		gpumem_site_free(&r->site);
	alarm(0);               /* only now: the joins above could hang too */
	return rc;
}

/* ------------------------------------------------------------ one check */
int gpumem_check_run_one(int argc, char **argv, struct gpumem_check_io *io)
{
	struct run r;
	int rc;

	memset(&r, 0, sizeof(r));
	r.t0 = gpumem_check_now();
	r.io = io;
	r.table = stdout;
	io->nused = 0;
	optind = 0;             /* getopt from the start: the server parses many */
	rc = gpumem_check_parse_args(argc, argv, &r.a);
	if (rc)
		return rc > 0 ? 0 : GPUMEM_CHECK_EXIT_USAGE;
	rc = GPUMEM_CHECK_EXIT_USAGE;
	if (options_settle(&r) < 0)
		goto fail;
	report_start(&r);

	/* CUDA starts only the GPUs a --devices list of ordinals names. */
	gpumem_check_visible_narrow(&r.a);
	/* Nothing heavy before this: a node without a GPU answers at once. */
	rc = driver_probe(&r);
	if (rc != 0)
		goto fail;

	/* hwloc starts while the GPU threads create their contexts; NVML after. */
	topo_start(&r);
	rc = devices_select(&r);
	if (rc != 0)
		goto fail;
	devices_run(&r);
	rc = judge_and_write(&r);
fail:
	return finish(&r, rc);
}

/* ------------------------------------------------------------ main */
int main(int argc, char **argv)
{
	struct gpumem_check_io io = { .nord = -1 };
	int rc;

	if (argc > 1 && !strcmp(argv[1], "--serve"))
		return gpumem_check_serve(argc, argv);
	io.json_out = stdout;
	rc = gpumem_check_run_one(argc, argv, &io);
	/*
	 * Leave without the CUDA runtime's exit handlers: tearing down each
	 * context at exit costs tens of milliseconds per GPU, and the driver
	 * reclaims everything when the process ends anyway.
	 */
	fflush(NULL);
	_exit(rc);
}

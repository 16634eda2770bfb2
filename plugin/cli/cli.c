/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem: validate, explain and debug policies (gpumem(1)).
 *
 * Builds: gpumem (plugin/cli/cli.am), with report*.c.  Runs as the user or
 * an admin, anywhere.  Includes: this folder's and plugin/core's headers.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "config.h"
#include "core_advice.h"
#include "core_base.h"
#include "core_policy.h"
#include "job_cli.h"
#include "report_cli.h"

#define DEFAULT_SITE GPUMEM_SYSCONFDIR "/slurm/gpumem.yaml"
#define UM_LIBRARY GPUMEM_LIBDIR "/libgpumem-um.so"

enum { EXIT_OK = 0, EXIT_INVALID = 1, EXIT_USAGE = 64 };

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: gpumem validate [--site FILE] [--gpu-model NAME] [POLICY...]\n"
		"       gpumem show [--site FILE] [--gpu-model NAME] [--json] [POLICY]\n"
		"       gpumem env [--site FILE] [--gpus N --l2-bytes B --persisting-max B]\n"
		"                  [--gpu-model NAME] [--um-library PATH] [POLICY]\n"
		"       gpumem report [--site FILE] [FILTERS] [--json | --svg FILE] [DIR]\n"
		"       gpumem job JOBID [--json]\n"
		"       gpumem job --report FILE [--json | --svg OUT]\n"
		"       gpumem advise JOBID [--json]\n"
		"       gpumem advise --rules [--site FILE] [--json]\n"
		"       gpumem advise --mine [--since TIME] [--json]\n"
		"       gpumem --help | --version\n"
		"\n"
		"POLICY is a file path or the name of a policy in the site's policy_dir.\n"
		"validate  check files; every problem is printed as FILE:LINE:COL: error: MSG\n"
		"show      the effective policy: site defaults, your policy, site limits\n"
		"env       the environment a task would receive under the policy\n"
		"report    every node's check reports, worst first (gpumem report --help)\n"
		"job       what a job got on each node, from Slurm's accounting (sacct)\n"
		"advise    the policy a job's GPU memory profile suggests, per node and GPU;\n"
		"          --rules: the advice rules in force (the site file's advice:)\n"
		"--gpu-model NAME: the GPU model (as nvidia-smi names it, 'NVIDIA H200') whose\n"
		"          cap on l2.persisting_limit applies; without it, the cap for a model\n"
		"          not known (doc/admin/lifecycle.md, \"The L2 set-aside's cost\")\n"
		"Without --site, $GPUMEM_SITE or %s is used when it exists.\n"
		"Exit status: 0 valid, 1 invalid input, 64 usage error.\n", DEFAULT_SITE);
}

struct opts {
	const char *site;
	int json;
	int gpus;
	uint64_t l2_bytes, persisting_max;
	const char *um_library;
	const char *gpu_model;
};

static int parse_u64(const char *opt, const char *arg, uint64_t *out)
{
	const char *why;

	if (gpumem_parse_size(arg, out, &why) < 0) {
		fprintf(stderr, "gpumem: %s: '%s': %s\n", opt, arg, why);
		return -1;
	}
	return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "site", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "gpus", required_argument, NULL, 'g' },
		{ "l2-bytes", required_argument, NULL, 'l' },
		{ "persisting-max", required_argument, NULL, 'p' },
		{ "um-library", required_argument, NULL, 'u' },
		{ "gpu-model", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+s:jh", longopts, NULL)) != -1) {
		char *end;

		switch (c) {
		case 's': o->site = optarg; break;
		case 'j': o->json = 1; break;
		case 'u': o->um_library = optarg; break;
		case 'm':
			if (!optarg[0] || strlen(optarg) >= sizeof(((struct gpumem_gpu *)0)->name)) {
				fprintf(stderr, "gpumem: --gpu-model: '%s' is not a GPU model's "
					"name (1 to 95 characters)\n", optarg);
				return -1;
			}
			o->gpu_model = optarg;
			break;
		case 'g':
			errno = 0;
			o->gpus = (int)strtol(optarg, &end, 10);
			if (*end || errno || o->gpus < 0 || o->gpus > GPUMEM_MAX_GPUS) {
				fprintf(stderr, "gpumem: --gpus: '%s' is not a count 0..%d\n",
					optarg, GPUMEM_MAX_GPUS);
				return -1;
			}
			break;
		case 'l':
			if (parse_u64("--l2-bytes", optarg, &o->l2_bytes) < 0)
				return -1;
			break;
		case 'p':
			if (parse_u64("--persisting-max", optarg, &o->persisting_max) < 0)
				return -1;
			break;
		case 'h': usage(stdout); exit(EXIT_OK);
		default:
			fprintf(stderr, "gpumem: unknown or incomplete option '%s'\n",
				argv[optind - 1]);
			return -1;
		}
	}
	return 0;
}

/* Load the site file if one is named or installed; -1 only on a bad file. */
static int load_site(const struct opts *o, struct gpumem_site *site, int *have,
		     struct gpumem_diags *d)
{
	return gpumem_site_load_default(o->site, DEFAULT_SITE, site, have, d);
}

/*
 * A policy as root: often a user's file, so never through a link and with
 * its directory's owner's rights (callerfile.h); its diagnostics can then
 * quote nothing that owner could not read.
 */
static int load_as_root(const char *path, struct gpumem_policy *p, struct gpumem_diags *d)
{
	char why[400], *buf = NULL;
	size_t len = 0;
	int fd = gpumem_caller_file_open(path, why, sizeof(why)), rv;

	gpumem_policy_init(p);
	if (fd < 0) {
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, path, 0, 0, "cannot open: %s", why);
		return -1;
	}
	if (gpumem_read_opened(fd, path, &buf, &len, d) < 0)
		return -1;
	rv = gpumem_policy_parse(buf, len, path, p, d);
	free(buf);
	return rv;
}

/* Load a user policy given by name or path, with the site's policy_dir. */
static int load_user(const struct gpumem_site *site, int have_site, const char *arg,
		     struct gpumem_policy *p, char **pathp, struct gpumem_diags *d)
{
	char *path = gpumem_policy_resolve(have_site ? site : NULL, arg, d);

	*pathp = path;
	if (path == NULL)
		return -1;
	if (geteuid() == 0)
		return load_as_root(path, p, d);
	return gpumem_policy_load(path, p, d);
}

/*
 * The cap on the L2 set-aside for --gpu-model (or a model not known), as
 * the node applies it (l2cap.c): said in D under WHERE when it lowers a
 * percentage.  A byte limit is a share of L2 only on the node.
 */
static void model_cap(const struct opts *o, struct gpumem_policy *eff, const char *where,
		      struct gpumem_diags *d)
{
	const char *models[1] = { o->gpu_model };

	if (!(eff->set & GPUMEM_K_L2_LIMIT) || !eff->l2.limit_is_percent)
		return;
	gpumem_l2cap_apply(&eff->l2.site_caps, models, o->gpu_model ? 1 : 0,
			   &eff->l2.limit_percent, where, d);
}

static int cmd_validate(const struct opts *o, int n, char **files)
{
	struct gpumem_diags d = { 0 };
	struct gpumem_site site;
	int have_site, rv, site_rc;

	site_rc = load_site(o, &site, &have_site, &d);
	if (have_site) {        /* the plugin does not ask this: advise_site.c says why */
		struct gpumem_policy defaults;

		gpumem_advice_check_policies(&site, &d);
		/* The site's own default set-aside meets the same cap on the node. */
		if (gpumem_policy_effective(&site, NULL, site.path, &defaults, &d) == 0)
			model_cap(o, &defaults, site.path, &d);
	}
	for (int i = 0; i < n; i++) {
		struct gpumem_policy p, eff;
		char *path = NULL;

		if (load_user(&site, have_site, files[i], &p, &path, &d) == 0 &&
		    gpumem_policy_effective(have_site ? &site : NULL, &p, path, &eff, &d) == 0)
			model_cap(o, &eff, path, &d);
		free(path);
	}
	if (n == 0 && !have_site && site_rc == 0) {
		fprintf(stderr, "gpumem: validate: nothing to validate (give a POLICY or --site)\n");
		gpumem_site_free(&site);
		return EXIT_USAGE;
	}
	gpumem_diags_print(&d, stderr);
	rv = d.nerrors ? EXIT_INVALID : EXIT_OK;
	if (rv == EXIT_OK)
		printf("gpumem: %d file%s valid\n", n + have_site, n + have_site == 1 ? "" : "s");
	gpumem_diags_free(&d);
	gpumem_site_free(&site);
	return rv;
}

/*
 * The effective policy for `show` and `env`; prints the diagnostics.  CAP:
 * with the cap for the GPU model applied (show; env leaves it to the node's
 * own code, as the step does).
 */
static int effective(const struct opts *o, int n, char **files, struct gpumem_policy *eff,
		     struct gpumem_site *site, int *have_site, int cap)
{
	struct gpumem_diags d = { 0 };
	struct gpumem_policy user;
	char *path = NULL;
	int rv = -1;

	gpumem_site_init(site);         /* the caller frees it on every path */
	if (n > 1) {
		fprintf(stderr, "gpumem: give at most one POLICY\n");
		return -2;
	}
	if (load_site(o, site, have_site, &d) < 0)
		goto fail;
	if (n == 1 && load_user(site, *have_site, files[0], &user, &path, &d) < 0)
		goto fail;
	if (gpumem_policy_effective(*have_site ? site : NULL, n ? &user : NULL, path, eff,
				    &d) < 0)
		goto fail;
	if (cap)
		model_cap(o, eff, path ? path : *have_site ? site->path : "the built-in defaults", &d);
	rv = 0;
fail:
	gpumem_diags_print(&d, stderr);
	gpumem_diags_free(&d);
	free(path);
	return rv;
}

static int cmd_show(const struct opts *o, int n, char **files)
{
	struct gpumem_site site;
	struct gpumem_policy eff;
	int have_site, rv;
	char *text;

	rv = effective(o, n, files, &eff, &site, &have_site, 1);
	if (rv < 0) {
		gpumem_site_free(&site);
		return rv == -2 ? EXIT_USAGE : EXIT_INVALID;
	}
	text = gpumem_policy_format(&eff, o->json ? GPUMEM_FMT_JSON : GPUMEM_FMT_YAML, 0);
	if (!o->json)
		printf("# effective policy: built-in defaults < %s < %s, clamped to site limits\n"
		       "# and to the L2 set-aside's cap for %s\n",
		       have_site ? site.path : "(no site file)", n ? files[0] : "(no policy)",
		       o->gpu_model ? o->gpu_model : "a GPU model not known (--gpu-model)");
	fputs(text ? text : "", stdout);
	free(text);
	gpumem_site_free(&site);
	return text ? EXIT_OK : EXIT_INVALID;
}

static int cmd_env(const struct opts *o, int n, char **files)
{
	struct gpumem_diags d = { 0 };
	struct gpumem_site site;
	struct gpumem_policy eff;
	struct gpumem_node node;
	struct gpumem_env env;
	int have_site, rv;

	rv = effective(o, n, files, &eff, &site, &have_site, 0);
	if (rv < 0) {
		gpumem_site_free(&site);
		return rv == -2 ? EXIT_USAGE : EXIT_INVALID;
	}
	memset(&node, 0, sizeof(node));
	node.ngpus = o->gpus;
	for (int i = 0; i < o->gpus; i++) {
		node.gpus[i].index = i;
		node.gpus[i].l2_bytes = o->l2_bytes;
		node.gpus[i].persisting_max_bytes = o->persisting_max;
		if (o->gpu_model)
			snprintf(node.gpus[i].name, sizeof(node.gpus[i].name), "%s", o->gpu_model);
	}
	node.um_library = o->um_library ? o->um_library : UM_LIBRARY;
	if (eff.mps.daemon == GPUMEM_DAEMON_JOB) {
		node.mps_pipe_dir = "/run/gpumem-mps/jobJOBID/pipe";
		node.mps_log_dir = "/run/gpumem-mps/jobJOBID/log";
	}
	rv = gpumem_policy_env(&eff, &node, &env, &d);
	gpumem_diags_print(&d, stderr);
	gpumem_diags_free(&d);
	for (int i = 0; rv == 0 && i < env.n; i++)
		printf("%s=%s\n", env.var[i].name, env.var[i].value);
	gpumem_site_free(&site);
	return rv == 0 ? EXIT_OK : EXIT_INVALID;
}

/* The version, and the Slurm series gpumem.so of this build is tied to. */
static void print_version(void)
{
	const char *v = GPUMEM_SLURM_VERSION;
	const char *dot = strchr(v, '.');

	printf("gpumem %s\n", PACKAGE_VERSION);
	if (!*v || !dot)
		printf("SPANK plugin: not built (no slurm/spank.h at configure)\n");
	else
		printf("SPANK plugin: built for Slurm %s: loads into Slurm %.*s.x only\n",
		       v, (int)(dot - v + 3), v);
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	const char *cmd;

	if (argc >= 2 && !strcmp(argv[1], "--version")) {
		print_version();
		return EXIT_OK;
	}
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return EXIT_OK;
	}
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	cmd = argv[1];
	argv++;
	argc--;
	/* report has options of its own: before the shared option parser. */
	if (!strcmp(cmd, "report"))
		return gpumem_report_main(argc, argv);
	if (!strcmp(cmd, "job"))
		return gpumem_job_main(argc, argv);
	if (!strcmp(cmd, "advise"))
		return gpumem_advise_main(argc, argv);
	if (parse_opts(argc, argv, &o) < 0)
		return EXIT_USAGE;
	if (!strcmp(cmd, "validate"))
		return cmd_validate(&o, argc - optind, argv + optind);
	if (!strcmp(cmd, "show"))
		return cmd_show(&o, argc - optind, argv + optind);
	if (!strcmp(cmd, "env"))
		return cmd_env(&o, argc - optind, argv + optind);
	fprintf(stderr, "gpumem: unknown command '%s' (validate, show, env, report, job, advise; see --help)\n",
		cmd);
	return EXIT_USAGE;
}

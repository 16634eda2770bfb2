/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the unit tests of the node check (plugin/spank/check/) share: the
 * two Slurm log calls the check's files make (slurm_log.h), and a check
 * contract (check_ctx.h) made by hand as jobctx.c
 * makes it: job 7's prolog on node1, GPUs 0 and 1, root's state directory
 * of the test's own, check_user nobody, the site's default check.  No
 * Slurm runs: the check's files and the core library alone.
 */
#ifndef GPUMEM_CHECK_FIXTURE_H
#define GPUMEM_CHECK_FIXTURE_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check_ctx.h"
#include "gpustate.h"
#include "statedir.h"
#include "statefiles.h"
#include "slurm_log.h"
#include "tap.h"

/* The check's defaults as the site's and the job's policy give them. */
static struct gpumem_site fixture_site;
static struct gpumem_policy fixture_eff;

/*
 * C for job 7's prolog on node1, GPUs 0 and 1, its state directory
 * BASE/state (made as the job prolog makes it); 0, or -1 (the reason
 * printed).  BASE is searchable by everyone: check_user runs from it.
 */
static inline int fixture_ctx(struct gpumem_check_ctx *c, const char *base)
{
	static char state[300], libexec[300];
	char err[600];

	memset(c, 0, sizeof(*c));
	gpumem_site_init(&fixture_site);
	gpumem_policy_init(&fixture_eff);
	chmod(base, 0755);
	snprintf(state, sizeof(state), "%s/state", base);
	snprintf(libexec, sizeof(libexec), "%s/libexec", base);
	mkdir(libexec, 0755);
	c->job.id = 7;
	c->job.uid = 1000;
	c->job.gid = 1000;
	snprintf(c->job.user, sizeof(c->job.user), "someone");
	snprintf(c->job.hook, sizeof(c->job.hook), "prolog");
	snprintf(c->job.policy, sizeof(c->job.policy), "site defaults");
	c->job.eff = &fixture_eff;
	snprintf(c->node.name, sizeof(c->node.name), "node1");
	c->node.has_dev = 1;
	snprintf(c->gpus.list[0], sizeof(c->gpus.list[0]), "0");
	snprintf(c->gpus.list[1], sizeof(c->gpus.list[1]), "1");
	c->gpus.n = 2;
	snprintf(c->gpus.text, sizeof(c->gpus.text), "0,1");
	c->as.check = "/nonexistent/gpumem-check";
	c->as.libexecdir = libexec;
	c->as.uid = 65534;
	c->as.gid = 65534;
	c->as.nomps = GPUMEM_MPS_NOMPS_NONE;
	c->check.timeout_s = fixture_site.check_timeout_s;
	c->check.min_interval_min = fixture_site.check_min_interval_min;
	gpumem_pass_refs(&fixture_site, c->check.refs);
	c->check.min_fraction = fixture_eff.check.min_fraction;
	c->check.strict = gpumem_check_strict(&fixture_eff, &fixture_site);
	c->check.on_fail = fixture_eff.check.on_fail;
	c->state.dir = state;
	c->state.dfd = gpumem_state_open(state, 1, err, sizeof(err));
	if (c->state.dfd < 0) {
		printf("# state directory %s: %s\n", state, err);
		return -1;
	}
	return 0;
}

/* The state file gpus/NAME: its text (malloc'd), or NULL. */
static inline char *fixture_gpufile(const struct gpumem_check_ctx *c, const char *name)
{
	char why[600], *text;
	int fd = gpumem_gpudir_open(c, why, sizeof(why));

	if (fd < 0)
		return NULL;
	text = gpumem_state_read(fd, name, 4096);
	close(fd);
	return text;
}

/* Write gpus/NAME as root's hooks do; 0, or -1. */
static inline int fixture_gpuput(const struct gpumem_check_ctx *c, const char *name, const char *text)
{
	char why[600];
	int rv, fd = gpumem_gpudir_open(c, why, sizeof(why));

	if (fd < 0)
		return -1;
	rv = gpumem_state_write(fd, name, text);
	close(fd);
	return rv;
}

/* The end: BASE removed when every test passed (kept to look at otherwise); the plan. */
static inline int fixture_done(const struct gpumem_check_ctx *c, const char *base)
{
	char cmd[400];

	close(c->state.dfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (tap_failed == 0 && system(cmd) != 0)
		printf("# could not remove %s\n", base);
	return tap_done();
}

/* Root's state is root's: the reads refuse anything else, so these tests need root. */
static inline void fixture_need_root(void)
{
	if (geteuid() != 0) {
		printf("1..0 # SKIP root's state directory: run as root\n");
		exit(0);
	}
}
#endif

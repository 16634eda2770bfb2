/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What gpumem reads of Slurm's own configuration, and what follows from it
 * (slurmconf.h).  Not from slurm.conf's text (Include files, configless
 * nodes): the daemon gpumem.so is loaded into has already read it, into
 * the global `slurm_conf` (libslurmfull's, type slurm_conf_t of the
 * series' public slurm.h, which is the one gpumem.so is built against:
 * Slurm loads no plugin of another series).  Where the symbol is missing
 * nothing is known and nothing changes.
 *
 * - PrologFlags=RunInJob (24.05+): Slurm then runs the prolog and epilog
 *   from the job's extern step, whose SPANK stack never calls
 *   slurm_spank_job_prolog/_epilog (src/common/spank.c sets has_prolog
 *   only for slurmd's own stack; tests/slurm/prolog-facts.sh shows it on
 *   24.11 and 26.05).  gpumem's per-job work would silently not happen and
 *   every step fail, so slurmd's init refuses it (doc/admin/slurm.md, "Slurm
 *   series").
 * - PrologTimeout/EpilogTimeout (25.05; PrologEpilogTimeout before, and
 *   still their default): past it Slurm kills the hook and drains the
 *   node.  The job prolog and epilog set a deadline a little earlier for
 *   everything they run and wait for (proc.h), so a slow helper is stopped
 *   and counted as the check's verdict, never as a hung hook.  slurmd
 *   passes the limits on through root's state directory (below).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <slurm/slurm.h>
#include "compat.h"
#include "log.h"
#include "core_base.h"
#include "slurmconf.h"
#include "statedir.h"

static const slurm_conf_t *conf(void)
{
	return (const slurm_conf_t *)dlsym(RTLD_DEFAULT, "slurm_conf");
}

int gpumem_slurm_run_in_job(void)
{
	const slurm_conf_t *c = conf();

	if (c == NULL)
		return -1;
#ifdef PROLOG_FLAG_RUN_IN_JOB
	return (c->prolog_flags & PROLOG_FLAG_RUN_IN_JOB) != 0;
#else
	return 0;       /* 22.05: no such flag */
#endif
}

/* slurm_conf's value, or -1 where this process has none (see gpumem_slurmd_limits_save). */
static int conf_limit(int epilog, const char **name)
{
	const slurm_conf_t *c = conf();
	uint16_t v;

#if GPUMEM_SLURM_AT_LEAST(25, 5)
	*name = epilog ? "EpilogTimeout" : "PrologTimeout";
	v = c ? (epilog ? c->epilog_timeout : c->prolog_timeout) : NO_VAL16;
#else
	(void)epilog;   /* one limit for both */
	*name = "PrologEpilogTimeout";
	v = c ? c->prolog_epilog_timeout : NO_VAL16;
#endif
	return v == NO_VAL16 ? -1 : v == INFINITE16 ? 0 : v;
}

/*
 * slurmd has the whole configuration; the "slurmstepd spank prolog|epilog"
 * process that runs the hooks is given only part of it: from 24.11 its
 * slurm_conf holds no PrologEpilogTimeout/PrologTimeout (NO_VAL16 whatever
 * slurm.conf says; 22.05's does).  So slurmd's init leaves them in root's
 * state directory (GPUMEM_SF_LIMITS), rewritten at each slurmd start,
 * for the hooks to read.
 */
void gpumem_slurmd_limits_save(const char *state_dir)
{
	const char *name;
	char err[512], text[64];
	int p = conf_limit(0, &name), e = conf_limit(1, &name);
	int dfd = gpumem_state_open(state_dir, 1, err, sizeof(err));

	snprintf(text, sizeof(text), "prolog %d epilog %d\n", p < 0 ? 0 : p, e < 0 ? 0 : e);
	if (dfd < 0 || gpumem_state_write(dfd, GPUMEM_SF_LIMITS, text) < 0)
		gpumem_error("gpumem: cannot record Slurm's prolog/epilog time limits in %s: %s "
			     "(the job prolog and epilog then keep no deadline of their own)",
			     state_dir, dfd < 0 ? err : "write failed");
	if (dfd >= 0)
		close(dfd);
}

/* The hook's limit in seconds, and its name; 0 when none (or unknown). */
static int hook_limit(int epilog, int dfd, const char **name)
{
	int v = conf_limit(epilog, name), p = 0, e = 0;
	char *text;

	if (v >= 0)
		return v;
	text = dfd >= 0 ? gpumem_state_read(dfd, GPUMEM_SF_LIMITS, 256) : NULL;
	if (text && sscanf(text, "prolog %d epilog %d", &p, &e) == 2)
		v = epilog ? e : p;
	free(text);
	return v > 0 ? v : 0;
}

void gpumem_hook_deadline(int epilog, long started_ms, int dfd)
{
	const char *name = "";
	int s = hook_limit(epilog, dfd, &name);
	/* What the hook needs after its last helper (its report, the record): 1 s + 10%. */
	long margin = 1000L + s * 100L;
	char what[64];

	if (s == 0)
		return;
	snprintf(what, sizeof(what), "%s=%d", name, s);
	gpumem_proc_deadline(started_ms + (s * 1000L > margin ? s * 1000L - margin : 1), what);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What gpumem reads of Slurm's configuration (slurmconf.c): PrologFlags=
 * RunInJob, which it refuses, and the job prolog's and epilog's time limit,
 * which it keeps (named in messages by gpumem_proc_deadline_what, proc.h).
 */
#ifndef GPUMEM_SLURMCONF_H
#define GPUMEM_SLURMCONF_H

/* PrologFlags has RunInJob: 1, 0, or -1 when this process has no Slurm configuration. */
int gpumem_slurm_run_in_job(void);
/* slurmd's init: Slurm's prolog/epilog time limits into STATE_DIR, for the hooks. */
void gpumem_slurmd_limits_save(const char *state_dir);
/*
 * In the job prolog (EPILOG 0) or epilog (1), started at STARTED_MS
 * (gpumem_mono_ms): a deadline for everything the hook runs and waits for
 * (gpumem_proc_deadline), 1 s + 10% before Slurm's PrologTimeout/
 * EpilogTimeout (PrologEpilogTimeout through 24.11), as this process's
 * configuration or slurmd's record in the state directory DFD (-1: none)
 * says.  None where Slurm sets no limit.
 */
void gpumem_hook_deadline(int epilog, long started_ms, int dfd);
#endif

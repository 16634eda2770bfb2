/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Root's state directory (plugstack state_dir=, default /run/gpumem): what
 * the job prolog leaves for the job's steps and its epilog (the job's
 * record, the MPS daemon's record), what gpumem-probe learnt of the
 * node's GPUs, and Slurm's time limits for the hooks as slurmd read them;
 * the files' names are statefiles.h's.  Only root writes there, and
 * nothing in it is a user's:
 * readers trust a file only when root owns it and no one else may write it.
 * Only root reads there too (the directory 0700, its files 0600): a hook
 * that runs with the user's effective ids (slurmstepd's user_init) reads
 * it with gpumem_state_as_root.
 */
#ifndef GPUMEM_STATEDIR_H
#define GPUMEM_STATEDIR_H
#include <stddef.h>
#include <sys/types.h>
#include "core_policy.h"
#include "statefiles.h"

/*
 * Open (as root: create, when CREATE) the state directory through
 * gpumem_dir_open_safe (trust.h): no link anywhere on the path, every
 * component root's, the directory itself writable by root only; one that
 * others may read or search is made 0700 (refused when it cannot be).
 * Returns an O_DIRECTORY fd, or -1 with the reason in ERR.
 */
int gpumem_state_open(const char *dir, int create, char *err, size_t elen);
/*
 * In a hook that runs with the user's effective uid and root's real one
 * (slurmstepd's user_init): effective uid 0 until gpumem_state_as_before,
 * to read root's state.  Returns the uid to go back to, -1 when nothing
 * changed (already root, or not allowed: the reads then fail, closed).
 * gpumem_state_as_before: -1 when the user's uid could not be taken back
 * (the caller must fail: nothing more may run as root for the user).
 */
int gpumem_state_as_root(void);
int gpumem_state_as_before(int saved);
/*
 * Read NAME under the state directory fd DFD (at most MAX bytes), only if
 * it is a regular file that root owns and only root may write.  Returns a
 * NUL-terminated malloc'd copy, or NULL.
 */
char *gpumem_state_read(int dfd, const char *name, size_t max);
/* Write NAME atomically (temporary file and rename), mode 0600.  0 or -1. */
int gpumem_state_write(int dfd, const char *name, const char *text);

/*
 * The probe cache (GPUMEM_SF_PROBE_CACHE): "gpu PHYS_INDEX UUID PCI L2 PMAX
 * NAME" lines, per UUID: NODE->gpus for the N GPUs of LIST from the cache, numbered as LIST;
 * 1 when the cache knows every one of them, else 0 (NODE emptied).
 */
int gpumem_probe_cache_lookup(int dfd, char list[][64], int n, struct gpumem_node *node);
/*
 * Merge fresh gpumem-probe output, run with CUDA_VISIBLE_DEVICES=LIST (N
 * entries), into the cache: its ordinal k becomes the physical index LIST[k].
 */
int gpumem_probe_cache_merge(int dfd, const char *probe_out, char list[][64], int n);
/*
 * The one way gpumem-probe runs (the prolog as root for the cache, a step
 * as the user): LIBEXECDIR/gpumem-probe as UID:GID, bounded by TIMEOUT s,
 * with a fixed environment: PATH, CUDA_MPS_PIPE_DIRECTORY=NOMPS (no MPS
 * daemon) and, where VISIBLE is given, CUDA_VISIBLE_DEVICES=VISIBLE.  P
 * holds the run (its output, status, timed_out; gpumem_proc_free it).
 * 0 when the probe ran and exited 0, else -1.
 */
struct gpumem_proc;
int gpumem_probe_run(struct gpumem_proc *p, const char *libexecdir, const char *nomps,
		     const char *visible, uid_t uid, gid_t gid, int timeout);

/*
 * The job's record (GPUMEM_SF_REC): what the job prolog decided, written once by
 * it (root) and read by the job's steps and its epilog, so that all three
 * act on one agreed policy, decided once: the effective policy and the site
 * file as the prolog read it, which steps and the epilog use instead of
 * the file (a site edit reaches the next job, never a running one).  A step
 * of a job with no record fails: the prolog did not run, or could not
 * write it (fail closed).
 */
struct gpumem_jobrec {
	char *name;             /* what logs and reports call the policy (raw) */
	char *policy;           /* the validated user policy (JSON), NULL: site defaults */
	char *effective;        /* the effective policy (JSON, set keys), NULL: none applies */
	char *site;             /* the site file's text as the prolog read it, or NULL */
	char *site_path;        /* where it was read from, for messages */
	char *rejected;         /* why the user's policy was refused, or NULL */
	char *fail;             /* why every step of the job fails (the before-check), or NULL */
	char *mps;              /* NULL: no per-job MPS daemon asked; "start": being
				 * started (mps.c's record says how it went); else why not */
	char *mps_gpus;         /* the GPUs the daemon was started with; NULL: all */
};
/*
 * Written twice: job<JOB>.<NODE>.rec for the epilog of NODE (the node's
 * name, from Slurm's prolog environment) and job<JOB>.<HOST>.rec for the
 * job's steps (statefiles.h), one file where the two are the same.  So where several slurmd share one state directory (a
 * test cluster) each epilog keeps its own until it ends, and nodes that are
 * hosts of their own (tests/slurm/hosts.sh) each keep their own policy.
 */
int gpumem_jobrec_write(int dfd, unsigned job, const char *node, const struct gpumem_jobrec *r);
/*
 * The steps' (NODE NULL) or NODE's epilog's: 0, or -1: no record (or one
 * root did not write, or not whole: WHY says).
 */
int gpumem_jobrec_read(int dfd, unsigned job, const char *node, struct gpumem_jobrec *r,
		       char *why, size_t wlen);
void gpumem_jobrec_free(struct gpumem_jobrec *r);
/* Remove both. */
void gpumem_jobrec_forget(int dfd, unsigned job, const char *node);

#endif

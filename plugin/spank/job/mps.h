/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The per-job MPS daemon (mps.c): started by a child of the job prolog,
 * stopped by the job epilog, both as root; the daemon itself runs as the
 * job's user, out of the user's reach (see mps.c).
 */
#ifndef GPUMEM_MPS_H
#define GPUMEM_MPS_H
#include <stddef.h>
#include <sys/types.h>

/* The real gid a daemon runs with, so that no process of the user can trace it. */
#define GPUMEM_MPS_GID 65534

struct gpumem_mps {
	const char *control;    /* nvidia-cuda-mps-control */
	const char *base;       /* plugstack mps_dir= (root's) */
	int sfd;                /* root's state directory, for the record */
	unsigned job;
	uid_t uid;
	gid_t gid;
	const char *gpus;       /* the daemon's CUDA_VISIBLE_DEVICES; NULL: every GPU */
	int l2_pct;             /* its persisting-L2 limit, < 0: none */
	int timeout;            /* seconds */
};

/* The control program: plugstack mps_control=, else the usual places. */
const char *gpumem_mps_find(const char *configured);
/*
 * As root: BASE/nomps (statefiles.h), an empty directory only root may write, the
 * CUDA_MPS_PIPE_DIRECTORY of every helper that must not use an MPS daemon
 * (without one CUDA tries /tmp/nvidia-mps, where any user may run one);
 * in mps_dir, which helpers of the user's may search, as state_dir is
 * root's alone.  Its path in PATH; 0, or -1.
 */
int gpumem_mps_nomps(const char *base, char *path, size_t plen);
/*
 * As root, in the job prolog itself (before it returns): make the job's
 * directory and mount its tmpfs.  Slurm's job_container/tmpfs and
 * namespace/tmpfs make the job's mount namespace (a private copy of the
 * node's mounts) when the job's extern step starts, after the prolog has
 * returned: a mount made later, by the prolog's child, would not be in it,
 * and the tasks would see the empty directory below.  0, or -1 with WHY
 * (also recorded).
 */
int gpumem_mps_prepare(const struct gpumem_mps *m, char *why, size_t wlen);
/*
 * As root (a child of the job prolog, after gpumem_mps_prepare): start
 * the daemon as the user, wait until it listens, and write the record
 * (state_dir/mps.<JOB>.<HOST>) the steps and the epilog wait for, with where the
 * daemon listens and its /dev/shm (gpumem_mps_place).  0, or -1 with WHY
 * (also recorded).
 */
int gpumem_mps_start(const struct gpumem_mps *m, char *why, size_t wlen);
/* Where a daemon lives: its pipe directory and /dev/shm, as device and inode. */
struct gpumem_mps_place {
	unsigned long long pipe_dev, pipe_ino, shm_dev, shm_ino;
};
/* As the calling process sees PIPE_DIR and /dev/shm (a task, in the job's namespace). */
void gpumem_mps_place_here(const char *pipe_dir, struct gpumem_mps_place *w);
/* Record that the prolog could not even try: the steps fail with WHY. */
int gpumem_mps_record_failed(int sfd, unsigned job, const char *why);
/*
 * Wait at most TIMEOUT_MS for the record: 0 up (where the daemon lives into
 * WHERE, unless NULL; pipe_ino 0: a record without it), -1 it failed (WHY),
 * -2 no record in time.
 */
int gpumem_mps_wait(int sfd, unsigned job, long timeout_ms, struct gpumem_mps_place *where,
		    char *why, size_t wlen);
/*
 * As root (the job epilog): stop the daemon the record names (quit, then
 * kill what is left of it), remove the job's directory and the record.
 * Nothing of it is found through the user's files.
 */
void gpumem_mps_stop(const struct gpumem_mps *m);
#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Which GPUs a job or a step has (Slurm's lists), and what the node says about them. */
#ifndef GPUMEM_GPUS_H
#define GPUMEM_GPUS_H
#include <stddef.h>
#include "policy.h"

#define GPUMEM_GPU_LIST_MAX 1024

/*
 * The step's GPU list as Slurm gives it: SLURM_STEP_GPUS, else
 * SLURM_JOB_GPUS, else CUDA_VISIBLE_DEVICES (comma-separated indices,
 * UUIDs or PCI bus ids).  'get' reads one variable of the job's
 * environment.  Returns the number of entries (0: the step has no GPU),
 * -1 when no variable is set (GPUs not managed by Slurm here).
 */
int gpumem_gpus_from_env(int (*get)(void *ctx, const char *name, char *buf, int len),
			 void *ctx, char list[][64], int max, const char **source);

/*
 * A client's CUDA_VISIBLE_DEVICES for an MPS daemon started on DAEMON (a
 * GPU list, as the job prolog gave it the daemon): NVIDIA's MPS numbers
 * the daemon's GPUs from 0 in that order and reads a client's list against
 * them, so a client given the node's "1" finds no GPU when the daemon has
 * GPU 1 alone.  Each of the N entries of STEP (named as in DAEMON) becomes
 * its place there, into OUT ("1,0").  0, or -1 when one is not the daemon's.
 */
int gpumem_gpus_mps_client(const char *daemon, char step[][64], int n, char *out, size_t len);

/* What one entry of a GPU list is. */
enum {
	GPUMEM_GPU_BAD = -1,    /* none of the below: names no GPU */
	GPUMEM_GPU_INDEX,       /* "1" */
	GPUMEM_GPU_UUID,        /* "GPU-8a2f..." (a prefix is enough for CUDA) */
	GPUMEM_GPU_MIG,         /* "MIG-<uuid>", "MIG-GPU-<uuid>/GI/CI" */
	GPUMEM_GPU_PCI,         /* "0000:3b:00.0", "3b:00.0" */
};

/*
 * The kind of 'id'; for "MIG-GPU-<uuid>/GI/CI" 'parent' (if not NULL)
 * gets "GPU-<uuid>", the GPU the instance is on, else "".
 */
int gpumem_gpu_kind(const char *id, char *parent, size_t plen);

/*
 * The list helpers get as CUDA_VISIBLE_DEVICES ('task'): they run in the
 * step's devices cgroup, where the node's numbering ('node', n entries,
 * read from 'source') no longer holds.  The step's CUDA_VISIBLE_DEVICES
 * when Slurm set one of as many valid entries (returns 1), else a copy of
 * 'node' (returns 0); -1 out of memory.
 */
int gpumem_gpus_for_tasks(int (*get)(void *ctx, const char *name, char *buf, int len),
			  void *ctx, const char *source, char node[][64], int n,
			  char task[][64], int max);

/*
 * Fill node->gpus from gpumem-probe output, keeping the GPUs named in
 * 'list' (all when n < 0), numbered as the tasks will see them.
 */
int gpumem_gpus_match(const char *probe_out, char list[][64], int n,
		      struct gpumem_node *node);
#endif

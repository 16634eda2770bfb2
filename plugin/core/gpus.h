/* Which GPUs a step has, and what the node says about them. */
#ifndef GPUMEM_GPUS_H
#define GPUMEM_GPUS_H
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
 * Fill node->gpus from gpumem-probe output, keeping the GPUs named in
 * 'list' (all when n < 0), numbered as the tasks will see them.
 */
int gpumem_gpus_match(const char *probe_out, char list[][64], int n,
		      struct gpumem_node *node);
#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What slurmstepd.c, slurmstepd_gpus.c and slurmstepd_exit.c share. */
#ifndef GPUMEM_SLURMSTEPD_H
#define GPUMEM_SLURMSTEPD_H
#include "plugin.h"

/* "123.0", "123.batch": Slurm's special step ids read as their names. */
const char *gpumem_step_name(uint32_t job, uint32_t step);
/*
 * The step's GPUs (slurmstepd_gpus.c): what the node knows of them into
 * NODE (the probe cache, else gpumem-probe as the user, when the policy
 * sets an L2 limit) and the MIG notes (st->mig, st->mig_notes);
 * SRC names the variable the list came from.
 */
void gpumem_step_gpus(spank_t sp, struct gpumem_plugin *st, struct gpumem_node *node,
		      uid_t uid, gid_t gid, uint32_t job, uint32_t step, const char **src);
/*
 * The tasks' CUDA_VISIBLE_DEVICES as clients of the job's MPS daemon,
 * started on DAEMON (the job's GPUs; NULL: all): the step's GPUs in the
 * daemon's numbering into OUT (gpumem_gpus_mps_client), "" when Slurm's
 * stands.  0, or -1 when a GPU of the step is not the daemon's.
 */
int gpumem_step_mps_devices(spank_t sp, const char *daemon, char *out, size_t len);
/* Under MIG no L2 lines can persist: the limit is not set (0 would be moot).  0. */
int gpumem_env_drop_l2(struct gpumem_env *env);
#endif

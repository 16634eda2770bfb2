/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Every environment variable gpumem sets or reads, named once (env.c owns
 * them: tests/cli/envnames.sh fails on a CUDA_ name spelled anywhere else
 * in C), and the one builder of a helper's environment: every program the
 * plugin runs gets a fixed environment, never the job's, made here.
 * Header only for the names, so that programs that link no core library
 * (gpumem-probe, gpumem-l2reset, libgpumem-um) name them from here too.
 */
#ifndef GPUMEM_ENV_H
#define GPUMEM_ENV_H

/* What a task receives from a policy (gpumem_policy_env): the only ones set in a task. */
#define GPUMEM_ENV_L2_PCT     "CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT"
#define GPUMEM_ENV_MPS_PCT    "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"
#define GPUMEM_ENV_MPS_PINNED "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"
#define GPUMEM_ENV_MPS_PIPE   "CUDA_MPS_PIPE_DIRECTORY"
#define GPUMEM_ENV_MPS_LOG    "CUDA_MPS_LOG_DIRECTORY"
#define GPUMEM_ENV_UM         "GPUMEM_UM_ADVICE"
#define GPUMEM_ENV_PRELOAD    "LD_PRELOAD"

/* CUDA's, set for helpers (and the MPS daemon's GPUs for the tasks) or read by them. */
#define GPUMEM_ENV_VISIBLE    "CUDA_VISIBLE_DEVICES"
#define GPUMEM_ENV_ORDER      "CUDA_DEVICE_ORDER"
#define GPUMEM_ENV_MAX_CONN   "CUDA_DEVICE_MAX_CONNECTIONS"
/* Slurm's lists of a step's or job's GPUs (gpus.c), and the node's name for the check. */
#define GPUMEM_ENV_STEP_GPUS  "SLURM_STEP_GPUS"
#define GPUMEM_ENV_JOB_GPUS   "SLURM_JOB_GPUS"
#define GPUMEM_ENV_NODENAME   "SLURMD_NODENAME"
/* The policy's name, for the tasks. */
#define GPUMEM_ENV_POLICY     "GPUMEM_POLICY"
/*
 * Under which srun/sbatch/salloc forward the checked policy and its name
 * to the job (spank_job_control_setenv, which prefixes SPANK_).
 */
#define GPUMEM_FWD_DATA       "GPUMEM_POLICY_DATA"
#define GPUMEM_FWD_NAME       "GPUMEM_POLICY_NAME"

/* A helper's PATH: the system's, never the job's. */
#define GPUMEM_ENV_PATH       "PATH"
#define GPUMEM_HELPER_PATH    "/usr/bin:/bin"

/* A helper's whole environment: PATH (GPUMEM_HELPER_PATH), then what is set. */
#define GPUMEM_HENV_MAX 8
struct gpumem_henv {
	int n;
	char *envp[GPUMEM_HENV_MAX + 1];
	char var[GPUMEM_HENV_MAX][4400];
};

/* PATH alone. */
void gpumem_henv_init(struct gpumem_henv *e);
/* NAME=VALUE (printf's FMT) added; 0, or -1 when full or cut (then not added). */
int gpumem_henv_set(struct gpumem_henv *e, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The NULL-ended array to exec with (gpumem_proc's envp), valid while E is. */
char *const *gpumem_henv_envp(const struct gpumem_henv *e);
/* The value of NAME as set in E, or NULL. */
const char *gpumem_henv_get(const struct gpumem_henv *e, const char *name);
#endif

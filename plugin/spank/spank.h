/* State shared by the plugin's contexts (one copy per process). */
#ifndef GPUMEM_SPANK_H
#define GPUMEM_SPANK_H
#include "compat.h"
#include "args.h"
#include "policy.h"

#define GPUMEM_OPT_POLICY "gpumem-policy"
/* Names under which the local side forwards the validated user policy. */
#define GPUMEM_FWD_DATA "GPUMEM_POLICY_DATA"
#define GPUMEM_FWD_NAME "GPUMEM_POLICY_NAME"

struct gpumem_jobinfo;
struct gpumem_checkrun;

struct gpumem_state {
	struct gpumem_args args;
	struct gpumem_site site;
	int have_site;
	char *opt_policy;       /* --gpumem-policy, as typed */
	/* remote side */
	struct gpumem_policy eff;
	int have_eff;
	char *deferred_error;   /* reported from task_init: user_init cannot fail srun */
	char *user_notes;       /* node-side warnings, shown by the first task */
	int ngpus;              /* GPUs seen by the probe, -1 unknown */
	char *mps_dir;          /* per-job MPS daemon directory, or NULL */
	char *step_gpus;        /* the step's GPUs as the node names them (reports) */
	char *task_gpus;        /* ... as the tasks and helpers see them (their CUDA_VISIBLE_DEVICES) */
	char *l2_gpus;          /* step_gpus less the MIG instances (the epilog's L2 reset) */
	int mig;                /* one of the step's GPUs is a MIG instance */
	char *mig_notes;        /* per GPU: what was done and skipped under MIG */
	int has_dev;            /* this node has an NVIDIA device */
	int checks;             /* this step runs the policy's checks */
	uint32_t tasks_exited;  /* local tasks whose exit was collected */
	int torn_down;
	struct gpumem_jobinfo *ji;
	struct gpumem_checkrun *before, *after;
};

extern struct gpumem_state gpumem_state;
extern struct spank_option gpumem_policy_option;

int gpumem_local_post_opt(spank_t sp);
int gpumem_remote_user_init(spank_t sp);
int gpumem_remote_task_init(spank_t sp);
int gpumem_remote_task_exit(spank_t sp);
int gpumem_remote_exit(spank_t sp);
#endif

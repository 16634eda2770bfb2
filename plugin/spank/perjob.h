/* Per-job GPU work: the job prolog and epilog (prolog.c, epilog.c, interval.c). */
#ifndef GPUMEM_PERJOB_H
#define GPUMEM_PERJOB_H
#include "gpus.h"
#include "jobcheck.h"
#include "spank.h"

/* What both hooks know of the job; gpumem_state holds args, site, eff. */
struct gpumem_jobctx {
	uint32_t job;
	uid_t uid;
	gid_t gid;
	char policy[256];               /* for logs and reports: printable */
	char list[GPUMEM_MAX_GPUS][64]; /* the job's GPUs on this node (physical) */
	int ngpus;                      /* -1: no GPU list from Slurm */
	int dfd;                        /* state_dir, or -1 */
	struct gpumem_jobinfo ji;
};

/* State files of job N in state_dir. */
#define GPUMEM_STATE_BEFORE "job%u.before"     /* a before-check the steps must fail on */
#define GPUMEM_STATE_L2 "job%u.l2"             /* a step set a persisting-L2 limit */

/*
 * Parse the plugstack arguments, load the site file, take and re-validate
 * the job's policy, find the job's GPUs.  -1 after logging why.
 */
int gpumem_jobctx_init(spank_t sp, int ac, char **av, const char *step,
		       struct gpumem_jobctx *c);
void gpumem_jobctx_free(struct gpumem_jobctx *c);
/*
 * node->gpus for the job's GPUs from the probe cache; on a miss, when
 * MAY_PROBE, run gpumem-probe once and cache it.  1 when all were found.
 */
int gpumem_jobctx_gpus(struct gpumem_jobctx *c, struct gpumem_node *node, int may_probe);
/*
 * check.min_interval: 1 (and when, in WHEN) if every GPU of the job passed
 * a check on this node less than the site's min_interval ago, by the
 * node's own reports; 0 otherwise.
 */
int gpumem_interval_passed(const struct gpumem_jobctx *c, const struct gpumem_node *node,
			   char *when, size_t len);
/* Run (or skip, by min_interval) one check of the job, report it. */
void gpumem_perjob_check(struct gpumem_jobctx *c, const struct gpumem_node *node,
			 const char *phase, int with_share, struct gpumem_checkrun *r);

int gpumem_job_prolog(spank_t sp, int ac, char **av);
int gpumem_job_epilog(spank_t sp, int ac, char **av);
#endif

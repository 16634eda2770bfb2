/* A per-job MPS control daemon, run as the job's user. */
#ifndef GPUMEM_MPS_H
#define GPUMEM_MPS_H
#include <sys/types.h>

/* The control program: plugstack mps_control=, else the usual places. */
const char *gpumem_mps_find(const char *configured);
/*
 * Start "nvidia-cuda-mps-control -d" as uid/gid with private pipe and log
 * directories under a fresh mkdtemp directory (returned in *dirp).  l2_pct
 * (< 0: none) is handed to the server through its environment, the only
 * way MPS takes a persisting-L2 limit.
 */
int gpumem_mps_start(const char *control, uid_t uid, gid_t gid, const char *gpus,
		     int l2_pct, unsigned job, unsigned step, int timeout, char **dirp,
		     char **errp);
/* Start the daemon as uid/gid in DIR (pipe/ and log/ there already). */
int gpumem_mps_start_in(const char *control, uid_t uid, gid_t gid, const char *gpus,
			int l2_pct, const char *dir, int timeout, char **errp);
/* Quit the daemon of DIR and make sure it is gone (killed if it lingers). */
int gpumem_mps_quit(const char *control, uid_t uid, gid_t gid, const char *dir, int timeout);
/* Quit the daemon, make sure it is gone, remove the directory. */
int gpumem_mps_stop(const char *control, uid_t uid, gid_t gid, const char *dir, int timeout);
#endif

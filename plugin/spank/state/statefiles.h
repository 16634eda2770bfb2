/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The names of every file gpumem's programs hand each other in root's
 * state_dir (plugstack state_dir=, default /run/gpumem) and mps_dir
 * (mps_dir=, default /run/gpumem-mps), in one place (statefiles.c); no
 * other file builds them.  doc/DESIGN.md ("Files") says who writes and
 * reads each, in which format.
 *
 * One rule for the suffix.  A state_dir may be shared by several nodes
 * (several slurmd on one host, a test cluster; nodes that are hosts of
 * their own, tests/slurm/hosts.sh), so a file of one job on one node says
 * whose it is:
 *   <NODE>  the node's Slurm name (SLURMD_NODENAME), on what only the job
 *           prolog and epilog of that node read and write: they are told
 *           the node's name (sample, prof, gpus/ended, gpus/suspect, the
 *           epilog's copy of the record);
 *   <HOST>  this host's name, on what a step reads or writes: a step's
 *           slurmstepd is told no node name it could trust, only the host
 *           it runs on (the steps' copy of the record, mps, l2); the
 *           prolog and epilog, on the same host, name them the same way;
 *           and the warm check server's socket and record (check.<HOST>.sock,
 *           check.<HOST>.server);
 *   none    on what belongs to the host as a whole (slurmd.limits,
 *           probe.cache: its GPUs by UUID).
 * Both are made safe (gpumem_safe_name: letters, digits, '.', '-', '_';
 * anything else becomes '_').  The epilog, on the same host, removes
 * every file of its job by these names.  mps_dir/job<JOB> carries no
 * suffix: it holds the daemon's mount and sockets, which are the host's,
 * so mps_dir is each host's own (/run); nodes that share one (several
 * slurmd on one host) cannot each run a per-job daemon for the same job.
 * doc/DESIGN.md ("Files") says the same.
 */
#ifndef GPUMEM_STATEFILES_H
#define GPUMEM_STATEFILES_H
#include <stddef.h>

/* ------------------------------------------------------------ state_dir */
/* Slurm's prolog/epilog time limits as slurmd read them (slurmconf.c). */
#define GPUMEM_SF_LIMITS "slurmd.limits"
/* What gpumem-probe said of the host's GPUs, one line per UUID (statedir.c). */
#define GPUMEM_SF_PROBE_CACHE "probe.cache"
/* Root's memory of each GPU between jobs (gpustate.c): a directory. */
#define GPUMEM_SF_GPUS "gpus"

/*
 * The warm check server's socket (root's, 0600; the server holds its
 * listening end), the lock its starter holds (checkserve.c) and root's
 * record of it, "PID START MISSES BUSY_UNTIL" (checkwatch.c):
 * check.<HOST>.sock, check.<HOST>.lock, check.<HOST>.server.
 */
#define GPUMEM_SF_CHECK_SOCK "sock"
#define GPUMEM_SF_CHECK_LOCK "lock"
#define GPUMEM_SF_CHECK_SERVER "server"
int gpumem_sf_check(char *name, size_t len, const char *kind);

/* A file of one job on one node. */
enum gpumem_sf_kind {
	GPUMEM_SF_REC,          /* job<JOB>.<NODE>.rec, job<JOB>.<HOST>.rec: the job's record */
	GPUMEM_SF_L2,           /* job<JOB>.<HOST>.l2: a step set a persisting-L2 limit */
	GPUMEM_SF_MPS,          /* mps.<JOB>.<HOST>: the per-job MPS daemon's record */
	GPUMEM_SF_SAMPLE,       /* sample.<JOB>.<NODE>: the sampler's record */
	GPUMEM_SF_PROF,         /* prof.<JOB>.<NODE>: the sampler's document (its stdout) */
};
/*
 * The name of job JOB's file KIND in state_dir into NAME (LEN bytes, 128
 * are enough).  NODE: the node's name where KIND carries <NODE> (for
 * GPUMEM_SF_REC, the epilog's copy; NULL there: the steps' copy, by host);
 * ignored where KIND carries <HOST>.  0, or -1 when it does not fit.
 */
int gpumem_sf_job(char *name, size_t len, enum gpumem_sf_kind kind, unsigned job,
		  const char *node);
/* The kinds of file per GPU in state_dir/gpus. */
#define GPUMEM_SF_SUSPECT "suspect"     /* a check of it gave no verdict */
/* "JOB PHASE SEC\nEVIDENCE\njudged min_fraction=F references=HEX\n": the last measured pass */
#define GPUMEM_SF_PASS "pass"
#define GPUMEM_SF_HBMLOW "hbmlow"       /* "JOB P95 MEAN SM": a profile showed low HBM */
/* "SEC READ WRITE COPY TRIAD D2D H2D D2H" per pass: a GPU's history, by UUID (history.c) */
#define GPUMEM_SF_HIST "hist"
/*
 * GPU GPU's file KIND (GPUMEM_SF_SUSPECT, _PASS, _HBMLOW) of NODE in
 * state_dir/gpus: KIND.<NODE>.<GPU> (GPU NULL: "all", plugstack
 * gpus=all), made safe.
 */
int gpumem_sf_gpu(char *name, size_t len, const char *kind, const char *node, const char *gpu);
/*
 * The temporary file NAME is written to before its rename, in state_dir
 * and every other directory root writes atomically (report.dir,
 * textfile_dir): .NAME.PID.tmp.
 */
int gpumem_sf_tmp(char *tmp, size_t len, const char *name);
/* This host's name, made safe (what <HOST> is). */
void gpumem_sf_host(char *host, size_t len);

/* ------------------------------------------------------------ mps_dir */
/* Root's empty directory, every helper's CUDA_MPS_PIPE_DIRECTORY (mps.c). */
#define GPUMEM_MPS_NOMPS "nomps"
/* The helpers' pipe directory where mps_dir is unusable: one no one can make. */
#define GPUMEM_MPS_NOMPS_NONE "/nonexistent/gpumem-nomps"
/* In the job's directory: the daemon's and the tasks' pipe and log directories. */
#define GPUMEM_MPS_PIPE "pipe"
#define GPUMEM_MPS_LOG "log"
/* The daemon's own stdout and stderr; its control socket (NVIDIA's name). */
#define GPUMEM_MPS_CONTROL_OUT GPUMEM_MPS_LOG "/control.out"
#define GPUMEM_MPS_CONTROL_SOCKET GPUMEM_MPS_PIPE "/control"
/* job<JOB>: the job's directory under mps_dir (its name alone). */
int gpumem_mps_job_name(char *name, size_t len, unsigned job);
/*
 * BASE/job<JOB>, or with SUB ("pipe", "log", "log/control.out", ...)
 * BASE/job<JOB>/SUB.  0, or -1 when it does not fit.
 */
int gpumem_mps_path(char *path, size_t len, const char *base, unsigned job, const char *sub);
/* BASE/nomps. */
int gpumem_mps_nomps_path(char *path, size_t len, const char *base);
#endif

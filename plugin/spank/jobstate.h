/*
 * Root's per-node state (plugstack state_dir=, default /run/gpumem): what
 * the job prolog leaves for the job's steps and its epilog, and what
 * gpumem-probe learnt of the node's GPUs.  Only root writes there; readers
 * trust a file only when root owns it and no one else may write it.
 */
#ifndef GPUMEM_JOBSTATE_H
#define GPUMEM_JOBSTATE_H
#include <stddef.h>
#include <sys/types.h>

/*
 * Open (as root: create, when CREATE) the state directory through
 * gpumem_dir_open_safe (trust.h): no link anywhere on the path, every
 * component root's, the directory itself writable by root only.  Returns
 * an O_DIRECTORY fd, or -1 with the reason in ERR.
 */
int gpumem_state_open(const char *dir, int create, char *err, size_t elen);
/*
 * Read NAME under the state directory fd DFD (at most MAX bytes), only if
 * it is a regular file that root owns and only root may write.  Returns a
 * NUL-terminated malloc'd copy, or NULL.
 */
char *gpumem_state_read(int dfd, const char *name, size_t max);
/* Write NAME atomically (temporary file and rename), mode 0644.  0 or -1. */
int gpumem_state_write(int dfd, const char *name, const char *text);

/* The probe cache: "gpu PHYS_INDEX UUID PCI L2 PMAX NAME" lines, per UUID. */
#define GPUMEM_PROBE_CACHE "probe.cache"
/*
 * Merge fresh gpumem-probe output, run with CUDA_VISIBLE_DEVICES=LIST (N
 * entries), into the cache: its ordinal k becomes the physical index LIST[k].
 */
int gpumem_probe_cache_merge(int dfd, const char *probe_out, char list[][64], int n);

/*
 * The per-job MPS directory DIR/mps.JOB (with pipe/ and log/), made by root
 * and handed to uid/gid before the daemon starts as that user.  Its path is
 * written to PATH.  0, or -1 with ERR.
 */
int gpumem_state_mps_dir(int dfd, const char *dir, unsigned job, uid_t uid, gid_t gid,
			 char *path, size_t plen, char *err, size_t elen);
/*
 * The same directory as a step sees it: PATH when it exists, is not a link
 * and belongs to uid; 0 found, -1 not there.
 */
int gpumem_state_mps_find(const char *dir, unsigned job, uid_t uid, char *path, size_t plen);
/*
 * The record of the job's MPS daemon start (prolog.c starts it in a child
 * of its own): mps.JOB.ready, or mps.JOB.failed holding WHY.  Written by
 * that root child only; read by the steps and the epilog, which wait for
 * it: at most timeout_ms, 0 ready, -1 failed (its text in WHY), -2 no
 * record in time.  gpumem_state_mps_forget removes it.  0 or -1 (record).
 */
int gpumem_state_mps_record(int dfd, unsigned job, const char *why);
int gpumem_state_mps_wait(int dfd, unsigned job, long timeout_ms, char *why, size_t wlen);
void gpumem_state_mps_forget(int dfd, unsigned job);
#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Plugstack arguments: what the admin wrote after gpumem.so. */
#ifndef GPUMEM_ARGS_H
#define GPUMEM_ARGS_H

#define GPUMEM_DEFAULT_STATE_DIR "/run/gpumem"
#define GPUMEM_DEFAULT_MPS_DIR "/run/gpumem-mps"
/*
 * The packages' own system accounts (gpumem.sysusers): check_user= and
 * sample_user= by default, resolved when the plugin loads.  Never nobody,
 * never the job's user, never root; one each, so that neither helper can
 * signal or trace the other.  A missing account is never replaced by
 * another: the check is not run, the sampler skipped, each saying why.
 */
#define GPUMEM_CHECK_ACCOUNT "gpumem-check"
#define GPUMEM_SAMPLE_ACCOUNT "gpumem-sample"
#include <sys/types.h>

struct gpumem_args {
	char *site;             /* site=PATH: the site file */
	char *libexecdir;       /* libexecdir=DIR: gpumem-probe, -l2reset live here */
	char *check;            /* check=PATH: gpumem-check */
	char *um_library;       /* um_library=PATH: libgpumem-um.so */
	char *mps_control;      /* mps_control=PATH: nvidia-cuda-mps-control */
	char *nvidia_dev;       /* nvidia_dev=PATH: its presence means "GPUs here" */
	char *state_dir;        /* state_dir=DIR: root's per-node state (GPUMEM_DEFAULT_STATE_DIR) */
	char *mps_dir;          /* mps_dir=DIR: the per-job MPS daemons' directories */
	uid_t check_uid;        /* check_user=NAME|UID[:GID]: who runs the site's checks */
	gid_t check_gid;
	int check_missing;      /* no check_user= and no gpumem-check account: checks not run */
	uid_t sample_uid;       /* sample_user=NAME|UID[:GID]: who runs gpumem-sample */
	gid_t sample_gid;
	int sample_missing;     /* no sample_user= and no gpumem-sample account: not started */
	int all_gpus;           /* gpus=all: Slurm does not allocate the GPUs here (no GRES) */
	int timeout;            /* timeout=SECONDS for helpers */
	int verbose;            /* verbose: say what was applied in every step */
};

/* 0, or -1 after logging which argument is wrong. */
int gpumem_args_parse(struct gpumem_args *a, int ac, char **av);
/* Why check_user cannot run anything (its account is missing), or NULL. */
const char *gpumem_args_check_missing(const struct gpumem_args *a);
/* The same for the sampler's account, or NULL. */
const char *gpumem_args_sample_missing(const struct gpumem_args *a);
void gpumem_args_free(struct gpumem_args *a);
#endif

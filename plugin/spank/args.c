/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Plugstack arguments.  Only the admin writes plugstack.conf, so these may
 * name paths; a user's policy never can.  An unknown argument fails the
 * plugin's init: a typo in the site setup should be loud, not ignored.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compat.h"
#include "args.h"

#define DEFAULT_LIBEXEC GPUMEM_LIBEXECDIR
#define DEFAULT_CHECK   GPUMEM_BINDIR "/gpumem-check"
#define DEFAULT_UM      GPUMEM_LIBDIR "/libgpumem-um.so"

static int set_path(char **dst, const char *arg, const char *val)
{
	if (val[0] != '/') {
		slurm_error("gpumem: plugstack argument '%s': the path must be absolute", arg);
		return -1;
	}
	free(*dst);
	*dst = strdup(val);
	return *dst ? 0 : -1;
}

/* A plain decimal id below 2^31 into *ID; 0, or -1. */
static int id_number(const char *s, size_t len, unsigned long *id)
{
	char buf[16], *end;

	if (len == 0 || len >= sizeof(buf) || s[0] < '0' || s[0] > '9')
		return -1;
	snprintf(buf, sizeof(buf), "%.*s", (int)len, s);
	errno = 0;
	*id = strtoul(buf, &end, 10);
	return *end || errno || *id >= 0x7fffffffUL ? -1 : 0;
}

/*
 * check_user= or sample_user=: NAME (its uid and primary gid) or UID[:GID]
 * (GID: the uid's primary group where it has an entry, else the same
 * number).  Root is refused: the check and the sampler are site helpers
 * out of everyone's reach but root's, not root's own (no CUDA context as
 * root).  The job's own uid is refused when each job runs (jobcheck.c).
 */
static int set_user(const char *key, const char *arg, const char *val, uid_t *uidp, gid_t *gidp)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	const char *colon = strchr(val, ':');
	unsigned long uid, gid;

	if (id_number(val, colon ? (size_t)(colon - val) : strlen(val), &uid) == 0) {
		if (colon && id_number(colon + 1, strlen(colon + 1), &gid) < 0)
			goto bad;
		if (!colon)
			gid = getpwuid_r((uid_t)uid, &pw, buf, sizeof(buf), &res) == 0 && res ?
				(unsigned long)pw.pw_gid : uid;
	} else if (!colon && val[0] && getpwnam_r(val, &pw, buf, sizeof(buf), &res) == 0 && res) {
		uid = pw.pw_uid;
		gid = pw.pw_gid;
	} else {
		goto bad;
	}
	if (uid == 0 || gid == 0) {
		slurm_error("gpumem: plugstack argument '%s': the site's helpers must not run as "
			    "root (uid and gid 0 are refused)", arg);
		return -1;
	}
	*uidp = (uid_t)uid;
	*gidp = (gid_t)gid;
	return 0;
bad:
	slurm_error("gpumem: plugstack argument '%s': %s is a user name of this node "
		    "or UID[:GID] (numbers)", arg, key);
	return -1;
}

/* The package's account NAME, where no argument named one: 0, or 1 when it is missing. */
static int default_user(const char *name, uid_t *uidp, gid_t *gidp)
{
	struct passwd pw, *res = NULL;
	char buf[4096];

	/* Never another account in its place: (uid_t)-1 cannot be become (proc.c). */
	*uidp = (uid_t)-1;
	*gidp = (gid_t)-1;
	if (getpwnam_r(name, &pw, buf, sizeof(buf), &res) != 0 || res == NULL ||
	    pw.pw_uid == 0 || pw.pw_gid == 0)
		return 1;
	*uidp = pw.pw_uid;
	*gidp = pw.pw_gid;
	return 0;
}

const char *gpumem_args_check_missing(const struct gpumem_args *a)
{
	return a->check_missing ? "the account " GPUMEM_CHECK_ACCOUNT " (made by gpumem's "
		"package) is missing on this node and plugstack check_user= names none" : NULL;
}

const char *gpumem_args_sample_missing(const struct gpumem_args *a)
{
	return a->sample_missing ? "the account " GPUMEM_SAMPLE_ACCOUNT " (made by gpumem's "
		"package) is missing on this node and plugstack sample_user= names none" : NULL;
}

int gpumem_args_parse(struct gpumem_args *a, int ac, char **av)
{
	int check_given = 0, sample_given = 0;

	memset(a, 0, sizeof(*a));
	a->timeout = 60;
	for (int i = 0; i < ac; i++) {
		const char *arg = av[i], *eq = strchr(arg, '=');
		const char *val = eq ? eq + 1 : "";
		size_t klen = eq ? (size_t)(eq - arg) : strlen(arg);
		int rc = 0;

#define KEY(k) (klen == strlen(k) && strncmp(arg, k, klen) == 0)
		if (KEY("site") && eq)
			rc = set_path(&a->site, arg, val);
		else if (KEY("libexecdir") && eq)
			rc = set_path(&a->libexecdir, arg, val);
		else if (KEY("check") && eq)
			rc = set_path(&a->check, arg, val);
		else if (KEY("um_library") && eq)
			rc = set_path(&a->um_library, arg, val);
		else if (KEY("mps_control") && eq)
			rc = set_path(&a->mps_control, arg, val);
		else if (KEY("nvidia_dev") && eq)
			rc = set_path(&a->nvidia_dev, arg, val);
		else if (KEY("state_dir") && eq)
			rc = set_path(&a->state_dir, arg, val);
		else if (KEY("mps_dir") && eq)
			rc = set_path(&a->mps_dir, arg, val);
		else if (KEY("check_user") && eq) {
			check_given = 1;
			rc = set_user("check_user", arg, val, &a->check_uid, &a->check_gid);
		} else if (KEY("sample_user") && eq) {
			sample_given = 1;
			rc = set_user("sample_user", arg, val, &a->sample_uid, &a->sample_gid);
		}
		else if (KEY("gpus") && eq && (!strcmp(val, "gres") || !strcmp(val, "all")))
			a->all_gpus = !strcmp(val, "all");
		else if (KEY("gpus") && eq) {
			slurm_error("gpumem: plugstack argument '%s': gpus is 'gres' (Slurm allocates "
				    "this node's GPUs) or 'all' (it does not)", arg);
			rc = -1;
		}
		else if (KEY("verbose") && !eq)
			a->verbose = 1;
		else if (KEY("timeout") && eq) {
			char *end;
			long t;

			errno = 0;
			t = strtol(val, &end, 10);
			if (*val == '\0' || *end || errno || t < 1 || t > 3600) {
				slurm_error("gpumem: plugstack argument '%s': timeout is 1..3600 "
					    "seconds", arg);
				rc = -1;
			} else {
				a->timeout = (int)t;
			}
		} else {
			slurm_error("gpumem: unknown plugstack argument '%s' (known: site=, "
				    "libexecdir=, check=, um_library=, mps_control=, nvidia_dev=, "
				    "state_dir=, mps_dir=, check_user=, sample_user=, gpus=, "
				    "timeout=, verbose)", arg);
			rc = -1;
		}
#undef KEY
		if (rc < 0)
			goto fail;
	}
	if (!check_given)
		a->check_missing = default_user(GPUMEM_CHECK_ACCOUNT, &a->check_uid, &a->check_gid);
	if (!sample_given)
		a->sample_missing = default_user(GPUMEM_SAMPLE_ACCOUNT, &a->sample_uid,
						 &a->sample_gid);
	if ((!a->libexecdir && !(a->libexecdir = strdup(DEFAULT_LIBEXEC))) ||
	    (!a->check && !(a->check = strdup(DEFAULT_CHECK))) ||
	    (!a->um_library && !(a->um_library = strdup(DEFAULT_UM))) ||
	    (!a->nvidia_dev && !(a->nvidia_dev = strdup("/dev/nvidiactl"))) ||
	    (!a->state_dir && !(a->state_dir = strdup(GPUMEM_DEFAULT_STATE_DIR))) ||
	    (!a->mps_dir && !(a->mps_dir = strdup(GPUMEM_DEFAULT_MPS_DIR))))
		goto fail;
	return 0;
fail:
	gpumem_args_free(a);
	return -1;
}

void gpumem_args_free(struct gpumem_args *a)
{
	free(a->site);
	free(a->libexecdir);
	free(a->check);
	free(a->um_library);
	free(a->mps_control);
	free(a->nvidia_dev);
	free(a->state_dir);
	free(a->mps_dir);
	memset(a, 0, sizeof(*a));
}

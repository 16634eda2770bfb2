/*
 * The job epilog (slurm_spank_job_epilog): once per job on every node of
 * the allocation, as root, after the job's last step there has ended, even
 * when a step's slurmstepd was killed.  Slurm keeps the node COMPLETING
 * until it returns, so the after-check still guards the node: no next job
 * starts there before the check has ended, nor after it drained the node.
 * In order: stop the per-job MPS daemon (and any a step started on its
 * own), run check.after on the whole GPUs, reset the persisting L2, remove
 * the job's state.  Never fails: a failing epilog would drain the node
 * with Slurm's reason instead of gpumem's.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "jobstate.h"
#include "log.h"
#include "mps.h"
#include "perjob.h"
#include "proc.h"

/* Empty DIR as the user (whose it is), then remove it as root. */
static void remove_user_dir(int dfd, const char *name, const char *dir, uid_t uid, gid_t gid,
			    int timeout)
{
	char *argv[] = { "/usr/bin/find", (char *)dir, "-mindepth", "1", "-delete", NULL };
	char *envp[] = { "PATH=/usr/bin:/bin", NULL };
	struct gpumem_proc p = { 0 };

	gpumem_proc_as_user(&p, argv[0], argv, envp, uid, gid, timeout);
	if (gpumem_proc_run(&p) < 0 || p.status != 0)
		gpumem_error("gpumem: cannot empty %s: %.300s", dir, p.out ? p.out : "");
	gpumem_proc_free(&p);
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0)
		gpumem_error("gpumem: cannot remove %s", dir);
	else
		gpumem_info("gpumem: per-job MPS daemon stopped, %s removed", dir);
}

/*
 * Per-step daemons (a step whose own policy asked for one in a job that
 * had none) live in /tmp/gpumem-mps.JOB.STEP.*: the step stops its own,
 * but one whose slurmstepd was killed leaves it to us.
 */
static void stray_mps(const struct gpumem_jobctx *c, const char *control, int timeout)
{
	char prefix[64], path[4200];
	struct dirent *e;
	DIR *d = opendir("/tmp");

	snprintf(prefix, sizeof(prefix), "gpumem-mps.%u.", c->job);
	while (d && (e = readdir(d))) {
		struct stat st;

		if (strncmp(e->d_name, prefix, strlen(prefix)))
			continue;
		snprintf(path, sizeof(path), "/tmp/%s", e->d_name);
		/* Only the job user's own directory: never one someone else planted. */
		if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != c->uid)
			continue;
		gpumem_mps_stop(control, c->uid, c->gid, path, timeout);
	}
	if (d)
		closedir(d);
}

static void stop_mps(const struct gpumem_jobctx *c)
{
	struct gpumem_state *st = &gpumem_state;
	const char *control = gpumem_mps_find(st->args.mps_control);
	char path[4200], name[64];

	if (c->dfd >= 0 && gpumem_state_mps_find(st->args.state_dir, c->job, c->uid, path,
						 sizeof(path)) == 0) {
		char why[2100];

		/* A job that ended before its daemon was up (prolog.c): let it come up first. */
		if (gpumem_state_mps_wait(c->dfd, c->job, st->args.timeout * 1000L, why,
					  sizeof(why)) == -2)
			gpumem_error("gpumem: job %u: the MPS daemon's start was not recorded in "
				     "time: stopping it anyway", c->job);
		snprintf(name, sizeof(name), "mps.%u", c->job);
		gpumem_mps_quit(control, c->uid, c->gid, path, st->args.timeout);
		remove_user_dir(c->dfd, name, path, c->uid, c->gid, st->args.timeout);
	}
	stray_mps(c, control, st->args.timeout);
}

static void l2_reset(const struct gpumem_jobctx *c)
{
	struct gpumem_state *st = &gpumem_state;
	char path[4200], gpus[GPUMEM_GPU_LIST_MAX + 32], timeout[32];
	char *argv[] = { path, "--timeout", timeout, NULL };
	char *envp[] = { "PATH=/usr/bin:/bin", gpus, NULL };
	struct gpumem_proc p = { 0 };
	size_t o = (size_t)snprintf(gpus, sizeof(gpus), "CUDA_VISIBLE_DEVICES=");
	int n = 0;

	snprintf(path, sizeof(path), "%s/gpumem-l2reset", st->args.libexecdir);
	snprintf(timeout, sizeof(timeout), "%d", st->args.timeout);
	/* Under MIG no L2 lines persist: only whole GPUs are reset. */
	for (int i = 0; i < c->ngpus; i++)
		if (o < sizeof(gpus) && gpumem_gpu_kind(c->list[i], NULL, 0) != GPUMEM_GPU_MIG)
			o += (size_t)snprintf(gpus + o, sizeof(gpus) - o, "%s%s", n++ ? "," : "",
					      c->list[i]);
	if (c->ngpus < 0)
		envp[1] = NULL;
	else if (n == 0) {
		gpumem_info("gpumem: job %u: L2 reset skipped: no whole GPU (MIG instances only)",
			    c->job);
		return;
	}
	if (access(path, X_OK) != 0) {
		gpumem_info("gpumem: job %u: L2 reset skipped: %s not installed", c->job, path);
		return;
	}
	gpumem_proc_as_user(&p, path, argv, envp, c->uid, c->gid, st->args.timeout + 5);
	if (gpumem_proc_run(&p) == 0)
		gpumem_info("gpumem: job %u: L2 reset on GPUs %s (exit %d): %.300s", c->job,
			    c->ngpus >= 0 ? gpus + strlen("CUDA_VISIBLE_DEVICES=") : "(all)", p.status,
			    p.out);
	gpumem_proc_free(&p);
}

/* The mark's text, for gpumem_gpus_from_env: the GPUs the job's steps named. */
static int mark_get(void *ctx, const char *name, char *buf, int len)
{
	if (strcmp(name, "CUDA_VISIBLE_DEVICES") != 0 || ctx == NULL || !*(const char *)ctx)
		return -1;
	snprintf(buf, (size_t)len, "%s", (const char *)ctx);
	return 0;
}

/* Does the mark name "all" (a step that had no GPU list)? */
static int list_has_all(const char *mark)
{
	size_t n = strlen("all");

	for (const char *p = mark; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : "")
		if (!strncmp(p, "all", n) && (p[n] == ',' || p[n] == '\0'))
			return 1;
	return 0;
}

/*
 * Did this job (its policy, or one of its steps) set a persisting-L2
 * limit?  Where Slurm gave the job no GPU list, the steps' mark names the
 * GPUs they used (validated like any list; the user could reset those
 * anyway), and c->list becomes that list ("all": every GPU, as before).
 */
static int used_l2(struct gpumem_jobctx *c)
{
	struct gpumem_state *st = &gpumem_state;
	char name[64], *mark;
	const char *src;
	int n;

	if (c->dfd >= 0) {
		snprintf(name, sizeof(name), GPUMEM_STATE_L2, c->job);
		mark = gpumem_state_read(c->dfd, name, GPUMEM_GPU_LIST_MAX + 8);
		if (mark) {
			mark[strcspn(mark, "\n")] = '\0';
			if (c->ngpus < 0 && !list_has_all(mark)) {
				n = gpumem_gpus_from_env(mark_get, mark, c->list, GPUMEM_MAX_GPUS, &src);
				c->ngpus = n > 0 ? n : 0;       /* 0: MIG instances only */
			}
			free(mark);
			return 1;
		}
	}
	return (st->eff.set & GPUMEM_K_L2_LIMIT) && st->eff.l2.reset_at_exit;
}

static void forget_job(const struct gpumem_jobctx *c)
{
	char name[64];

	if (c->dfd < 0)
		return;
	snprintf(name, sizeof(name), GPUMEM_STATE_BEFORE, c->job);
	unlinkat(c->dfd, name, 0);
	snprintf(name, sizeof(name), GPUMEM_STATE_L2, c->job);
	unlinkat(c->dfd, name, 0);
	gpumem_state_mps_forget(c->dfd, c->job);
}

int gpumem_job_epilog(spank_t sp, int ac, char **av)
{
	struct gpumem_state *st = &gpumem_state;
	struct gpumem_jobctx c;
	struct gpumem_node node;
	struct gpumem_checkrun r;
	char err[4400];
	int rc = gpumem_jobctx_init(sp, ac, av, "epilog", &c);

	/* Cleanup does not depend on the policy: even a rejected one may have left some. */
	c.dfd = gpumem_state_open(st->args.state_dir ? st->args.state_dir : "/run/gpumem", 0,
				  err, sizeof(err));
	if (st->args.state_dir)
		stop_mps(&c);
	if (rc == 0 && st->eff.check.after) {
		memset(&node, 0, sizeof(node));
		gpumem_jobctx_gpus(&c, &node, 0);
		gpumem_perjob_check(&c, &node, "after", 0, &r);
		gpumem_jobcheck_free(&r);
	}
	if (st->has_dev && used_l2(&c))
		l2_reset(&c);
	forget_job(&c);
	gpumem_jobctx_free(&c);
	return 0;
}

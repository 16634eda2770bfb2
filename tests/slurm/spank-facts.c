/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A throw-away SPANK plugin for tests/slurm/prolog-facts.sh: it writes what
 * slurm_spank_job_prolog and slurm_spank_job_epilog see (context, ids, which
 * items and variables are there, the option) into out=DIR/<hook>.<job>.<node>,
 * and returns what the file DIR/ret.<hook> says (default 0), so that the test
 * can watch what Slurm does with a failing hook.  Where it runs: its parent's
 * name, its mount namespace, which of the node's GPU devices it may open
 * (dev=DIR: DIR/nvidia0..7), and whether a process the prolog started (a
 * child in its own session, as a per-job daemon is; and one left in the
 * prolog's process group) is still alive when the epilog runs.  Not installed; built by the test with cc against the
 * installed spank.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <slurm/spank.h>

SPANK_PLUGIN(spankfacts, 1);

static char dir[1024], devdir[1024];
static int dir_from_init;

static struct spank_option opt = { "facts-opt", "VALUE", "spank-facts test option", 1, 0,
				   NULL };

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	for (int i = 0; i < ac; i++)
		if (!strncmp(av[i], "out=", 4))
			dir_from_init = 1;
	if (spank_context() != S_CTX_SLURMD)
		spank_option_register(sp, &opt);
	return 0;
}

static void item(FILE *f, spank_t sp, const char *name, spank_item_t it)
{
	uint32_t v = 0;
	spank_err_t rc = spank_get_item(sp, it, &v);

	fprintf(f, "item %s %s %u\n", name, rc == ESPANK_SUCCESS ? "ok" : "error", v);
}

/* The parent's name, the mount namespace, the GPU devices this process may open. */
static void where(FILE *f)
{
	char path[1200], buf[256];
	ssize_t n;
	FILE *c;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)getppid());
	c = fopen(path, "r");
	if (c && fgets(buf, sizeof(buf), c))
		fprintf(f, "parent %s", buf);
	if (c)
		fclose(c);
	n = readlink("/proc/self/ns/mnt", buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	fprintf(f, "mntns %s\n", buf);
	for (int i = 0; devdir[0] && i < 8; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/nvidia%d", devdir, i);
		if (access(path, F_OK) != 0)
			break;
		fd = open(path, O_RDWR);
		fprintf(f, "dev nvidia%d %s\n", i, fd >= 0 ? "open" : errno == EPERM ? "denied" :
			"allowed");     /* a stand-in without a driver: ENXIO once allowed */
		if (fd >= 0)
			close(fd);
	}
}

/* A process there and not a zombie (an orphan killed may wait for PID 1 to reap it). */
static int running(int pid)
{
	char path[64], buf[256], *rp;
	FILE *s;
	int up = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	s = fopen(path, "r");
	if (s && fgets(buf, sizeof(buf), s) && (rp = strrchr(buf, ')')) && rp[1] == ' ')
		up = rp[2] != 'Z' && rp[2] != 'X';
	if (s)
		fclose(s);
	return up;
}

/*
 * prolog: a child in its own session that lives on, and one left in the
 * prolog's process group; epilog: is each still alive?
 */
static void survivor(FILE *f, const char *name, uint32_t job)
{
	char path[1200];
	FILE *s;
	int pid = 0, gpid = 0;

	snprintf(path, sizeof(path), "%s/child.%u.%s", dir, job, getenv("SLURMD_NODENAME") ?
		 getenv("SLURMD_NODENAME") : "x");
	if (!strcmp(name, "prolog")) {
		pid_t p = fork(), g;

		if (p == 0) {
			setsid();
			for (int fd = 0; fd < 1024; fd++)
				close(fd);
			sleep(600);
			_exit(0);
		}
		g = fork();
		if (g == 0) {
			for (int fd = 0; fd < 1024; fd++)
				close(fd);
			sleep(600);
			_exit(0);
		}
		s = fopen(path, "w");
		if (s) {
			fprintf(s, "%d %d\n", (int)p, (int)g);
			fclose(s);
		}
		return;
	}
	s = fopen(path, "r");
	if (s == NULL)
		return;
	if (fscanf(s, "%d %d", &pid, &gpid) == 2 && pid > 0 && gpid > 0) {
		fprintf(f, "prolog_child %s\n", running(pid) ? "alive" : "gone");
		fprintf(f, "prolog_groupchild %s\n", running(gpid) ? "alive" : "gone");
		kill(pid, SIGKILL);
		kill(gpid, SIGKILL);
	}
	fclose(s);
}

static int hook(spank_t sp, const char *name, int ac, char **av)
{
	static const char *const vars[] = { "SLURM_JOB_ID", "SLURM_JOB_GPUS",
		"CUDA_VISIBLE_DEVICES", "SLURM_JOB_USER", "SLURMD_NODENAME",
		"SPANK_FACTS_DATA", "SLURM_SCRIPT_CONTEXT", "SLURM_STEP_GPUS",
		"SPANK__SLURM_SPANK_OPTION_spankfacts_facts_opt", "ENVIRONMENT" };
	char done[1200], tmp[1216], path[1200], buf[256], *val = NULL;
	const char *node = getenv("SLURMD_NODENAME");
	uint32_t job = 0;
	int ret = 0;
	spank_err_t rc;
	FILE *f;

	/* slurm_spank_init is not called in the job_script context: parse here. */
	for (int i = 0; i < ac; i++)
		if (!strncmp(av[i], "out=", 4))
			snprintf(dir, sizeof(dir), "%s", av[i] + 4);
		else if (!strncmp(av[i], "dev=", 4))
			snprintf(devdir, sizeof(devdir), "%s", av[i] + 4);
	if (dir[0] == '\0')
		return 0;
	spank_get_item(sp, S_JOB_ID, &job);
	/* Written under a temporary name and renamed when whole: a test reads
	 * the file as soon as it is there, and the epilog may still run after
	 * the job has completed. */
	snprintf(done, sizeof(done), "%s/%s.%u.%s", dir, name, job, node ? node : "x");
	snprintf(tmp, sizeof(tmp), "%s.tmp", done);
	f = fopen(tmp, "w");
	if (f == NULL)
		return 0;
	fprintf(f, "init_called %d\n", dir_from_init);
	fprintf(f, "context %d remote %d uid %d euid %d pid %d ppid %d\n", (int)spank_context(),
		spank_remote(sp), (int)getuid(), (int)geteuid(), (int)getpid(), (int)getppid());
	item(f, sp, "S_JOB_UID", S_JOB_UID);
	item(f, sp, "S_JOB_GID", S_JOB_GID);
	item(f, sp, "S_JOB_ID", S_JOB_ID);
	item(f, sp, "S_JOB_STEPID", S_JOB_STEPID);
	item(f, sp, "S_JOB_NNODES", S_JOB_NNODES);
	item(f, sp, "S_JOB_LOCAL_TASK_COUNT", S_JOB_LOCAL_TASK_COUNT);
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *g = getenv(vars[i]);
		spank_err_t rc = spank_getenv(sp, vars[i], buf, sizeof(buf));

		fprintf(f, "getenv %s=%s\n", vars[i], g ? g : "(unset)");
		fprintf(f, "spank_getenv %s rc=%d %s\n", vars[i], (int)rc,
			rc == ESPANK_SUCCESS ? buf : "");
	}
	rc = spank_option_getopt(sp, &opt, &val);
	fprintf(f, "getopt rc=%d %s\n", (int)rc, val ? val : "(none)");
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)getpid());
	{
		FILE *c = fopen(path, "r");

		while (c && fgets(buf, sizeof(buf), c))
			if (strstr(buf, "slurm"))
				fprintf(f, "cgroup %s", buf);
		if (c)
			fclose(c);
	}
	where(f);
	survivor(f, name, job);
	fclose(f);
	rename(tmp, done);
	snprintf(path, sizeof(path), "%s/ret.%s", dir, name);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%d", &ret) != 1)
			ret = 0;
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/sleep.%s", dir, name);
	f = fopen(path, "r");
	if (f) {
		int s = 0;

		if (fscanf(f, "%d", &s) == 1)
			sleep((unsigned)s);
		fclose(f);
	}
	return ret;
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
	return hook(sp, "prolog", ac, av);
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	return hook(sp, "epilog", ac, av);
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (spank_context() == S_CTX_LOCAL || spank_context() == S_CTX_ALLOCATOR)
		spank_job_control_setenv(sp, "FACTS_DATA", "forwarded", 1);
	return 0;
}

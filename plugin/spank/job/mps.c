/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The per-job MPS daemon (mps.h).  NVIDIA's control daemon must run as the
 * job's user (an MPS server serves clients of its own uid only), yet it
 * lives outside the job's cgroup, from the job prolog to the job epilog.
 * So everything about it is root's, and nothing of it is found through
 * what the user can change:
 *
 *  - mps_dir itself is root's, 0711: a user reaches the directory of
 *    their job's daemon, and lists no one's; beside the jobs' directories
 *    it holds nomps/, root's and empty, the pipe directory of every helper
 *    that must reach no daemon (state_dir is root's alone: no user's
 *    process could reach one there);
 *  - its directory is mps_dir/jobN, root's, outside root's state_dir: a
 *    small tmpfs of its own where the kernel allows the mount (a user who
 *    fills pipe/ or log/ fills only that), with pipe/ and log/ the user's,
 *    made by the prolog itself, before Slurm makes a job's mount namespace;
 *    the user cannot rename or replace them (the parent is root's);
 *  - the daemon runs in the foreground (-f), a child of root's, so root
 *    knows its pid; it records "ready PID START UID" in state_dir/mps.<JOB>.<HOST>,
 *    and the pipe directory's and /dev/shm's device and inode, which each
 *    task compares with its own (a private /tmp, /dev/shm per job);
 *  - its real and saved gid are GPUMEM_MPS_GID, its effective gid the
 *    user's (NVIDIA's daemon sets that to the real one itself): no process
 *    of the user has its gids, so none may ptrace it, read its memory or
 *    make it open what the job may not (the kernel also marks it
 *    non-dumpable at exec); signals, which only need the uid, can still
 *    reach it: the user can stop their own daemon, no more;
 *  - the epilog asks it to quit, then kills it and every process it
 *    started (by pid and start time, never by name), then removes its
 *    directory (unmount, or as the user) and the record.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "core_policy.h"
#include "log.h"
#include "mps.h"
#include "core_base.h"
#include "statedir.h"
#include "statefiles.h"

#define TMPFS_OPTS "size=16m,nr_inodes=4096,mode=0755"

const char *gpumem_mps_find(const char *configured)
{
	static const char *const places[] = { "/usr/bin/nvidia-cuda-mps-control",
					      "/usr/local/bin/nvidia-cuda-mps-control",
					      "/usr/local/nvidia/bin/nvidia-cuda-mps-control" };

	if (configured)
		return access(configured, X_OK) == 0 ? configured : NULL;
	for (size_t i = 0; i < sizeof(places) / sizeof(places[0]); i++)
		if (access(places[i], X_OK) == 0)
			return places[i];
	return NULL;
}

/* mps_dir, made and opened safely (trust.h); one others may list is made 0711. */
static int open_base(const char *base, char *why, size_t wlen)
{
	return gpumem_dir_open_mode(base, 0711, why, wlen);
}

int gpumem_mps_nomps(const char *base, char *path, size_t plen)
{
	struct stat st;
	char why[600];
	int bfd, fd, rv = -1;

	gpumem_mps_nomps_path(path, plen, base);
	bfd = open_base(base, why, sizeof(why));
	if (bfd < 0)
		return -1;
	if (mkdirat(bfd, GPUMEM_MPS_NOMPS, 0755) < 0 && errno != EEXIST)
		goto out;
	fd = openat(bfd, GPUMEM_MPS_NOMPS, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		goto out;
	/* Root's, and only root may add to it; every helper may search it. */
	if (fstat(fd, &st) == 0 && st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH)) &&
	    fchmod(fd, 0755) == 0)
		rv = 0;
	close(fd);
out:
	close(bfd);
	return rv;
}

int gpumem_mps_record_failed(int sfd, unsigned job, const char *why)
{
	char name[128], text[2100];

	gpumem_sf_job(name, sizeof(name), GPUMEM_SF_MPS, job, NULL);
	snprintf(text, sizeof(text), "failed %.2000s\n", why);
	return gpumem_state_write(sfd, name, text);
}

void gpumem_mps_place_here(const char *pipe_dir, struct gpumem_mps_place *w)
{
	struct stat p, s;

	memset(w, 0, sizeof(*w));
	if (stat(pipe_dir, &p) == 0) {
		w->pipe_dev = (unsigned long long)p.st_dev;
		w->pipe_ino = (unsigned long long)p.st_ino;
	}
	if (stat("/dev/shm", &s) == 0) {
		w->shm_dev = (unsigned long long)s.st_dev;
		w->shm_ino = (unsigned long long)s.st_ino;
	}
}

/* "ready PID START UID PIPE_DEV PIPE_INO SHM_DEV SHM_INO": the daemon, and where it lives. */
static int record_ready(const struct gpumem_mps *m, pid_t pid, unsigned long long start)
{
	struct gpumem_mps_place w;
	char name[128], text[256], pipe[4300];

	gpumem_mps_path(pipe, sizeof(pipe), m->base, m->job, GPUMEM_MPS_PIPE);
	gpumem_mps_place_here(pipe, &w);
	gpumem_sf_job(name, sizeof(name), GPUMEM_SF_MPS, m->job, NULL);
	snprintf(text, sizeof(text), "ready %d %llu %u %llu %llu %llu %llu\n", (int)pid, start,
		 (unsigned)m->uid, w.pipe_dev, w.pipe_ino, w.shm_dev, w.shm_ino);
	return gpumem_state_write(m->sfd, name, text);
}

/*
 * Parse the record: 1 ready (pid, start, uid; where it lives into WHERE,
 * zeros for a record without it), 0 failed (WHY), -1 none or not whole.
 */
static int read_record(int sfd, unsigned job, pid_t *pid, unsigned long long *start, uid_t *uid,
		       struct gpumem_mps_place *where, char *why, size_t wlen)
{
	struct gpumem_mps_place w = { 0 };
	char name[128], *text;
	unsigned u;
	int p, rv = -1;

	gpumem_sf_job(name, sizeof(name), GPUMEM_SF_MPS, job, NULL);
	text = sfd >= 0 ? gpumem_state_read(sfd, name, 4096) : NULL;
	if (text == NULL)
		return -1;
	if (sscanf(text, "ready %d %llu %u %llu %llu %llu %llu", &p, start, &u, &w.pipe_dev,
		   &w.pipe_ino, &w.shm_dev, &w.shm_ino) >= 3 && p > 0) {
		*pid = p;
		*uid = u;
		if (where)
			*where = w;
		rv = 1;
	} else if (!strncmp(text, "failed ", 7)) {
		snprintf(why, wlen, "%s", text + 7);
		why[strcspn(why, "\n")] = '\0';
		rv = 0;
	}
	free(text);
	return rv;
}

int gpumem_mps_wait(int sfd, unsigned job, long timeout_ms, struct gpumem_mps_place *where,
		    char *why, size_t wlen)
{
	pid_t pid;
	unsigned long long start;
	uid_t uid;

	for (long waited = 0;; waited++) {
		switch (read_record(sfd, job, &pid, &start, &uid, where, why, wlen)) {
		case 1: return 0;
		case 0: return -1;
		}
		if (waited >= timeout_ms || gpumem_proc_left_ms(1) == 0)
			return -2;      /* also at the job prolog's/epilog's deadline (proc.h) */
		gpumem_sleep_ms(1);
	}
}

/* mkdir NAME under DFD, owned by uid/gid, 0700; never through a link. */
static int user_dir(int dfd, const char *name, uid_t uid, gid_t gid)
{
	if (mkdirat(dfd, name, 0700) < 0 && errno != EEXIST)
		return -1;
	return fchownat(dfd, name, uid, gid, AT_SYMLINK_NOFOLLOW);
}

/* The job's daemon's pipe and log directories, as its clients and itself name them. */
static void daemon_env(const struct gpumem_mps *m, struct gpumem_henv *env)
{
	char path[4200];

	gpumem_henv_init(env);
	gpumem_mps_path(path, sizeof(path), m->base, m->job, GPUMEM_MPS_PIPE);
	gpumem_henv_set(env, GPUMEM_ENV_MPS_PIPE, "%s", path);
	gpumem_mps_path(path, sizeof(path), m->base, m->job, GPUMEM_MPS_LOG);
	gpumem_henv_set(env, GPUMEM_ENV_MPS_LOG, "%s", path);
}

/* Run the control program as the user on the job's daemon, with INPUT on its stdin. */
static int control_cmd(const struct gpumem_mps *m, const char *input, char **out)
{
	char *argv[] = { (char *)m->control, NULL };
	struct gpumem_proc p = { 0 };
	struct gpumem_henv env;
	int rv;

	daemon_env(m, &env);
	gpumem_proc_as_user(&p, m->control, argv, gpumem_henv_envp(&env), m->uid, m->gid,
			    m->timeout);
	p.input = input;
	if (gpumem_proc_run(&p) < 0)
		return -1;
	rv = p.status == 0 && !p.timed_out ? 0 : -1;
	*out = p.out;
	return rv;
}

/*
 * Remove the job's directory: unmount its tmpfs; where it is no mount,
 * what is in it is the user's, removed as the user (bounded by the
 * timeout); then the directory itself, as root, without following links.
 */
static void remove_dir(const struct gpumem_mps *m, const char *dir)
{
	char *argv[] = { "/bin/rm", "-rf", "--", NULL, NULL, NULL };
	struct gpumem_henv env;
	char pipe[4300], log[4300], why[600], name[64];
	struct gpumem_proc p = { 0 };
	int bfd;

	if (umount2(dir, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
		gpumem_error("gpumem: job %u: cannot unmount %s: %s", m->job, dir, strerror(errno));
	gpumem_mps_path(pipe, sizeof(pipe), m->base, m->job, GPUMEM_MPS_PIPE);
	gpumem_mps_path(log, sizeof(log), m->base, m->job, GPUMEM_MPS_LOG);
	argv[3] = pipe;
	argv[4] = log;
	if (access(pipe, F_OK) == 0 || access(log, F_OK) == 0) {
		gpumem_henv_init(&env);
		gpumem_proc_as_user(&p, argv[0], argv, gpumem_henv_envp(&env), m->uid, m->gid,
				    m->timeout);
		if (gpumem_proc_run(&p) < 0 || p.status != 0)
			gpumem_error("gpumem: job %u: cannot empty %s: %.300s", m->job, dir,
				     p.out ? p.out : "");
		gpumem_proc_free(&p);
	}
	bfd = gpumem_dir_open_safe(m->base, why, sizeof(why));
	gpumem_mps_job_name(name, sizeof(name), m->job);
	if (bfd >= 0) {
		/* pipe/ and log/ (root may remove empty ones), then the job's directory. */
		int jfd = openat(bfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (jfd >= 0) {
			unlinkat(jfd, GPUMEM_MPS_PIPE, AT_REMOVEDIR);
			unlinkat(jfd, GPUMEM_MPS_LOG, AT_REMOVEDIR);
			close(jfd);
		}
		if (unlinkat(bfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
			gpumem_error("gpumem: job %u: cannot remove %s: %s", m->job, dir,
				     strerror(errno));
		close(bfd);
	}
}

/*
 * The job's directory, root's: a tmpfs of its own where the kernel lets
 * root mount one, else a plain directory (logged: the user can then fill
 * the file system it is on).  pipe/ and log/ in it are the user's.
 */
static int make_dir(const struct gpumem_mps *m, const char *dir, char *why, size_t wlen)
{
	char name[64];
	int bfd, jfd = -1, rv = -1;

	bfd = open_base(m->base, why, wlen);
	if (bfd < 0)
		return -1;
	gpumem_mps_job_name(name, sizeof(name), m->job);
	if (mkdirat(bfd, name, 0755) < 0) {
		snprintf(why, wlen, "%s: %s", dir, strerror(errno));
		goto out;
	}
	if (mount("gpumem-mps", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, TMPFS_OPTS) < 0)
		gpumem_info("gpumem: job %u: %s is no tmpfs of its own (mount: %s): the job's "
			    "user can fill the file system it is on", m->job, dir, strerror(errno));
	jfd = openat(bfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (jfd < 0 || user_dir(jfd, GPUMEM_MPS_PIPE, m->uid, m->gid) < 0 ||
	    user_dir(jfd, GPUMEM_MPS_LOG, m->uid, m->gid) < 0) {
		snprintf(why, wlen, "%s: %s", dir, strerror(errno));
		goto out;
	}
	rv = 0;
out:
	if (jfd >= 0)
		close(jfd);
	close(bfd);
	return rv;
}

/* What the daemon's exec needs, made before fork (the child only calls safe functions). */
struct spawn {
	const char *control;
	struct gpumem_henv env;
	char out[4300];         /* log/control.out: the daemon's own stdout and stderr */
	gid_t groups[256];
	int ngroups;
};

static int spawn_prepare(const struct gpumem_mps *m, struct spawn *s,
			 char *why, size_t wlen)
{
	struct passwd pw, *res = NULL;
	char buf[4096];

	s->control = m->control;
	s->ngroups = 256;
	if (getpwuid_r(m->uid, &pw, buf, sizeof(buf), &res) != 0 || res == NULL ||
	    getgrouplist(pw.pw_name, m->gid, s->groups, &s->ngroups) < 0) {
		snprintf(why, wlen, "cannot read the groups of uid %u", (unsigned)m->uid);
		return -1;
	}
	for (int i = 0; i < s->ngroups; i++)
		if (s->groups[i] == GPUMEM_MPS_GID) {
			snprintf(why, wlen, "the job's user is in group %d, which gpumem keeps for "
				 "MPS daemons (tell your admin)", GPUMEM_MPS_GID);
			return -1;
		}
	daemon_env(m, &s->env);
	if (m->gpus && *m->gpus)
		gpumem_henv_set(&s->env, GPUMEM_ENV_VISIBLE, "%s", m->gpus);
	/* The MPS server takes its L2 limit from its own environment. */
	if (m->l2_pct >= 0)
		gpumem_henv_set(&s->env, GPUMEM_ENV_L2_PCT, "%d", m->l2_pct);
	gpumem_mps_path(s->out, sizeof(s->out), m->base, m->job, GPUMEM_MPS_CONTROL_OUT);
	return 0;
}

/*
 * The daemon's process: its own session, the user's uid and groups,
 * GPUMEM_MPS_GID as real and saved gid, its output in the user's own log/
 * (opened as the user).
 */
static pid_t spawn_daemon(const struct gpumem_mps *m, const struct spawn *s)
{
	char *argv[] = { (char *)s->control, "-f", NULL };
	struct gpumem_spawn sp = { .path = s->control, .argv = argv, .envp = gpumem_henv_envp(&s->env),
				   .uid = m->uid, .gid = m->gid, .rgid = GPUMEM_MPS_GID,
				   .groups = s->groups, .ngroups = s->ngroups, .in = -1,
				   .out = -1, .err = -1, .out_path = s->out };

	return gpumem_proc_spawn(&sp);
}

/* Why the daemon ended before it listened: its status and its last words. */
static void ended(const struct gpumem_mps *m, int status, char *why, size_t wlen)
{
	char path[4300], buf[301] = "", *last;
	ssize_t n = 0;
	int fd;

	gpumem_mps_path(path, sizeof(path), m->base, m->job, GPUMEM_MPS_CONTROL_OUT);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0) {
		struct stat st;

		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
			if (st.st_size > 300)
				lseek(fd, st.st_size - 300, SEEK_SET);
			n = read(fd, buf, 300);
		}
		close(fd);
	}
	buf[n > 0 ? n : 0] = '\0';
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	last = strrchr(buf, '\n');
	snprintf(why, wlen, "the daemon %s %d before it listened%s%s",
		 WIFSIGNALED(status) ? "was killed by signal" : "exited",
		 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
		 buf[0] ? ": " : "", last ? last + 1 : buf);
}

/* Wait until the daemon's control socket exists; 0, or -1 with WHY (the daemon ended). */
static int wait_listening(const struct gpumem_mps *m, pid_t pid, char *why,
			  size_t wlen)
{
	char sock[4300];
	struct stat st;
	long limit = gpumem_proc_left_ms(m->timeout * 1000L);   /* the hook's deadline first */
	int status;

	gpumem_mps_path(sock, sizeof(sock), m->base, m->job, GPUMEM_MPS_CONTROL_SOCKET);

	for (long waited = 0; waited <= limit; waited++) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			ended(m, status, why, wlen);
			return -1;
		}
		if (lstat(sock, &st) == 0 && !S_ISLNK(st.st_mode))
			return 0;
		gpumem_sleep_ms(1);
	}
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	snprintf(why, wlen, "the daemon did not listen within %.1f s%s", limit / 1000.0,
		 limit < m->timeout * 1000L ? " (the job prolog's time limit)" : "");
	return -1;
}

int gpumem_mps_prepare(const struct gpumem_mps *m, char *why, size_t wlen)
{
	char dir[4200];

	gpumem_mps_path(dir, sizeof(dir), m->base, m->job, NULL);
	/* A directory of an earlier job of this id (ids restart): its daemon is long gone. */
	if (access(dir, F_OK) == 0)
		remove_dir(m, dir);
	if (make_dir(m, dir, why, wlen) == 0)
		return 0;
	if (gpumem_mps_record_failed(m->sfd, m->job, why) < 0)
		gpumem_error("gpumem: job %u: cannot record the MPS daemon's failed start", m->job);
	return -1;
}

int gpumem_mps_start(const struct gpumem_mps *m, char *why, size_t wlen)
{
	struct spawn s;
	unsigned long long start;
	pid_t pid;

	if (spawn_prepare(m, &s, why, wlen) < 0)
		goto fail;
	pid = spawn_daemon(m, &s);
	if (pid < 0) {
		snprintf(why, wlen, "fork: %s", strerror(errno));
		goto fail;
	}
	if (wait_listening(m, pid, why, wlen) < 0)
		goto fail;
	start = gpumem_proc_start_time(pid);
	if (record_ready(m, pid, start) < 0) {
		snprintf(why, wlen, "cannot write its record in the state directory");
		kill(pid, SIGKILL);
		goto fail;
	}
	return 0;
fail:
	if (gpumem_mps_record_failed(m->sfd, m->job, why) < 0)
		gpumem_error("gpumem: job %u: cannot record the MPS daemon's failed start", m->job);
	return -1;
}

/* One process of the daemon's tree: pid and start time, to kill the same one later. */
struct proc_id {
	pid_t pid;
	unsigned long long start;
};

/*
 * The daemon and every process below it, into T (at most MAX): one pass
 * over /proc per generation, bounded by MAX.  Returns how many.
 */
static size_t tree(pid_t root, struct proc_id *t, size_t max)
{
	size_t n = 0;

	t[n++] = (struct proc_id){ root, gpumem_proc_start_time(root) };
	for (size_t gen = 0, from = 0; gen < 8 && from < n && n < max; gen++) {
		size_t to = n;
		DIR *d = opendir("/proc");
		struct dirent *e;

		while (d && (e = readdir(d)) && n < max) {
			pid_t pid = (pid_t)atoi(e->d_name), pp;

			if (pid <= 0 || (pp = gpumem_proc_parent(pid)) <= 0)
				continue;
			for (size_t i = from; i < to; i++)
				if (t[i].pid == pp) {
					t[n++] = (struct proc_id){ pid, gpumem_proc_start_time(pid) };
					break;
				}
		}
		if (d)
			closedir(d);
		from = to;
	}
	return n;
}

/* How many of the tree are still there. */
static size_t tree_alive(const struct proc_id *t, size_t n)
{
	size_t left = 0;

	for (size_t i = 0; i < n; i++)
		left += gpumem_proc_alive(t[i].pid, t[i].start) != 0;
	return left;
}

/*
 * Kill what is left of the tree, after a moment for what is ending by
 * itself: the same processes (start time), and only the job user's.
 */
static int kill_tree(const struct proc_id *t, size_t n, uid_t uid)
{
	int killed = 0;

	for (int waited = 0; waited < 200 && tree_alive(t, n); waited += 2)
		gpumem_sleep_ms(2);
	for (size_t i = 0; i < n; i++)
		if (gpumem_proc_alive(t[i].pid, t[i].start) && gpumem_proc_uid(t[i].pid) == (long)uid &&
		    kill(t[i].pid, SIGKILL) == 0)
			killed++;
	return killed;
}

/* Quit, wait, then kill: the daemon of the record and what it started. */
static void stop_daemon(const struct gpumem_mps *m, pid_t pid,
			unsigned long long start)
{
	struct proc_id t[256];
	size_t n = tree(pid, t, 256);
	char *out = NULL;
	int quit = m->control && control_cmd(m, "quit\n", &out) == 0, killed;

	if (m->control && !quit)
		gpumem_info("gpumem: job %u: MPS quit failed: %.300s", m->job,
			    out && *out ? out : "no output");
	free(out);
	/* quit is asynchronous: the daemon stops its servers, then itself. */
	if (quit)
		gpumem_proc_wait_gone(pid, start, 5000);
	killed = kill_tree(t, n, m->uid);
	gpumem_info("gpumem: job %u: per-job MPS daemon %d stopped (%s%s)", m->job, (int)pid,
		    quit ? "quit" : "no quit", killed ? ", the rest killed" : "");
}

void gpumem_mps_stop(const struct gpumem_mps *m)
{
	char dir[4200], why[2100] = "", name[128];
	unsigned long long start = 0;
	pid_t pid = 0;
	uid_t uid = 0;
	int have_dir, rc = -1;

	gpumem_mps_path(dir, sizeof(dir), m->base, m->job, NULL);
	have_dir = access(dir, F_OK) == 0;
	/* A job that ended before its daemon was up: let the start finish first. */
	if (have_dir && gpumem_mps_wait(m->sfd, m->job, m->timeout * 1000L, NULL, why, sizeof(why)) == -2)
		gpumem_error("gpumem: job %u: the MPS daemon's start was not recorded in time",
			     m->job);
	rc = read_record(m->sfd, m->job, &pid, &start, &uid, NULL, why, sizeof(why));
	if (rc == 1 && uid == m->uid)
		stop_daemon(m, pid, start);
	else if (rc == 1)
		gpumem_error("gpumem: job %u: the MPS record names uid %u, not the job's: left alone",
			     m->job, (unsigned)uid);
	if (have_dir)
		remove_dir(m, dir);
	gpumem_sf_job(name, sizeof(name), GPUMEM_SF_MPS, m->job, NULL);
	if (m->sfd >= 0)
		unlinkat(m->sfd, name, 0);
}

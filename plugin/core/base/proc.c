/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one process runner (proc.h): every program gpumem runs and waits for
 * goes through here: the plugin's helpers (gpumem-probe, gpumem-check, the
 * MPS control program's "quit", scontrol), gpumem-acct's sacct and
 * sacctmgr, `gpumem job`'s sacct.  What outlives the hook that starts it
 * (the per-job MPS daemon, the sampler, the warm check server) is started
 * by gpumem_proc_spawn, the MPS daemon's starter (job_prolog.c) forked by
 * gpumem_proc_fork_session: both return only once the child is out of the
 * hook's process group (Slurm kills that group when the hook returns).
 * slurmstepd is multi-threaded, so the child does only
 * async-signal-safe work between fork and exec: everything it needs (argv,
 * environment, groups) is prepared by the parent.  The child starts from a
 * clean signal state (slurmstepd blocks and ignores signals that a helper
 * needs: its alarm() timeout, the MPS daemon's SIGTERM; both survive exec),
 * in a process group of its own, which is killed at the deadline: its own
 * timeout, or the process's (gpumem_proc_deadline: the job prolog's limit).
 * A site helper (gpumem_proc_as_site: the checks, the L2 reset) runs as the
 * site's check_user, with no groups, in a session of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "proc.h"
#include "trust.h"

extern char **environ;

#define OUT_MAX (64 * 1024)

static long hard_deadline;      /* gpumem_proc_deadline; 0: none */
static char hard_what[64];

long gpumem_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

void gpumem_proc_deadline(long mono_ms, const char *what)
{
	hard_deadline = mono_ms;
	snprintf(hard_what, sizeof(hard_what), "%s", mono_ms && what ? what : "");
}

const char *gpumem_proc_deadline_what(void)
{
	return hard_what;
}

long gpumem_proc_left_ms(long cap_ms)
{
	long left;

	if (hard_deadline == 0)
		return cap_ms;
	left = hard_deadline - gpumem_mono_ms();
	return left <= 0 ? 0 : left < cap_ms ? left : cap_ms;
}

/*
 * Every signal back to its default action, and none blocked.  The raw
 * system call, because glibc's sigaction refuses the two real-time signals
 * it keeps for itself, and an ignored one of those would survive exec too.
 * An all-zero kernel sigaction is SIG_DFL on every architecture.
 */
void gpumem_proc_reset_signals(void)
{
	static const unsigned long dfl[8];
	sigset_t none;

	for (int sig = 1; sig < 65; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			syscall(SYS_rt_sigaction, sig, dfl, NULL, (size_t)8);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/*
 * The parent goes on only once the child has left the parent's process
 * group: Slurm kills the hook's whole group as soon as the hook returns
 * (slurmd's run_command_waitpid_timeout), and on a busy node a child that
 * had not run setsid() yet died with it.  A pipe tells: the child closes
 * its end after setsid(); the read returns then (or when it died).
 */
pid_t gpumem_proc_fork_session(void)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		setsid();
		close(p[1]);
		return 0;
	}
	close(p[1]);
	while (pid > 0 && read(p[0], &c, 1) < 0 && errno == EINTR)
		;
	close(p[0]);
	return pid;
}

/* gpumem_proc_become, with the real and saved gid RGID apart from the effective GID. */
static int become(uid_t uid, gid_t rgid, gid_t gid, const gid_t *groups, int ngroups)
{
	/* -1 is "leave it as it is" to setresuid: an account that was never found. */
	if (uid == (uid_t)-1 || gid == (gid_t)-1 || rgid == (gid_t)-1)
		return -1;
	if (geteuid() == 0 && ngroups >= 0 && setgroups((size_t)ngroups, groups) < 0)
		return -1;
	if (setresgid(rgid, gid, rgid) < 0 || setresuid(uid, uid, uid) < 0)
		return -1;
	if (uid != 0 && setuid(0) == 0)
		return -1;      /* the drop did not hold */
	return 0;
}

/* OUT_PATH with the program's rights: the drop has happened (the MPS daemon's own log). */
static int open_out(const struct gpumem_spawn *s)
{
	return s->out_path ? open(s->out_path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW |
				  O_CLOEXEC, 0600) : -1;
}

/* gpumem_proc_spawn's child: only async-signal-safe calls, then exec. */
static void spawn_child(const struct gpumem_spawn *s)
{
	int null, out, fds[3];

	gpumem_proc_reset_signals();
	if ((s->block && sigprocmask(SIG_BLOCK, s->block, NULL) < 0) || chdir("/") < 0)
		_exit(126);
	null = gpumem_fd_above_stdio(open("/dev/null", O_RDWR | O_CLOEXEC));
	if (null < 0 || become(s->uid, s->rgid, s->gid, s->groups, s->ngroups) < 0)
		_exit(126);
	out = gpumem_fd_above_stdio(open_out(s));
	if (s->out_path && out < 0)
		_exit(126);
	fds[0] = s->in >= 0 ? s->in : null;
	fds[1] = out >= 0 ? out : s->out >= 0 ? s->out : null;
	fds[2] = out >= 0 ? out : s->err >= 0 ? s->err : null;
	for (int i = 0; i < 3; i++)
		if (dup2(fds[i], i) < 0)
			_exit(126);
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
	execve(s->path, s->argv, s->envp);
	_exit(127);
}

pid_t gpumem_proc_spawn(const struct gpumem_spawn *s)
{
	pid_t pid = gpumem_proc_fork_session();

	if (pid == 0)
		spawn_child(s);
	return pid;
}

static void child(const struct gpumem_proc *p, int in_fd, int out_fd, int err_fd,
		  const gid_t *groups, int ngroups)
{
	gpumem_proc_reset_signals();
	if (p->site) {
		/* Its own session (and process group, killed at the deadline), from "/". */
		if (setsid() < 0 || chdir("/") < 0)
			_exit(126);
	} else {
		setpgid(0, 0);
	}
	if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0)
		_exit(126);
	if (p->drop_stderr) {
		int null = open("/dev/null", O_WRONLY);

		if (null < 0 || dup2(null, 2) < 0)
			_exit(126);
	} else if (dup2(err_fd >= 0 ? err_fd : out_fd, 2) < 0) {
		_exit(126);
	}
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
	/*
	 * Root (euid 0) also resets the supplementary groups; in user_init
	 * slurmstepd already set the user's and only the effective ids need
	 * making permanent.
	 */
	if (p->drop && gpumem_proc_become(p->uid, p->gid, groups, ngroups) < 0)
		_exit(126);
	execve(p->path, p->argv, p->envp);
	_exit(127);
}

int gpumem_proc_become(uid_t uid, gid_t gid, const gid_t *groups, int ngroups)
{
	return become(uid, gid, gid, groups, ngroups);
}

/* Read one ready pipe into BUF (LEN so far, at most MAX kept, the rest dropped): 0 at its end. */
static int take(int fd, char *buf, size_t *len, size_t max)
{
	char sink[4096];
	ssize_t n;

	do
		n = *len < max ? read(fd, buf + *len, max - *len) : read(fd, sink, sizeof(sink));
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return 0;
	if (*len < max)
		*len += (size_t)n;
	return 1;
}

/*
 * The child's output into p->out (and its stderr into p->err when kept
 * apart) until it closes its ends, or until the deadline, when its process
 * group is killed.
 */
static void collect(struct gpumem_proc *p, int fd, int efd, pid_t pid, size_t max)
{
	long own = (p->timeout_s > 0 ? p->timeout_s : 60) * 1000L;
	long deadline = gpumem_mono_ms() + gpumem_proc_left_ms(own);
	size_t len = 0, elen = 0;
	int fds[2] = { fd, efd };

	while (fds[0] >= 0 || fds[1] >= 0) {
		struct pollfd pfd[2] = { { fds[0], POLLIN, 0 }, { fds[1], POLLIN, 0 } };
		long left = deadline - gpumem_mono_ms();

		if (left <= 0) {
			p->timed_out = 1;
			p->cut = gpumem_proc_left_ms(1) == 0;
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			break;
		}
		if (poll(pfd, 2, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[0].revents && !take(fds[0], p->out, &len, max))
			fds[0] = -1;
		if (pfd[1].revents && !take(fds[1], p->err, &elen, GPUMEM_PROC_ERR_MAX))
			fds[1] = -1;
	}
	p->out[len] = '\0';
	if (p->err)
		p->err[elen] = '\0';
}

/* The supplementary groups of the user P drops to, before fork. */
static int user_groups(const struct gpumem_proc *p, gid_t *groups, int max)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	int n = max;

	if (!p->drop || geteuid() != 0)
		return -1;
	if (p->site)
		return 0;       /* none: not even the site identity's own */
	if (getpwuid_r(p->uid, &pw, buf, sizeof(buf), &res) != 0 || res == NULL ||
	    getgrouplist(pw.pw_name, p->gid, groups, &n) < 0)
		n = 0;
	return n;
}

int gpumem_proc_run(struct gpumem_proc *p)
{
	int inp[2] = { -1, -1 }, outp[2] = { -1, -1 }, errp[2] = { -1, -1 };
	gid_t groups[256];
	int ngroups = user_groups(p, groups, 256);
	size_t max = p->out_max ? p->out_max : OUT_MAX;
	pid_t pid = -1;
	int status = 0, rv = -1;

	p->out = p->err = NULL;
	p->status = -1;
	p->timed_out = p->cut = 0;
	p->out = malloc(max + 1);
	if (p->out && gpumem_proc_left_ms(1) == 0) {
		p->out[0] = '\0';      /* past the process's deadline: not started */
		p->timed_out = p->cut = 1;
		return 0;
	}
	if (p->out == NULL || pipe2(inp, O_CLOEXEC) < 0 || pipe2(outp, O_CLOEXEC) < 0)
		goto fail;
	if (p->keep_stderr && ((p->err = malloc(GPUMEM_PROC_ERR_MAX + 1)) == NULL ||
			       pipe2(errp, O_CLOEXEC) < 0))
		goto fail;
	/* The job prolog/epilog may start with stdin closed: a pipe at fd 0 would
	 * keep close-on-exec through the child's dup2(0, 0). */
	for (int i = 0; i < 2; i++)
		if ((inp[i] = gpumem_fd_above_stdio(inp[i])) < 0 ||
		    (outp[i] = gpumem_fd_above_stdio(outp[i])) < 0 ||
		    (p->keep_stderr && (errp[i] = gpumem_fd_above_stdio(errp[i])) < 0))
			goto fail;
	pid = fork();
	if (pid < 0)
		goto fail;
	if (pid == 0)
		child(p, inp[0], outp[1], errp[1], groups, ngroups);
	close(inp[0]);
	close(outp[1]);
	if (errp[1] >= 0)
		close(errp[1]);
	inp[0] = outp[1] = errp[1] = -1;
	if (p->input) {
		/*
		 * Small inputs only (MPS control commands, a site file of at
		 * most 64 KiB): they fit the pipe buffer.
		 */
		ssize_t n = write(inp[1], p->input, strlen(p->input));

		(void)n;
	}
	close(inp[1]);
	inp[1] = -1;
	collect(p, outp[0], errp[0], pid, max);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	p->status = WIFEXITED(status) ? WEXITSTATUS(status) :
		WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
	rv = 0;
fail:
	for (int i = 0; i < 2; i++) {
		if (inp[i] >= 0)
			close(inp[i]);
		if (outp[i] >= 0)
			close(outp[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	if (rv < 0)
		gpumem_proc_free(p);
	return rv;
}

/* $PATH, or without one (Slurm runs Prolog/Epilog scripts with no PATH) the
 * system's default, as execvp would search. */
const char *gpumem_proc_path(void)
{
	static char def[256];
	const char *p = getenv("PATH");

	if (p)
		return p;
	if (!def[0] && confstr(_CS_PATH, def, sizeof(def)) == 0)
		snprintf(def, sizeof(def), "/usr/bin:/bin");
	return def;
}

int gpumem_proc_find(const char *name, const char *path, char *buf, size_t len)
{
	char dirs[4096];
	char *save = NULL;

	if (strchr(name, '/')) {
		snprintf(buf, len, "%s", name);
		return name[0] == '/' && access(buf, X_OK) == 0 ? 0 : -1;
	}
	snprintf(dirs, sizeof(dirs), "%s", path ? path : "");
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		if (d[0] != '/')
			continue;       /* relative PATH entries are never trusted */
		snprintf(buf, len, "%s/%s", d, name);
		if (access(buf, X_OK) == 0)
			return 0;
	}
	return -1;
}

int gpumem_run_capture(char *const argv[], char *out, size_t cap, char *errline,
		       size_t errlen, int timeout_s)
{
	struct gpumem_proc p = { 0 };
	char path[4096];
	int rv = -1;

	out[0] = '\0';
	errline[0] = '\0';
	if (gpumem_proc_find(argv[0], gpumem_proc_path(), path, sizeof(path)) < 0) {
		snprintf(errline, errlen, "cannot run %s: not found in %s", argv[0],
			 getenv("PATH") ? "PATH's absolute entries" : "the system's default PATH");
		return -1;
	}
	p.path = path;
	p.argv = argv;
	p.envp = environ;
	p.timeout_s = timeout_s;
	p.keep_stderr = 1;
	p.out_max = cap - 1;
	if (gpumem_proc_run(&p) < 0) {
		snprintf(errline, errlen, "cannot run %s: %s", argv[0], strerror(errno));
		return -1;
	}
	snprintf(out, cap, "%s", p.out);
	p.err[strcspn(p.err, "\n")] = '\0';
	if (p.timed_out)
		snprintf(errline, errlen, "%s: no answer in %d s: killed", argv[0], timeout_s);
	else if (p.status > 128)
		snprintf(errline, errlen, "%s: killed by signal %d", argv[0], p.status - 128);
	else if (p.status == 127 && !p.err[0])
		snprintf(errline, errlen, "cannot run %s", argv[0]);
	else
		snprintf(errline, errlen, "%s", p.err);
	if (!p.timed_out && p.status >= 0 && p.status <= 128)
		rv = p.status;
	gpumem_proc_free(&p);
	return rv;
}

void gpumem_proc_as_user(struct gpumem_proc *p, const char *path, char *const *argv,
			 char *const *envp, uid_t uid, gid_t gid, int timeout_s)
{
	memset(p, 0, sizeof(*p));
	p->path = path;
	p->argv = argv;
	p->envp = envp;
	p->drop = 1;
	p->uid = uid;
	p->gid = gid;
	p->timeout_s = timeout_s;
}

void gpumem_proc_as_site(struct gpumem_proc *p, const char *path, char *const *argv,
			 char *const *envp, uid_t uid, gid_t gid, int timeout_s)
{
	gpumem_proc_as_user(p, path, argv, envp, uid, gid, timeout_s);
	p->site = 1;
}

void gpumem_proc_free(struct gpumem_proc *p)
{
	free(p->out);
	free(p->err);
	p->out = p->err = NULL;
}

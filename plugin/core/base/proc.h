/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one process runner (proc.c): fork, drop to a user for good, reset
 * signals, exec without a shell, capture output under a cap, kill the
 * process group at a deadline.  The plugin, gpumem-acct and `gpumem job`
 * all run their programs through it.
 */
#ifndef GPUMEM_PROC_H
#define GPUMEM_PROC_H
#include <signal.h>
#include <sys/types.h>

#define GPUMEM_PROC_ERR_MAX 1024

struct gpumem_proc {
	const char *path;
	char *const *argv;
	char *const *envp;      /* the complete environment of the child */
	int drop;               /* become uid/gid for good before exec */
	int site;               /* with drop: a site identity (gpumem_proc_as_site) */
	uid_t uid;
	gid_t gid;
	int timeout_s;
	const char *input;      /* written to its stdin (at most 64 KiB), or NULL */
	int drop_stderr;        /* stderr to /dev/null: out is stdout alone */
	int keep_stderr;        /* stderr into err (its first GPUMEM_PROC_ERR_MAX bytes) */
	size_t out_max;         /* bytes of output kept, the rest dropped; 0: 64 KiB */
	char *out;              /* stdout (and stderr, unless dropped or kept apart), malloc'd */
	char *err;              /* stderr with keep_stderr, malloc'd */
	int status;             /* exit code, or 128 + signal */
	int timed_out;
	int cut;                /* timed out at the process's deadline (gpumem_proc_deadline), not its own */
};

/*
 * Fork, drop privileges in the child when asked, exec, collect at most
 * out_max bytes of output (64 KiB when 0), kill the child's process group
 * at the deadline.
 * Returns 0 when the program ran (see status), -1 when it could not.
 */
int gpumem_proc_run(struct gpumem_proc *p);
/*
 * One deadline for everything this process runs and waits for, on
 * CLOCK_MONOTONIC in ms (0: none), and what sets it for messages (WHAT,
 * e.g. "PrologTimeout=60"): the job prolog's and epilog's time limit
 * (Slurm kills the hook past it and drains the node).  A program run after
 * it is not started (timed_out and cut set); one running at it is killed.
 * Waits that poll (the MPS record, a daemon's end) stop there too.
 */
void gpumem_proc_deadline(long mono_ms, const char *what);
/* That WHAT, "" when there is no deadline. */
const char *gpumem_proc_deadline_what(void);
/* Milliseconds left before that deadline (at most CAP_MS; CAP_MS when none), 0 when past. */
long gpumem_proc_left_ms(long cap_ms);
/* CLOCK_MONOTONIC in ms. */
long gpumem_mono_ms(void);
/* Set up P to run PATH as uid/gid for good (the common case in the plugin). */
void gpumem_proc_as_user(struct gpumem_proc *p, const char *path, char *const *argv,
			 char *const *envp, uid_t uid, gid_t gid, int timeout_s);
/*
 * Set up P to run PATH as the site's own identity UID/GID (plugstack
 * check_user=): for good, no supplementary groups, in a session of its own
 * (no terminal, no job's process group), from "/".  What decides a site
 * outcome runs so: the job's user can neither signal, trace nor read it.
 */
void gpumem_proc_as_site(struct gpumem_proc *p, const char *path, char *const *argv,
			 char *const *envp, uid_t uid, gid_t gid, int timeout_s);
/*
 * In a forked child, as root: become UID/GID for good with the NGROUPS
 * supplementary GROUPS (NGROUPS < 0: keep them; only root may set them).
 * 0, or -1 when a step failed or root could be regained.
 */
int gpumem_proc_become(uid_t uid, gid_t gid, const gid_t *groups, int ngroups);
void gpumem_proc_free(struct gpumem_proc *p);
/*
 * NAME's path into BUF: NAME itself when it holds a '/' (absolute only),
 * else the first executable NAME in PATH's absolute entries (relative
 * entries are never trusted).  0, or -1.
 */
int gpumem_proc_find(const char *name, const char *path, char *buf, size_t len);
/* $PATH, or the system's default (confstr _CS_PATH) where it is unset. */
const char *gpumem_proc_path(void);
/*
 * Run ARGV (argv[0] looked up by gpumem_proc_find in gpumem_proc_path(); no shell) with
 * this process's environment and an empty stdin; its stdout (at most
 * CAP - 1 bytes, NUL-terminated) in OUT and its stderr's first line in
 * ERRLINE.  Killed after TIMEOUT_S seconds.  Returns the exit status, or -1
 * (with ERRLINE saying why) when it could not run, was killed or timed out.
 */
int gpumem_run_capture(char *const argv[], char *out, size_t cap, char *errline,
		       size_t errlen, int timeout_s);
/*
 * In a forked child: every signal to its default action, none blocked
 * (slurmstepd blocks and ignores some, and both survive exec).
 */
void gpumem_proc_reset_signals(void);
/*
 * fork() for a process that outlives the hook that starts it: the child
 * is in a session (and process group) of its own before either side goes
 * on, so Slurm's kill of the hook's process group, once the hook returns,
 * never reaches it.  Returns as fork() does.
 */
pid_t gpumem_proc_fork_session(void);
/*
 * A program that outlives the hook that starts it and that no one waits
 * for to output anything (the MPS daemon, the sampler, the warm check
 * server): forked by gpumem_proc_fork_session; in the child every signal
 * reset (BLOCK, when set, then blocked across exec), from "/", become
 * UID with effective GID, real and saved RGID, and the NGROUPS GROUPS
 * (NULL, 0: none) for good; stdin IN, stdout OUT, stderr ERR (-1:
 * /dev/null; OUT_PATH, when set, is opened after the drop, with the
 * program's rights, for stdout and stderr both); every other descriptor
 * closed; ENVP its whole environment.  Returns the pid, or -1.
 */
struct gpumem_spawn {
	const char *path;
	char *const *argv;
	char *const *envp;
	uid_t uid;
	gid_t gid, rgid;
	const gid_t *groups;
	int ngroups;
	int in, out, err;
	const char *out_path;
	const sigset_t *block;
};
pid_t gpumem_proc_spawn(const struct gpumem_spawn *s);

/* procinfo.c: from /proc.  Start time in clock ticks since boot, 0 when gone or a zombie. */
unsigned long long gpumem_proc_start_time(pid_t pid);
/* Still the process started then: PID's start time is START (0 never is). */
int gpumem_proc_alive(pid_t pid, unsigned long long start);
/* Sleep MS milliseconds (polling a process root does not wait for). */
void gpumem_sleep_ms(long ms);
/* Poll (2 ms) until PID/START has ended, at most MS: 1 gone, 0 still there. */
int gpumem_proc_wait_gone(pid_t pid, unsigned long long start, long ms);
/* The parent's pid, 0 when unknown. */
pid_t gpumem_proc_parent(pid_t pid);
/* The real uid, -1 when unknown. */
long gpumem_proc_uid(pid_t pid);
/*
 * PID's arguments (/proc/PID/cmdline: each NUL-ended, then one more NUL)
 * into BUF (LEN bytes, the rest cut); their length, or -1 when gone.
 */
int gpumem_proc_cmdline(pid_t pid, char *buf, size_t len);
#endif

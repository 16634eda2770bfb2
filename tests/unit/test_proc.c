/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * plugin/core/base/proc.c's lookup of the programs gpumem runs by name (sacct,
 * sacctmgr, scontrol): absolute PATH entries only, and the system's default
 * path where there is no PATH at all, as in a Slurm Epilog (execvp's rule;
 * gpumem-acct found no sacct there once the lookup stopped using execvp);
 * the process-wide deadline of the job prolog and epilog (gpumem_proc_deadline);
 * the detached fork (gpumem_proc_fork_session) and the detached program
 * started on it (gpumem_proc_spawn: the MPS daemon, the sampler, the warm
 * check server).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "core_base.h"
#include "tap.h"

/* A program that would outlive the process's deadline is killed there; after it, none starts. */
static void deadline(void)
{
	char *sleep5[] = { "/bin/sleep", "5", NULL }, *env[] = { NULL };
	struct gpumem_proc p = { 0 };
	long t0;

	is_int((int)gpumem_proc_left_ms(1234), 1234, "no deadline: the caller's own bound");
	gpumem_proc_deadline(gpumem_mono_ms() + 400, "PrologTimeout=6");
	is_str(gpumem_proc_deadline_what(), "PrologTimeout=6", "the deadline names its setting");
	gpumem_proc_as_user(&p, sleep5[0], sleep5, env, 0, 0, 10);
	p.drop = 0;
	t0 = gpumem_mono_ms();
	ok(gpumem_proc_run(&p) == 0 && p.timed_out && p.cut, "a 5 s program under a 10 s timeout is cut at the deadline");
	ok(gpumem_mono_ms() - t0 < 2000, "... within the deadline's 0.4 s, not its own 10 s");
	gpumem_proc_free(&p);
	is_int((int)gpumem_proc_left_ms(1000), 0, "past it: nothing left");
	memset(&p, 0, sizeof(p));
	gpumem_proc_as_user(&p, sleep5[0], sleep5, env, 0, 0, 10);
	p.drop = 0;
	ok(gpumem_proc_run(&p) == 0 && p.timed_out && p.cut && p.status == -1, "... and a program is not started");
	gpumem_proc_free(&p);
	gpumem_proc_deadline(0, NULL);
	is_str(gpumem_proc_deadline_what(), "", "no deadline: no name");
}

/*
 * What the job prolog forks (the sampler, the MPS daemon's starter) has left
 * the prolog's process group by the time the fork returns: slurmd kills
 * that group once the prolog returns, and a child not yet scheduled (a
 * busy node) died with it.  Checked at once, before the child could run.
 */
static void fork_session(void)
{
	int status = 0, i, good = 0;
	pid_t pid, me;

	ok(setpgid(0, 0) == 0, "the test leads a process group of its own");
	me = getpgrp();
	for (i = 0; i < 20; i++) {
		pid = gpumem_proc_fork_session();
		if (pid == 0) {
			pause();
			_exit(0);
		}
		if (pid < 0)
			break;
		good += getpgid(pid) == pid && getsid(pid) == pid && getpgid(pid) != me;
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	is_int(good, 20, "gpumem_proc_fork_session: each child leads a session of its own "
	       "when the fork returns (20 of 20)");
}

/*
 * Run SCRIPT by gpumem_proc_spawn as S says (out: a pipe unless OUT_PATH),
 * or with SCRIPT NULL, grep's line of its own signal mask; the output in BUF.
 */
static int spawn_sh(struct gpumem_spawn *s, const char *script, char *buf, size_t len)
{
	char *sh[] = { "/bin/sh", "-c", (char *)script, NULL };
	char *grep[] = { "/bin/grep", "SigBlk", "/proc/self/status", NULL };
	char **argv = script ? sh : grep;
	char *envp[] = { "PATH=/usr/bin:/bin", "ONLY=this", NULL };
	int p[2], st = 0;
	ssize_t n = 0, r;
	pid_t pid;

	if (pipe(p) < 0)
		return -1;
	s->path = argv[0];
	s->argv = argv;
	s->envp = envp;
	s->uid = getuid();
	s->gid = s->rgid = getgid();
	if (!s->out_path)
		s->out = p[1];
	pid = gpumem_proc_spawn(s);
	close(p[1]);
	while (pid > 0 && (r = read(p[0], buf + n, len - 1 - (size_t)n)) > 0)
		n += r;
	buf[n] = '\0';
	close(p[0]);
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * gpumem_proc_spawn: a session of its own, from "/", the given environment
 * alone, stdin and stderr /dev/null, stdout the given descriptor, every
 * other descriptor closed, the signals asked for blocked across exec; with
 * an output path, stdout and stderr both there.
 */
static void spawn(void)
{
	struct gpumem_spawn s = { .in = -1, .out = -1, .err = -1 };
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char buf[2048], script[512], dir[256], path[300];
	int extra = open("/dev/null", O_RDONLY), sid = 0, pid = -1, fd;
	sigset_t term;

	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	s.block = &term;
	snprintf(script, sizeof(script), "echo sid=$(cut -d' ' -f6 /proc/$$/stat) pid=$$; pwd; "
		 "env | sort; readlink /proc/$$/fd/0 /proc/$$/fd/2; "
		 "test -e /proc/$$/fd/%d && echo extra open; true", extra);
	is_int(spawn_sh(&s, script, buf, sizeof(buf)), 0, "gpumem_proc_spawn: the program ran");
	ok(sscanf(buf, "sid=%d pid=%d", &sid, &pid) == 2 && sid == pid,
	   "... leading a session of its own");
	like(buf, "\n/\n", "... from /");
	like(buf, "\nONLY=this\nPATH=/usr/bin:/bin\nPWD=/\n", "... with the given environment alone");
	like(buf, "/dev/null\n/dev/null\n", "... stdin and stderr /dev/null");
	ok(strstr(buf, "extra open") == NULL, "... no descriptor of its parent's left open");
	is_int(spawn_sh(&s, NULL, buf, sizeof(buf)), 0, "gpumem_proc_spawn: grep ran");
	is_str(buf, "SigBlk:\t0000000000004000\n", "... SIGTERM blocked across exec, nothing else");
	close(extra);
	snprintf(dir, sizeof(dir), "%s/gpumem-test-spawn.XXXXXX", tmp);
	ok(mkdtemp(dir) != NULL, "a directory for the output path");
	snprintf(path, sizeof(path), "%s/out", dir);
	s.out_path = path;
	s.block = NULL;
	is_int(spawn_sh(&s, "echo to-out; echo to-err >&2", buf, sizeof(buf)), 0,
	       "gpumem_proc_spawn with an output path: ran");
	fd = open(path, O_RDONLY);
	buf[fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : 0] = '\0';
	is_str(buf, "to-out\nto-err\n", "... stdout and stderr both in it");
	if (fd >= 0)
		close(fd);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	char buf[512], out[64], err[256];
	char *sh_echo[] = { "sh", "-c", "echo hi", NULL };

	ok(gpumem_proc_find("sh", "relative:/bin", buf, sizeof(buf)) == 0 && !strcmp(buf, "/bin/sh"),
	   "sh found in PATH's absolute entry (/bin)");
	ok(gpumem_proc_find("sh", "bin:.:", buf, sizeof(buf)) < 0, "relative PATH entries are never searched");
	ok(gpumem_proc_find("./sh", "/bin", buf, sizeof(buf)) < 0, "a relative name with a slash is refused");
	ok(gpumem_proc_find("/bin/sh", NULL, buf, sizeof(buf)) == 0, "an absolute name is taken as it is");

	setenv("PATH", "bin:.", 1);
	is_int(gpumem_run_capture(sh_echo, out, sizeof(out), err, sizeof(err), 10), -1,
	       "PATH with relative entries only: nothing runs");
	like(err, "not found in PATH's absolute entries", "... saying so");

	unsetenv("PATH");
	like(gpumem_proc_path(), "/bin", "no PATH: the system's default path");
	is_int(gpumem_run_capture(sh_echo, out, sizeof(out), err, sizeof(err), 10), 0,
	       "no PATH (a Slurm Epilog): sh found and run");
	is_str(out, "hi\n", "... its output captured");
	deadline();
	fork_session();
	spawn();
	/* An account that was never found ((uid_t)-1) is never "become": setresuid would keep root. */
	if (geteuid() == 0) {
		int st = 0;
		pid_t pid = fork();

		if (pid == 0)
			_exit(gpumem_proc_become((uid_t)-1, 4321, NULL, 0) == 0 ||
			      gpumem_proc_become(4321, (gid_t)-1, NULL, 0) == 0 || getuid() == 4321 ?
			      1 : 0);
		ok(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		   "become uid or gid -1 (no such account): refused, nothing changed");
	} else {
		ok(1, "# SKIP become -1: needs root");
	}
	return tap_done();
}

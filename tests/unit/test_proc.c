/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * plugin/core/base/proc.c's lookup of the programs gpumem runs by name (sacct,
 * sacctmgr, scontrol): absolute PATH entries only, and the system's default
 * path where there is no PATH at all, as in a Slurm Epilog (execvp's rule;
 * gpumem-acct found no sacct there once the lookup stopped using execvp);
 * the process-wide deadline of the job prolog and epilog (gpumem_proc_deadline);
 * the detached fork (gpumem_proc_fork_session).
 */
#include <signal.h>
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

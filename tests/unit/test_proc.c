/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * plugin/core/proc.c's lookup of the programs gpumem runs by name (sacct,
 * sacctmgr, scontrol): absolute PATH entries only, and the system's default
 * path where there is no PATH at all, as in a Slurm Epilog (execvp's rule;
 * gpumem-acct found no sacct there once the lookup stopped using execvp).
 */
#include <stdlib.h>
#include <string.h>
#include "proc.h"
#include "tap.h"

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
	return tap_done();
}

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Who reads the site file in gpumem.so (issue 33 item 2): only where a job's
# policy is decided, srun/sbatch/salloc and the job prolog; a job's steps
# (slurmstepd*.c) and its epilog, with everything they call, take it from
# the job's record.  tests/slurm/record.sh shows the behaviour on a real
# Slurm (the file edited or removed during a job); this shows the code.
. "$top_srcdir/tests/lib.sh"
S=$top_srcdir/plugin/spank
# A file of the plugin by its name, whichever wing (folder) it is in.
src() { find "$S" -name "$1" -print -quit; }
READ='gpumem_site_load\|gpumem_read_file\|gpumem_plugin_site\|args\.site\|args->site\|site\.path'
# The files that may name the site file's path or load it.
is "$(grep -rl --include="*.c" "$READ" "$S" | xargs -n1 basename | sort | tr '\n' ' ')" "jobctx.c setup.c " \
	"only the setup and the job prolog's context name or load the site file"
for f in slurmstepd.c slurmstepd_exit.c slurmstepd_gpus.c job_epilog.c jobcheck.c interval.c drain.c \
	mps.c sampler.c jobpolicy.c statedir.c; do
	unlike "$(grep -n "$READ" "$(src "$f")")" "." "$f reads no site file"
done
like "$(grep -B2 'gpumem_plugin_site(' "$(src jobctx.c)" | tr '\n' ' ')" 'if \(prolog\) \{[[:space:]]+int have = gpumem_plugin_site\(c->args->site, 0,' \
	"jobctx.c loads it (as a node does: not the login side's) ..."
like "$(grep 'setup(c, ' "$(src jobctx.c)")" 'setup\(c, ac, av, !strcmp\(step, "prolog"\)\)' "... for the job prolog only"
is "$(grep -c 'gpumem_plugin_site(\|gpumem_read_file(\|args->site\|args\.site' "$(src jobctx.c)")" 2 "... once, and names its path once (for the record)"
like "$(grep -B3 'gpumem_plugin_site(pl->args.site, 1,' "$(src setup.c)" | tr '\n' ' ')" \
	'if \(ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR\)[[:space:]]+return 0;' \
	"setup.c loads it in srun/sbatch/salloc only (slurmd and slurmstepd never)"
like "$(grep -A1 '"--site";' "$(src jobcheck.c)" | tr '\n' ' ')" '"-";' "the checks get the recorded site file on stdin, never its path"
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The hint's cache (advised.hint; doc/HARDENING.md, "The hint's cache") on
# a real local Slurm, no accounting (the hint's file is made before its
# query, which then fails: one line, the job runs): the user's own srun
# keeps $XDG_CACHE_HOME/gpumem/hints, 0600, theirs; a `gpumem` directory
# the user made a symbolic link is never followed, by the user's srun nor
# by root's; root's srun, carrying the user's XDG_CACHE_HOME or HOME or its
# own, writes no hint file at all.
. "$top_srcdir/tests/lib.sh"
slurm_test hintcache
U=${GPUMEM_TEST_USER:-gpumemtest}
slurm_standin
printf 'version: 1\nadvised:\n  hint: true\n' >"$t/site.yaml"
chmod 644 "$t/site.yaml"
plugstack "$t/plug.conf" site=$t/site.yaml check=$t/standin-check nvidia_dev=$t/nvidiactl
"$CL" start --nodes 1 --plugstack "$t/plug.conf" >"$t/start.log" 2>&1 ||
	{ cat "$t/start.log" >&2; skip_all "the local Slurm did not start"; }
eval "$("$CL" env)"
cd "$GPUMEM_CLUSTER_TMP" || exit 1
mkdir -p "$t/user" "$t/rootdir" "$t/rootcache"
chown "$U" "$t/user"
chmod 755 "$t/rootdir"
ucache() { asuser mkdir -p "$t/user/$1"; }
hints_in() { find "$@" -name hints 2>/dev/null | sort | tr '\n' ' '; }

# The user's own srun: the file is theirs (the positive case).
ucache c
run asuser env XDG_CACHE_HOME="$t/user/c" srun -N1 -J h1 true
is "$rc" 0 "the user's srun with the hint: the job runs" || diag "$out"
is "$(stat -c '%a %U' "$t/user/c/gpumem" "$t/user/c/gpumem/hints" 2>&1 | tr '\n' ' ')" \
	"700 $U 600 $U " "the user's hint file: 0700/0600, theirs"

# A link at the cache directory, to a directory of root's: root's srun makes nothing there.
ucache l
asuser ln -s "$t/rootdir" "$t/user/l/gpumem"
run env XDG_CACHE_HOME="$t/user/l" srun -N1 -J h2 true
is "$rc" 0 "root's srun carrying the user's XDG_CACHE_HOME: the job runs" || diag "$out"
is "$(hints_in "$t/rootdir")" "" "root's srun: no hint file made through the user's link"
is "$(stat -c %U "$t/rootdir")" root "... the link's target is left as it was"

# The same link, to a directory the user may write: the user's srun does not follow it either.
ucache target
ucache l2
asuser ln -s "$t/user/target" "$t/user/l2/gpumem"
run asuser env XDG_CACHE_HOME="$t/user/l2" srun -N1 -J h3 true
is "$rc" 0 "the user's srun with a linked cache directory: the job runs" || diag "$out"
is "$(hints_in "$t/user/target")" "" "the user's srun: no hint file through the link"

# Root's srun writes no hint file at all: its own cache, or the user's HOME.
run env XDG_CACHE_HOME="$t/rootcache" srun -N1 -J h4 true
is "$rc" 0 "root's srun with its own cache: the job runs" || diag "$out"
is "$(hints_in "$t/rootcache")" "" "root's srun: no hint file in root's own cache"
ucache home
run env -u XDG_CACHE_HOME HOME="$t/user/home" srun -N1 -J h5 true
is "$rc" 0 "root's srun carrying the user's HOME: the job runs" || diag "$out"
is "$(find "$t/user/home" -mindepth 1 | wc -l)" 0 "root's srun: nothing made in the user's HOME"
done_testing

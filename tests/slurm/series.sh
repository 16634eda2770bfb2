#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What differs between the Slurm series gpumem is tested on (22.05: Debian 12
# on the host; 24.11 and 26.05: Debian 13 and forky in the roots of
# tests/slurm/run --slurm SERIES),
# on a real local Slurm of the series under test (SLURM_SERIES, tests/lib.sh):
# gpumem --version names the series of the Slurm the plugin was built for
# and loaded into; a step-side callback that fails (a tampered forwarded
# policy, rejected by the node in slurmstepd) fails the step, with the exit
# codes srun and sbatch --wait give (1 on every series); an `optional` gpumem's
# failure is ignored by every series; a gpumem.so built for another series
# is refused by slurmd ("spank: ...gpumem.so: Incompatible plugin version") and jobs are
# refused with it, where such a build is at hand.
. "$top_srcdir/tests/lib.sh"
slurm_test series
diag "Slurm series under test: $SLURM_SERIES"

# --- the version names the series ------------------------------------------
run "$GPUMEM" --version
like "$out" "^SPANK plugin: built for Slurm $SLURM_SERIES\.[0-9]+: loads into Slurm $SLURM_SERIES\.x only" \
	"gpumem --version names the Slurm series ($SLURM_SERIES) the plugin was built for"

# --- what a failing init costs: said from 25.05 (plugin/spank/dispatch.c) ----------
syms=$(nm -D --defined-only "$so" 2>&1)
if series_at_least 25.05; then
	like "$syms" " [DB] slurm_spank_init_failure_mode" "$SLURM_SERIES: gpumem.so exports slurm_spank_init_failure_mode (ESPANK_NODE_FAILURE: a site's bad plugstack line drains the node)"
else
	unlike "$syms" "slurm_spank_init_failure_mode" "$SLURM_SERIES: no slurm_spank_init_failure_mode (this series does not read it)"
fi

plugstack "$t/required.conf" libexecdir=$(helpers_libexec)
echo "optional $so libexecdir=$(helpers_libexec)" >"$t/optional.conf"
printf '#!/bin/sh\nsrun -N1 true\n' >"$t/job.sh"
chmod 644 "$t"/*.conf "$t/job.sh"
"$CL" start --plugstack "$t/required.conf" >"$t/start.log" 2>&1 ||
	{ cat "$t/start.log" >&2; skip_all "the local Slurm did not start"; }
eval "$("$CL" env)"
cd "$GPUMEM_CLUSTER_TMP" || exit 1
run srun -N1 --gpumem-policy="$top_srcdir/policies/persist.yaml" env
is "$rc" 0 "the plugin built for $SLURM_SERIES loads and runs a step"
like "$out" "CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=[0-9]" "... with gpumem's environment"

# A policy that srun accepted but that was altered on the way to the node:
# slurmstepd's user_init/task_init reject it with -1.
BAD='{"version": 1, "mps": {"active_thread_percentage": 500}}'
# --- a failing step-side callback: srun -------------------------------------
run env SPANK_GPUMEM_POLICY_DATA="$BAD" srun -N1 true
diag "srun with a policy the node rejects: rc $rc"
# Measured: 1 on 22.05, 24.11 and 26.05 (23.11 made a failing step-side callback
# fail the step; gpumem's -1 from user_init/task_init already did on 22.05).
is "$rc" 1 "$SLURM_SERIES: a failing step-side callback fails the step, srun returns 1"
like "$out" "policy rejected on this node" "... and srun shows the node's reason"

# --- the same in a batch job: sbatch --wait ----------------------------------
run env SPANK_GPUMEM_POLICY_DATA="$BAD" timeout 60 sbatch --wait -o "$t/bad.out" "$t/job.sh"
diag "sbatch --wait with a policy the node rejects: rc $rc"
is "$rc" 1 "$SLURM_SERIES: sbatch --wait returns 1 when gpumem fails the batch step"

# --- optional: every tested series (26.05 too) ignores the failure ---------------
"$CL" restart-slurmd --plugstack "$t/optional.conf" >"$t/restart.log" 2>&1 || { cat "$t/restart.log" >&2; fail "restart-slurmd (optional)"; }
run env SPANK_GPUMEM_POLICY_DATA="$BAD" srun -N1 true
is "$rc" 0 "$SLURM_SERIES: an optional gpumem's failure does not fail the step (use required)"

# --- a gpumem.so built for another series ------------------------------------
other=""
# Plain builds only (tests/run's _build, tests/slurm/run's _build-slurmSERIES):
# tests/sanitize's _build-asan and _build-vg, left from an earlier run of the
# same checkout, would fail to load for ASan, not for the series.
for f in "$top_srcdir"/_build/plugin/spank/.libs/gpumem.so "$top_srcdir"/_build-slurm[0-9]*/plugin/spank/.libs/gpumem.so \
	"$top_builddir"/../_build/plugin/spank/.libs/gpumem.so "$top_builddir"/../_build-slurm[0-9]*/plugin/spank/.libs/gpumem.so; do
	[ -f "$f" ] || continue
	ov=$("$(dirname "$f")/../../cli/gpumem" --version 2>/dev/null | sed -n 's/.*built for Slurm \([0-9]*\.[0-9]*\).*/\1/p')
	if [ -n "$ov" ] && [ "$ov" != "$SLURM_SERIES" ]; then other=$f; break; fi
done
if [ -z "$other" ]; then
	skip "a gpumem.so of another series is refused: no build of another series runs here (tests/run's 22.05 build in _build is loaded into 24.11 by tests/slurm/run --slurm 24.11; a 24.11 build needs Debian 13's glibc)"
else
	diag "the other series' build: $other ($ov)"
	echo "required $other" >"$t/other.conf"
	chmod 644 "$t/other.conf"
	: >"$t/restart.log"
	"$CL" restart-slurmd --plugstack "$t/other.conf" >"$t/restart.log" 2>&1
	line=$(grep -h 'Incompatible' "$GPUMEM_CLUSTER_DIR"/log/slurmd.*.log | tail -1)
	diag "slurmd: $line"
	like "$line" "error: spank: .*gpumem\.so: Incompatible plugin version" "slurmd refuses a gpumem.so built for Slurm $ov"
	run srun -N1 true
	like "$out" "Failed to load plugin .*gpumem\.so" "... srun fails to load it too"
	diag "srun with it: rc $rc: $(printf '%s' "$out" | tail -2)"
	[ "$rc" -ne 0 ] && pass "... and, required, no step runs with it" || fail "... and, required, no step runs with it"
fi
done_testing

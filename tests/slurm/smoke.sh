#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The local Slurm of tests/slurm/cluster itself, without gpumem: start it,
# run jobs through srun, sbatch and salloc as root and as the unprivileged
# test user, restart slurmd, stop it, and check that nothing is left running.
# shellcheck disable=SC2154 # top_srcdir, out and rc come from lib.sh
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
CLUSTER="$top_srcdir/tests/slurm/cluster"
CL=$CLUSTER

[ "$(id -u)" = 0 ] || skip_all "needs root (starts munged, slurmctld and slurmd on loopback)"
if [ -n "${SLURM_PREFIX:-}" ]; then
	ls "$SLURM_PREFIX"/usr/sbin/slurmctld* >/dev/null 2>&1 || skip_all "no slurmctld under SLURM_PREFIX=$SLURM_PREFIX"
else
	PATH="$PATH:/usr/sbin:/sbin"
	for b in slurmctld slurmd slurmstepd srun sbatch salloc sinfo munged; do
		command -v "$b" >/dev/null 2>&1 ||
			skip_all "$b not installed (apt-get install slurmctld slurmd slurm-client munge)"
	done
fi

# A state dir of its own: a cluster that someone keeps in the default one
# stays untouched.
GPUMEM_CLUSTER_DIR=$(mktemp -d /tmp/gpumem-smoke.XXXXXX) || { echo "Bail out! mktemp"; exit 1; }
export GPUMEM_CLUSTER_DIR
dir=$GPUMEM_CLUSTER_DIR
cleanup() { "$CLUSTER" stop >/dev/null 2>&1; rm -rf "$dir"; }
trap cleanup EXIT
# Killed by make check's time bound: tests/lib.sh.
slurm_test_guard "$dir" "$CLUSTER"
T=60 # seconds that any one job may take

# Processes of this cluster that still run (zombies do not count).
ours_running() {
	local p st
	for p in /proc/[0-9]*; do
		p=${p#/proc/}
		[ "$p" = $$ ] && continue
		if grep -qzxF "GPUMEM_CLUSTER_DAEMON=$dir" "/proc/$p/environ" 2>/dev/null ||
			tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF "$dir/"; then
			st=$(awk '/^State:/ {print $2}' "/proc/$p/status" 2>/dev/null)
			[ -n "$st" ] && [ "$st" != Z ] && echo "$p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
		fi
	done
}

t0=$(date +%s%N)
run "$CLUSTER" start
t1=$(date +%s%N)
is "$rc" 0 "cluster start"
[ "$rc" = 0 ] || { diag "$out"; "$CLUSTER" logs 30 | sed 's/^/# /'; done_testing; }
diag "start took $(((t1 - t0) / 1000000)) ms"
eval "$("$CLUSTER" env)"
is "$SLURM_CONF" "$dir/slurm.conf" "cluster env sets SLURM_CONF"
cd "$GPUMEM_CLUSTER_TMP" || exit 1

run timeout $T sinfo -h -N -o '%N %t'
is "$out" "gpumem1 idle" "sinfo: gpumem1 idle"

U=${GPUMEM_TEST_USER:-gpumemtest}
# The name a task's `hostname` prints: this host's, or with --hosts (from
# GPUMEM_CLUSTER_ARGS, tests/slurm/run --hosts) its node's own (UTS namespace).
node_host=$(hostname)
grep -qx 'HOSTS=1' "$dir/cluster.state" 2>/dev/null && node_host=gpumem1

for who in root "$U"; do
	if [ "$who" = root ]; then as=""; else as=asuser; fi

	run $as timeout $T srun -N1 true
	is "$rc" 0 "$who: srun -N1 true"

	# -Q: under load the node may still be completing the last job, and
	# srun's "queued and waiting for resources" would join the output.
	run $as timeout $T srun -Q hostname
	is "$rc:$out" "0:$node_host" "$who: srun hostname"

	run $as timeout $T srun -Q -N1 id -un
	is "$out" "$who" "$who: the job runs as $who"

	run $as timeout $T srun -N1 sh -c 'exit 3'
	is "$rc" 3 "$who: srun passes the task's exit code on"

	o="$GPUMEM_CLUSTER_TMP/sbatch.$who.out"
	run $as timeout $T sbatch --wait -o "$o" --wrap 'echo "$(id -un) $SLURM_JOB_NODELIST"'
	is "$rc" 0 "$who: sbatch --wait"
	is "$(cat "$o" 2>/dev/null)" "$who gpumem1" "$who: the batch job's output"

	run $as timeout $T sbatch --wait -o /dev/null --wrap 'exit 5'
	isnt_zero=$([ "$rc" != 0 ] && echo yes || echo "no (rc 0)")
	is "$isnt_zero" yes "$who: sbatch --wait fails with a failing job"

	run $as timeout $T salloc -N1 srun sh -c 'echo "step $SLURM_JOB_ID.$SLURM_STEP_ID as $(id -un)"'
	is "$rc" 0 "$who: salloc ... srun"
	like "$out" "step [0-9]+\.0 as $who" "$who: the step ran inside the allocation"
done

run "$CLUSTER" status
is "$rc" 0 "cluster status: all daemons running"

run "$CLUSTER" restart-slurmd
is "$rc" 0 "cluster restart-slurmd"
run timeout $T srun -N1 true
is "$rc" 0 "srun after restart-slurmd"

run "$CLUSTER" stop
is "$rc" 0 "cluster stop"
left=$(ours_running)
is "$left" "" "nothing of the cluster left running"
left=$(ps -e -o stat=,pid=,args= | awk '$1 !~ /^Z/' | grep -E '(slurmctld|slurmd|slurmstepd|munged)' | grep -F "$dir")
is "$left" "" "no slurm daemon or munged of it in ps"
run "$CLUSTER" stop
is "$rc" 0 "cluster stop again (idempotent)"

done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Faults and load on a real local Slurm: scancel during the before-job check,
# kill -9 of a task, a step past its time limit, slurmd restarted mid-job,
# 100 concurrent steps with policies.  Afterwards: no check process, no MPS
# directory, every report present, whole and saying what happened.
# Where a GPU check must run without a GPU, the plugin uses the stand-in
# device and check program (see tests/slurm/standin-check).
. "$top_srcdir/tests/lib.sh"
slurm_test faults
mkdir -p "$t/reports" "$t/fail"
slurm_standin
cat >"$t/site.yaml" <<YAML
version: 1
report:
  dir: $t/reports
check:
  timeout: 20
YAML
printf 'version: 1\ncheck:\n  before: true\n  after: true\n' >"$t/both.yaml"
printf 'version: 1\nl2:\n  persisting_limit: 15%%\nmps:\n  active_thread_percentage: 30\ncheck:\n  after: true\n' >"$t/load.yaml"
chmod 644 "$t"/*.yaml
# No GRES on these nodes: gpus=all (the job may use every GPU of the node).
plugstack "$t/plugstack.conf" site=$t/site.yaml libexecdir=$(helpers_libexec) check=$t/standin-check nvidia_dev=$t/nvidiactl gpus=all
chmod 644 "$t/plugstack.conf"
"$CL" start --plugstack "$t/plugstack.conf" >"$t/start.log" 2>&1 ||
	{ cat "$t/start.log" >&2; skip_all "the local Slurm did not start"; }
eval "$("$CL" env)"
wait_file() { for _ in $(seq 1 "${2:-60}"); do [ -f "$1" ] && return 0; sleep 0.5; done; return 1; }
no_leftovers() {   # what: nothing of ours is left running or lying around
	local left
	for _ in $(seq 1 30); do
		left=$(pgrep -af "$t/standin-check"; ls -d "$GPUMEM_CLUSTER_MPS_DIR"/job* 2>/dev/null; ls -a "$t/reports" | grep '\.tmp$')
		[ -z "$left" ] && break
		sleep 0.5
	done
	is "$left" "" "$1: no check process, MPS directory or temporary file left"
}

# --- scancel while the before-job check runs -------------------------------
touch "$t/fail/sleep"
jid=$(sbatch --parsable -o /dev/null --gpumem-policy="$t/both.yaml" --wrap 'echo should-not-run')
for _ in $(seq 1 240); do pgrep -f "$t/standin-check" >/dev/null && break; sleep 0.25; done
pgrep -f "$t/standin-check" >/dev/null && pass "the before-job check is running" || fail "the before-job check is running"
scancel "$jid"
rm -f "$t/fail/sleep"
f="$t/reports/job$jid.prolog.gpumem1.before.json"
wait_file "$f" 60 && pass "scancel: the before report is written anyway" || fail "scancel: before report ($f)"
like "$(json "$f" 'd["status"] + "|" + str(d["reason"])' 2>&1)" "^(ran\|None|failed\|gpumem-check was killed by signal (9|15)|timed_out\|killed: no answer within 25 s)$" "scancel: the report says what happened (the prolog's check is not cut short by scancel)"
no_leftovers "scancel during the check"

# --- kill -9 of a task --------------------------------------------------------
# The job ID goes to a file: a line on stdout may not be forwarded before the kill.
rm -f "$GPUMEM_CLUSTER_TMP/kill9.jid"
run srun -N1 --gpumem-policy="$t/both.yaml" sh -c 'echo "$SLURM_JOB_ID" >"$1"; kill -9 $$' sh "$GPUMEM_CLUSTER_TMP/kill9.jid"
[ "$rc" -ne 0 ] && pass "kill -9: the step fails" || fail "kill -9: the step fails"
jid=$(cat "$GPUMEM_CLUSTER_TMP/kill9.jid" 2>/dev/null)
wait_file "$t/reports/job$jid.epilog.gpumem1.after.json" 40 && pass "kill -9: teardown ran, the after report is there" || fail "kill -9: after report"
is "$(json "$t/reports/job$jid.epilog.gpumem1.after.json" 'd["status"] + "|" + d["verdict"]' 2>&1)" "ran|pass" "kill -9: the after-check ran"
no_leftovers "kill -9 of a task"

# --- a step past its time limit ----------------------------------------------
start=$(date +%s)
run timeout 150 srun -N1 -t 1 --gpumem-policy="$t/both.yaml" sh -c 'echo "job=$SLURM_JOB_ID"; sleep 300'
jid=$(printf '%s' "$out" | sed -n 's/^job=//p')
like "$out" "(TIME LIMIT|time limit|DUE TO TIME)" "time limit: Slurm ended the step after $(( $(date +%s) - start )) s"
wait_file "$t/reports/job$jid.epilog.gpumem1.after.json" 60 && pass "time limit: the after report is there" || fail "time limit: after report"
like "$(json "$t/reports/job$jid.epilog.gpumem1.after.json" 'd["status"] + "|" + d["verdict"]' 2>&1)" "^(ran\|pass|failed\|error)$" "time limit: the report is whole and says what happened"
no_leftovers "time limit"

# --- slurmd restarted in the middle of a job ---------------------------------
timeout 60 srun -N1 --gpumem-policy="$t/both.yaml" sh -c 'echo "job=$SLURM_JOB_ID"; sleep 4' >"$t/mid.out" 2>&1 &
bg=$!
for _ in $(seq 1 240); do grep -q '^job=' "$t/mid.out" && break; sleep 0.25; done   # the job runs
"$CL" restart-slurmd >/dev/null 2>&1
wait $bg
rc=$?
jid=$(sed -n 's/^job=//p' "$t/mid.out")
is "$rc" 0 "slurmd restart: the job still completes"
wait_file "$t/reports/job$jid.epilog.gpumem1.after.json" 40 && pass "slurmd restart: slurmstepd wrote the after report" || fail "slurmd restart: after report"
no_leftovers "slurmd restart"

# --- 100 concurrent steps with policies ----------------------------------------
rm -f "$t/reports"/*
jid=$(sbatch --parsable -N1 --exclusive -o "$t/load.out" --gpumem-policy="$t/load.yaml" --wrap '
for i in $(seq 1 100); do
	srun --overlap -N1 -n1 --gpumem-policy='"$t"'/load.yaml sh -c "echo \$SLURM_STEP_ID \$CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT \$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE" &
done
wait')
t0=$(date +%s)
for _ in $(seq 1 240); do squeue -h -j "$jid" 2>/dev/null | grep -q . || break; sleep 0.5; done
diag "the 100-step job: $(($(date +%s) - t0)) s; $(squeue -h -j "$jid" -o '%T' 2>/dev/null || echo gone)"
is "$(grep -c '^[0-9]* 15 30$' "$t/load.out")" 100 "100 concurrent steps: every one saw L2 15% and MPS 30%" ||
	grep -v '^[0-9]* 15 30$' "$t/load.out" | sort | uniq -c | sort -rn | head -8 | sed 's/^/# load.out: /'
is "$(cut -d' ' -f1 "$t/load.out" | sort -u | grep -c .)" 100 "... 100 distinct steps"
for _ in $(seq 1 120); do ls "$t/reports" | grep -q "^job$jid\.epilog\." && break; sleep 0.5; done
n=$(ls "$t/reports" | grep -c "^job$jid\.")
is "$n" 1 "the 100-step job: one report (the epilog's), not 100"
ok_json=0
for f in "$t/reports"/*.json; do python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$f" 2>/dev/null && ok_json=$((ok_json + 1)); done
is "$ok_json" "$(ls "$t/reports"/*.json | wc -l)" "every report is whole, valid JSON"
no_leftovers "100 concurrent steps"
done_testing

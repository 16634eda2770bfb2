#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# GPU work once per job per node, on a real local Slurm: the before-check in
# the job prolog, the after-check, L2 reset and MPS stop in the job epilog,
# for salloc, sbatch and srun jobs; the epilog still guards the node; the
# per-job MPS daemon started once and gone after the job, also when a step's
# slurmstepd was killed; the probe cache; check.min_interval (reuse on NVML
# evidence, one GPU and two).
# No GPU here: stand-ins for the device file, gpumem-check, gpumem-probe,
# gpumem-l2reset and nvidia-cuda-mps-control (tests/slurm/standin*), each of
# which logs its runs; Slurm, the plugin and its hooks are real.
. "$top_srcdir/tests/lib.sh"
slurm_test perjob
U=${GPUMEM_TEST_USER:-gpumemtest}
B=$t/bin
mkdir -p "$t/reports"
standin_bin "$B"
site_checks "$t/site.yaml"
site_checks "$t/site-interval.yaml" 20 10
# The set-aside's cost is measured at the job's own 40%: above the cap
# gpumem keeps for a GPU it has not measured, so this site raises it.
sed -i 's/^limits:$/limits:\n  l2_model_max_percent: {other: 62}/' "$t/site.yaml" "$t/site-interval.yaml"
printf 'version: 1\ncheck:\n  before: true\n  on_fail: fail\n' >"$t/before.yaml"
printf 'version: 1\ncheck:\n  after: true\n  on_fail: drain\n' >"$t/after.yaml"
printf 'version: 1\nmps:\n  daemon: job\n  active_thread_percentage: 50\ncheck:\n  before: true\n' >"$t/mps.yaml"
printf 'version: 1\nl2:\n  persisting_limit: 50%%\n  reset_at_exit: true\n' >"$t/l2.yaml"
printf 'version: 1\nl2:\n  persisting_limit: 50%%\ncheck:\n  after: true\n' >"$t/l2after.yaml"
printf 'version: 1\nl2:\n  persisting_limit: 40%%\ncheck:\n  after: true\n  l2_ab: true\n' >"$t/l2ab.yaml"
printf 'version: 1\ncheck:\n  after: true\n  l2_ab: true\n' >"$t/ab.yaml"
chmod 644 "$t"/*.yaml
plug() { plugstack "$2" site=$1 libexecdir=$B check=$B/standin-check nvidia_dev=$t/nvidiactl mps_control=$B/nvidia-cuda-mps-control; chmod 644 "$2"; }
plug "$t/site.yaml" "$t/plugstack.conf"
plug "$t/site-interval.yaml" "$t/interval.conf"
"$CL" start --nodes 2 --gpus 1 --plugstack "$t/plugstack.conf" >"$t/start.log" 2>&1 ||
	{ cat "$t/start.log" >&2; skip_all "the local Slurm did not start"; }
eval "$("$CL" env)"
nruns() { wc -l <"$B/$1" | tr -d ' '; }
# no_daemon NAME: no stand-in MPS daemon runs (a zombie waiting for its reaper has ended).
no_daemon() {
	local left
	# This test's own stand-in daemons only (another suite may run beside it).
	left=$(ps -eo stat=,pid=,args= | awk -v d="$B/nvidia-cuda-mps-control -f" '$1 !~ /^Z/ && index($0, d) && !/awk/')
	if [ -z "$left" ]; then pass "$1"; else fail "$1"; diag "$left"; fi
}

# --- one before-check per job per node: salloc (20 steps), sbatch, srun ---------------
run asuser salloc -N1 -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/before.yaml" sh -c 'echo "job=$SLURM_JOB_ID"; for i in $(seq 20); do srun true || exit 1; done; echo steps-done'
jid=$(printf '%s' "$out" | sed -n 's/^job=//p')
like "$out" "steps-done" "salloc: 20 steps ran"
wait_idle gpumem1
is "$(nruns runs)" 1 "salloc, 20 steps: one before-check"
is "$(ls "$t/reports" | grep -c "^job$jid\.")" 1 "... and one report"
f="$t/reports/job$jid.prolog.gpumem1.before.json"
is "$(json "$f" 'd["phase"] + "|" + d["verdict"] + "|" + d["gpus"]' 2>&1)" "before|pass|0" "... from the job prolog, on the job's GPU"
asuser sbatch -N2 --gres=gpu:1 -o /dev/null --wait --gpumem-policy="$t/before.yaml" --wrap 'srun -N2 true; srun -N2 true' >/dev/null
is "$(nruns runs)" 3 "sbatch -N2, 2 steps: one before-check per node"
asuser srun -N2 --gres=gpu:1 --gpumem-policy="$t/before.yaml" true
wait_idle gpumem2
is "$(nruns runs)" 5 "srun -N2: one before-check per node"

# --- a failing before-check fails every step of the job, no drain (on_fail: fail) ----
touch "$B/fail/gpumem1"
run asuser salloc -N1 -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/before.yaml" sh -c 'srun echo ran1; srun echo ran2'
unlike "$out" "ran[12]" "failed before-check: no step runs"
like "$out" "GPU check before the job failed on gpumem1: gpu0: triad 1200" "... each says why"
wait_idle gpumem1 && pass "... and the node is not drained" || fail "node state $(node_state gpumem1)"
rm -f "$B/fail/gpumem1"
ls "$GPUMEM_CLUSTER_STATE_DIR" | grep -q '^job.*\.rec$' && fail "the epilog removed the job's record" || pass "the epilog removed the job's record"

# --- the after-check in the epilog guards the node -------------------------------------
echo 6 >"$B/delay"   # long enough to be seen running on a loaded machine
: >"$B/runs"
asuser srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/after.yaml" true
j2=$(asuser sbatch --parsable -w gpumem1 --gres=gpu:1 -o /dev/null --wrap true)
for _ in $(seq 1 600); do pgrep -f "$B/standin-check" >/dev/null && break; sleep 0.1; done
sleep 1
st=$(squeue -h -j "$j2" -o %T)
is "$st" "PENDING" "a job for the GPU submitted while the after-check runs waits (node $(node_state gpumem1))"
for _ in $(seq 1 240); do [ "$(squeue -h -j "$j2" -o %T)" = "" ] && break; sleep 0.25; done
check_end=$(awk '{print $2}' "$B/runs")   # the stand-in logs when its delay is over
start2=$(date -d "$(scontrol show job "$j2" -o | sed -n 's/.* StartTime=\([^ ]*\).*/\1/p')" +%s)
python3 -c "import sys; sys.exit(0 if $start2 + 1 >= $check_end else 1)" &&
	pass "... and starts only once the check has ended" || fail "job 2 started at $start2, check ended $check_end"
touch "$B/fail/gpumem1"
asuser srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/after.yaml" true
j3=$(asuser sbatch --parsable -w gpumem1 --gres=gpu:1 -o /dev/null --wrap true)
wait_state gpumem1 DRAIN
like "$(node_state gpumem1)" "DRAIN" "a failing after-check (on_fail: drain) drains the node"
is "$(squeue -h -j "$j3" -o %T)" "PENDING" "... and the waiting job never starts there"
scancel "$j3"
rm -f "$B/fail/gpumem1" "$B/delay"
scontrol update NodeName=gpumem1 State=RESUME
wait_idle gpumem1

# --- the per-job MPS daemon: once per job, stopped by the epilog -------------------------
run asuser salloc -N1 -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/mps.yaml" sh -c 'echo "job=$SLURM_JOB_ID"; for i in 1 2 3 4 5; do srun printenv CUDA_MPS_PIPE_DIRECTORY; done'
jid=$(printf '%s' "$out" | sed -n 's/^job=//p')
wait_idle gpumem1
is "$(grep -c "^start $(id -u "$U") /run/gpumem-mps/job$jid/pipe" "$B/mps.log")" 1 "5 steps: the MPS daemon started once, as the user"
is "$(printf '%s\n' "$out" | grep -c "^/run/gpumem-mps/job$jid/pipe$")" 5 "... and every step uses it"
is "$(grep -c "^quit .*/job$jid/pipe" "$B/mps.log")" 1 "the epilog stopped it"
# Helpers start with default signals (proc.c) and get their input even where
# the epilog's stdin is closed: "quit" ends the daemon, no SIGKILL fallback.
like "$(grep -a "job $jid: per-job MPS daemon" "$GPUMEM_CLUSTER_DIR/log/slurmd.gpumem1.log")" "daemon [0-9]+ stopped \(quit\)$" "... through quit, nothing left to kill"
[ -e "$GPUMEM_CLUSTER_MPS_DIR/job$jid" ] && fail "its directory is removed" || pass "its directory is removed"
no_daemon "no daemon left"

# --- the daemon starts beside the prolog (job_prolog.c): no task before it is up ---------
echo 1 >"$B/mps.delay"
: >"$B/runs"
run asuser srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/mps.yaml" sh -c 'echo "job=$SLURM_JOB_ID"; test -s "$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid" && echo DAEMON-UP'
jid=$(printf '%s' "$out" | sed -n 's/^job=//p')
rm -f "$B/mps.delay"
like "$out" "DAEMON-UP" "a daemon 1 s slow to start: the task starts only once it is up"
log=$(grep -a -e "job $jid: per-job MPS daemon started" -e "check before job $jid\.prolog" "$GPUMEM_CLUSTER_DIR/log/slurmd.gpumem1.log")
like "$(printf '%s\n' "$log" | head -1)" "check before job $jid\.prolog" "... the before-check runs first, on the bare GPU (as check_user: the job's daemon serves the job's user only)"
like "$(printf '%s\n' "$log" | tail -1)" "per-job MPS daemon started" "... and the daemon starts after it"
like "$(tail -1 "$B/runs" | cut -d' ' -f3,4)" "^/run/gpumem(-mps)?/nomps $(id -u gpumem-check)$" "... the check had root's empty nomps as its MPS pipe directory, and ran as gpumem-check"
wait_idle gpumem1
is "$(ls "$GPUMEM_CLUSTER_STATE_DIR" "$GPUMEM_CLUSTER_MPS_DIR" | grep -c -e "^mps\.$jid\." -e "^job$jid")" 0 "the epilog removed its directory and records"
touch "$B/mps.fail"
run asuser srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/mps.yaml" sh -c 'echo TASK-RAN'
rm -f "$B/mps.fail"
[ "$rc" != 0 ] && pass "a daemon that does not start fails the step (exit $rc)" || fail "the step ran without its MPS daemon"
unlike "$out" "TASK-RAN" "... its task does not run"
like "$out" "the job's MPS daemon did not start: .*told to fail" "... and srun says why"
wait_idle gpumem1
no_daemon "no daemon left after a failed start"

# --- kill -9 of a step's slurmstepd leaves nothing behind -------------------------------
asuser srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/mps.yaml" sh -c 'echo "job=$SLURM_JOB_ID"; sleep 60' >"$t/k.out" 2>&1 &
bg=$!
for _ in $(seq 1 240); do jid=$(sed -n 's/^job=//p' "$t/k.out"); [ -n "$jid" ] && break; sleep 0.25; done
# This cluster's step only: another cluster on the host has its own job $jid.
pid=$(cluster_pids "slurmstepd: \[$jid\.0\]" | head -1)
[ -n "$pid" ] && kill -9 "$pid"
scancel "$jid" 2>/dev/null
wait "$bg" 2>/dev/null
wait_idle gpumem1
for _ in $(seq 1 240); do [ -e "$GPUMEM_CLUSTER_MPS_DIR/job$jid" ] || break; sleep 0.25; done
[ -n "$pid" ] && pass "slurmstepd of $jid.0 killed with -9" || fail "no slurmstepd found for $jid.0"
[ -e "$GPUMEM_CLUSTER_MPS_DIR/job$jid" ] && fail "kill -9: the MPS directory is gone" || pass "kill -9: the MPS directory is gone"
no_daemon "kill -9: no MPS daemon left"
is "$(json "$t/reports/job$jid.prolog.gpumem1.before.json" 'd["verdict"]' 2>&1)" "pass" "kill -9: the before-check's report is there"

# --- the probe cache: the second job starts no probe ------------------------------------
run asuser srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/l2.yaml" printenv CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT
like "$out" "^[0-9]+$" "the step gets its L2 limit ($out%) from the probe"
is "$(nruns probe.runs)" 1 "first job: one probe run"
is "$(cut -d' ' -f1 "$B/probe.runs")" 0 "... as root, for root's cache"
wait_idle gpumem1
run asuser srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/l2.yaml" sh -c 'for i in 1 2 3; do printenv CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT; done'
is "$(nruns probe.runs)" 1 "second job: no probe run (cache)"
like "$out" "^[0-9]+" "... and the step still gets its L2 limit"
wait_idle gpumem1
is "$(nruns l2reset.runs)" 2 "one L2 reset per job, in the epilog"
is "$(cut -d' ' -f2 "$B/l2reset.runs" | sort -u)" "0" "... on the job's GPU"
is "$(stat -c '%U %a' "$GPUMEM_CLUSTER_STATE_DIR/probe.cache")" "root 600" "the cache is root's alone (in the default state_dir)"

# --- an after-check and an L2 reset: one CUDA start (issue 26) ---------------------------
: >"$B/l2reset.runs"
run asuser srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/l2after.yaml" sh -c 'echo "job=$SLURM_JOB_ID"'
jid=$(jobid_of "$out")
wait_idle gpumem1
is "$(nruns check-l2reset.runs) $(nruns l2reset.runs)" "1 0" "L2 limit and an after-check: the check resets L2 (--l2-reset), no gpumem-l2reset"
like "$(grep -a "job $jid: L2 reset" "$GPUMEM_CLUSTER_DIR/log/slurmd.gpumem1.log")" "L2 reset by the after-check on GPUs 0" "... and the log says so"
touch "$B/l2reset-fail"
run asuser srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/l2after.yaml" true
wait_idle gpumem1
rm -f "$B/l2reset-fail"
is "$(nruns check-l2reset.runs) $(nruns l2reset.runs)" "2 1" "... a check that could not reset: gpumem-l2reset does it"

# --- the L2 A/B measures the job's set-aside's own cost, and runs its window at it ---------
run asuser srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/l2ab.yaml" sh -c 'echo "job=$SLURM_JOB_ID"'
jid=$(jobid_of "$out")
wait_idle gpumem1
f="$t/reports/job$jid.epilog.gpumem1.after.json"
sa='d["check"]["devices"][0]["l2_ab"]'
is "$(json "$f" "str($sa[\"setaside\"][\"percent\"]) + ' ' + str($sa[\"setaside\"][\"ratio\"])" 2>&1)" "40.0 0.75" \
	"a 40% limit with check.after and l2_ab: the after-check's report carries l2_ab.setaside, the cost of the job's 40%"
is "$(json "$f" "$sa[\"persisting_bytes\"]" 2>&1)" 25165824 "... and its window A/B ran at the job's set-aside (40% of L2), not the GPU's most"
like "$(grep -a "check after job $jid" "$GPUMEM_CLUSTER_DIR/log/slurmd.gpumem1.log")" "l2 set-aside 40% triad 0.75x" "... and the slurmd log's figures say it"
run asuser srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/ab.yaml" sh -c 'echo "job=$SLURM_JOB_ID"'
jid=$(jobid_of "$out")
wait_idle gpumem1
is "$(json "$t/reports/job$jid.epilog.gpumem1.after.json" "str($sa[\"setaside\"]) + ' ' + str($sa[\"persisting_bytes\"])" 2>&1)" "None 39321600" \
	"l2_ab without a limit: no set-aside to cost, the window A/B at the GPU's most"

# --- check.min_interval: reuse on NVML evidence (gpumem-health over the stand-in NVML) ---
health_standin "$B"
"$CL" restart-slurmd --plugstack "$t/interval.conf" >/dev/null 2>&1
: >"$B/runs"
asuser srun -w gpumem2 --gres=gpu:1 --gpumem-policy="$t/after.yaml" sh -c 'echo "job=$SLURM_JOB_ID"' >"$t/i1.out" 2>&1
wait_idle gpumem2
is "$(nruns runs)" 1 "min_interval 10: the job's own after-check runs (issue 32)"
run asuser srun -w gpumem2 --gres=gpu:1 --gpumem-policy="$t/before.yaml" sh -c 'echo "job=$SLURM_JOB_ID"'
jid=$(printf '%s' "$out" | sed -n 's/^job=//p')
wait_idle gpumem2
is "$(nruns runs)" 1 "min_interval 10: the previous job's after-check passed minutes ago, NVML unchanged: no before-check run"
like "$(json "$t/reports/job$jid.prolog.gpumem2.before.json" 'd["status"] + " (" + d["reason"] + ")"' 2>&1)" "^reused \(bandwidth measured 0 min ago after job [0-9]+, NVML health unchanged since\)$" "... reported as reused, with what it rests on"
like "$(grep -h "check before job $jid.prolog" "$GPUMEM_CLUSTER_DIR/log/slurmd.gpumem2.log")" "pass \(bandwidth measured" "... and logged so"

# --- the job's MPS daemon numbers its GPUs from 0 -----------------------------------------
# NVIDIA's MPS reads a client's CUDA_VISIBLE_DEVICES against the GPUs its daemon was
# started with: a job on GPU 1 (the daemon has GPU 1 alone) whose tasks keep Slurm's
# "1" finds no GPU (seen on two H200, bench/results/gpu/2026-11-27-h200x2-c).
"$CL" stop >/dev/null 2>&1
"$CL" start --nodes 1 --gpus 2 --plugstack "$t/plugstack.conf" >"$t/start.log" 2>&1 ||
	{ cat "$t/start.log" >&2; skip_all "the local Slurm did not restart with 2 GPUs"; }
eval "$("$CL" env)"
asuser sbatch -w gpumem1 --gres=gpu:1 -o /dev/null --wrap 'sleep 20' >/dev/null   # holds GPU 0
for _ in $(seq 1 240); do squeue -h -t R -w gpumem1 | grep -q . && break; sleep 0.25; done
: >"$B/runs"
run asuser srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/mps.yaml" sh -c 'echo "step=$SLURM_STEP_GPUS cvd=$CUDA_VISIBLE_DEVICES"'
like "$out" "^step=1 cvd=0$" "an MPS job on GPU 1: its tasks get CUDA_VISIBLE_DEVICES=0, the daemon's number for it"
run asuser srun -w gpumem1 --gres=gpu:1 sh -c 'echo "step=$SLURM_STEP_GPUS cvd=$CUDA_VISIBLE_DEVICES"'
like "$out" "^step=[01] cvd=[01]$" "... a job without the daemon keeps Slurm's numbering"
like "$(grep -h "job [0-9.]*: policy .*mps.yaml" "$GPUMEM_CLUSTER_DIR/log/slurmd.gpumem1.log" | tail -1)" "CUDA_MPS_PIPE_DIRECTORY=" "... the MPS job's step was set up"

# --- a 2-GPU job rests on a pass only where every GPU's evidence holds (issue 35) --------
wait_idle gpumem1               # the job holding GPU 0 has ended
"$CL" restart-slurmd --plugstack "$t/interval.conf" >/dev/null 2>&1
echo 2 >"$B/gpus"               # the stand-in check reports two devices
: >"$B/runs"
two() { run asuser srun -w gpumem1 --gres=gpu:2 --gpumem-policy="$t/before.yaml" sh -c 'echo "job=$SLURM_JOB_ID"'; jid=$(jobid_of "$out"); wait_idle gpumem1; }
evb() { json "$t/reports/job$1.prolog.gpumem1.before.json" 'd["status"] + "|" + d["gpus"] + "|" + d["evidence"]["text"]' 2>&1; }
two
ja=$jid
like "$(evb "$ja")" "^ran\|0,1\|measured: gpu0: no measured pass on record$" "2 GPUs, no pass on record: measured on both"
two
like "$(evb "$jid")" "^reused\|0,1\|reused: bandwidth measured 0 min ago before job $ja, NVML health unchanged since$" "... the next 2-GPU job rests on that pass, both GPUs unchanged"
echo "remap_c=1" >"$B/health.values.1"
two
is "$(evb "$jid")" "ran|0,1|measured: gpu1: NVML health changed since job $ja's pass (remapped.correctable 0 -> 1)" "a row remapped on GPU 1 alone: the check measures both, naming GPU 1"
is "$(nruns runs)" 2 "... two checks measured in three jobs"
echo "remap_c=2" >"$B/health.values.1"
echo 1 >"$B/fail/gpumem1"       # the measured check fails on GPU 1 alone
two
rm -f "$B/fail/gpumem1"
P=${GPUMEM_CLUSTER_STATE_DIR:-/run/gpumem}/gpus
is "$(ls "$P" | grep -c '^pass\.gpumem1\.')" 0 "a check that fails on one of the two GPUs forgets both passes"
two
like "$(evb "$jid")" "^ran\|0,1\|measured: gpu0: no measured pass on record$" "... so the next job measures both"
rm -f "$B/health.values.1" "$B/gpus"
done_testing

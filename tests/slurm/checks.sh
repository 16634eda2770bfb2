#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Checks around a job on a real local Slurm of three nodes: reports per job,
# step, node and phase, written whole; a failing check drains only its node,
# never over an admin's reason, and a later passing check resumes only
# gpumem's own drain; check.before with on_fail: fail stops the job.
#
# CI has no GPU, so where a failure must be forced the plugin is pointed at
# a stand-in device file and a stand-in check program (plugstack nvidia_dev=
# and check=) that prints a gpumem-check/1 document with the verdict the
# test asks for.  Everything else is real: srun, slurmd, scontrol, the
# drain.  tests/gpu/run forces a real failure with gpumem-check --plant-error.
. "$top_srcdir/tests/lib.sh"
slurm_test checks
mkdir -p "$t/reports" "$t/textfile" "$t/fail"
chmod 777 "$t/fail"

slurm_standin

cat >"$t/site.yaml" <<YAML
version: 1
limits:
  on_fail: [warn, fail, drain]
report:
  dir: $t/reports
  textfile_dir: $t/textfile
drain:
  enabled: true
  reason: "gpumem: GPU check failed"
check:
  timeout: 2
YAML
printf 'version: 1\ncheck:\n  after: true\n  on_fail: drain\n' >"$t/drain.yaml"
printf 'version: 1\ncheck:\n  before: true\n  on_fail: fail\n' >"$t/before-fail.yaml"
printf 'version: 1\ncheck:\n  after: true\n' >"$t/after.yaml"
chmod 644 "$t"/*.yaml
lx=$(helpers_libexec) || exit 1
# "No GPU here", on any machine: the device that says "GPUs" does not exist.
plugstack "$t/real.conf" site=$t/site.yaml libexecdir=$lx nvidia_dev=$t/no-such-device
plugstack "$t/standin.conf" site=$t/site.yaml libexecdir=$lx check=$t/standin-check nvidia_dev=$t/nvidiactl
chmod 644 "$t"/*.conf

# Two GPUs a node: two jobs with a GPU each share a node (the drain tests).
"$CL" start --nodes 3 --gpus 2 --plugstack "$t/real.conf" >"$t/start.log" 2>&1 ||
	{ cat "$t/start.log" >&2; skip_all "the local Slurm did not start"; }
eval "$("$CL" env)"
node_reason() { scontrol show node "$1" -o | sed -n 's/.* Reason=\(.*\) \[.*/\1/p'; }
# wait_idle NODE: until slurmctld sees it idle and responding (bounded).
# bg_job NODE CMD...: start a job there in the background, return once it runs.
bg_job() {
	local node=$1; shift
	timeout 60 srun -w "$node" --gres=gpu:1 "$@" >/dev/null 2>&1 &
	bg=$!
	for _ in $(seq 1 240); do squeue -h -w "$node" -t R | grep -q . && return 0; sleep 0.25; done
	return 1
}

# --- no GPU on these nodes: the report says so, on every node -------------------
jid=$(sbatch --parsable -N3 --gres=gpu:1 --wait -o /dev/null --gpumem-policy="$t/after.yaml" --wrap 'srun -N3 true')
for n in 1 2 3; do
	f="$t/reports/job$jid.epilog.gpumem$n.after.json"
	for _ in $(seq 1 240); do [ -f "$f" ] && break; sleep 0.25; done
	[ -f "$f" ] || fail "batch job: a report from gpumem$n's job epilog ($f)"
	if [ "$n" = 1 ] && [ -f "$f" ]; then
		pass "batch job: report from the job epilog on its node ($f)"
		is "$(json "$f" 'd["status"] + "|" + d["verdict"] + "|" + d["reason"]')" "skipped|skipped|no GPU device on this node" "no GPU: skipped, with the reason"
		is "$(json "$f" 'd["schema"] + " " + str(d["job"]) + " " + d["node"] + " " + d["phase"]')" "gpumem-report/1 $jid gpumem1 after" "report names schema, job, node, phase"
	fi
done
ls "$t/reports" | grep -q "^job$jid\.0\." && fail "steps inside a batch job are not checked again" ||
	pass "steps inside a batch job are not checked again (one report per node, from the epilog)"
srun -N3 --gres=gpu:1 --gpumem-policy="$t/after.yaml" true
# The epilogs write the reports after srun returns (a loaded machine: seconds).
for _ in $(seq 1 120); do
	jid=$(ls "$t/reports" | sed -n 's/^job\([0-9]*\)\.epilog\..*/\1/p' | sort -n | tail -1)
	[ "$(ls "$t/reports" | grep -c "^job$jid\.epilog\.gpumem[123]\.after\.json$")" -ge 3 ] && break
	sleep 0.25
done
is "$(ls "$t/reports" | grep -c "^job$jid\.epilog\.gpumem[123]\.after\.json$")" 3 "srun -N3: one report per node"
# A report of another node or phase may still be on its way (written to a
# .tmp and renamed): what must hold is that none stays.
for _ in $(seq 1 240); do ls -a "$t/reports" | grep -q '\.tmp$' || break; sleep 0.25; done
if ls -a "$t/reports" | grep '\.tmp$' >"$t/tmps"; then fail "no temporary files left"; diag "$(cat "$t/tmps")"; else pass "no temporary files left"; fi
# A GRES GPU: the node takes the step's GPUs from Slurm (SLURM_STEP_GPUS).
run srun -N1 -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/after.yaml" sh -c 'echo "job=$SLURM_JOB_ID"'
jid=$(printf '%s' "$out" | sed -n 's/^job=//p')
f="$t/reports/job$jid.epilog.gpumem1.after.json"
for _ in $(seq 1 240); do [ -f "$f" ] && break; sleep 0.25; done
is "$(json "$f" 'd["gpus"]')" "0" "--gres=gpu:1: the report names the job's GPU as Slurm gave it"
like "$(grep -h "job $jid.0: policy" "$GPUMEM_CLUSTER_DIR"/log/slurmd.gpumem1.log)" "GPUs SLURM_STEP_GPUS" "... found through SLURM_STEP_GPUS"

# --- a forced failure on one node drains that node only -------------------------
"$CL" restart-slurmd --plugstack "$t/standin.conf" >/dev/null 2>&1
touch "$t/fail/gpumem2"
run srun -N3 --gres=gpu:1 --gpumem-policy="$t/drain.yaml" true
is "$rc" 0 "the job itself is not failed by an after-check"
wait_state gpumem2 DRAIN
like "$(node_state gpumem2)" "DRAIN" "gpumem2, whose check failed, is drained"
like "$(node_reason gpumem2)" "^gpumem: GPU check failed \{GPU-00000000-0000-0000-0000-000000000002\} \(job [0-9]+\.epilog after: gpu0: triad 1200.0 GB/s below" "... with a gpumem: reason naming the GPU (UUID), job and cause"
# Their epilogs may still run (IDLE+COMPLETING): judge the states after them.
wait_settled gpumem1; wait_settled gpumem3
is "$(node_state gpumem1)" "IDLE" "gpumem1 is not"
is "$(node_state gpumem3)" "IDLE" "gpumem3 is not"
jid=$(ls "$t/reports" | sed -n 's/^job\([0-9]*\)\.epilog\.gpumem2\..*/\1/p' | sort -n | tail -1)
f="$t/reports/job$jid.epilog.gpumem2.after.json"
is "$(json "$f" 'd["verdict"] + " " + str(d["drained"])')" "fail True" "gpumem2's report: fail, drained"
is "$(json "$t/reports/job$jid.epilog.gpumem1.after.json" 'd["verdict"] + " " + str(d["drained"])')" "pass False" "gpumem1's report: pass"
# The head line (doc/REPORT-JSON.md): the report's fields and one row per GPU on the first line.
h=$(head -1 "$f")
like "$h" '^\{"schema": "gpumem-report/1", .*"drained": true, "evidence": \{"basis": "measured", "text": "measured: no NVML evidence: no NVML on this node \(gpumem-health\)"[^}]*\}, "rows": \[\{"index": 0, "name": "Stand-in GPU", "uuid": "GPU-00000000-0000-0000-0000-000000000002", .*"verdict": "fail", "reasons": \["[^"]*triad 1200.0 GB/s below[^"]*"\], "metrics": \{"triad": \["fail", 1200.0, null, null, 3508.0, null\]\}\}\], "check_reason": null,$' \
	"the report's first line: its fields and the GPU's row (verdict, reasons, metrics), ending with a comma"
is "$(json "$f" 'str(d["rows"][0]["metrics"]["triad"][1] == d["check"]["devices"][0]["metrics"]["triad"]["best_gbps"])')" "True" "... rows copied from the check"
run "$GPUMEM" report --no-cache --job "$jid" "$t/reports"
like "$out" "gpumem2 +$jid\.epilog +after +0 +Stand-in GPU +fail \(drained\)" "gpumem report lists it from the head line"
like "$(cat "$t/textfile"/gpumem_GPU-00000000-0000-0000-0000-000000000002.prom 2>&1)" 'gpumem_check_verdict\{node="gpumem2",gpu="0",uuid="GPU-[0-9-]+"\} 2' "node_exporter textfile: verdict 2 for the failed GPU"
like "$(cat "$t/textfile"/gpumem_GPU-00000000-0000-0000-0000-000000000001.prom 2>&1)" 'gpumem_bandwidth_gbps\{node="gpumem1",gpu="0",uuid="[^"]+",metric="triad"\} 4100.0' "node_exporter textfile: bandwidth per GPU and metric"
like "$(grep -h "check after job $jid.epilog node gpumem2" "$GPUMEM_CLUSTER_DIR"/log/slurmd.gpumem2.log)" "fail \(gpu0: triad 1200.0" "one summary line in gpumem2's slurmd log"

# --- a later passing check resumes only gpumem's own drain ------------------------
rm -f "$t/fail/gpumem2"
scontrol update NodeName=gpumem2 State=RESUME
wait_idle gpumem2
bg_job gpumem2 --gpumem-policy="$t/after.yaml" sleep 4 || fail "a job runs on gpumem2 after the resume"
touch "$t/fail/gpumem2"
timeout 60 srun -w gpumem2 --gres=gpu:1 --gpumem-policy="$t/drain.yaml" true
wait_state gpumem2 DRAIN
# The srun just ended may still be in its epilog: COMPLETING beside the drain (seen under load on 24.11 --hosts).
like "$(node_state gpumem2)" "MIXED(\+COMPLETING)?\+DRAIN" "a failing check drains gpumem2 while another job runs there"
rm -f "$t/fail/gpumem2"
wait $bg
for _ in $(seq 1 120); do [ "$(node_state gpumem2)" = IDLE ] && break; sleep 0.5; done
is "$(node_state gpumem2)" "IDLE" "that job's passing after-check resumes gpumem2 (its drain was gpumem's)"

wait_idle gpumem3
bg_job gpumem3 --gpumem-policy="$t/after.yaml" sleep 3 || fail "a job runs on gpumem3"
scontrol update NodeName=gpumem3 State=DRAIN Reason="maintenance by admin"
wait $bg
wait_settled gpumem3   # the job's epilog (its passing check) has ended
is "$(node_reason gpumem3)" "maintenance by admin" "an admin's drain is never resumed by a passing check"
like "$(node_state gpumem3)" "DRAIN" "... and stays drained"
scontrol update NodeName=gpumem3 State=RESUME
wait_idle gpumem3
rm -f "$t/fail/gpumem3"

# --- S2: a pass resumes only a drain whose failed GPUs it checked ---------------
# The stand-in reports two GPUs (D/gpus) and fails the second; a job already
# running on the node when it is drained then passes on the first GPU only.
echo 2 >"$t/gpus"
wait_idle gpumem1
bg_job gpumem1 --gpumem-policy="$t/after.yaml" sleep 4 || fail "a job runs on gpumem1"
echo 1 >"$t/fail/gpumem1"
timeout 60 srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/drain.yaml" true
for _ in $(seq 1 240); do [[ $(node_state gpumem1) == *DRAIN* ]] && break; sleep 0.25; done
like "$(node_reason gpumem1)" "^gpumem: GPU check failed \{GPU-00000001-0000-0000-0000-000000000001\} \(job [0-9]+\.epilog after" "S2: the drain reason names the failed GPU by UUID"
rm -f "$t/fail/gpumem1"
echo 1 >"$t/gpus"
n=$(wc -l <"$GPUMEM_CLUSTER_DIR"/log/slurmd.gpumem1.log)
wait $bg
for _ in $(seq 1 240); do tail -n +"$((n + 1))" "$GPUMEM_CLUSTER_DIR"/log/slurmd.gpumem1.log | grep -q 'check after' && break; sleep 0.25; done
sleep 0.5
like "$(node_state gpumem1)" "DRAIN" "S2: a pass on the other GPU only does not resume the node"
like "$(tail -n +"$((n + 1))" "$GPUMEM_CLUSTER_DIR"/log/slurmd.gpumem1.log | grep 'stays drained')" "stays drained: a GPU its gpumem drain names was not among those that passed \(GPU-00000000-0000-0000-0000-000000000000\)" "... and the log says why"
rm -f "$t/gpus"
scontrol update NodeName=gpumem1 State=RESUME
wait_idle gpumem1

# --- check.before with on_fail: fail stops the job, with the reason -------------
touch "$t/fail/gpumem1"
run srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/before-fail.yaml" echo ran
[ "$rc" -ne 0 ] && pass "a failing check.before fails the step" || fail "a failing check.before fails the step"
unlike "$out" "^ran$" "... before the task runs"
like "$out" "GPU check before the job failed on gpumem1: gpu0: triad 1200.0 GB/s below" "... saying why"
# The job's epilog may still be running (COMPLETING): judge the state after it.
for _ in $(seq 1 240); do case "$(node_state gpumem1)" in *COMPLETING*) sleep 0.25 ;; *) break ;; esac; done
is "$(node_state gpumem1)" "IDLE" "on_fail: fail does not drain"
rm -f "$t/fail/gpumem1"

# --- a check that hangs is killed at the site timeout and reported ------------
# (the after-check runs in the job epilog: the user does not wait for it,
# the node stays COMPLETING until it is killed at check.timeout + 5 s)
touch "$t/fail/sleep"
start=$(date +%s)
run srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/after.yaml" sh -c 'echo "job=$SLURM_JOB_ID"'
took=$(( $(date +%s) - start ))
jid=$(printf '%s' "$out" | sed -n 's/^job=//p')
f="$t/reports/job$jid.epilog.gpumem1.after.json"
is "$rc" 0 "a hanging after-check does not fail the job"
# Not a timed assert (a loaded machine is slow): srun returned before the
# hung check was killed and reported, so the user did not wait for it.
[ ! -e "$f" ] && pass "the user does not wait for the hung after-check (srun took ${took}s, its report not written yet)" ||
	fail "srun returned only after the hung after-check was reported (${took}s)"
for _ in $(seq 1 120); do [ -f "$f" ] && break; sleep 0.5; done
rm -f "$t/fail/sleep"
is "$(json "$f" 'd["status"] + "|" + d["verdict"] + "|" + d["reason"]')" "timed_out|error|killed: no answer within 7 s" "the report says the hung check was killed at the timeout"
pgrep -f "$t/standin-check" >/dev/null && fail "no check process left" || pass "no check process left"
done_testing

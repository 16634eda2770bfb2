#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Trust boundaries, round five (doc/HARDENING.md, "Trust boundaries,
# round five"): the findings about reuse on evidence, on a real local
# Slurm with one stand-in GPU (GRES); every job is the unprivileged test
# user's unless said otherwise:
#   G6  check_user the job's own uid: the check is "not run", counted as
#       failed, even with a fresh pass on record (no reuse, no
#       gpumem-health as that uid).
# Stand-ins for what needs a GPU (tests/slurm/standin*): the check, and
# the real gpumem-health and gpumem-sample over the stand-in NVML.
. "$top_srcdir/tests/lib.sh"
slurm_test trust5
U=${GPUMEM_TEST_USER:-gpumemtest}
B=$t/bin
mkdir -p "$t/reports"
standin_bin "$B"
health_standin "$B"
sampler_standin "$B"
site_checks "$t/site.yaml" 20 10
printf 'profile:\n  interval_ms: 200\n' >>"$t/site.yaml"
pol() { printf 'version: 1\ncheck:\n%b' "$2" >"$t/$1"; chmod 644 "$t/$1"; }
pol before.yaml '  before: true\n'
plug() { plugstack "$2" site=$1 libexecdir=$B check=$B/standin-check nvidia_dev=$t/nvidiactl mps_control=$B/nvidia-cuda-mps-control $3; }
plug "$t/site.yaml" "$t/plugstack.conf"
"$CL" start --nodes 1 --gpus 1 --plugstack "$t/plugstack.conf" >"$t/start.log" 2>&1 ||
	{ cat "$t/start.log" >&2; skip_all "the local Slurm did not start"; }
eval "$("$CL" env)"
cd "$GPUMEM_CLUSTER_TMP" || exit 1
LOG="$GPUMEM_CLUSTER_DIR/log/slurmd.gpumem1.log"
S=${GPUMEM_CLUSTER_STATE_DIR:-/run/gpumem}
PASS=$S/gpus/pass.gpumem1.0 LOW=$S/gpus/hbmlow.gpumem1.0 MARK=$S/gpus/suspect.gpumem1.0
# report JOB PHASE: the report of JOB's check PHASE (before|after), or of its profile alone (job).
report() { case $2 in before) echo "$t/reports/job$1.prolog.gpumem1.before.json" ;; *) echo "$t/reports/job$1.epilog.gpumem1.$2.json" ;; esac; }
ev() { json "$(report "$1" "$2")" 'd["status"] + "|" + d["verdict"] + "|" + d["evidence"]["text"]' 2>&1; }
node_reason() { scontrol show node gpumem1 -o | sed -n 's/.* Reason=\(.*\) \[.*/\1/p'; }
# job POLICY [SLEEP [AS]]: a job on gpumem1 (as the test user, or AS=root), its id in $jid, once over.
job() {
	local who=asuser
	[ "${3:-}" = root ] && who=
	run $who srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/$1" sh -c "echo job=\$SLURM_JOB_ID; sleep ${2:-0}; echo TASK-RAN"
	jid=$(jobid_of "$out")
	[ -n "$jid" ] || jid=$(ls -t "$t"/reports/job*.json 2>/dev/null | head -1 | sed -n 's|.*/job\([0-9]*\)\..*|\1|p')
	wait_settled gpumem1
}
exists() { if [ -e "$1" ]; then pass "$2"; else fail "$2"; fi; }
absent() { if [ -e "$1" ]; then fail "$2"; else pass "$2"; fi; }

# --- G6: check_user is the job's uid ------------------------------------------------
plug "$t/site.yaml" "$t/own.conf" "check_user=$U"
"$CL" restart-slurmd --plugstack "$t/own.conf" >/dev/null 2>&1
pol ownfail.yaml '  before: true\n  on_fail: fail\n'
echo "ecc_vc=2" >"$B/health.values"    # NVML moved: root's job measures
job before.yaml 0 root
is "$(json "$(report "$jid" before)" 'd["status"] + "|" + d["verdict"]' 2>&1)" "ran|pass" "G6: root's job is checked (as check_user $U) and passes"
exists "$PASS" "G6: ... a fresh pass is on record"
: >"$B/health.runs"
: >"$B/runs"
job ownfail.yaml
o=$jid
like "$(json "$(report "$o" before)" 'd["status"] + "|" + d["verdict"] + "|" + d["reason"]' 2>&1)" "^not_run\|error\|check_user \(uid [0-9]+\) is the job's own user" "G6: $U's job with check_user $U: not run, not reused"
like "$out" "GPU check before the job could not run \(counted as failed\)" "G6: ... counted as failed: the step fails"
unlike "$out" "TASK-RAN" "G6: ... its task does not run"
is "$(wc -l <"$B/health.runs" | tr -d ' ')$(wc -l <"$B/runs" | tr -d ' ')" "00" "G6: ... neither gpumem-health nor the check ran as the job's uid"
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What gpumem does with Slurm's own settings, on the real local Slurm of each
# series (doc/admin/slurm.md, "Slurm series"; plugin/spank/state/slurmconf.c):
# - PrologFlags=RunInJob (24.05+), under which Slurm calls no SPANK job
#   prolog or epilog (prolog-facts.sh): slurmd refuses to start with gpumem
#   `required`, its log naming the setting, alone and with Contain or Alloc;
#   with gpumem `optional` slurmd starts and each step says why gpumem did
#   nothing.  Contain and Alloc without it: a job gets its check and record.
# - PrologTimeout/EpilogTimeout (25.05; PrologEpilogTimeout before): a check
#   that would outlast the hook is stopped at gpumem's own deadline, a
#   little earlier, reported as such and counted as the policy says (the
#   steps fail for on_fail: fail); Slurm never kills the hook, so the node
#   is not drained.
# No GPU: the stand-in check, device and helpers of tests/slurm/standin*.
. "$top_srcdir/tests/lib.sh"
slurm_test settings
U=${GPUMEM_TEST_USER:-gpumemtest}
B=$t/bin
mkdir -p "$t/reports"
standin_bin "$B"
cat >"$t/site.yaml" <<YAML
version: 1
limits:
  on_fail: [warn, fail]
report:
  dir: $t/reports
check:
  timeout: 30
YAML
printf 'version: 1\ncheck:\n  before: true\n  on_fail: fail\n' >"$t/before.yaml"
printf 'version: 1\ncheck:\n  after: true\n  on_fail: warn\n' >"$t/after.yaml"
chmod 644 "$t"/*.yaml
args="site=$t/site.yaml libexecdir=$B check=$B/standin-check nvidia_dev=$t/nvidiactl mps_control=$B/nvidia-cuda-mps-control"
plugstack "$t/required.conf" $args
echo "optional $so $args" >"$t/optional.conf"
chmod 644 "$t/optional.conf"
# start PLUGSTACK SLURM_CONF_LINES: a fresh 1-node cluster; rc in $rc.  A start
# that failed leaves slurmd's log in $t/failed.log and the state dir wiped
# (cluster start wipes only an empty dir or a cluster's).
start() {
	"$CL" stop >/dev/null 2>&1
	rm -f "$t/failed.log"
	GPUMEM_SLURM_CONF_EXTRA="$2" "$CL" start --gpus 1 --plugstack "$1" >"$t/start.log" 2>&1
	rc=$?
	if [ $rc = 0 ]; then
		eval "$("$CL" env)"
	else
		cp "$GPUMEM_CLUSTER_DIR/log/slurmd.gpumem1.log" "$t/failed.log" 2>/dev/null
		rm -rf "$GPUMEM_CLUSTER_DIR"
	fi
	return $rc
}
slurmd_log() { cat "$t/failed.log" 2>/dev/null || cat "$GPUMEM_CLUSTER_DIR/log/slurmd.gpumem1.log" 2>/dev/null; }
cd /tmp || exit 1

# --- PrologFlags=RunInJob: refused ------------------------------------------------
if series_at_least 24.05; then
	for flags in RunInJob RunInJob,Contain Alloc,RunInJob; do
		start "$t/required.conf" "PrologFlags=$flags"
		[ $rc != 0 ] && pass "PrologFlags=$flags, gpumem required: slurmd does not start" ||
			fail "PrologFlags=$flags: slurmd started"
		like "$(slurmd_log)" "gpumem: PrologFlags=RunInJob is set: under it Slurm runs no SPANK job prolog" \
			"... its log names the setting and why"
	done
	if start "$t/optional.conf" "PrologFlags=RunInJob"; then
		run asuser timeout 60 srun -N1 --gres=gpu:1 --gpumem-policy="$t/before.yaml" echo task-ran
		is "$rc" 0 "PrologFlags=RunInJob, gpumem optional: slurmd starts, the job runs"
		like "$(slurmd_log)" "PrologFlags=RunInJob is set, under which Slurm runs no SPANK job prolog" \
			"... and the step's log says why gpumem did nothing"
		is "$(wc -l <"$B/runs" | tr -d ' ')" 0 "... no check ran"
	else
		fail "PrologFlags=RunInJob, gpumem optional: slurmd did not start"; diag "$(tail -5 "$t/start.log")"
	fi
else
	skip "PrologFlags=RunInJob: Slurm $SLURM_SERIES has no such flag (24.05+)"
fi

# --- Contain and Alloc without RunInJob: gpumem does its work -----------------------
for flags in Contain Alloc Contain,Alloc; do
	if ! start "$t/required.conf" "PrologFlags=$flags"; then
		fail "PrologFlags=$flags: the local Slurm did not start"; diag "$(tail -5 "$t/start.log")"
		continue
	fi
	: >"$B/runs"
	run asuser timeout 60 srun -N1 --gres=gpu:1 --gpumem-policy="$t/before.yaml" echo task-ran
	like "$rc $out" "^0 task-ran" "PrologFlags=$flags: the step runs"
	is "$(wc -l <"$B/runs" | tr -d ' ')" 1 "... after one before-check"
done

# --- the hook's time limit ------------------------------------------------------------
# stopped_at_limit PHASE HOOK SETTING TEXT: the PHASE check's report says it was
# stopped at the job HOOK's limit (SETTING=6); Slurm killed nothing, drained nothing.
stopped_at_limit() {
	local f
	for _ in $(seq 1 240); do ls "$t"/reports/*."$1".json >/dev/null 2>&1 && break; sleep 0.25; done
	f=$(ls "$t"/reports/*."$1".json 2>/dev/null | tail -1)
	like "$(json "$f" 'd["status"] + " " + d["reason"]' 2>/dev/null)" \
		"timed_out stopped at the job $2's time limit \\($3=6, less a margin\\)" "$4"
	wait_idle gpumem1
	is "$(node_state gpumem1)" IDLE "... Slurm did not kill the hook: the node is not drained"
	unlike "$(slurmd_log)" "spank/$2 timed out" "... and slurmd logs no timeout of its own"
}
if series_at_least 25.05; then limit="PrologTimeout=6
EpilogTimeout=6"; name=PrologTimeout ename=EpilogTimeout
else limit="PrologEpilogTimeout=6"; name=PrologEpilogTimeout ename=PrologEpilogTimeout
fi
start "$t/required.conf" "$limit" || { cat "$t/start.log" >&2; skip_all "the local Slurm did not start"; }
echo 40 >"$B/delay"      # the stand-in check would take 40 s: longer than the hook may
s=$(date +%s)
run asuser timeout 60 srun -N1 --gres=gpu:1 --gpumem-policy="$t/before.yaml" echo task-ran
took=$(($(date +%s) - s))
[ "$rc" != 0 ] && pass "$name=6, a before-check of 40 s, on_fail: fail: the step fails (${took} s)" ||
	fail "the step ran: $out"
like "$out" "GPU check before the job did not finish \\(counted as failed\\)" "... the check counted as failed, saying so"
[ "$took" -lt 15 ] && pass "... within the hook's limit, not after the check's 40 s" || fail "took ${took} s"
stopped_at_limit before prolog "$name" "... its report: stopped at the prolog's limit, named"

# A check cut at the hook's limit gave no verdict: the GPU is suspect ("cut": the
# time may have gone to the user's MPS daemon, so it never counts towards a drain,
# doc/admin/checks.md "A check that gives no verdict"); the next job's before-check is forced.
like "$(cat "${GPUMEM_CLUSTER_STATE_DIR:-/run/gpumem}"/gpus/suspect.gpumem1.* 2>&1)" " before cut stopped at the job prolog's time limit" "a check cut at the limit marks the GPU suspect (cut)"
run asuser timeout 60 srun -N1 --gres=gpu:1 --gpumem-policy="$t/after.yaml" echo task-ran
[ "$rc" != 0 ] && pass "... the next job (after-check only) gets a forced before-check, cut too: its step fails" || fail "the step ran: $out"
wait_idle gpumem1
is "$(node_state gpumem1)" IDLE "... and checks cut at the hook's limit never drain, however many"
rm -f "$B/delay"
run asuser timeout 60 srun -N1 --gres=gpu:1 --gpumem-policy="$t/after.yaml" echo task-ran
like "$rc $out" "^0 task-ran" "... once the check answers within the limit, the forced before-check passes and the job runs"
wait_idle gpumem1
ls "${GPUMEM_CLUSTER_STATE_DIR:-/run/gpumem}"/gpus/suspect.gpumem1.* >/dev/null 2>&1 && fail "... the mark is cleared" || pass "... the mark is cleared"
echo 40 >"$B/delay"
rm -f "$t"/reports/*
run asuser timeout 60 srun -N1 --gres=gpu:1 --gpumem-policy="$t/after.yaml" echo task-ran
like "$rc $out" "^0 task-ran" "$ename=6, an after-check of 40 s: the job runs"
stopped_at_limit after epilog "$ename" "... the after-check stopped at the epilog's limit, named in its report"
rm -f "$B/delay"
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Trust boundaries, round four, findings R4-1 and R4-2 (the ids
# of doc/HARDENING.md), on a real local Slurm with one
# stand-in GPU (GRES) and the plugin's defaults as installed; every attack
# runs as the unprivileged test user:
#   1. the site's checks run as check_user (default gpumem-check, no groups, own
#      session): the user's second job on the node can neither kill -9,
#      kill -STOP, ptrace nor read /proc/PID/environ of the running
#      after-check, which goes on to fail and drain the node; the L2 reset
#      runs as check_user too;
#   2. a check that gives no verdict (killed at the site's check timeout)
#      marks the GPU suspect in root's state_dir; the next job's prolog
#      forces a before-check whatever its policy; a second no-verdict in a
#      row drains the node naming both jobs; a pass clears the mark;
#   3. reuse rests on evidence (issue 35): with check.min_interval, a check
#      rests on the GPU's last measured pass only while gpumem-health (as
#      check_user) shows NVML's counters unchanged and no alarm, the pass is
#      younger than min_interval, no no-verdict and no low-HBM profile came
#      since; never the job's own before-check for its after-check.
# Stand-ins for what needs a GPU (tests/slurm/standin*); Slurm is real.
. "$top_srcdir/tests/lib.sh"
slurm_test trust4
U=${GPUMEM_TEST_USER:-gpumemtest}
B=$t/bin
mkdir -p "$t/reports" "$t/user"
standin_bin "$B"
site_checks "$t/site.yaml" 20
site_checks "$t/short.yaml" 2
site_checks "$t/interval.yaml" 20 10
printf 'version: 1\ncheck:\n  after: true\n  on_fail: drain\n' >"$t/after.yaml"
printf 'version: 1\ncheck:\n  before: true\n  after: true\n  on_fail: drain\n' >"$t/both.yaml"
printf 'version: 1\ncheck:\n  before: true\n  on_fail: fail\n' >"$t/before.yaml"
printf 'version: 1\n' >"$t/none.yaml"
printf 'version: 1\nl2:\n  persisting_limit: 40%%\n  reset_at_exit: true\n' >"$t/l2.yaml"
chmod 644 "$t"/*.yaml
plug() { plugstack "$2" site=$1 libexecdir=$B check=$B/standin-check nvidia_dev=$t/nvidiactl mps_control=$B/nvidia-cuda-mps-control; }
plug "$t/site.yaml" "$t/plugstack.conf"
plug "$t/short.yaml" "$t/short.conf"
plug "$t/interval.yaml" "$t/interval.conf"
"$CL" start --nodes 1 --gpus 1 --plugstack "$t/plugstack.conf" >"$t/start.log" 2>&1 ||
	{ cat "$t/start.log" >&2; skip_all "the local Slurm did not start"; }
eval "$("$CL" env)"
# check_user by default: the package's own account (made by the cluster as the package makes it).
CU=$(id -u gpumem-check) || { fail "no gpumem-check account"; done_testing; }
cd "$GPUMEM_CLUSTER_TMP" || exit 1
LOG="$GPUMEM_CLUSTER_DIR/log/slurmd.gpumem1.log"
uid=$(id -u "$U")
# report JOB PHASE: the report of JOB's check PHASE (before|after) on gpumem1.
report() { [ "$2" = before ] && echo "$t/reports/job$1.prolog.gpumem1.before.json" || echo "$t/reports/job$1.epilog.gpumem1.after.json"; }
node_reason() { scontrol show node gpumem1 -o | sed -n 's/.* Reason=\(.*\) \[.*/\1/p'; }
resume() { scontrol update NodeName=gpumem1 State=RESUME 2>/dev/null; wait_idle; }
# Root's state_dir as the test sees it (the cluster's own where it has one, else the default).
S=${GPUMEM_CLUSTER_STATE_DIR:-/run/gpumem}
MARK=$S/gpus/suspect.gpumem1.0

# --- 1. the user's second job against the running after-check --------------------
cat >"$t/user/attack" <<'SH'
#!/bin/sh
# The job's user, from a second job on the node, against the site's check.
for _ in $(seq 1 240); do pid=$(pgrep -o -f "$1"); [ -n "$pid" ] && break; sleep 0.25; done
[ -n "$pid" ] || { echo NO-CHECK-FOUND; exit 0; }
echo "check=$pid uid=$(stat -c %u "/proc/$pid") sid=$(ps -o sid= -p "$pid" | tr -d ' ') groups=[$(sed -n 's/^Groups:[[:space:]]*//p' "/proc/$pid/status" | tr -d ' ')]"
"$(dirname "$0")/reach" "$pid"
kill -STOP "$pid" 2>/dev/null && echo STOP-DONE || echo STOP-DENIED
kill -CONT "$pid" 2>/dev/null
kill -9 "$pid" 2>/dev/null && echo KILL-DONE || echo KILL-DENIED
SH
chmod 755 "$t/user/attack"
cp "$top_srcdir/tests/slurm/reach" "$t/user/reach"
chmod -R a+rX "$t/user"
echo 5 >"$B/delay"              # root's knob: the check takes 5 s
touch "$B/fail/gpumem1"         # ... and finds the GPU failed
asuser srun -w gpumem1 "$t/user/attack" "$B/standin-chec[k]" >"$t/attack.out" 2>&1 &
att=$!
for _ in $(seq 1 240); do squeue -h -t R | grep -q . && break; sleep 0.25; done
run asuser srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/after.yaml" sh -c 'echo "job=$SLURM_JOB_ID"'
ja=$(jobid_of "$out")
wait "$att"
a=$(cat "$t/attack.out")
diag "$(printf '%s\n' "$a" | head -1)"
like "$a" "check=[0-9]+ uid=$CU " "1: the after-check runs as check_user (default gpumem-check, uid $CU), not as the job's user ($uid)"
pid=$(printf '%s\n' "$a" | sed -n 's/^check=\([0-9]*\) .*/\1/p')
like "$a" "sid=$pid " "1: ... in a session of its own"
like "$a" "groups=\[\]" "1: ... with no supplementary groups"
like "$a" "STOP-DENIED" "1: the user's second job cannot kill -STOP it"
like "$a" "KILL-DENIED" "1: ... nor kill -9 it"
like "$a" "PTRACE-DENIED" "1: ... nor ptrace it (S8)"
like "$a" "ENVIRON-DENIED" "1: ... nor read its /proc/PID/environ"
f=$(report "$ja" after)
wait_file "$f"
for _ in $(seq 1 240); do [[ $(node_state) == *DRAIN* ]] && break; sleep 0.25; done
is "$(json "$f" 'd["status"] + "|" + d["verdict"] + "|" + str(d["drained"])' 2>&1)" "ran|fail|True" "1: the check gave its verdict (fail) and drained the node"
like "$(node_reason)" "^gpumem: GPU check failed .*job $ja\.epilog after" "1: ... with the reason of the job it ran after"
rm -f "$B/delay" "$B/fail/gpumem1"
resume
is "$(cut -d' ' -f4 "$B/runs" | sort -u)" "$CU" "1: every check so far ran as gpumem-check ($CU)"

# --- 2. a check with no verdict: the GPU is suspect; twice in a row drains --------
"$CL" restart-slurmd --plugstack "$t/short.conf" >/dev/null 2>&1
touch "$B/fail/sleep"           # the check hangs: killed at check.timeout (2) + 5 s
run asuser srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/after.yaml" sh -c 'echo "job=$SLURM_JOB_ID"'
j1=$(jobid_of "$out")
wait_file "$(report "$j1" after)"
wait_idle
is "$(json "$(report "$j1" after)" 'd["status"] + "|" + d["verdict"]' 2>&1)" "timed_out|error" "2: job $j1's after-check hung and was killed at the site's timeout"
is "$(node_state)" "IDLE" "2: ... one no-verdict does not drain"
like "$(cat "$MARK" 2>&1)" "^$j1\.epilog after own killed: no answer within 7 s$" "2: ... the GPU is marked suspect in root's state_dir, naming the job"
like "$(stat -c '%U %a' "$MARK" "$S/gpus" 2>&1 | tr '\n' ' ')" "^root 6[04][04] root 700 $" "2: ... a root-only file (root's, in a 0700 directory)"
asuser cat "$MARK" >/dev/null 2>&1 && fail "2: the test user cannot read the mark" || pass "2: the test user cannot read the mark"
: >"$B/runs"
run asuser srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/none.yaml" sh -c 'echo "job=$SLURM_JOB_ID"; echo TASK-RAN'
j2=$(jobid_of "$out")
[ -n "$j2" ] || j2=$(( j1 + 1 ))
like "$(json "$(report "$j2" before)" 'd["policy"] + "|" + d["status"]' 2>&1)" "none\.yaml.*\|timed_out$" "2: the next job (policy: no check) gets a forced before-check"
[ "$rc" -ne 0 ] && pass "2: ... which hangs too: the step fails (exit $rc)" || fail "2: the step ran on a suspect GPU whose check gave no verdict"
unlike "$out" "TASK-RAN" "2: ... its task does not run"
like "$out" "GPU check before the job did not finish" "2: ... srun says why"
for _ in $(seq 1 240); do [[ $(node_state) == *DRAIN* ]] && break; sleep 0.25; done
like "$(node_state)" "DRAIN" "2: a second no-verdict in a row drains the node"
like "$(node_reason)" "^gpumem: GPU check gave no verdict twice in a row .*job $j1\.epilog after own .*job $j2\.prolog before own" "2: ... the reason names both jobs ($j1, $j2)"
like "$(grep -a "job $j2: GPUs 0 are suspect" "$LOG")" "before-check forced" "2: ... the log says the before-check was forced"
rm -f "$B/fail/sleep"
scancel -u "$U" 2>/dev/null
resume
: >"$B/runs"
run asuser srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/none.yaml" sh -c 'echo "job=$SLURM_JOB_ID"; echo TASK-RAN'
j3=$(jobid_of "$out")
like "$out" "TASK-RAN" "2: once the GPU answers again, the forced before-check passes and the job runs"
is "$(json "$(report "$j3" before)" 'd["verdict"]' 2>&1)" "pass" "2: ... its report says pass"
[ -e "$MARK" ] && fail "2: the pass cleared the mark" || pass "2: the pass cleared the mark"
wait_idle
run asuser srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/none.yaml" sh -c 'echo "job=$SLURM_JOB_ID"'
j4=$(jobid_of "$out")
wait_idle
is "$(wc -l <"$B/runs" | tr -d ' ')" 1 "2: the job after it (policy: no check) gets no check"
[ -e "$(report "$j4" before)" ] && fail "2: ... and no report" || pass "2: ... and no report"

# --- 3. reuse rests on evidence (issue 35), never on the job's own before-check ---------
# The real gpumem-health over the stand-in NVML (root's $B/health.values moves its
# counters) and the real sampler (root's $B/sample.values sets its figures).
is "$(json "$(report "$j3" before)" 'd["evidence"]["text"]' 2>&1)" "measured: check.min_interval is 0" "3: min_interval 0: every check measured, and the report says so"
health_standin "$B"
sampler_standin "$B"
{ cat "$t/interval.yaml"; printf 'profile:\n  interval_ms: 200\n'; } >"$t/evidence.yaml"
chmod 644 "$t/evidence.yaml"
plug "$t/evidence.yaml" "$t/evidence.conf"
"$CL" restart-slurmd --plugstack "$t/evidence.conf" >/dev/null 2>&1
PASS=$S/gpus/pass.gpumem1.0
ev() { json "$(report "$1" "$2")" 'd["status"] + "|" + d["evidence"]["text"]' 2>&1; }
# job POLICY [SLEEP]: run a job on gpumem1, its id in $jid, once its epilog is over.
job() { run asuser srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/$1" sh -c "echo job=\$SLURM_JOB_ID; sleep ${2:-0}"; jid=$(jobid_of "$out"); wait_idle; }
: >"$B/runs"
job both.yaml
e=$jid
is "$(ev "$e" before)" "ran|measured: gpu0: no measured pass on record" "3: min_interval 10, no pass on record: the before-check is measured"
is "$(ev "$e" after)" "ran|measured: the job's own before-check is never reused for its after-check" "3: ... and the job's own after-check too (issue 32, finding 2)"
is "$(wc -l <"$B/runs" | tr -d ' ')" 2 "3: ... two checks ran"
is "$(cut -d' ' -f1 "$B/health.runs" | sort -u)" "$CU" "3: gpumem-health runs as check_user (gpumem-check)"
job both.yaml
f2=$jid
like "$(ev "$f2" before)" "^reused\|reused: bandwidth measured 0 min ago after job $e, NVML health unchanged since$" "3: the next job's before-check rests on job $e's after-check, NVML unchanged"
is "$(json "$(report "$f2" before)" 'd["verdict"] + " " + str(d["evidence"]["pass_job"]) + " " + d["evidence"]["pass_phase"]' 2>&1)" "pass $e after" "3: ... verdict pass, and the pass it rests on"
like "$(ev "$f2" after)" "^reused\|reused: .* after job $e," "3: ... its after-check rests on job $e's pass too (not its own before-check: it measured nothing)"
is "$(wc -l <"$B/runs" | tr -d ' ')" 2 "3: ... no check measured"
like "$(grep -h "check before job $f2.prolog" "$LOG")" "pass \(bandwidth measured 0 min ago after job $e" "3: ... and the slurmd log says what it rests on"
echo "ecc_vc=2" >"$B/health.values"
job before.yaml
g=$jid
like "$(ev "$g" before)" "^ran\|measured: gpu0: NVML health changed since job $e's pass \(ecc.volatile.corrected 0 -> 2\)$" "3: a corrected ECC error since the pass: the check is measured"
job before.yaml
like "$(ev "$jid" before)" "^reused\|reused: .* before job $g, NVML" "3: ... the next job rests on that new pass"
sed -i "1s/^\([0-9]* [a-z]*\) [0-9]*/\1 $(( $(date +%s) - 3600 ))/" "$PASS"
job before.yaml
is "$(ev "$jid" before)" "ran|measured: gpu0: bandwidth last measured 60 min ago (check.min_interval 10)" "3: a pass older than min_interval: measured"
echo "ecc_vc=3" >"$B/health.values"
touch "$B/fail/killed"
job before.yaml
rm -f "$B/fail/killed"
# (its steps fail before the task says its id: the newest before-report is its)
like "$(json "$(ls -t "$t"/reports/job*.prolog.gpumem1.before.json | head -1)" 'd["status"] + "|" + d["evidence"]["text"]' 2>&1)" "^failed\|measured: gpu0: NVML health changed" "3: a measured check (NVML changed) that gives no verdict ..."
if [ -e "$PASS" ]; then fail "3: ... forgets the GPU's pass"; else pass "3: ... forgets the GPU's pass"; fi
job none.yaml
is "$(ev "$jid" before)" "ran|measured: forced: a GPU is suspect" "3: ... and the next job's forced check is measured"
echo "dram=45,sm=20,occ=30,pcie_rx=0.5,pcie_tx=0.2,mem=7.5" >"$B/sample.values"
job both.yaml 2
lo=$jid
like "$(ev "$lo" before)" "^reused\|" "3: an HBM-bound job at a low ceiling: its before-check was reused"
is "$(ev "$lo" after)" "ran|measured: gpu0: job $lo's profile streamed HBM at a low ceiling (DRAM p95 45%, mean 45% of peak)" "3: ... its profile makes its after-check measured"
echo "dram=70,sm=40,occ=30,pcie_rx=0.5,pcie_tx=0.2,mem=7.5" >"$B/sample.values"
job before.yaml
like "$(ev "$jid" before)" "^reused\|reused: .* after job $lo," "3: ... that measured pass answers it: the next job rests on it"
LOW=$S/gpus/hbmlow.gpumem1.0
echo "dram=45,sm=20,occ=30,pcie_rx=0.5,pcie_tx=0.2,mem=7.5" >"$B/sample.values"
job before.yaml 2
if [ -e "$LOW" ]; then pass "3: a before-only job's low-HBM profile marks the GPU"; else fail "3: a before-only job's low-HBM profile marks the GPU"; fi
echo "dram=95,sm=40,occ=30,pcie_rx=0.5,pcie_tx=0.2,mem=7.5" >"$B/sample.values"
job none.yaml 2
if [ -e "$LOW" ]; then fail "3: a job (no check) whose DRAM p95 reached 95% of peak clears the mark: the profile counts upward"; else pass "3: a job (no check) whose DRAM p95 reached 95% of peak clears the mark: the profile counts upward"; fi
echo "dram=70,sm=40,occ=30,pcie_rx=0.5,pcie_tx=0.2,mem=7.5" >"$B/sample.values"
job before.yaml
like "$(ev "$jid" before)" "^reused\|" "3: ... so the next check rests on the earlier pass again"
echo "ecc_vc=3,thr=8" >"$B/health.values"
job before.yaml
is "$(ev "$jid" before)" "ran|measured: gpu0: NVML: clocks: hardware slowdown" "3: a hardware slowdown now: measured whatever the counters"
echo "ecc_vc=3" >"$B/health.values"

# An after-check resting on evidence for a job with an L2 limit: where
# gpumem-health saw no process on any GPU of the node, no L2 reset is run
# (nothing can persist without a context); where one holds a GPU, it is.
printf 'version: 1\nl2:\n  persisting_limit: 40%%\n  reset_at_exit: true\ncheck:\n  after: true\n' >"$t/l2after.yaml"
chmod 644 "$t/l2after.yaml"
job before.yaml
: >"$B/l2reset.runs"
echo "mem=0" >"$B/health.procs"
job l2after.yaml
like "$(ev "$jid" after)" "^reused\|" "3: an L2 job's after-check rests on evidence"
like "$(grep -a "job $jid: L2 reset not needed" "$LOG")" "on GPUs 0: no process holds any of the node's 16 GPU\(s\) \(NVML\) \(gpumem-health\)" "3: ... no process on any GPU of the node: the log says the L2 reset is not needed"
is "$(wc -l <"$B/l2reset.runs" | tr -d ' ')" 0 "3: ... and gpumem-l2reset did not run"
rm -f "$B/health.procs"
job l2after.yaml
like "$(ev "$jid" after)" "^reused\|" "3: the same with a process on the GPUs (the stand-in's default)"
is "$(wc -l <"$B/l2reset.runs" | tr -d ' ')" 1 "3: ... gpumem-l2reset runs"
grep -aq "job $jid: L2 reset not needed" "$LOG" && fail "3: ... and no 'not needed' line" || pass "3: ... and no 'not needed' line"

# --- 1, again: the L2 reset (last: its probe fills the probe cache)
run asuser srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/l2.yaml" true
wait_idle
is "$(cut -d' ' -f1 "$B/l2reset.runs" | sort -u)" "$CU" "1: gpumem-l2reset runs as check_user too"
done_testing

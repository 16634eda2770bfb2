#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Trust boundaries, round five (doc/HARDENING.md: G1, G2, G6): the
# findings about reuse on evidence, on a real local Slurm with one
# stand-in GPU (GRES); every job is the unprivileged test user's unless
# said otherwise:
#   G1  a pass carries its threshold: a lax job (its own min_fraction 0.2)
#       on a GPU whose HBM degraded records a pass at 0.2; the next job,
#       at the site's 0.85 with on_fail: drain, is measured, fails and
#       drains the node.  A pass of an older gpumem (no threshold) answers
#       nothing; a lax pass clears neither a suspect nor a low-HBM mark;
#       the shipped site file's floor (limits.min_fraction) clamps a
#       user's 0.2 to 0.85.
#   G2  a profile counts upward against a low-HBM mark only from GPM's
#       DRAM bandwidth: a GPU without GPM, or whose GPM gave no DRAM
#       figure (NVML's memory utilization instead), clears nothing.
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
pol lax.yaml '  before: true\n  after: true\n  bandwidth:\n    min_fraction: 0.2\n'
pol laxbefore.yaml '  before: true\n  bandwidth:\n    min_fraction: 0.2\n'
pol victim.yaml '  before: true\n  on_fail: drain\n'
pol before.yaml '  before: true\n'
pol none.yaml '  before: false\n'
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

# --- G1: a lax pass, then the victim --------------------------------------------
echo 1200.0 >"$B/triad"         # the GPU's HBM degraded: triad 1200 GB/s against 4127
job lax.yaml
lax=$jid
is "$(ev "$lax" before)" "ran|pass|measured: gpu0: no measured pass on record" "G1: the lax job's before-check (min_fraction 0.2) is measured and passes on the degraded GPU"
like "$(sed -n 3p "$PASS" 2>&1)" "^judged min_fraction=0\.2 references=[0-9a-f]{16}$" "G1: ... its pass carries the threshold it was measured at"
job victim.yaml
v=$jid
is "$(ev "$v" before)" "ran|fail|measured: gpu0: job $lax's pass was measured at min_fraction 0.2, this check asks 0.85" "G1: the victim (the site's 0.85, on_fail: drain) is measured, not reused, and fails"
is "$(tail -1 "$B/runs" | cut -d' ' -f5)" "0.85" "G1: ... the check ran at 0.85"
wait_state gpumem1 DRAIN
like "$(node_state)" "DRAIN" "G1: ... the node is drained"
like "$(node_reason)" "^gpumem: GPU check failed .*job $v\.prolog before: gpu0: triad 1200\.0 GB/s below threshold" "G1: ... naming the victim's check"
unlike "$out" "TASK-RAN" "G1: ... and the victim's task did not run on the failed GPU"
absent "$PASS" "G1: the failed check forgot the lax pass"
rm -f "$B/triad"
scontrol update NodeName=gpumem1 State=RESUME 2>/dev/null
wait_idle

# A pass kept by an older gpumem (no threshold line) answers nothing.
job before.yaml
p0=$jid
like "$(ev "$p0" before)" "^ran\|pass\|" "G1: a measured pass at the site's 0.85"
job before.yaml
like "$(ev "$jid" before)" "^reused\|pass\|reused: bandwidth measured" "G1: ... answers the next check at 0.85"
job laxbefore.yaml
like "$(ev "$jid" before)" "^reused\|pass\|" "G1: ... and a laxer one (0.2 asks no more than 0.85)"
sed -i '3d' "$PASS"
job before.yaml
is "$(ev "$jid" before)" "ran|pass|measured: gpu0: job $p0's pass does not say what it was measured at (kept by an older gpumem)" "G1: a pass without its threshold (an older gpumem's) answers no check: measured"

# A lax pass clears no suspect mark.
echo "ecc_vc=1" >"$B/health.values"    # NVML moved: the next check is measured ...
touch "$B/fail/killed"                  # ... and killed
job before.yaml
rm -f "$B/fail/killed"
exists "$MARK" "G1: a check that gave no verdict marks the GPU suspect"
job laxbefore.yaml
k=$jid
is "$(json "$(report "$k" before)" 'd["status"] + "|" + d["verdict"]' 2>&1)" "ran|pass" "G1: the lax job's forced before-check passes at 0.2"
exists "$MARK" "G1: ... and the GPU stays suspect"
like "$(grep -a "job $k: check before passed at min_fraction 0.2, below the site's default: GPUs 0 stay suspect" "$LOG")" "stay suspect" "G1: ... the log says why"
job none.yaml
like "$(ev "$jid" before)" "^ran\|pass\|measured: forced: a GPU is suspect" "G1: the next job's check is forced again, at the site's default"
absent "$MARK" "G1: ... and that pass clears the mark"

# A lax pass clears no low-HBM mark.
echo "dram=45,sm=20,occ=30,pcie_rx=0.5,pcie_tx=0.2,mem=7.5" >"$B/sample.values"
job lax.yaml 2
is "$(ev "$jid" after)" "ran|pass|measured: gpu0: job $jid's profile streamed HBM at a low ceiling (DRAM p95 45%, mean 45% of peak)" "G1: a lax job at a low HBM ceiling: its after-check is measured and passes at 0.2"
exists "$LOW" "G1: ... that lax pass does not clear the low-HBM mark"
echo "dram=70,sm=40,occ=30,pcie_rx=0.5,pcie_tx=0.2,mem=7.5" >"$B/sample.values"
job before.yaml
like "$(ev "$jid" before)" "^ran\|pass\|measured: gpu0: job [0-9]+'s (pass was measured at min_fraction 0.2|profile streamed HBM)" "G1: the next check at the site's 0.85 is measured"
absent "$LOW" "G1: ... and its pass clears the mark"

# --- G2: only GPM's DRAM bandwidth counts upward -----------------------------------
echo "dram=45,sm=20,occ=30,pcie_rx=0.5,pcie_tx=0.2,mem=7.5" >"$B/sample.values"
job before.yaml 2
exists "$LOW" "G2: a low-HBM profile marks the GPU"
echo "dram=95,sm=40,occ=30,pcie_rx=0.5,pcie_tx=0.2,mem=7.5" >"$B/sample.values"
echo 0 >"$B/sample.gpm"
job none.yaml 2
DRAM='" ".join([d["profile"]["gpus"][0]["source"], d["profile"]["gpus"][0]["metrics"]["dram_bw_util"]["source"], str(d["profile"]["gpus"][0]["metrics"]["dram_bw_util"]["p95"] >= 90)])'
is "$(json "$(report "$jid" job)" "$DRAM" 2>&1)" "nvml nvml-utilization True" "G2: a GPU without GPM: its DRAM figure (p95 at least 90%) is NVML's memory utilization"
exists "$LOW" "G2: ... and it does not clear the low-HBM mark"
rm -f "$B/sample.gpm"
echo dram >"$B/sample.refuse"
job none.yaml 2
is "$(json "$(report "$jid" job)" "$DRAM" 2>&1)" "gpm nvml-utilization True" "G2: a GPU with GPM but no GPM DRAM figure (the GPU's source says gpm)"
exists "$LOW" "G2: ... clears nothing either"
rm -f "$B/sample.refuse"
job none.yaml 2
is "$(json "$(report "$jid" job)" "$DRAM" 2>&1)" "gpm gpm True" "G2: GPM's DRAM bandwidth at 95% of peak ..."
absent "$LOW" "G2: ... clears it"
echo "dram=70,sm=40,occ=30,pcie_rx=0.5,pcie_tx=0.2,mem=7.5" >"$B/sample.values"

# --- G1: the shipped site file's floor ----------------------------------------------
sed -e "s|^  dir: /var/lib/gpumem/reports|  dir: $t/reports|" "$top_srcdir/etc/gpumem.yaml" >"$t/shipped.yaml"
chmod 644 "$t/shipped.yaml"
is "$(sed -n 's/^  min_fraction: \([0-9.]*\).*/\1/p' "$t/shipped.yaml")" "0.85" "G1: the shipped site file sets limits.min_fraction 0.85"
plug "$t/shipped.yaml" "$t/shipped.conf"
"$CL" restart-slurmd --plugstack "$t/shipped.conf" >/dev/null 2>&1
echo 1200.0 >"$B/triad"
job laxbefore.yaml
like "$out" "check\.bandwidth\.min_fraction: 0\.2 is below the site minimum of 0\.85: using 0\.85" "G1: a user asking 0.2 is told it is clamped to the floor"
is "$(tail -1 "$B/runs" | cut -d' ' -f5)" "0.85" "G1: ... the check runs at 0.85"
is "$(json "$(report "$jid" before)" 'd["status"] + "|" + d["verdict"]' 2>&1)" "ran|fail" "G1: ... and fails on the degraded GPU"
rm -f "$B/triad"

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

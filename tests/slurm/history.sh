#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A GPU against its own history, and against its own peak, on a real local
# Slurm: after three measured passes, a check whose triad is 20% below
# their median warns, naming the figure, the margin and the passes, though
# it clears its reference; 3% below passes; a warn is not added to the
# history. Where the check judged a figure against the GPU's own peak (no
# site reference), the report and the log line say so.
# No GPU here: the stand-in check (tests/slurm/standin-check) prints the
# figures the test gives it (D/triad; D/peak: the peak gpumem-check
# computes from NVML's figures); Slurm, the plugin, its hooks and
# state_dir are real.
. "$top_srcdir/tests/lib.sh"
slurm_test history
U=${GPUMEM_TEST_USER:-gpumemtest}
B=$t/bin
mkdir -p "$t/reports"
standin_bin "$B"
site_checks "$t/site.yaml"
printf 'version: 1\ncheck:\n  after: true\n' >"$t/after.yaml"
chmod 644 "$t"/*.yaml
plugstack "$t/plugstack.conf" site=$t/site.yaml libexecdir=$B check=$B/standin-check nvidia_dev=$t/nvidiactl \
	mps_control=$B/nvidia-cuda-mps-control
"$CL" start --nodes 1 --gpus 1 --plugstack "$t/plugstack.conf" >"$t/start.log" 2>&1 ||
	{ cat "$t/start.log" >&2; skip_all "the local Slurm did not start"; }
eval "$("$CL" env)"
hist=$GPUMEM_CLUSTER_STATE_DIR/gpus/hist.gpumem1.GPU-00000000-0000-0000-0000-000000000001
log=$GPUMEM_CLUSTER_DIR/log/slurmd.gpumem1.log

# job TRIAD: a job whose after-check measures TRIAD GB/s; its report in $f.
job() {
	echo "$1" >"$B/triad"
	run asuser srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/after.yaml" sh -c 'echo "job=$SLURM_JOB_ID"'
	jid=$(printf '%s' "$out" | sed -n 's/^job=//p')
	f="$t/reports/job$jid.epilog.gpumem1.after.json"
	wait_file "$f" || fail "job $jid: its after-check's report ($f)"
}

for i in 1 2 3; do
	job 4600
	is "$(json "$f" 'd["verdict"]')" "pass" "pass $i at 4600 GB/s"
done
is "$(wc -l <"$hist")" 3 "three passes kept in state_dir/gpus/hist.NODE.UUID"
is "$(stat -c '%U %a' "$hist")" "root 600" "... root's alone"

job 3680
is "$(json "$f" 'd["check"]["devices"][0]["metrics"]["triad"]["verdict"]')" "pass" "20% below: the triad clears its reference"
is "$(json "$f" 'd["verdict"]')" "warn" "... but the GPU warns against its own history"
is "$(json "$f" 'd["reason"]')" "gpu0: history: triad 3680.0 GB/s is 20% below its median 4600.0 of 3 passes (margin 5%)" \
	"... naming the figure, the margin and the passes"
is "$(json "$f" 'd["rows"][0]["verdict"]')" "warn" "... the GPU's row says warn"
like "$(grep -h "check after job $jid" "$log")" "warn \(gpu0: history: triad 3680.0" "... and the slurmd log"
is "$(wc -l <"$hist")" 3 "a warn is not added to the history"
# gpumem job, from the record gpumem-acct builds of the node's reports (a stand-in sacct prints it).
mkdir -p "$t/sacct"
sacct_standin "$t/sacct"
seg=$("$top_builddir/plugin/acct/gpumem-acct" record --dir "$t/reports" --job "$jid" --node gpumem1 2>&1 | sed -n 2p)
echo "$jid|$U|COMPLETED|JS1:abc $seg" >"$t/sacct/sacct.$jid"
out=$(PATH="$t/sacct:$PATH" "$GPUMEM" job "$jid" 2>&1)
like "$out" "  check after  warn .*history: triad 3680.0 GB/s is 20% below" "gpumem job: the check warns, with why"
like "$out" "    gpu 0   warn .*triad 3680 .*history: triad 3680.0" "gpumem job: the GPU's row warns too"
like "$out" "    judged against: site reference" "gpumem job: what it was judged against"

job 4462
is "$(json "$f" 'd["verdict"]')" "pass" "3% below its median: pass"
is "$(wc -l <"$hist")" 4 "... kept"

# The GPU's own peak where the site names no reference (what gpumem-check does with NVML's figures).
echo 4814.3 >"$B/peak"
job 4500
rm -f "$B/peak"
is "$(json "$f" 'd["verdict"]')" "pass" "no site reference, the GPU's peak: a judged pass"
is "$(json "$f" 'd["check"]["devices"][0]["metrics"]["triad"]["basis"]')" "0.82 of this GPU's peak" "the report says its basis"
like "$(grep -h "check after job $jid.* node gpumem1: gpu0" "$log")" "triad 4500 GB/s \(triad 0.82 of this GPU's peak\)" \
	"... and so does the log line"
job 4400
like "$(grep -h "check after job $jid.* node gpumem1: gpu0" "$log")" "triad 4400 GB/s \(site reference\)" \
	"a site reference: the log line says so"
done_testing

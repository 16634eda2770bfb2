#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The cap on the persisting-L2 set-aside per GPU model (plugin/core/l2cap.c;
# doc/admin/lifecycle.md, "The L2 set-aside's cost") on a real local Slurm: a step on
# a GPU the probe names "NVIDIA H200" whose policy asks for 50% of L2 gets
# the H200's cap, and slurmd's log and the user say so, with what 50% would
# have cost; a site's limits.l2_model_max_percent raises the cap for the
# next job; a policy under the cap is left as asked.
# No GPU here: the stand-in device, probe and check (tests/slurm/standin*),
# the probe naming its GPU after $B/model.
. "$top_srcdir/tests/lib.sh"
slurm_test l2cap
B=$t/bin
mkdir -p "$t/reports"
standin_bin "$B"
echo "NVIDIA H200" >"$B/model"
chmod 644 "$B/model"
printf 'version: 1\nreport:\n  dir: %s\n' "$t/reports" >"$t/site.yaml"
printf 'version: 1\nl2:\n  persisting_limit: 50%%\n' >"$t/half.yaml"
printf 'version: 1\nl2:\n  persisting_limit: 15%%\n' >"$t/small.yaml"
chmod 644 "$t"/*.yaml
plugstack "$t/plugstack.conf" site=$t/site.yaml libexecdir=$B check=$B/standin-check nvidia_dev=$t/nvidiactl mps_control=$B/nvidia-cuda-mps-control
"$CL" start --gpus 1 --plugstack "$t/plugstack.conf" >"$t/start.log" 2>&1 ||
	{ cat "$t/start.log" >&2; skip_all "the local Slurm did not start"; }
eval "$("$CL" env)"
cd "$GPUMEM_CLUSTER_TMP" || exit 1
L2=CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT
# step_log JOB: slurmd's lines about JOB's steps.
step_log() { grep -h "gpumem: job $1\." "$GPUMEM_CLUSTER_DIR"/log/slurmd.*.log; }

# --- 50% on an H200: capped at 18%, said in the log and to the user ------------------
run asuser srun --gres=gpu:1 --gpumem-policy="$t/half.yaml" sh -c 'echo "job=$SLURM_JOB_ID"; printenv '$L2
is "$rc" 0 "a job asking for 50% of L2 on an H200 runs"
jid=$(printf '%s\n' "$out" | sed -n 's/^job=//p')
like "$out" "^18$" "its task gets 18%, the H200's cap"
like "$out" "gpumem: .*: l2.persisting_limit: warning: 50% of L2 would cost this GPU \(NVIDIA H200\) 27% of its triad bandwidth \(31% of its write bandwidth\): capped at 18%" "the user is told what 50% would cost"
like "$(step_log "$jid")" "l2.persisting_limit: warning: 50% of L2 would cost this GPU \(NVIDIA H200\) 27% of its triad bandwidth \(31% of its write bandwidth\): capped at 18%$" "slurmd's log says the same"
like "$(step_log "$jid")" "set $L2=18( |$)" "... and the step's line shows 18% set"
wait_idle gpumem1

# --- under the cap: as asked, nothing said ---------------------------------------------
run asuser srun --gres=gpu:1 --gpumem-policy="$t/small.yaml" sh -c 'echo "job=$SLURM_JOB_ID"; printenv '$L2
jid=$(printf '%s\n' "$out" | sed -n 's/^job=//p')
like "$out" "^15$" "15% is under the cap: kept"
like "$(step_log "$jid")" "set $L2=15( |$)" "... the step's line shows it"
unlike "$(step_log "$jid")" "capped at" "... nothing said"
wait_idle gpumem1

# --- the site raises the H200's cap: the next job's prolog reads it ---------------------
printf 'version: 1\nreport:\n  dir: %s\nlimits:\n  l2_model_max_percent:\n    NVIDIA H200: 40%%\n' "$t/reports" >"$t/site.yaml"
run asuser srun --gres=gpu:1 --gpumem-policy="$t/half.yaml" sh -c 'echo "job=$SLURM_JOB_ID"; printenv '$L2
jid=$(printf '%s\n' "$out" | sed -n 's/^job=//p')
like "$out" "^40$" "limits.l2_model_max_percent raises the H200's cap to 40%"
like "$(step_log "$jid")" "capped at 40%, the site's cap for it \(limits.l2_model_max_percent\)$" "... and the log says whose cap it is"
done_testing

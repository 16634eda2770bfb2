#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# gpumem on a cgroup-confined node (tests/slurm/cluster start --cgroup):
# task/cgroup + proctrack/cgroup, ConstrainDevices=yes, two GPUs.  The
# job's tasks are confined to its GPUs; what the plugin runs for the job
# (probe, per-job MPS daemon, check, L2 reset) runs once per job from the
# job prolog/epilog, which Slurm runs outside the job's cgroup: there the
# helpers are given the job's GPUs in the node's numbering (a job on GPU 1
# gets CUDA_VISIBLE_DEVICES=1, never GPU 0), as the job's user, and a job on
# GPU 1 is never measured, reset or reported as GPU 0; MIG instance lists
# get their per-GPU notes and never fail the step; stop leaves no cgroup
# behind.
#
# The GPUs are stand-in device files 195:0 and 195:1 (as /dev/nvidia0 and
# 1) with no driver: the devices cgroup allows or denies them as it would
# real ones (an allowed open gives ENXIO, a denied one EPERM).  The
# programs the plugin runs are tests/slurm/standin-gpu, which records its
# cgroup, its CUDA_VISIBLE_DEVICES and which devices it can open, and
# answers, as CUDA would, for the GPUs it can open.
#
# GPUMEM_TEST_CGROUP=v2 (tests/slurm/cgroup_v2.sh): the same on Slurm's
# cgroup/v2 (--cgroup v2: eBPF device filter, job cgroups under
# system.slice/gpumem1_slurmstepd.scope); skipped, with the reason, on a
# host that mounts cgroup v1 controllers.
. "$top_srcdir/tests/lib.sh"
CGV=${GPUMEM_TEST_CGROUP:-v1}
slurm_test "cgroup${CGV#v1}"
export GPUMEM_CLUSTER_STANDIN_GPUS=1
D=$GPUMEM_CLUSTER_DIR
mkdir -p "$t/gpu" "$t/reports"
for n in gpumem-probe gpumem-l2reset nvidia-cuda-mps-control gpumem-check; do
	cp "$top_srcdir/tests/slurm/standin-gpu" "$t/gpu/$n"
done
echo "$D/dev" >"$t/gpu/devdir"
mkdir -m 1777 "$t/gpu/seen"
cat >"$t/site.yaml" <<YAML
version: 1
limits:
  mps_daemons: [none, site, job]
report:
  dir: $t/reports
YAML
cat >"$t/all.yaml" <<YAML
version: 1
l2:
  persisting_limit: 15%
  reset_at_exit: true
mps:
  active_thread_percentage: 50
  daemon: job
check:
  before: true
  after: true
YAML
plugstack "$t/plugstack.conf" site=$t/site.yaml libexecdir=$t/gpu check=$t/gpu/gpumem-check mps_control=$t/gpu/nvidia-cuda-mps-control nvidia_dev=$D/dev/nvidiactl
chmod -R a+rX "$t"

if ! "$CL" start --cgroup "$CGV" --gpus 2 --plugstack "$t/plugstack.conf" >"$t/start.log" 2>&1; then
	why=$(grep -m1 'cluster: error:' "$t/start.log")
	cat "$t/start.log" >&2
	skip_all "the cgroup-confined Slurm ($CGV) did not start here: ${why:-see the log above}"
fi
eval "$("$CL" env)"
cd "$GPUMEM_CLUSTER_TMP" || exit 1
uid=$(id -u "$GPUMEM_TEST_USER")
# seen NAME: the records of the stand-in NAME since the last reset_seen.
seen() { cat "$t/gpu/seen/$1".* 2>/dev/null; }
reset_seen() { rm -f "$t/gpu/seen"/*; }
# hold_gpu0: a job on GPU 0 (the first free), so that the next one gets GPU 1.
hold_gpu0() {
	timeout 60 srun --gres=gpu:1 sh -c 'echo "$SLURM_STEP_GPUS" >"$0"; sleep 30' "$t/held" >/dev/null 2>&1 &
	held=$!
	for _ in $(seq 1 240); do [ -s "$t/held" ] && break; sleep 0.25; done
	is "$(cat "$t/held" 2>/dev/null)" 0 "a job holds GPU 0"
}
release_gpu0() { scancel "$(squeue -h -o %i -t R | head -1)" 2>/dev/null; wait "$held" 2>/dev/null; rm -f "$t/held"; }

# --- the node is really confined ----------------------------------------------
like "$(scontrol show config | grep -E '^(TaskPlugin|ProctrackType) ')" "task/cgroup,task/affinity" "TaskPlugin=task/cgroup,task/affinity"
like "$(scontrol show config | grep -E '^ProctrackType ')" "proctrack/cgroup" "ProctrackType=proctrack/cgroup"
hold_gpu0
# v1: the devices hierarchy's line of /proc/self/cgroup; v2: the one line.
if [ "$CGV" = v2 ]; then cgline='^0::'; cgwant='^0::/system.slice/gpumem1_slurmstepd.scope/job_[0-9]+/step_0/user/task_0$'
else cgline='^[0-9]+:devices:'; cgwant='devices:/slurm[^ ]*/job_[0-9]+/step_0'; fi
run srun --gres=gpu:1 sh -c 'echo "step=$SLURM_STEP_GPUS cvd=$CUDA_VISIBLE_DEVICES"; grep -E "$1" /proc/self/cgroup; for k in 0 1; do { (: <"$0/nvidia$k") && echo "nvidia$k: opened"; } 2>&1 | sed "s/.*: /nvidia$k: /"; done' "$D/dev" "$cgline"
like "$out" "^step=1 cvd=0$" "a step on GPU 1: SLURM_STEP_GPUS=1, and Slurm renumbers it CUDA_VISIBLE_DEVICES=0"
like "$out" "$cgwant" "the task is in its step's cgroup ($CGV)"
like "$out" "nvidia0: Operation not permitted" "the task cannot open GPU 0 (EPERM: the devices cgroup)"
# On a GPU host (tests/gpu/run's cgroup2 part) NVIDIA's driver answers 195:1:
# ENODEV where there is no GPU 1, success where there is.
like "$out" "nvidia1: (No such device or address|No such device|opened)$" "the task can open GPU 1 (ENXIO: allowed, no driver behind the stand-in)"

# --- what the plugin runs for the job: once, on the job's GPUs only --------------
reset_seen
run "$CL" runas srun --gres=gpu:1 --gpumem-policy="$t/all.yaml" sh -c 'echo "job=$SLURM_JOB_ID"; env | grep -E "^CUDA_(DEVICE_DEFAULT_PERSISTING|MPS_PIPE)"'
is "$rc" 0 "a job on GPU 1 with L2 limit, per-job MPS, checks before and after: exit 0"
jid=$(printf '%s\n' "$out" | sed -n 's/^job=//p')
like "$out" "^CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=15$" "the probe found the job's GPU: L2 limit set"
like "$out" "^CUDA_MPS_PIPE_DIRECTORY=/run/gpumem-mps/job$jid/pipe$" "the per-job MPS daemon (root's mps_dir) serves the step"
release_gpu0
for _ in $(seq 1 240); do [ -f "$t/reports/job$jid.epilog.gpumem1.after.json" ] && break; sleep 0.25; done
for prog in gpumem-probe nvidia-cuda-mps-control gpumem-check gpumem-l2reset; do
	s=$(seen "$prog")
	[ -n "$s" ] || { fail "$prog ran for the job"; continue; }
	unlike "$s" "^cgroup .*/job_$jid(/|\$)" "$prog ran from the job prolog/epilog, outside the job's cgroup"
	# The probe runs as root: its result is cached for every later job, so
	# no user may tamper with it; the check and the L2 reset as check_user
	# (default the package's gpumem-check); the MPS daemon and its quit as the job's user.
	case $prog in gpumem-probe) u=0 who=root ;; nvidia-cuda-mps-control) u=$uid who="the job's user" ;; *) u=$(id -u gpumem-check) who="check_user (gpumem-check)" ;; esac
	is "$(printf '%s\n' "$s" | grep -c '^uid ')" "$(printf '%s\n' "$s" | grep -c "^uid $u\$")" "... as $who"
	# The MPS quit needs no GPU (cvd unset); every other run is given GPU 1 only.
	is "$(printf '%s\n' "$s" | grep '^cvd ' | grep -v '^cvd unset$' | sort -u)" "cvd 1" "... given the job's GPU in the node's numbering (CUDA_VISIBLE_DEVICES=1)"
	unlike "$(printf '%s\n' "$s" | grep -A4 '^cvd 1$')" "^gpus .*\b0\b" "... never acted on GPU 0"
done
is "$(seen gpumem-probe | grep -c '^cvd ')" 1 "the probe ran once for the job, its result cached in state_dir (/run/gpumem)"
is "$(seen gpumem-check | grep -c '^gpus 1$')" 2 "the check measured GPU 1, before and after"
is "$(seen gpumem-l2reset | grep '^gpus ')" "gpus 1" "the L2 reset acted on GPU 1"
# Records are named NAME.NODE.PID, so their order is not the order of the runs:
# the start (given GPU 1) is the one record that sees GPU 1 alone.
is "$(seen nvidia-cuda-mps-control | grep -c '^gpus 1$')" 1 "the MPS daemon was given GPU 1"
for phase in prolog.gpumem1.before epilog.gpumem1.after; do
	f="$t/reports/job$jid.$phase.json"
	is "$(json "$f" 'd["gpus"] + " " + d["status"] + " " + d["verdict"]')" "1 ran pass" "${phase##*.} report: GPU 1, the check ran and passed"
	is "$(json "$f" 'd["check"]["devices"][0]["uuid"]')" "GPU-00000001-0000-0000-0000-000000000001" "... the device measured is GPU 1's"
done
like "$(grep -h "check after job $jid.epilog node gpumem1:" "$D"/log/slurmd.gpumem1.log)" ": gpu1 pass triad 4100 GB/s" "the log names the GPU as the node does: gpu1, not the check's ordinal 0"
like "$(grep -h "job $jid: L2 reset on GPUs 1 (exit 0)" "$D"/log/slurmd.gpumem1.log | tail -1)" "GPU-00000001-" "the L2 reset names GPU 1's UUID"
# wait_epilog JOB: until the job's after-check report is written.
wait_epilog() { for _ in $(seq 1 240); do [ -f "$t/reports/job$1.epilog.gpumem1.after.json" ] && break; sleep 0.25; done; }
hold_gpu0
reset_seen
run "$CL" runas srun --gres=gpu:1 --gpumem-policy="$t/all.yaml" sh -c 'echo "job=$SLURM_JOB_ID"'
release_gpu0
wait_epilog "$(printf '%s\n' "$out" | sed -n 's/^job=//p')"
is "$(seen gpumem-probe)" "" "the next job on the same GPU starts no probe (the cache in state_dir)"

# --- two GPUs: both allowed, both measured ---------------------------------------
reset_seen
run srun --gres=gpu:2 --gpumem-policy="$t/all.yaml" sh -c 'echo "step=$SLURM_STEP_GPUS cvd=$CUDA_VISIBLE_DEVICES job=$SLURM_JOB_ID"'
like "$out" "^step=0,1 cvd=0,1 job=" "--gres=gpu:2: both GPUs"
wait_epilog "$(printf '%s\n' "$out" | sed -n 's/.*job=//p')"
is "$(seen gpumem-check | grep '^gpus ' | sort -u)" "gpus 0 1" "the check measured both"

# --- stop leaves no cgroup --------------------------------------------------------
stop_clean() {
	local port left ours
	port=$(sed -n 's/^PORT_BASE=//p' "$D/cluster.state")
	if [ "$CGV" = v2 ]; then mine=/sys/fs/cgroup/system.slice/gpumem1_slurmstepd.scope; else mine="/sys/fs/cgroup/*/gpumem_p${port}_*"; fi
	# shellcheck disable=SC2086
	ls -d $mine >/dev/null 2>&1 && pass "the node had its own cgroup tree" || fail "the node had its own cgroup tree"
	# By inode: the port block is free once stopped, and another cluster
	# that takes it at once makes trees of the same names (seen).
	# shellcheck disable=SC2086
	ours=$(stat -c '%n %i' $mine 2>/dev/null)
	"$CL" stop >/dev/null 2>&1
	left=$(printf '%s\n' "$ours" | while read -r d i; do [ -n "$d" ] && [ "$(stat -c %i "$d" 2>/dev/null)" = "$i" ] && echo "$d"; done)
	is "$left" "" "stop removed the nodes' cgroups"
	pgrep -f "$t/gpu/" >/dev/null && fail "no stand-in (MPS daemon) left running" || pass "no stand-in (MPS daemon) left running"
}
stop_clean

# --- MIG instance lists: notes per GPU, the step never fails ---------------------
# Slurm cannot hand out MIG instances here (its NVML autodetection finds
# them on a MIG GPU only), and on a node with GPU GRES it replaces the
# user's CUDA_VISIBLE_DEVICES: so a confined node whose GPUs Slurm does not
# manage, where the step's CUDA_VISIBLE_DEVICES is the list.
mknod -m 0666 "$t/nvidiactl" c 195 255
# No GRES here: gpus=all (a job may use every GPU of the node).
sed "s|nvidia_dev=[^ ]*|nvidia_dev=$t/nvidiactl gpus=all|" "$t/plugstack.conf" >"$t/plugstack-mig.conf"
chmod 644 "$t/plugstack-mig.conf"
"$CL" start --cgroup "$CGV" --plugstack "$t/plugstack-mig.conf" >"$t/start.log" 2>&1 || { cat "$t/start.log" >&2; fail "the cgroup cluster restarted without GRES"; }
cd "$GPUMEM_CLUSTER_TMP" || exit 1
M1=MIG-8c3a9e21-5f4d-5b7a-9e0c-1d2f3a4b5c6d
M2=MIG-GPU-5d1f8a3e-7c2b-4e91-b0a6-3f9e2d1c8b47/1/0
reset_seen
run env CUDA_VISIBLE_DEVICES="$M1,$M2" srun --gpumem-policy="$t/all.yaml" sh -c 'echo "cvd=$CUDA_VISIBLE_DEVICES"; env | grep -c "^CUDA_DEVICE_DEFAULT_PERSISTING"; true'
is "$rc" 0 "a step on two MIG instances: exit 0"
like "$out" "^0$" "... no persisting L2 limit set (disabled under MIG)"
like "$out" "gpumem: [^ ]+: GPU $M1 \($M1\): MIG instance: persisting L2 limit not set and no L2 reset" "the user is told, per GPU, what was skipped"
like "$out" "GPU $M2 \($M2 on GPU-5d1f8a3e-7c2b-4e91-b0a6-3f9e2d1c8b47\): MIG instance" "... the old MIG-GPU-<uuid>/GI/CI form names its GPU"
like "$out" "the job's MPS daemon serves the job's MIG instances" "... what MPS does there"
like "$out" "check: a MIG instance is reported 'unusable'" "... and the check"
log=$(grep -h "gpumem: job" "$D"/log/slurmd.gpumem1.log | tail -20)
like "$log" "GPU $M1 \($M1\): MIG instance" "the slurmd log has the same per-GPU line"
# gpus=all: Slurm gives no GPU list, so the job's GPUs are the node's.
for _ in $(seq 1 240); do seen gpumem-l2reset | grep -q '^cvd ' && break; sleep 0.25; done
is "$(seen nvidia-cuda-mps-control | grep '^cvd ' | sort -u)" "cvd unset" "gpus=all: the job's MPS daemon (and its quit) get every GPU of the node"
is "$(seen gpumem-l2reset | grep '^cvd ')" "cvd unset" "gpus=all: the epilog's L2 reset acts on every GPU of the node"
reset_seen
run env CUDA_VISIBLE_DEVICES="1,$M1" srun --gpumem-policy="$t/all.yaml" true
is "$rc" 0 "a whole GPU and a MIG instance in one step: exit 0"
for _ in $(seq 1 240); do seen gpumem-l2reset | grep -q '^cvd ' && break; sleep 0.25; done
like "$out" "GPU 1 \(1\): whole GPU: L2 limit not set for the step .*; L2 reset at exit" "the whole GPU: L2 limit left out, still reset"
is "$(seen gpumem-l2reset | grep '^cvd ')" "cvd unset" "gpus=all: the epilog's L2 reset acts on every GPU, whatever the step named (the job's environment never chooses root's work)"

stop_clean

# --- a stop of a stopped cluster leaves alone the cluster on its old ports -------
# Its port block is free once it stopped; the next cluster may take it and
# makes cgroup trees of the same names.  A second stop (start's own, a
# test's EXIT trap) once removed those trees and SIGKILLed their slurmd.
if [ "$CGV" = v1 ]; then
	Y=$t/other
	if "$CL" start --dir "$Y" --cgroup v1 >"$t/other.log" 2>&1; then
		yport=$(sed -n 's/^PORT_BASE=//p' "$Y/cluster.state")
		# D's state as it was before a stop cleared it, now naming Y's block.
		sed -i "s/^PORT_BASE=.*/PORT_BASE=$yport/" "$D/cluster.state"
		run "$CL" stop --dir "$D"
		like "$out" "$yport.*$Y.*left alone" "a stop whose port block another cluster claims says so ..."
		like "$("$CL" status --dir "$Y")" "slurmd.gpumem1: running" "... and that cluster's slurmd still runs"
		is "$(ls -d /sys/fs/cgroup/*/gpumem_p"${yport}"_gpumem1 2>/dev/null | wc -l)" 2 "... in its cgroup trees (freezer, devices)"
	else
		cat "$t/other.log" >&2; fail "a second cgroup cluster started"
	fi
	"$CL" stop --dir "$Y" >/dev/null 2>&1
fi
done_testing

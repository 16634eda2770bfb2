#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# gpumem on a real GPU node confined by Slurm's cgroup/v2 (tests/slurm/cluster
# start --cgroup v2: CgroupPlugin=cgroup/v2 with IgnoreSystemd=yes and
# CgroupAutomount=yes, task/cgroup, proctrack/cgroup, ConstrainDevices=yes,
# which on v2 is an eBPF device filter on the job's cgroup).  A job without
# a GPU sees none (CUDA, nvidia-smi, the device file); a job with
# --gres=gpu:1 sees exactly its own; on a node of two or more GPUs a job on
# GPU 1 sees GPU 1 alone, and the plugin's job prolog/epilog (outside the
# job's cgroup) check and reset GPU 1 and no other.  The job gets its
# policy, its before/after check and its L2 reset.  If slurmd cannot run
# cgroup/v2 here, the test fails with slurmd's own lines.
# Usage: tests/gpu/cgroup_gpu.sh BUILD_DIR   (run by tests/gpu/run)
B=$(cd "${1:?usage: cgroup_gpu.sh BUILD_DIR}" && pwd)
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
export top_srcdir top_builddir=$B
. "$top_srcdir/tests/lib.sh"
[ -e /dev/nvidiactl ] || skip_all "no GPU here: run tests/gpu/run on a GPU machine"
[ -f "$B/plugin/spank/.libs/gpumem.so" ] || skip_all "gpumem.so not built"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
CL="$top_srcdir/tests/slurm/cluster"
t=$(mktemp -d /tmp/gpumem-cg2.XXXXXX); chmod 755 "$t"
export GPUMEM_CLUSTER_DIR=$t/cluster   # its own (runs at once never share one)
trap '"$CL" stop >/dev/null 2>&1; rm -rf "$t"' EXIT
SCOPE=/sys/fs/cgroup/system.slice/gpumem1_slurmstepd.scope

for p in l2limit devcount; do
	"$NVCC" -O2 -o "$t/$p" "$top_srcdir/tests/gpu/$p.cu" || fail "nvcc $p"
done
NG=$(nvidia-smi -L | grep -c '^GPU ')
uuid_of() { nvidia-smi --query-gpu=index,uuid --format=csv,noheader | awk -F', ' -v i="$1" '$1 == i {print $2}'; }
echo "# $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1); $NG GPU(s); $(uname -r)"
diag "cgroup: $(awk '$2 == "/sys/fs/cgroup" {print $3}' /proc/mounts) at /sys/fs/cgroup; controllers: $(cat /sys/fs/cgroup/cgroup.controllers 2>&1); subtree_control: $(cat /sys/fs/cgroup/cgroup.subtree_control 2>&1); this shell: $(cat /proc/self/cgroup | paste -sd' ')"
mkdir -p "$t/reports" "$t/libexec"
cat >"$t/site.yaml" <<YAML
version: 1
limits:
  l2_max_percent: 100
  l2_model_max_percent: {other: 100, NVIDIA H200: 100}   # 50% as asked (no cap per model)
  mps_daemons: [none, site, job]
policy_dir: $top_srcdir/policies
report:
  dir: $t/reports
check:
  timeout: 30
YAML
ln -s "$B/plugin/probe/gpumem-probe" "$t/libexec/gpumem-probe"
[ -x "$B/kernels/l2reset/gpumem-l2reset" ] && ln -s "$B/kernels/l2reset/gpumem-l2reset" "$t/libexec/gpumem-l2reset"
echo "required $B/plugin/spank/.libs/gpumem.so site=$t/site.yaml libexecdir=$t/libexec check=$B/kernels/check/gpumem-check verbose" >"$t/plugstack.conf"
printf 'version: 1\nl2:\n  persisting_limit: 50%%\n  reset_at_exit: true\nmps:\n  active_thread_percentage: 50\n  daemon: job\ncheck:\n  before: true\n  after: true\n' >"$t/all.yaml"
printf 'version: 1\nl2:\n  persisting_limit: 50%%\n  reset_at_exit: true\ncheck:\n  before: true\n  after: true\n' >"$t/checked.yaml"
# The confined job (a file: a pgrep for the daemon must not find srun's
# command line, which runs outside the job).
cat >"$t/job" <<'SH'
#!/bin/sh
t=$(dirname "$0")
echo "job=$SLURM_JOB_ID step=$SLURM_STEP_GPUS"
env | grep -E "^CUDA_(MPS_PIPE|DEVICE_DEFAULT_PERSISTING)"
nvidia-smi -L; "$t/devcount"; "$t/l2limit"
for f in /dev/nvidia[0-9]*; do { : <"$f" && echo "$f: opened"; } 2>&1 | sed "s|.*: |$f: |"; done
d=$(pgrep -u "$(id -u)" -f "nvidia-cuda-mps-control -f" | head -1)
echo "mpsd=$d $(cat "/proc/$d/cgroup" 2>&1)"
SH
chmod 755 "$t/job"
chmod 644 "$t"/*.yaml "$t"/*.conf
chmod -R a+rX "$t"

# --- slurmd runs cgroup/v2 here, or says why not ---------------------------------
if ! "$CL" start --cgroup v2 --gpus "$NG" --plugstack "$t/plugstack.conf" >"$t/start.log" 2>&1; then
	fail "slurmd runs with CgroupPlugin=cgroup/v2, IgnoreSystemd=yes"
	diag "start:" "$(cat "$t/start.log")" "cgroup.conf:" "$(cat "$GPUMEM_CLUSTER_DIR/cgroup.conf" 2>&1)" \
		"slurmd's log:" "$(grep -hiE 'cgroup|error|fatal|ebpf|hybrid|scope' "$GPUMEM_CLUSTER_DIR"/log/slurmd.* 2>&1 | tail -30)" \
		"system.slice: $(find /sys/fs/cgroup/system.slice -maxdepth 2 -type d 2>&1 | head | paste -sd' ')"
	done_testing
fi
pass "slurmd runs with CgroupPlugin=cgroup/v2, IgnoreSystemd=yes ($(sed -n 's/.*up: //p' "$t/start.log"))"
eval "$("$CL" env)"
cd "$GPUMEM_CLUSTER_TMP" || exit 1
D=$GPUMEM_CLUSTER_DIR
cfg=$(scontrol show config)
like "$cfg" "CgroupPlugin += cgroup/v2" "scontrol: CgroupPlugin = cgroup/v2"
like "$cfg" "ConstrainDevices += yes" "scontrol: ConstrainDevices = yes"
like "$(printf '%s\n' "$cfg" | grep -E '^TaskPlugin ')" "task/cgroup" "scontrol: TaskPlugin task/cgroup"
like "$(printf '%s\n' "$cfg" | grep -E '^ProctrackType ')" "proctrack/cgroup" "scontrol: ProctrackType proctrack/cgroup"
spid=$(cat "$D/run/slurmd.gpumem1.pid")
is "$(cat "/proc/$spid/cgroup" 2>&1)" "0::/system.slice/gpumem1_slurmstepd.scope/slurmd" "slurmd moved itself into system.slice/gpumem1_slurmstepd.scope/slurmd"
diag "the scope's controllers: $(cat "$SCOPE/cgroup.subtree_control" 2>&1)"

# --- a job without a GPU sees none ------------------------------------------------
run srun -N1 sh -c 'cat /proc/self/cgroup; nvidia-smi -L; echo "smi=$?"; "$0/devcount"; { : </dev/nvidia0 && echo "nvidia0: opened"; } 2>&1 | sed "s/.*: /nvidia0: /"' "$t"
diag "no --gres: $out"
like "$out" "^0::/system.slice/gpumem1_slurmstepd.scope/job_[0-9]+/step_0/user/task_0$" "the task is in its step's cgroup under the node's scope"
# nvidia-smi -L says so and exits 0 (driver 580).
like "$out" "^No devices (were )?found" "no --gres: nvidia-smi finds no GPU"
is "$(printf '%s\n' "$out" | grep -c '^GPU ')" 0 "... and lists none"
like "$out" "devcount: count=0 error=" "no --gres: CUDA finds no device"
like "$out" "nvidia0: Operation not permitted" "no --gres: /dev/nvidia0 cannot be opened (EPERM: the eBPF device filter)"

# --- a job with --gres=gpu:1 sees exactly its own -------------------------------
run srun -N1 --gres=gpu:1 sh -c 'echo "step=$SLURM_STEP_GPUS cvd=$CUDA_VISIBLE_DEVICES"; nvidia-smi -L; "$0/devcount"' "$t"
diag "--gres=gpu:1: $out"
is "$(printf '%s\n' "$out" | grep -c '^GPU ')" 1 "--gres=gpu:1: nvidia-smi lists exactly one GPU"
like "$out" "devcount: count=1$" "--gres=gpu:1: CUDA finds exactly one device"
g=$(printf '%s\n' "$out" | sed -n 's/^step=\([0-9]*\) .*/\1/p')
like "$out" "devcount: 0 $(uuid_of "$g")$" "... the one Slurm gave it (GPU $g, $(uuid_of "$g"))"

# --- its policy, its check before and after, its L2 reset ----------------------
# On two or more GPUs, a job holds GPU 0 so that the next jobs get GPU 1.
held=""
if [ "$NG" -ge 2 ]; then
	timeout 150 srun --gres=gpu:1 sh -c 'echo "$SLURM_STEP_GPUS" >"$0"; sleep 120' "$t/held" >/dev/null 2>&1 &
	held=$!
	for _ in $(seq 1 80); do [ -s "$t/held" ] && break; sleep 0.25; done
	is "$(cat "$t/held" 2>/dev/null)" 0 "a job holds GPU 0"
fi
# report JOB PHASE: "GPUS STATUS VERDICT UUID" of the job's check report.
wait_after() { for _ in $(seq 1 80); do [ -f "$t/reports/job$1.epilog.gpumem1.after.json" ] && break; sleep 0.25; done; }
report() { json "$t/reports/job$1.$2.json" 'd["gpus"] + " " + d["status"] + " " + d["verdict"] + " " + ((d["check"] or {}).get("devices") or [{}])[0].get("uuid", "-")' 2>&1; }

run "$CL" runas srun -N1 --gres=gpu:1 --gpumem-policy="$t/checked.yaml" "$t/job"
diag "checked.yaml: $out"
is "$rc" 0 "a confined job with an L2 limit, checks before and after: exit 0"
jid=$(printf '%s\n' "$out" | sed -n 's/^job=\([0-9]*\) .*/\1/p')
g=$(printf '%s\n' "$out" | sed -n 's/^job=[0-9]* step=//p')
uuid=$(uuid_of "$g")
[ "$NG" -ge 2 ] && is "$g" 1 "beside the held job, the job got GPU 1"
is "$(printf '%s\n' "$out" | grep -c '^GPU ')" 1 "the job sees exactly one GPU"
like "$out" "devcount: 0 $uuid$" "... its own (GPU $g)"
l2=$(printf '%s\n' "$out" | sed -n 's/.* l2=\([0-9]*\) .*/\1/p'); lim=$(printf '%s\n' "$out" | sed -n 's/.*limit=\([0-9]*\).*/\1/p')
[ -n "$l2" ] && is "$lim" "$((l2 / 2))" "its policy: persisting_limit 50% -> half of L2 in the confined task" || fail "l2limit ran in the job"
like "$out" "/dev/nvidia$g: opened" "the task opens its own GPU's device file"
[ "$NG" -ge 2 ] && like "$out" "/dev/nvidia0: Operation not permitted" "... and not GPU 0's"
wait_after "$jid"
for ph in prolog.gpumem1.before epilog.gpumem1.after; do
	is "$(report "$jid" "$ph")" "$g ran pass $uuid" "${ph##*.} check (job prolog/epilog, outside the job's cgroup): GPU $g, ran and passed on $uuid"
done
like "$(grep -hE "job $jid: L2 reset (on|by the after-check on) GPUs $g( |$)" "$D"/log/slurmd.gpumem1.log | tail -1)" "L2 reset" "its L2 reset, on GPU $g"
grep -h "gpumem: .*job $jid" "$D"/log/slurmd.gpumem1.log | tail -6 | sed 's/^/# slurmd: /'

# The per-job MPS daemon, started by the job prolog, serves the confined job.
run "$CL" runas srun -N1 --gres=gpu:1 --gpumem-policy="$t/all.yaml" "$t/job"
diag "all.yaml (per-job MPS): $out"
is "$rc" 0 "a confined job with per-job MPS, L2 limit, checks before and after: exit 0"
jid=$(printf '%s\n' "$out" | sed -n 's/^job=\([0-9]*\) .*/\1/p')
like "$out" "^CUDA_MPS_PIPE_DIRECTORY=/run/gpumem-mps/job$jid/pipe$" "the per-job MPS daemon serves the confined job"
like "$out" "l2limit: device=.* limit=$((l2 / 2))$" "CUDA works in the job through its MPS daemon, with its L2 limit"
like "$out" "^mpsd=[0-9]+ 0::/system.slice/gpumem1_slurmstepd.scope/slurmd$" "NVIDIA's MPS daemon lives where the job prolog runs (slurmd's cgroup), outside the job's"
wait_after "$jid"
# NVIDIA: a client's CUDA_VISIBLE_DEVICES is read against the GPUs the MPS
# daemon was started with (its own CUDA_VISIBLE_DEVICES), not the node's.
is "$(report "$jid" prolog.gpumem1.before)" "$g ran pass $uuid" "per-job MPS: the before-check (a client of the job's daemon) measures GPU $g"
is "$(report "$jid" epilog.gpumem1.after)" "$g ran pass $uuid" "per-job MPS: the after-check measures GPU $g"
grep -h "gpumem: .*job $jid" "$D"/log/slurmd.gpumem1.log | tail -6 | sed 's/^/# slurmd: /'
[ -n "$held" ] && { scancel "$(squeue -h -o %i -t R | head -1)" 2>/dev/null; wait "$held" 2>/dev/null; }
for _ in $(seq 1 30); do
	left=$(ls -d "$GPUMEM_CLUSTER_MPS_DIR"/job* 2>/dev/null; ps -eo stat=,args= | awk '$1 !~ /^Z/ && /nvidia-cuda-mps/ && !/awk/')
	[ -z "$left" ] && break
	sleep 0.5
done
is "$left" "" "the job's MPS daemon stopped by the epilog"
[ "$NG" -ge 2 ] || diag "one GPU here: 'a job on GPU 1 sees GPU 1 alone' needs two (tests/slurm/cgroup_v2.sh covers the numbering with stand-ins)"

# --- stop leaves no cgroup ----------------------------------------------------------
"$CL" stop >/dev/null 2>&1
is "$(ls -d "$SCOPE" 2>/dev/null)" "" "stop removed the node's scope"
done_testing

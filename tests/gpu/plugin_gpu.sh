#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The plugin on a GPU node, through a real srun: an unmodified program sees
# the persisting-L2 limit its policy asked for, under the GPU model's cap
# (plugin/core/l2cap.c) unless the site raises it; an MPS share slows a
# bandwidth-bound program; the per-job MPS daemon leaves nothing behind.
# Usage: tests/gpu/plugin_gpu.sh BUILD_DIR   (run by tests/gpu/run)
# With GPUMEM_CLUSTER_ARGS="--cgroup v2" (tests/gpu/run's cgroup2 part) the
# same through a device-confined node: the one step that asks for no GPU
# asks for one there (a confined job without GRES sees none: cgroup_gpu.sh).
B=$(cd "${1:?usage: plugin_gpu.sh BUILD_DIR}" && pwd)
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
export top_srcdir top_builddir=$B
. "$top_srcdir/tests/lib.sh"
[ -e /dev/nvidiactl ] || skip_all "no GPU here: run tests/gpu/run on a GPU machine"
[ -f "$B/plugin/spank/.libs/gpumem.so" ] || skip_all "gpumem.so not built"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
CL="$top_srcdir/tests/slurm/cluster"
t=$(mktemp -d /tmp/gpumem-gpu.XXXXXX); chmod 755 "$t"
export GPUMEM_CLUSTER_DIR=$t/cluster   # its own (runs at once never share one)
trap '"$CL" stop >/dev/null 2>&1; rm -rf "$t"' EXIT

for p in l2limit bwcopy; do
	"$NVCC" -O2 -o "$t/$p" "$top_srcdir/tests/gpu/$p.cu" || fail "nvcc $p"
done
mkdir -p "$t/reports" "$t/textfile"
cat >"$t/site.yaml" <<YAML
version: 1
limits:
  l2_max_percent: 100
  on_fail: [warn, fail, drain]
policy_dir: $top_srcdir/policies
references:
  NVIDIA H100 80GB HBM3: {read: 3010, write: 3056, copy: 2750, triad: 2825, d2d: 3000, h2d: 53, d2h: 55}
  NVIDIA H200: {read: 4373, copy: 3969, triad: 4127, d2d: 4294, h2d: 55, d2h: 55}
report:
  dir: $t/reports
  textfile_dir: $t/textfile
drain:
  enabled: true
  reason: "gpumem: GPU check failed"
check:
  timeout: 30
YAML
# gpumem-probe lives in plugin/probe/, gpumem-l2reset in kernels/l2reset/: link both into one dir.
mkdir -p "$t/libexec"
ln -s "$B/plugin/probe/gpumem-probe" "$t/libexec/gpumem-probe"
[ -x "$B/kernels/l2reset/gpumem-l2reset" ] && ln -s "$B/kernels/l2reset/gpumem-l2reset" "$t/libexec/gpumem-l2reset"
echo "required $B/plugin/spank/.libs/gpumem.so site=$t/site.yaml libexecdir=$t/libexec check=$B/kernels/check/gpumem-check verbose" >"$t/plugstack.conf"
# A real failure for the drain test: the real check with one planted bad word.
printf '#!/bin/sh\nexec %s --plant-error "$@"\n' "$B/kernels/check/gpumem-check" >"$t/check-planted"
chmod 755 "$t/check-planted"
echo "required $B/plugin/spank/.libs/gpumem.so site=$t/site.yaml libexecdir=$t/libexec check=$t/check-planted" >"$t/planted.conf"
printf 'version: 1\ncheck:\n  before: true\n  after: true\n' >"$t/checked.yaml"
printf 'version: 1\ncheck:\n  after: true\n  on_fail: drain\n' >"$t/drain.yaml"
printf 'version: 1\ncheck:\n  after: true\n' >"$t/after.yaml"
printf 'version: 1\nl2:\n  persisting_limit: 75%%\n' >"$t/p75.yaml"
printf 'version: 1\nmps:\n  active_thread_percentage: 25\n  daemon: job\n' >"$t/mps25job.yaml"
printf 'version: 1\nmps:\n  active_thread_percentage: 100\n  daemon: job\n' >"$t/mps100job.yaml"
printf 'version: 1\nmps:\n  active_thread_percentage: 25\n' >"$t/mps25.yaml"
chmod 644 "$t"/*.yaml "$t"/*.conf
"$CL" start --gpus 1 --plugstack "$t/plugstack.conf" >"$t/start.log" 2>&1 || { cat "$t/start.log"; skip_all "local Slurm did not start"; }
eval "$("$CL" env)"

echo "# $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
G=()
case " ${GPUMEM_CLUSTER_ARGS:-} " in *" --cgroup"*) G=(--gres=gpu:1); diag "cgroup-confined node ($GPUMEM_CLUSTER_ARGS): the first step asks for a GPU" ;; esac
run srun -N1 "${G[@]}" "$t/l2limit"; diag "no policy: $out"
default=$(printf '%s' "$out" | sed -n 's/.*limit=\([0-9]*\).*/\1/p')
l2=$(printf '%s' "$out" | sed -n 's/.* l2=\([0-9]*\).*/\1/p')
pmax=$(printf '%s' "$out" | sed -n 's/.*persisting_max=\([0-9]*\).*/\1/p')
[ -n "$l2" ] && pass "unmodified program runs under srun (default limit $default bytes)" || fail "l2limit ran"

# The driver grants sixteenths of L2, rounding up: persist.yaml's 18% is 3/16.
run srun -N1 --gres=gpu:1 --gpumem-policy="$top_srcdir/policies/persist.yaml" "$t/l2limit"; diag "persist.yaml: $out"
got=$(printf '%s' "$out" | sed -n 's/.*limit=\([0-9]*\).*/\1/p')
is "$got" "$((l2 * 3 / 16))" "persist.yaml (18%) -> cudaDeviceGetLimit reports 3/16 of L2 in the task"
printf 'version: 1\nl2:\n  persisting_limit: 50%%\n' >"$t/p50.yaml"; chmod 644 "$t/p50.yaml"
run srun -N1 --gres=gpu:1 --gpumem-policy="$t/p50.yaml" "$t/l2limit"; diag "50%: $out"
like "$out" "warning: 50% of L2 (would cost this GPU|on this GPU) .*capped at 18%" "50% on this GPU: capped at 18%, said to the user"
is "$(printf '%s' "$out" | sed -n 's/.*limit=\([0-9]*\).*/\1/p')" "$((l2 * 3 / 16))" "... and 3/16 of L2 in the task"

run srun -N1 --gres=gpu:1 --gpumem-policy="$top_srcdir/policies/persist.yaml" sh -c 'echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"; exec '"$t/l2limit"
diag "persist.yaml with --gres=gpu:1: $out"
like "$out" "limit=$((l2 * 3 / 16))" "with a GRES GPU: 3/16 of L2 too" ||
	{ diag "$(ls -l /dev/nvidia* 2>&1)" "$(cat "$GPUMEM_CLUSTER_DIR"/gres.conf 2>&1)" \
		"$(scontrol show node 2>&1 | grep -Ei 'gres|state|reason')" \
		"$(grep -hi 'gres\|error' "$GPUMEM_CLUSTER_DIR"/log/slurmd.*.log | tail -15)" \
		"slurmctld: $(grep -hi 'gres\|gpu' "$GPUMEM_CLUSTER_DIR"/log/slurmctld.log | tail -15)" \
		"$(grep -i 'gres\|NodeName' "$GPUMEM_CLUSTER_DIR"/slurm.conf)"; }
like "$(grep -h 'persist.yaml' "$GPUMEM_CLUSTER_DIR"/log/slurmd.*.log | tail -1)" "GPUs (SLURM_STEP_GPUS|SLURM_JOB_GPUS|CUDA_VISIBLE_DEVICES)" "... and the node found the step's GPU from Slurm"

# A site that raises every model's cap meets the GPU's own maximum (the prolog reads the site file per job).
sed -i 's/^limits:$/limits:\n  l2_model_max_percent: {other: 100, NVIDIA H200: 100}/' "$t/site.yaml"
run srun -N1 --gres=gpu:1 --gpumem-policy="$t/p75.yaml" "$t/l2limit"; diag "75%: $out"
is "$rc" 0 "persisting_limit: 75% does not break context creation (clamped)"
like "$out" "persistingL2CacheMaxSize = 62% of L2.*using 62%" "... with the clamp said at the node"
got=$(printf '%s' "$out" | sed -n 's/.*limit=\([0-9]*\).*/\1/p')
[ -n "$got" ] && [ "$got" -le "$pmax" ] && [ "$got" -gt "$((l2 / 2))" ] &&
	pass "clamped limit $got is within (50% of L2, persisting max $pmax]" || fail "clamped limit $got"
env CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=70 "$t/l2limit" >"$t/raw70" 2>&1
diag "without gpumem, 70% directly: $(cat "$t/raw70")"

# MPS share: alternate runs, best of each.
best() { sort -n | tail -1; }
for i in 1 2 3; do
	srun -N1 --gres=gpu:1 "$t/bwcopy" | sed -n 's/.*copy \([0-9]*\) GB.*/\1/p' >>"$t/bw.none"
	srun -N1 --gres=gpu:1 --gpumem-policy="$t/mps100job.yaml" "$t/bwcopy" | sed -n 's/.*copy \([0-9]*\) GB.*/\1/p' >>"$t/bw.mps100"
	srun -N1 --gres=gpu:1 --gpumem-policy="$t/mps25job.yaml" "$t/bwcopy" | sed -n 's/.*copy \([0-9]*\) GB.*/\1/p' >>"$t/bw.mps25"
	srun -N1 --gres=gpu:1 --gpumem-policy="$t/mps25.yaml" "$t/bwcopy" | sed -n 's/.*copy \([0-9]*\) GB.*/\1/p' >>"$t/bw.env25"
done
none=$(best <"$t/bw.none"); m100=$(best <"$t/bw.mps100"); m25=$(best <"$t/bw.mps25"); e25=$(best <"$t/bw.env25")
diag "copy GB/s, best of 3 alternating: no policy $none; per-job MPS 100% $m100; per-job MPS 25% $m25; 25% without a daemon $e25"
diag "ratios: MPS25/none $(awk -v a="$m25" -v b="$none" 'BEGIN{printf "%.3f", a/b}'), MPS25/MPS100 $(awk -v a="$m25" -v b="$m100" 'BEGIN{printf "%.3f", a/b}'), env25/none $(awk -v a="$e25" -v b="$none" 'BEGIN{printf "%.3f", a/b}')"
[ -n "$m25" ] && [ -n "$none" ] && [ "$m25" -lt $((none * 9 / 10)) ] &&
	pass "active_thread_percentage: 25 with a per-job MPS daemon is measurably slower" ||
	fail "active_thread_percentage: 25 slows the bandwidth-bound program"

# The job prolog starts the daemon (issue 23: as the user with a real gid
# that is not the user's, found by root's record, in mps_dir's tmpfs).
# The job's own task attacks it: rename its pipe directory, chmod it,
# ptrace the daemon, read its environment.
cat >"$t/attack" <<'SH'
#!/bin/sh
d=$CUDA_MPS_PIPE_DIRECTORY
echo "pipe=$d"; ls "$d"
pid=$(pgrep -u "$(id -u)" -f 'nvidia-cuda-mps-control -f' | head -1)
echo "daemon=$pid $(grep -E '^(Uid|Gid):' /proc/$pid/status | tr '\t\n' '  ')"
mv "$d" "$d.moved" 2>/dev/null && echo RENAMED || echo RENAME-REFUSED
python3 - "$pid" <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
pid = int(sys.argv[1])
if libc.ptrace(16, pid, None, None) == 0:
    os.waitpid(pid, 0); libc.ptrace(17, pid, None, None); print("PTRACE-ATTACHED")
else:
    print("PTRACE-DENIED", os.strerror(ctypes.get_errno()))
PY
cat "/proc/$pid/environ" >/dev/null 2>&1 && echo ENVIRON-READ || echo ENVIRON-DENIED
chmod 500 "$d"
SH
chmod 755 "$t/attack"
run "$CL" runas srun -N1 --gres=gpu:1 --gpumem-policy="$t/mps25job.yaml" "$t/attack"
diag "$out"
like "$out" "pipe=/run/gpumem-mps/job[0-9]+/pipe" "per-job MPS: the job's pipe directory in root's mps_dir"
like "$out" "daemon=[0-9]+ Uid:.*Gid:[ 	]+65534[ 	]+[0-9]+[ 	]+65534" "per-job MPS: NVIDIA's daemon runs as the user with real gid 65534 (gpumem sets the real and saved gid; the daemon makes its effective gid the same)"
like "$out" "RENAME-REFUSED" "per-job MPS: the task cannot rename the pipe directory"
like "$out" "PTRACE-DENIED" "per-job MPS: the task cannot ptrace NVIDIA's daemon"
like "$out" "ENVIRON-DENIED" "per-job MPS: ... nor read its environment"
# The job epilog stops the daemon after srun returned (the node is
# COMPLETING meanwhile).  Zombies waiting for init to reap them are gone.
for _ in $(seq 1 30); do
	left=$(ls -d "$GPUMEM_CLUSTER_MPS_DIR"/job* 2>/dev/null; ps -eo stat=,pid=,args= | awk '$1 !~ /^Z/ && /nvidia-cuda-mps/ && !/awk/')
	[ -z "$left" ] && break
	sleep 0.5
done
is "$left" "" "per-job MPS: no daemon and no directory left after the job's epilog (its pipe directory chmod 500 by the task)"
grep -h 'MPS' "$GPUMEM_CLUSTER_DIR"/log/slurmd.*.log | tail -4 | sed 's/^/# slurmd: /'
like "$(grep -h 'L2 reset' "$GPUMEM_CLUSTER_DIR"/log/slurmd.*.log)" "L2 reset" "L2 reset ran at the end of an L2 step"

# --- checks before and after a job, on the real GPU ------------------------------
run srun -N1 --gres=gpu:1 --gpumem-policy="$t/checked.yaml" sh -c 'echo "job=$SLURM_JOB_ID"'
jid=$(printf '%s' "$out" | sed -n 's/^job=//p')
for _ in $(seq 1 40); do [ -f "$t/reports/job$jid.epilog.gpumem1.after.json" ] && break; sleep 0.25; done
for ph in before after; do
	f="$t/reports/job$jid.$([ $ph = before ] && echo prolog || echo epilog).gpumem1.$ph.json"
	[ -f "$f" ] && pass "check $ph: report written" || fail "check $ph: report written ($f)"
	diag "$ph: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); c=d["check"] or {}; dv=(c.get("devices") or [{}])[0]; print(d["status"], d["verdict"], d["reason"], "wall", c.get("wall_s"), {k: v["best_gbps"] for k, v in (dv.get("metrics") or {}).items()})' "$f" 2>&1)"
	like "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["status"], d["verdict"])' "$f" 2>&1)" "^ran pass" "check $ph: ran on the GPU and passed"
done
# The head line (doc/REPORT-JSON.md) of a real check's report: gpumem report lists from it what
# it lists from the whole file (the same file with its rows taken out).
f="$t/reports/job$jid.epilog.gpumem1.after.json"
mkdir -p "$t/whole"; sed '1s/ "rows": .*$//' "$f" >"$t/whole/${f##*/}"
like "$(head -1 "$f")" '"rows": \[\{"index": 0, "name": "NVIDIA [^"]*", "uuid": "GPU-[0-9a-f-]+", .*"triad": \["pass", [0-9.]+, .*, "check_reason": null,$' \
	"the real report's first line: its fields and the GPU's row"
a=$("$B/plugin/cli/gpumem" report --no-cache --json --job "$jid" "$t/reports" 2>&1 | grep "epilog.gpumem1.after" | sed 's/,$//')
b=$("$B/plugin/cli/gpumem" report --no-cache --json "$t/whole" 2>&1 | grep "epilog.gpumem1.after" | sed 's/,$//')
[ -n "$a" ] && [ "$a" = "$b" ] && pass "gpumem report: head line and whole file agree on the real report" ||
	fail "gpumem report: head line and whole file differ: $a / $b"
ls "$t/textfile" | grep -q '^gpumem_GPU-.*\.prom$' && pass "node_exporter textfile written" || fail "node_exporter textfile written"
grep -h 'gpumem: check' "$GPUMEM_CLUSTER_DIR"/log/slurmd.*.log | tail -4 | sed 's/^/# slurmd: /'

# --- a user's own MPS daemon at the default pipe directory (issue 23, finding 6) --
# CUDA without CUDA_MPS_PIPE_DIRECTORY connects to /tmp/nvidia-mps: another
# user's daemon there makes cuInit fail (805).  gpumem-check says
# "unusable" for it, never "fail"; the plugin's helpers never go there.
"$CL" runas sh -c 'nvidia-cuda-mps-control -d' >"$t/userd.out" 2>&1
sleep 0.5
diag "a user's daemon at /tmp/nvidia-mps: $(pgrep -af nvidia-cuda-mps-control | head -2 | tr '\n' ' ')"
"$B/kernels/check/gpumem-check" --json "$t/mpsdoc.json" >/dev/null 2>&1
rc=$?
is "$rc" 4 "gpumem-check as root, a user's daemon at /tmp/nvidia-mps: exit 4 (unusable), not 2"
like "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["overall"]["reason"])' "$t/mpsdoc.json" 2>&1)" "MPS daemon in /tmp/nvidia-mps cannot serve this check" "... saying why"
run srun -N1 --gres=gpu:1 --gpumem-policy="$t/checked.yaml" sh -c 'echo "job=$SLURM_JOB_ID"'
jid=$(printf '%s' "$out" | sed -n 's/^job=//p')
for _ in $(seq 1 40); do [ -f "$t/reports/job$jid.epilog.gpumem1.after.json" ] && break; sleep 0.25; done
is "$(python3 -c 'import json,sys; print(" ".join(json.load(open(f))["verdict"] for f in sys.argv[1:]))' "$t/reports/job$jid.prolog.gpumem1.before.json" "$t/reports/job$jid.epilog.gpumem1.after.json" 2>&1)" "pass pass" \
	"the plugin's checks pass beside that daemon (their pipe directory is root's empty nomps)"
"$CL" runas sh -c 'echo quit | nvidia-cuda-mps-control' >/dev/null 2>&1
sleep 0.5

# Cost: srun -N1 true with the after-check and without, alternating.
# Each srun starts on an idle node: the previous job's epilog (its after-check) holds the GPU.
idle() { for _ in $(seq 1 200); do scontrol show node gpumem1 -o | grep -q 'State=IDLE ' && return; sleep 0.05; done; }
ms() { local s e; idle; s=$(date +%s%N); srun -N1 --gres=gpu:1 "$@" true >/dev/null 2>&1; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
for i in 1 2 3 4 5; do ms >>"$t/t.none"; ms --gpumem-policy="$t/after.yaml" >>"$t/t.after"; done
med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
diag "srun -N1 true, median of 5 alternating: no policy $(med <"$t/t.none") ms; with an after-check $(med <"$t/t.after") ms"

# --- a real failure (one planted bad word) drains the node -----------------------
"$CL" restart-slurmd --plugstack "$t/planted.conf" >/dev/null 2>&1
run srun -N1 --gres=gpu:1 --gpumem-policy="$t/drain.yaml" true
# The after-check runs in the job epilog, after srun returned.
for _ in $(seq 1 40); do scontrol show node gpumem1 -o | grep -q 'State=[A-Z+]*DRAIN' && break; sleep 0.5; done
state=$(scontrol show node gpumem1 -o | grep -o 'State=[^ ]*')
like "$state" "DRAIN" "a failing real check (--plant-error) drains the node"
like "$(scontrol show node gpumem1 -o)" "Reason=gpumem: GPU check failed \{GPU-[0-9a-f-]+\} \(job [0-9]+\.epilog after: gpu0: .*mismatch" "... with gpumem's reason"
scontrol update NodeName=gpumem1 State=RESUME
grep -h 'gpumem' "$GPUMEM_CLUSTER_DIR"/log/slurmd.*.log | tail -6 | sed 's/^/# slurmd: /'
done_testing

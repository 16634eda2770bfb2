#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The job's profile on a GPU node (issue 25), through a real srun: the job
# prolog starts gpumem-sample (NVML GPM), the epilog puts its profile in
# the job's report, and `gpumem advise --report` turns it into advice.
# Programs nobody here wrote: a PyTorch copy loop (DRAM high), a PyTorch
# bf16 matmul (SM high, DRAM lower), a job that sleeps (all low), and a
# managed-memory program reading CPU-resident data (tests/gpu/um_read.cu
# --to-cpu: PCIe rx high).  Then, side by side in one run: the advised
# policy against none for the programs it names (their own figures), and
# the sampler's cost (the programs' speed with and without it, its CPU
# time, the node's time per job).  Ratios are printed, never asserted.
# Usage: tests/gpu/profile_gpu.sh BUILD_DIR   (run by tests/gpu/run)
B=$(cd "${1:?usage: profile_gpu.sh BUILD_DIR}" && pwd)
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
export top_srcdir top_builddir=$B
. "$top_srcdir/tests/lib.sh"
[ -e /dev/nvidiactl ] || skip_all "no GPU here: run tests/gpu/run on a GPU machine"
[ -f "$B/plugin/spank/.libs/gpumem.so" ] || skip_all "gpumem.so not built"
[ -x "$B/plugin/sample/gpumem-sample" ] || skip_all "gpumem-sample not built"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
CL="$top_srcdir/tests/slurm/cluster"
G="$B/plugin/cli/gpumem"
t=$(mktemp -d /tmp/gpumem-prof.XXXXXX); chmod 755 "$t"
export GPUMEM_CLUSTER_DIR=$t/cluster   # its own (runs at once never share one)
trap '"$CL" stop >/dev/null 2>&1; rm -rf "$t"' EXIT
PY=$(command -v python3)

"$NVCC" -O2 -arch=sm_90 -o "$t/um_read" "$top_srcdir/tests/gpu/um_read.cu" || fail "nvcc um_read"
cat >"$t/copyloop.py" <<'PY'
import sys, time, torch
n = 1 << 29; a = torch.ones(n, device="cuda"); b = torch.empty_like(a)
end = time.time() + float(sys.argv[1]); k = 0; torch.cuda.synchronize(); t0 = time.time()
while time.time() < end:
    for _ in range(20): b.copy_(a)
    torch.cuda.synchronize(); k += 20
print("copyloop: GB/s %.1f" % (k * 2 * 4 * n / (time.time() - t0) / 1e9))
PY
cat >"$t/matmul.py" <<'PY'
import sys, time, torch
n = 8192; a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
end = time.time() + float(sys.argv[1]); k = 0; c = a @ b; torch.cuda.synchronize(); t0 = time.time()
while time.time() < end:
    for _ in range(10): c = a @ b
    torch.cuda.synchronize(); k += 10
print("matmul: TFLOP/s %.1f" % (k * 2 * n ** 3 / (time.time() - t0) / 1e12))
PY
gpu_profile_site
printf 'version: 1\nprofile:\n  enabled: false\n' >"$t/off.yaml"
chmod 644 "$t"/*.yaml "$t"/*.conf "$t"/*.py
"$CL" start --gpus 1 --plugstack "$t/plugstack.conf" >"$t/start.log" 2>&1 || { cat "$t/start.log"; skip_all "local Slurm did not start"; }
eval "$("$CL" env)"
echo "# $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"

# job NAME CMD...: run one job, wait for the node; f: its epilog report (also in $t/NAME.f).
job() {
	local name=$1; shift
	run srun -N1 --gres=gpu:1 "$@"
	wait_idle gpumem1
	f=$(ls -t "$t"/reports/job*.epilog.gpumem1.*.json 2>/dev/null | head -1)
	echo "$f" >"$t/$name.f"
	diag "$name: $(printf '%s' "$out" | tail -1)"
}
# fig FILE EXPR: a figure of the profile's first GPU (python: g = its metrics).
fig() {
	"$PY" - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); p = d.get("profile") or {}
gs = p.get("gpus") or [{}]; g = gs[0].get("metrics") or {}
def m(name, key="mean"):
    v = g.get(name) or {}
    return v.get(key) if v.get(key) is not None else -1
try:
    print(eval(sys.argv[2]))
except Exception as e:
    print("error: %s (state %s, reason %s)" % (e, p.get("state"), p.get("reason")))
PY
}
summary() { fig "$1" '"source %s, %d samples: DRAM mean %.0f%% p95 %.0f%%, SM mean %.0f%% p95 %.0f%%, occupancy %.0f%%, PCIe rx %.1f GB/s (p95 %.1f), tx %.1f, memory max %.1f GiB" % (gs[0].get("source"), gs[0].get("samples", 0), m("dram_bw_util"), m("dram_bw_util","p95"), m("sm_util"), m("sm_util","p95"), m("sm_occupancy"), m("pcie_rx"), m("pcie_rx","p95"), m("pcie_tx"), m("mem_used","max"))'; }
advice() { "$G" advise --report "$1" 2>&1; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }'; }

# --- four programs, four profiles ------------------------------------------------
# Each job's figures cover the whole job, PyTorch's start (about 5 s) included:
# the loops run 20 s, and the checks take the p95 (the busy part).
job copy "$PY" "$t/copyloop.py" 20
like "$(fig "$f" 'p["state"]')" "^ran$" "copy loop: the job's report carries a profile (phase $(fig "$f" 'd["phase"]'))"
is "$(fig "$f" 'gs[0]["source"]')" gpm "... sampled through NVML GPM, as gpumem-sample"
diag "copy loop: $(summary "$f")"
ge "$(fig "$f" 'm("dram_bw_util","p95")')" 80 && pass "copy loop: DRAM bandwidth utilisation p95 >= 80%" || fail "copy loop: DRAM p95 $(fig "$f" 'm("dram_bw_util","p95")')"
a=$(advice "$f"); diag "advice: $a"
like "$a" "stream.yaml" "copy loop: the advice is stream.yaml (memory-bound)"

job matmul "$PY" "$t/matmul.py" 20
diag "matmul: $(summary "$f")"
ge "$(fig "$f" 'm("sm_util","p95")')" 80 && pass "bf16 matmul: SM utilisation p95 >= 80%" || fail "bf16 matmul: SM p95 $(fig "$f" 'm("sm_util","p95")')"
ge "$(fig "$f" 'm("dram_bw_util","p95") + 30')" "$(fig "$(cat "$t/copy.f")" 'm("dram_bw_util","p95")')" && fail "bf16 matmul: DRAM p95 well under the copy loop's" || pass "bf16 matmul: DRAM p95 well under the copy loop's"
a=$(advice "$f"); diag "advice: $a"
like "$a" "nothing to gain" "bf16 matmul: the advice is 'nothing to gain'"

job sleep sleep 5
diag "sleep: $(summary "$f")"
ge 5 "$(fig "$f" 'max(m("sm_util","p95"), m("dram_bw_util","p95"))')" && pass "a job that sleeps: SM and DRAM p95 under 5%" || fail "sleep: SM/DRAM $(fig "$f" 'm("sm_util"), m("dram_bw_util")')"
a=$(advice "$f"); diag "advice: $a"
like "$a" "idle" "a job that sleeps: the advice says the GPU was idle"

job um "$t/um_read" --bytes 4G --pattern grid --reads 6 --to-cpu
diag "um_read --to-cpu: $(summary "$f")"
ge "$(fig "$f" 'm("pcie_rx","p95")')" 5 && pass "managed memory read from the CPU: PCIe rx p95 >= 5 GB/s" || fail "um_read: PCIe rx p95 $(fig "$f" 'm("pcie_rx","p95")')"
a=$(advice "$f"); diag "advice: $a"
like "$a" "zerocopy.yaml" "managed memory faulted page by page: the advice names zerocopy.yaml"

# The units: um_read reading pinned host memory through its mapping moves
# its bytes over the link, so the profile's PCIe rx is the program's own figure.
job pinned "$t/um_read" --bytes 4G --pattern grid --reads 20 --alloc pinned
own=$(printf '%s' "$out" | sed -n 's/.* gbps_rest=\([0-9.]*\).*/\1/p' | head -1)
diag "um_read --alloc pinned: $(summary "$f"); the program's own figure $own GB/s"
r=$(awk -v a="$(fig "$f" 'm("pcie_rx","p95")')" -v b="$own" 'BEGIN { if (b > 0) printf "%.2f", a / b }')
ge "$r" 0.8 && ge 1.2 "$r" && pass "PCIe rx p95 matches the program's own link rate (${r}x): GB/s units right" || fail "PCIe rx p95 / program's GB/s = ${r}x"
a=$(advice "$f"); diag "advice: $a"

# --- following the advice, side by side (the program's own figure) ------------------
gb() { sed -n 's/.* gbps=\([0-9.]*\).*/\1/p' | head -1; }
for i in 1 2 3; do
	srun -N1 --gres=gpu:1 "$t/um_read" --bytes 4G --pattern grid --reads 3 --to-cpu 2>/dev/null | gb >>"$t/um.none"
	srun -N1 --gres=gpu:1 --gpumem-policy=zerocopy "$t/um_read" --bytes 4G --pattern grid --reads 3 --to-cpu 2>/dev/null | gb >>"$t/um.zc"
	srun -N1 --gres=gpu:1 "$PY" "$t/copyloop.py" 3 2>/dev/null | sed -n 's/.*GB\/s //p' >>"$t/cp.none"
	srun -N1 --gres=gpu:1 --gpumem-policy=stream "$PY" "$t/copyloop.py" 3 2>/dev/null | sed -n 's/.*GB\/s //p' >>"$t/cp.stream"
done
best() { sort -n | tail -1; }
r=$(awk -v a="$(best <"$t/um.zc")" -v b="$(best <"$t/um.none")" 'BEGIN { if (b > 0) printf "%.2f", a / b }')
diag "zerocopy.yaml applied: $(srun -N1 --gres=gpu:1 --gpumem-policy=zerocopy "$t/um_read" --bytes 1G --pattern grid --to-cpu 2>&1 | grep -o 'preferred=.*' | head -1)"
diag "um_read --to-cpu GB/s, best of 3 alternating: none $(best <"$t/um.none"), zerocopy.yaml $(best <"$t/um.zc"): ${r}x"
ge "$r" 1.05 && pass "following the advice (zerocopy.yaml) speeds um_read up: ${r}x" || fail "zerocopy.yaml for um_read: ${r}x"
diag "copy loop GB/s, best of 3 alternating: none $(best <"$t/cp.none"), stream.yaml $(best <"$t/cp.stream"): $(awk -v a="$(best <"$t/cp.stream")" -v b="$(best <"$t/cp.none")" 'BEGIN { if (b > 0) printf "%.3f", a / b }')x"

# --- what the sampler costs, side by side ------------------------------------------------
for i in 1 2 3; do
	srun -N1 --gres=gpu:1 "$PY" "$t/copyloop.py" 4 2>/dev/null | sed -n 's/.*GB\/s //p' >>"$t/c.on"
	srun -N1 --gres=gpu:1 --gpumem-policy="$t/off.yaml" "$PY" "$t/copyloop.py" 4 2>/dev/null | sed -n 's/.*GB\/s //p' >>"$t/c.off"
	srun -N1 --gres=gpu:1 "$PY" "$t/matmul.py" 4 2>/dev/null | sed -n 's/.*TFLOP\/s //p' >>"$t/m.on"
	srun -N1 --gres=gpu:1 --gpumem-policy="$t/off.yaml" "$PY" "$t/matmul.py" 4 2>/dev/null | sed -n 's/.*TFLOP\/s //p' >>"$t/m.off"
done
diag "sampler cost, copy loop GB/s best of 3 alternating: with $(best <"$t/c.on"), without $(best <"$t/c.off"): $(awk -v a="$(best <"$t/c.on")" -v b="$(best <"$t/c.off")" 'BEGIN { if (b > 0) printf "%.3f", a / b }')x"
diag "sampler cost, bf16 matmul TFLOP/s best of 3 alternating: with $(best <"$t/m.on"), without $(best <"$t/m.off"): $(awk -v a="$(best <"$t/m.on")" -v b="$(best <"$t/m.off")" 'BEGIN { if (b > 0) printf "%.3f", a / b }')x"
diag "sampler CPU: $(fig "$(cat "$t/copy.f")" '"%.3f s over %.1f s sampled at %d ms: %.2f%% of one core" % (p["cpu_s"], p["seconds"], p["interval_ms"], 100.0 * p["cpu_s"] / max(p["seconds"], 1e-9))')"
idle() { for _ in $(seq 1 400); do scontrol show node gpumem1 -o | grep -q 'State=IDLE ' && return; sleep 0.01; done; }
node_ms() { local s e; idle; s=$(date +%s%N); srun -N1 --gres=gpu:1 "$@" true >/dev/null 2>&1; idle; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
for i in 1 2 3 4 5 6 7; do node_ms >>"$t/n.on"; node_ms --gpumem-policy="$t/off.yaml" >>"$t/n.off"; done
med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
diag "node time per job (srun start to node idle), median of 7 alternating: with the sampler $(med <"$t/n.on") ms, without $(med <"$t/n.off") ms"
grep -h 'sampler\|profile' "$GPUMEM_CLUSTER_DIR"/log/slurmd.*.log | tail -4 | sed 's/^/# slurmd: /'
done_testing

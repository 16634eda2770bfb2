#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# gpumem-check on a real GPU machine, run by hand:
#
#   tests/gpu/check.sh BUILDDIR        (a configured, built tree)
#
# Runs: the full check with its wall time against the 0.5 s budget (and
# two GPUs in parallel against 0.6 s when there are two), --plant-error
# (must fail with one mismatch), --l2-ab (the ratio, as measured),
# --l2-ab --l2-setaside 50% (the set-aside's own cost: ratio in (0, 1.2],
# the window A/B at that set-aside), a run
# under CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25, and the check's H2D/D2H
# figures against a plain pinned cudaMemcpyAsync loop built here.  Ends
# with "N passed, N failed".  Speaks TAP ("ok N - ...", "not ok N - ...",
# "# ..." for what was seen), which tests/gpu/run counts.  Needs bash,
# python3 and nvcc; keeps every output under $GPUMEM_CHECK_OUT (default: a
# new directory in /tmp).
#
# GPUMEM_CHECK_SITE=FILE  site file with the references (default: the
#                         source tree's etc/gpumem.yaml)
# GPUMEM_CHECK_MPS=1      also start a private MPS control daemon for the
#                         25% run (off by default: it changes how the GPU is
#                         shared while it runs)
set -u
B=${1:?usage: $0 BUILDDIR}
B=$(cd "$B" && pwd) || exit 1
CHECK=$B/kernels/check/gpumem-check
SRC=$(sed -n 's/^abs_top_srcdir = //p' "$B/Makefile" 2>/dev/null)
[ -n "$SRC" ] || SRC=$(cd "$(dirname "$0")/../.." && pwd)
SITE=${GPUMEM_CHECK_SITE:-$SRC/etc/gpumem.yaml}
NVCC=$(sed -n 's/^NVCC = //p' "$B/kernels/Makefile" 2>/dev/null)
[ -x "$NVCC" ] || NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
OUT=${GPUMEM_CHECK_OUT:-$(mktemp -d /tmp/gpumem-check.XXXXXX)}
mkdir -p "$OUT"
BUDGET1=0.5
BUDGET2=0.6

npass=0
nfail=0
pass() { npass=$((npass + 1)); echo "ok $((npass + nfail)) - $*"; }
fail() { nfail=$((nfail + 1)); echo "not ok $((npass + nfail)) - $*"; }
note() { printf '%s\n' "$*" | sed 's/^/# /'; }
finish() {
	note "outputs in $OUT"
	echo "1..$((npass + nfail))"
	echo "$npass passed, $nfail failed"
	[ "$nfail" -eq 0 ]
	exit $?
}

# jq-like: j FILE EXPR  (EXPR in python over d = the document)
j() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
v = eval(sys.argv[2])
print(v if not isinstance(v, (dict, list)) else json.dumps(v))
EOF
}
# fle A B: A <= B (floats)
fle() { python3 -c "import sys; sys.exit(0 if float('$1') <= float('$2') else 1)"; }
now_ns() { date +%s%N; }
secs() { python3 -c "print('%.3f' % (($2 - $1) / 1e9))"; }

# run_check NAME ARGS...: runs the check, sets rc, wall (external, s), json path
run_check() {
	local name=$1 t0 t1
	shift
	json=$OUT/$name.json
	t0=$(now_ns)
	"$CHECK" --json "$json" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
	rc=$?
	t1=$(now_ns)
	wall=$(secs "$t0" "$t1")
}

# summary of one run
show() {
	python3 - "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print("# overall %s (exit %s), internal wall %.3f s" % (d["overall"]["verdict"], d["overall"]["exit_code"], d["wall_s"]))
for x in d["devices"]:
    t = x["timings_s"]
    print("# GPU %d %s %s: %s; init %.3f memtest %.4f bw %.3f host %.3f l2 %.3f nvml %.3f total %.3f s" % (
        x["index"], x["name"], x["pci_bus_id"], x["verdict"], t["init"], t["memtest"], t["bandwidth"],
        t["host"], t["l2_ab"], t["nvml"], t["total"]))
    for k, m in x["metrics"].items():
        if m["best_gbps"] is not None:
            print("#   %-5s best %8.1f median %8.1f ref %s peak %s -> %s (%s)" % (k, m["best_gbps"],
                  m["median_gbps"], m["reference_gbps"], m.get("peak_gbps"), m["verdict"], m.get("basis")))
    for r in x["reasons"]:
        print("#   - " + r)
    print("#   numa: %s" % x["numa"]["note"])
EOF
}

note "gpumem-check GPU test: $(date -u +%FT%TZ) on $(hostname)"
note "build $B, site $SITE, nvcc $NVCC, outputs $OUT"
if [ ! -x "$CHECK" ]; then
	fail "no $CHECK (configure found no CUDA?)"
	finish
fi
command -v python3 >/dev/null || { fail "python3 is needed to read the JSON"; finish; }
[ -f "$SITE" ] || { note "no site file $SITE: figures judged against the GPU's own peak"; SITE=; }
SITEARG=()
[ -n "$SITE" ] && SITEARG=(--site "$SITE")
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,persistence_mode,mig.mode.current,pcie.link.gen.max,pcie.link.width.max --format=csv 2>&1 | sed 's/^/# /'
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[ "${NGPU:-0}" -gt 0 ] || NGPU=$(find /dev -maxdepth 1 -name 'nvidia[0-9]*' | wc -l)
note "GPUs: ${NGPU:-?}"

# ---------------------------------------------------------------- 1. full check, one GPU
# Three runs: the first may pay for driver state (persistence mode off);
# the budget is judged on the median, every run is printed.  The GPU is
# chosen the way the plugin runs the check, with CUDA_VISIBLE_DEVICES:
# cuInit initialises every GPU the process can see.  --devices with an
# ordinal narrows CUDA_VISIBLE_DEVICES itself (check_visible.c): the last
# GPU by ordinal is checked alone, under its own number and UUID.
walls=()
for i in 1 2 3; do
	CUDA_VISIBLE_DEVICES=0 run_check full1-$i "${SITEARG[@]}"
	walls+=("$wall")
	note "run $i: exit $rc, wall $wall s (internal $(j "$json" 'd["wall_s"]') s, start-up $(j "$json" 'd["timings_s"]'))"
done
if [ "${NGPU:-0}" -ge 2 ]; then
	last=$((NGPU - 1))
	run_check full1-devopt --devices "$last" "${SITEARG[@]}"
	note "--devices $last with all $NGPU GPUs visible: exit $rc, wall $wall s, start-up $(j "$json" 'd["timings_s"]')"
	want=$(nvidia-smi --query-gpu=index,uuid --format=csv,noheader | sed -n "s/^$last, //p")
	got=$(j "$json" '";".join("%d %s" % (x["index"], x["uuid"]) for x in d["devices"])')
	[ "$got" = "$last $want" ] && pass "--devices $last: only GPU $last, under its own number and UUID" ||
		fail "--devices $last: reported '$got', want '$last $want'"
	json=$OUT/full1-3.json
	rc=$(j "$json" 'd["overall"]["exit_code"]')
fi
show "$json"
case $rc in
0|1) pass "full check on GPU 0: exit $rc ($(j "$json" 'd["overall"]["verdict"]'))" ;;
*) fail "full check on GPU 0: exit $rc"; cat "$OUT/full1-3.out" "$OUT/full1-3.err" | sed 's/^/# /' ;;
esac
med=$(printf '%s\n' "${walls[@]}" | sort -n | sed -n 2p)
if fle "$med" "$BUDGET1"; then
	pass "one GPU: median wall $med s <= $BUDGET1 s (runs: ${walls[*]})"
else
	fail "one GPU: median wall $med s > $BUDGET1 s (runs: ${walls[*]})"
fi
[ "$(j "$json" 'd["devices"][0]["memtest"]["mismatches"]')" = 0 ] \
	&& pass "memory test: 0 mismatches over $(j "$json" 'd["devices"][0]["memtest"]["bytes"]') bytes" \
	|| fail "memory test found mismatches on an unplanted run"
[ "$(j "$json" 'all(m["best_gbps"] is not None for m in d["devices"][0]["metrics"].values())')" = True ] \
	&& pass "all seven figures measured" || fail "some figure not measured"
[ "$(j "$json" 'd["devices"][0]["health"]["nvml"]')" = ok ] \
	&& pass "NVML health read" || fail "NVML: $(j "$json" 'd["devices"][0]["health"]["nvml"]')"
note "numa: $(j "$json" 'd["devices"][0]["numa"]')"
FULL=$json

# ---------------------------------------------------------------- 2. two GPUs in parallel
if [ "${NGPU:-0}" -ge 2 ]; then
	walls=()
	for i in 1 2 3; do
		CUDA_VISIBLE_DEVICES=0,1 run_check full2-$i "${SITEARG[@]}"
		walls+=("$wall")
		note "run $i: exit $rc, wall $wall s, start-up $(j "$json" 'd["timings_s"]')"
	done
	show "$json"
	med=$(printf '%s\n' "${walls[@]}" | sort -n | sed -n 2p)
	case $rc in 0|1) pass "two GPUs: exit $rc" ;; *) fail "two GPUs: exit $rc" ;; esac
	if fle "$med" "$BUDGET2"; then
		pass "two GPUs in parallel: median wall $med s <= $BUDGET2 s (runs: ${walls[*]})"
	else
		fail "two GPUs in parallel: median wall $med s > $BUDGET2 s (runs: ${walls[*]})"
	fi
	run_check all "${SITEARG[@]}"
	note "all $NGPU GPUs: exit $rc, wall $wall s (for information)"
else
	note "one GPU only: the two-GPU budget is not measured"
fi

# ---------------------------------------------------------------- 3. --plant-error
run_check plant --devices 0 --plant-error "${SITEARG[@]}"
show "$json"
[ "$rc" -eq 2 ] && pass "--plant-error: exit 2" || fail "--plant-error: exit $rc (want 2)"
mm=$(j "$json" 'd["devices"][0]["memtest"]["mismatches"]')
[ "$mm" = 1 ] && pass "--plant-error: exactly one mismatch, at offset $(j "$json" 'd["devices"][0]["memtest"]["first_offset"]'), bits $(j "$json" 'd["devices"][0]["memtest"]["bad_bits"]')" \
	|| fail "--plant-error: $mm mismatches (want 1)"
grep -q "mismatch" "$OUT/plant.out" && pass "--plant-error: the table says mismatch" \
	|| fail "--plant-error: no 'mismatch' in the table"

# ---------------------------------------------------------------- 4. --l2-ab
run_check l2ab --devices 0 --l2-ab "${SITEARG[@]}"
case $rc in 0|1) pass "--l2-ab: exit $rc" ;; *) fail "--l2-ab: exit $rc" ;; esac
if [ "$(j "$json" 'd["devices"][0]["l2_ab"]["run"]')" = True ]; then
	pass "--l2-ab ran: $(j "$json" '"speedup %.3f (without %.4f ms, with %.4f ms, hot %d MiB, persisting limit %d MiB)" % (d["devices"][0]["l2_ab"]["speedup"], d["devices"][0]["l2_ab"]["ms_without_window"], d["devices"][0]["l2_ab"]["ms_with_window"], d["devices"][0]["l2_ab"]["hot_bytes"] >> 20, d["devices"][0]["l2_ab"]["persisting_bytes"] >> 20)')"
	note "speedup < 1: the window made it slower (reported as is)"
else
	fail "--l2-ab did not run: $(j "$json" 'd["devices"][0]["l2_ab"]["error"]')"
fi
note "l2-ab wall $wall s"

# ------------------------------------------- 4b. --l2-ab --l2-setaside: the set-aside's cost
# The job's set-aside (50% of L2, persist.yaml's): triad without and with it,
# alternated, and the window A/B run at it, not at the GPU's most.
run_check l2setaside --devices 0 --l2-ab --l2-setaside 50% "${SITEARG[@]}"
case $rc in 0|1) pass "--l2-setaside 50%: exit $rc" ;; *) fail "--l2-setaside 50%: exit $rc" ;; esac
L='d["devices"][0]["l2_ab"]'
if [ "$(j "$json" "$L[\"setaside\"] is not None and $L[\"setaside\"][\"run\"]")" = True ]; then
	pass "l2_ab.setaside ran: $(j "$json" "'%.2f%% of L2 (%d MiB): triad %.1f GB/s without, %.1f with, ratio %.4f, %d repeats' % ($L['setaside']['percent'], $L['setaside']['bytes'] >> 20, $L['setaside']['triad_without_gbps'], $L['setaside']['triad_with_gbps'], $L['setaside']['ratio'], $L['setaside']['repeats'])")"
	if [ "$(j "$json" "0 < $L['setaside']['ratio'] <= 1.2")" = True ]; then
		pass "l2_ab.setaside.ratio within (0, 1.2]"
	else
		fail "l2_ab.setaside.ratio out of (0, 1.2]: $(j "$json" "$L['setaside']['ratio']")"
	fi
	if [ "$(j "$json" "45 <= $L['setaside']['percent'] <= 51")" = True ]; then
		pass "l2_ab.setaside.percent is the 50% asked (the GPU allows it)"
	else
		fail "l2_ab.setaside.percent is not near 50: $(j "$json" "$L['setaside']['percent']")"
	fi
	if [ "$(j "$json" "$L['persisting_bytes'] == $L['setaside']['bytes']")" = True ]; then
		pass "the window A/B ran at the job's set-aside ($(j "$json" "$L['persisting_bytes'] >> 20") MiB)"
	else
		fail "the window A/B ran at $(j "$json" "$L['persisting_bytes']") bytes, not the set-aside's $(j "$json" "$L['setaside']['bytes']")"
	fi
else
	fail "l2_ab.setaside missing or not run: $(j "$json" "$L.get('setaside')")"
fi
grep -q "set-aside" "$OUT/l2setaside.out" "$OUT/l2setaside.err" && pass "the table shows the set-aside's cost" \
	|| fail "no set-aside line in the table"
# The limit is the context's: a check right after starts with none (its own A/B at the GPU's most).
run_check l2after --devices 0 --l2-ab "${SITEARG[@]}"
if [ "$(j "$json" "$L['setaside'] is None and $L['run']")" = True ]; then
	pass "--l2-ab without a set-aside: no setaside member, the A/B as before"
else
	fail "--l2-ab without a set-aside: $(j "$json" "$L")"
fi

# ---------------------------------------------------------------- 5. MPS share 25%
mps_started=0
if [ "${GPUMEM_CHECK_MPS:-0}" = 1 ] && command -v nvidia-cuda-mps-control >/dev/null; then
	export CUDA_MPS_PIPE_DIRECTORY=$OUT/mps-pipe CUDA_MPS_LOG_DIRECTORY=$OUT/mps-log
	mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
	nvidia-cuda-mps-control -d && mps_started=1
	note "private MPS control daemon started: $mps_started"
fi
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25 run_check mps25 --devices 0 "${SITEARG[@]}"
show "$json"
case $rc in 0|1) pass "MPS 25%: exit $rc" ;; *) fail "MPS 25%: exit $rc" ;; esac
[ "$(j "$json" 'd["settings"]["mps_share_pct"]')" = 25 ] && \
	[ "$(j "$json" 'd["settings"]["mps_share_source"]')" = environment ] \
	&& pass "MPS 25%: share taken from the environment" || fail "MPS 25%: share not recorded"
ratio=$(python3 - "$FULL" "$json" <<'EOF'
import json, sys
a = json.load(open(sys.argv[1]))["devices"][0]["metrics"]["copy"]["best_gbps"]
b = json.load(open(sys.argv[2]))["devices"][0]
print("%.3f" % (b["metrics"]["copy"]["best_gbps"] / a))
EOF
)
note "copy at 25%: $(j "$json" 'd["devices"][0]["metrics"]["copy"]["best_gbps"]') GB/s, ratio to the full run $ratio; mps_client=$(j "$json" 'd["devices"][0]["mps_client"]'), SMs $(j "$json" 'd["devices"][0]["sm_count"]')"
if fle 0.9 "$ratio"; then
	note "the variable limited nothing here (no MPS daemon: expected); thresholds were still scaled by $(j "$json" 'd["devices"][0]["metrics"]["copy"]["mps_scale"]')"
else
	note "bandwidth dropped to $ratio of the full run: the share was enforced"
fi
if [ "$mps_started" = 1 ]; then
	echo quit | nvidia-cuda-mps-control
	unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
fi

# ---------------------------------------------------------------- 6. H2D/D2H vs a plain loop
cat >"$OUT/pinned_loop.cu" <<'EOF'
// The plainest pinned-memory transfer loop: cudaMallocHost, 64 MiB,
// one warm-up, 10 timed cudaMemcpyAsync each way, best GB/s.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)
int main(int argc, char **argv)
{
	int dev = argc > 1 ? atoi(argv[1]) : 0;
	size_t bytes = 64u << 20;
	void *h, *d;
	cudaStream_t s;
	cudaEvent_t a, b;
	CK(cudaSetDevice(dev));
	CK(cudaMallocHost(&h, bytes));
	CK(cudaMalloc(&d, bytes));
	CK(cudaStreamCreate(&s));
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	for (int dir = 0; dir < 2; dir++) {
		double best = 0;
		for (int r = 0; r <= 10; r++) {
			float ms;
			CK(cudaEventRecord(a, s));
			if (dir == 0)
				CK(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s));
			else
				CK(cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, s));
			CK(cudaEventRecord(b, s));
			CK(cudaEventSynchronize(b));
			CK(cudaEventElapsedTime(&ms, a, b));
			if (r > 0 && bytes / (ms * 1e6) > best)
				best = bytes / (ms * 1e6);
		}
		printf("%s %.2f\n", dir == 0 ? "h2d" : "d2h", best);
	}
	return 0;
}
EOF
if "$NVCC" -O2 -o "$OUT/pinned_loop" "$OUT/pinned_loop.cu" >"$OUT/pinned_loop.build" 2>&1; then
	run_check h2d --devices 0 --no-memtest "${SITEARG[@]}"
	"$OUT/pinned_loop" 0 >"$OUT/pinned_loop.out" 2>&1
	lrc=$?
	if [ $lrc -eq 0 ]; then
		for dir in h2d d2h; do
			mine=$(j "$json" "d[\"devices\"][0][\"metrics\"][\"$dir\"][\"best_gbps\"]")
			plain=$(awk -v k=$dir '$1 == k { print $2 }' "$OUT/pinned_loop.out")
			r=$(python3 -c "print('%.3f' % ($mine / $plain))")
			if fle 0.9 "$r"; then
				pass "$dir: check $mine GB/s vs plain pinned loop $plain GB/s, ratio $r"
			else
				fail "$dir: check $mine GB/s vs plain pinned loop $plain GB/s, ratio $r (< 0.9)"
			fi
		done
		note "check's placement: $(j "$json" 'd["devices"][0]["numa"]')"
		if command -v numactl >/dev/null; then
			n=$(j "$json" 'd["devices"][0]["numa"]["node"]')
			if [ "$n" != None ]; then
				note "plain loop bound to node $n: $(numactl --cpunodebind="$n" --membind="$n" "$OUT/pinned_loop" 0 | tr '\n' ' ')"
			fi
		fi
	else
		fail "the plain pinned loop failed: $(cat "$OUT/pinned_loop.out")"
	fi
else
	fail "cannot build the plain pinned loop with $NVCC"
	sed 's/^/# /' "$OUT/pinned_loop.build"
fi

# ---------------------------------------------------------------- 7. --quick
run_check quick --devices 0 --quick "${SITEARG[@]}"
case $rc in 0|1) pass "--quick: exit $rc, wall $wall s" ;; *) fail "--quick: exit $rc" ;; esac
[ "$(j "$json" 'd["devices"][0]["memtest"]')" = None ] && pass "--quick: no memory test" \
	|| fail "--quick ran the memory test"

# ---------------------------------------------------------------- 8. the table, as an admin sees it
note "---- table of the last full run ----"
sed 's/^/# /' "$OUT/full1-3.out"
finish

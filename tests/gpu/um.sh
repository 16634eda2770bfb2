#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The GPU test of libgpumem-um and gpumem-l2reset.  Run by hand on a GPU node
# (CUDA toolkit with nvcc, one GPU with concurrent managed access, 80+ GiB):
#
#   tests/gpu/um.sh BUILD_DIR [um] [tools] [l2]      (default: all three)
#
# BUILD_DIR is a configured and built tree (`make -C kernels` is enough):
# its kernels/.libs/libgpumem-um.so and kernels/gpumem-l2reset are tested.
#   um     um_read.cu built three ways (static cudart, shared cudart, a direct
#          cuMemAllocManaged call), each run without and with the library,
#          alternating; the bandwidth ratios per access pattern; the range
#          attributes the advice leaves; prefetch, min_bytes, a bad value.
#   tools  the advised program under compute-sanitizer, ncu and nsys (each
#          SKIPped with the reason when absent or not permitted).
#   l2     gpumem-l2reset, and l2_linger.cu: a live process holding a
#          persisting L2 window versus another process's L2-resident reads,
#          before and after gpumem-l2reset, and after the holder exits.
# Environment: NVCC (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc),
# NVCC_ARCH (default -arch=native), UM_BYTES (default 2G), UM_REPS (3),
# UM_GOAL (5: the advised/plain ratio wanted), UM_KEEP=1 keeps the work dir.
# Uses device 0 of what CUDA_VISIBLE_DEVICES shows.  Ends with one line
# "N passed, N failed, N skipped"; exit 0 when nothing failed.
set -u

if [ $# -lt 1 ] || [ ! -d "$1" ]; then
	echo "usage: $0 BUILD_DIR [um] [tools] [l2]" >&2
	exit 2
fi
build=$(cd "$1" && pwd)
shift
sections=${*:-um tools l2}
src=$(cd "$(dirname "$0")" && pwd)
LIB="$build/kernels/um/.libs/libgpumem-um.so"
L2RESET="$build/kernels/l2reset/gpumem-l2reset"
BYTES=${UM_BYTES:-2G}
REPS=${UM_REPS:-3}
GOAL=${UM_GOAL:-5}
CUDA_BIN=${CUDA_HOME:-/usr/local/cuda}/bin
NVCC=${NVCC:-$(command -v nvcc || echo "$CUDA_BIN/nvcc")}
ADVICE='v1;preferred=cpu;accessed_by=gpu;read_mostly=0;prefetch=none;min_bytes=1048576;verbose=1'

# TAP through tests/lib.sh (tests/gpu/run counts "ok"/"not ok"), plus the
# closing "N passed, N failed, N skipped" line.
top_srcdir=$(cd "$src/../.." && pwd)
. "$top_srcdir/tests/lib.sh"
npass=0 nfail=0 nskip=0
ok_() { npass=$((npass + 1)); pass "$@"; }
nok_() { nfail=$((nfail + 1)); fail "$@"; }
skip_() { nskip=$((nskip + 1)); skip "$@"; }
check() { local what=$1; shift; if "$@"; then ok_ "$what"; else nok_ "$what"; fi; }
section() { printf '\n# == %s\n' "$*"; }
finish() {
	printf '\n# %d passed, %d failed, %d skipped\n' "$npass" "$nfail" "$nskip"
	if [ "${UM_KEEP:-0}" = 1 ] || [ "$nfail" -gt 0 ]; then diag "logs: $work"; else rm -rf "$work"; fi
	echo "1..$_tap_n"
	printf '%d passed, %d failed, %d skipped\n' "$npass" "$nfail" "$nskip"
	[ "$nfail" -eq 0 ]
	exit $?
}

work=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-um-gpu.XXXXXX") || exit 1
trap 'kill "${holder:-}" 2>/dev/null' EXIT

section "setup"
echo "date: $(date -u +%FT%TZ)  host: $(hostname)  kernel: $(uname -r)"
command -v nvidia-smi >/dev/null &&
	nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.used,persistence_mode \
		--format=csv,noheader
"$NVCC" --version 2>/dev/null | tail -n 2 | head -n 1
echo "library: $LIB"
echo "work: $work"
[ -f "$LIB" ] || { nok_ "no $LIB: build the tree first (configure && make -C kernels)"; finish; }
[ -x "$NVCC" ] || { nok_ "no nvcc ($NVCC): set NVCC"; finish; }

# ------------------------------------------------------------------ build
ARCH=${NVCC_ARCH:--arch=native}
nv() { "$NVCC" -O3 $ARCH "$@" >>"$work/build.log" 2>&1; }
if ! nv -o "$work/probe" "$src/l2_linger.cu"; then
	echo "nvcc $ARCH failed, trying -arch=sm_90"
	ARCH=-arch=sm_90
fi
check "build um_read (static cudart)" nv -o "$work/um_read_static" -DUM_READ_LINK='"static"' "$src/um_read.cu"
check "build um_read (-cudart shared)" nv -cudart shared -o "$work/um_read_shared" -DUM_READ_LINK='"shared"' "$src/um_read.cu"
check "build um_read (cuMemAllocManaged, -lcuda)" nv -o "$work/um_read_driver" -DUM_READ_DRIVER -DUM_READ_LINK='"driver"' "$src/um_read.cu" -lcuda
check "build l2_linger" nv -o "$work/l2_linger" "$src/l2_linger.cu"
[ "$nfail" -eq 0 ] || { tail -n 30 "$work/build.log"; finish; }

# run_um OUT ADVICE|- PROGRAM ARGS...: one um_read run, with the library
# and ADVICE, or plain with '-'.  Output (stdout and stderr) in OUT.
run_um() {
	local out=$1 adv=$2
	shift 2
	if [ "$adv" = - ]; then
		env -u GPUMEM_UM_ADVICE "$@" >"$out" 2>&1
	else
		env LD_PRELOAD="$LIB${LD_PRELOAD:+:$LD_PRELOAD}" GPUMEM_UM_ADVICE="$adv" "$@" >"$out" 2>&1
	fi
}
# field FILE PATTERN KEY: KEY's value on the RESULT line of PATTERN.
field() {
	awk -v pat="$2" -v key="$3" '/um_read: RESULT/ {
		delete f
		for (i = 1; i <= NF; i++) { k = $i; sub(/=.*/, "", k); v = $i; sub(/^[^=]*=/, "", v); f[k] = v }
		if (f["pattern"] == pat) print f[key] }' "$1"
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print 0; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }'; }

# ------------------------------------------------------------------ um
if [[ " $sections " == *" um "* ]]; then
	section "um: fault-driven vs advised ($ADVICE), $BYTES, $REPS runs each, alternating"
	table=""
	for v in static shared driver; do
		prog="$work/um_read_$v"
		ok_runs=0 bad_runs=0 caught=0 attrs_ok=0 plain_attrs_ok=0
		for r in $(seq 1 "$REPS"); do
			for mode in plain advised; do
				o="$work/$v.$mode.$r.log"
				if [ $mode = plain ]; then run_um "$o" - "$prog" --bytes "$BYTES"
				else run_um "$o" "$ADVICE" "$prog" --bytes "$BYTES"; fi
				rc=$?
				if [ $rc -eq 0 ] && [ "$(grep -c 'um_read: RESULT.*check=ok' "$o")" = 2 ]; then
					ok_runs=$((ok_runs + 1))
				else
					bad_runs=$((bad_runs + 1))
					echo "--- $o (exit $rc)"; tail -n 8 "$o"
				fi
				grep -h 'um_read: RESULT' "$o" | sed "s/^/  [$mode $r] /"
				if [ $mode = advised ]; then
					grep -h '^gpumem-um:' "$o" | sed 's/^/  /'
					[ "$(grep -c '^gpumem-um: advising managed allocations' "$o")" = 1 ] && caught=$((caught + 1))
					[ "$(grep 'um_read: RESULT' "$o" | grep -c 'preferred=cpu.* accessed_by=gpu0 ')" = 2 ] &&
						attrs_ok=$((attrs_ok + 1))
				else
					[ "$(grep 'um_read: RESULT' "$o" | grep -c 'preferred=none .*accessed_by=none ')" = 2 ] &&
						plain_attrs_ok=$((plain_attrs_ok + 1))
				fi
			done
		done
		check "$v: all $((2 * REPS)) runs exit 0 with correct checksums" [ "$bad_runs" -eq 0 ]
		check "$v: the library caught the allocations (one 'advising' line per advised run)" [ "$caught" -eq "$REPS" ]
		check "$v: advised ranges read back preferred=cpu, accessed_by=gpu0" [ "$attrs_ok" -eq "$REPS" ]
		check "$v: plain ranges have no advice" [ "$plain_attrs_ok" -eq "$REPS" ]
		for pat in grid random; do
			p=$(for r in $(seq 1 "$REPS"); do field "$work/$v.plain.$r.log" $pat gbps; done | median)
			a=$(for r in $(seq 1 "$REPS"); do field "$work/$v.advised.$r.log" $pat gbps; done | median)
			ratio=$(awk -v a="$a" -v p="$p" 'BEGIN { printf "%.2f", (p > 0 ? a / p : 0) }')
			table+=$(printf '%-7s %-7s %10s %10s %7sx' "$v" "$pat" "$p" "$a" "$ratio")$'\n'
			check "$v $pat: advised/plain = ${ratio}x (goal ${GOAL}x; median GB/s $p -> $a)" ge "$ratio" "$GOAL"
		done
	done
	printf '\n%-7s %-7s %10s %10s %8s\n%s' link pattern "plain GB/s" "adv. GB/s" ratio "$table" | sed 's/^/# /'

	section "um: the other advice, as the driver records it (static cudart, 256 MiB)"
	prog="$work/um_read_static"
	run_um "$work/pf_gpu.log" 'v1;preferred=gpu;read_mostly=1;prefetch=gpu;min_bytes=1048576;verbose=1' \
		"$prog" --bytes 256M --pattern grid
	grep -h 'RESULT\|^gpumem-um' "$work/pf_gpu.log" | sed 's/^/  /'
	check "preferred=gpu, read_mostly=1, prefetch=gpu: preferred=gpu0 last_prefetch=gpu0 read_mostly=1" \
		grep -q 'RESULT.*check=ok preferred=gpu0 last_prefetch=gpu0 .*read_mostly=1' "$work/pf_gpu.log"
	run_um "$work/pf_cpu.log" 'v1;prefetch=cpu;accessed_by=cpu,gpu;min_bytes=1048576;verbose=1' \
		"$prog" --bytes 256M --pattern grid
	grep -h 'RESULT\|^gpumem-um' "$work/pf_cpu.log" | sed 's/^/  /'
	check "prefetch=cpu, accessed_by=cpu,gpu: last_prefetch=cpu..., accessed_by lists gpu0" \
		grep -q 'RESULT.*check=ok preferred=none last_prefetch=cpu.* accessed_by=.*gpu0' "$work/pf_cpu.log"
	run_um "$work/min.log" 'v1;preferred=cpu;accessed_by=gpu;min_bytes=1073741824;verbose=1' \
		"$prog" --bytes 256M --pattern grid
	check "min_bytes above the allocation: nothing advised" \
		grep -q 'RESULT.*check=ok preferred=none last_prefetch=none accessed_by=none' "$work/min.log"
	run_um "$work/bad.log" 'v1;preferred=cpu;colour=blue' "$prog" --bytes 256M --pattern grid
	rc=$?
	grep -h '^gpumem-um' "$work/bad.log" | sed 's/^/  /'
	check "a bad GPUMEM_UM_ADVICE: the program succeeds unadvised" \
		grep -q 'RESULT.*check=ok preferred=none' "$work/bad.log"
	n=$(grep -c '^gpumem-um: GPUMEM_UM_ADVICE: unknown field' "$work/bad.log")
	check "  exit 0 and exactly one message" eval '[ $rc -eq 0 ] && [ "$n" = 1 ]'
	check "a program that never calls CUDA, on the GPU node: unchanged" \
		[ "$(env LD_PRELOAD="$LIB" GPUMEM_UM_ADVICE="$ADVICE" sh -c 'echo a | tr a b' 2>&1)" = b ]
fi

# ------------------------------------------------------------------ tools
if [[ " $sections " == *" tools "* ]]; then
	section "tools: the library beside compute-sanitizer, ncu and nsys"
	tool() { command -v "$1" 2>/dev/null || { [ -x "$CUDA_BIN/$1" ] && echo "$CUDA_BIN/$1"; }; }
	CS=$(tool compute-sanitizer)
	if [ -n "$CS" ]; then
		for v in static shared driver; do
			o="$work/sanitizer.$v.log"
			run_um "$o" "$ADVICE" "$CS" --tool memcheck --error-exitcode 99 "$work/um_read_$v" --bytes 64M
			rc=$?
			grep -h 'RESULT\|^gpumem-um\|ERROR SUMMARY' "$o" | sed 's/^/  /'
			n=$(grep -c 'RESULT.*check=ok preferred=cpu' "$o")
			check "compute-sanitizer memcheck, $v: exit 0, 0 errors, advice applied" \
				eval '[ $rc -eq 0 ] && [ "$n" = 2 ] && grep -q "ERROR SUMMARY: 0 errors" "$o" &&
				      grep -q "^gpumem-um: advising" "$o"'
		done
	else
		skip_ "compute-sanitizer not found (PATH, $CUDA_BIN)"
	fi
	NCU=$(tool ncu)
	if [ -n "$NCU" ]; then
		o="$work/ncu.log"
		run_um "$o" "$ADVICE" "$NCU" --target-processes all -k regex:read_ -c 2 \
			--metrics gpu__time_duration.sum "$work/um_read_static" --bytes 8M
		rc=$?
		grep -h 'RESULT\|^gpumem-um\|read_grid\|read_random\|gpu__time_duration\|==ERROR==\|==PROF==' "$o" | head -n 20 | sed 's/^/  /'
		if grep -q 'ERR_NVGPUCTRPERM' "$o"; then
			skip_ "ncu: no permission for GPU performance counters here (ERR_NVGPUCTRPERM)"
		else
			check "ncu: exit 0, both kernels profiled, advice applied" \
				eval '[ $rc -eq 0 ] && grep -q read_grid "$o" && grep -q read_random "$o" &&
				      grep -q "^gpumem-um: advising" "$o" && grep -q "RESULT.*check=ok preferred=cpu" "$o"'
		fi
	else
		skip_ "ncu not found (PATH, $CUDA_BIN)"
	fi
	NSYS=$(tool nsys)
	if [ -n "$NSYS" ]; then
		o="$work/nsys.log"
		run_um "$o" "$ADVICE" "$NSYS" profile --trace=cuda --sample=none --cpuctxsw=none \
			--force-overwrite=true -o "$work/nsys_um" "$work/um_read_static" --bytes 64M
		rc=$?
		grep -h 'RESULT\|^gpumem-um' "$o" | sed 's/^/  /'
		check "nsys profile --trace=cuda: exit 0, advice applied" \
			eval '[ $rc -eq 0 ] && grep -q "^gpumem-um: advising" "$o" &&
			      grep -q "RESULT.*check=ok preferred=cpu" "$o"'
	else
		skip_ "nsys not found (PATH, $CUDA_BIN)"
	fi
fi

# ------------------------------------------------------------------ l2
if [[ " $sections " == *" l2 "* ]]; then
	section "l2: gpumem-l2reset"
	L2=$work/l2_linger
	if [ ! -x "$L2RESET" ]; then
		nok_ "no $L2RESET"
		finish
	fi
	t0=$(date +%s%N)
	out=$(CUDA_VISIBLE_DEVICES='' "$L2RESET" 2>&1)
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "  $out"
	check "no GPU visible (CUDA_VISIBLE_DEVICES=''): exit 3 in ${ms} ms" [ $rc -eq 3 ]
	check "  answered in under 2 s" [ "$ms" -lt 2000 ]
	t0=$(date +%s%N)
	out=$("$L2RESET" --devices 0 --timeout 60 2>&1)
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "$out" | sed 's/^/  /'
	check "gpumem-l2reset --devices 0, no process on the GPU: exit 0 (${ms} ms wall)" [ $rc -eq 0 ]
	check "  NVML shows no process: nothing to reset, no CUDA start" grep -q 'no process holds any of the node.s .* GPU(s) (NVML): nothing persists' <<<"$out"
	t0=$(date +%s%N)
	out=$("$L2RESET" --force --devices 0 --timeout 60 2>&1)
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "$out" | sed 's/^/  /'
	check "gpumem-l2reset --force --devices 0: exit 0 (${ms} ms wall)" [ $rc -eq 0 ]
	check "  one line for gpu 0" grep -q 'gpumem-l2reset: gpu 0 (' <<<"$out"
	out=$("$L2RESET" 2>&1)
	rc=$?
	echo "$out" | sed 's/^/  /'
	check "gpumem-l2reset (all GPUs): exit 0" [ $rc -eq 0 ]

	section "l2: a live persisting window vs another process's L2-resident reads"
	"$L2" info | sed 's/^/  /'
	# rd: the reader's best TB/s (UM_L2_BYTES overrides half the L2).
	rd() { "$L2" read ${UM_L2_BYTES:+--bytes "$UM_L2_BYTES"} | tee -a "$work/reads.log" |
		awk '/tbps=/ { for (i = 1; i <= NF; i++) if ($i ~ /^tbps=/) print substr($i, 6) }'; }
	rd_bytes() { awk '/bytes=/ { for (i = 1; i <= NF; i++) if ($i ~ /^bytes=/) { print substr($i, 7); exit } }' "$work/reads.log"; }
	l2r() { "$L2RESET" --force --devices 0 --timeout 60 -q; }
	l2r
	A=$(rd)
	"$L2" hold --seconds 600 >"$work/holder.log" 2>&1 &
	holder=$!
	for _ in $(seq 1 120); do grep -q READY "$work/holder.log" && break; kill -0 $holder 2>/dev/null || break; sleep 0.5; done
	if ! grep -q READY "$work/holder.log"; then
		cat "$work/holder.log"
		if grep -q 'no persisting L2' "$work/holder.log"; then skip_ "this GPU has no persisting L2"
		else nok_ "the holder did not get READY"; fi
		kill $holder 2>/dev/null
	else
		sed 's/^/  /' "$work/holder.log"
		B=$(rd)
		t0=$(date +%s%N)
		out=$("$L2RESET" --devices 0 --timeout 60 2>&1)
		rc=$?
		ms=$((($(date +%s%N) - t0) / 1000000))
		echo "$out" | sed 's/^/  /'
		check "gpumem-l2reset while the holder lives: exit 0 (${ms} ms)" [ $rc -eq 0 ]
		check "  NVML shows the holder: the reset runs (no --force needed)" grep -q 'gpumem-l2reset: gpu 0 (' <<<"$out"
		C=$(rd)
		kill $holder 2>/dev/null
		wait $holder 2>/dev/null
		holder=
		D=$(rd)
		"$L2" hold --seconds 0 >"$work/holder0.log" 2>&1
		E=$(rd)
		l2r
		F=$(rd)
		ratio() { awk -v x="$1" -v a="$A" 'BEGIN { printf "%.2f", (a > 0 ? x / a : 0) }'; }
		{
		printf '\n%-58s %8s %8s\n' "L2-resident read ($(rd_bytes) bytes), other process" "TB/s" "vs A"
		printf '%-58s %8s %8s\n' "A  nothing persisting (after gpumem-l2reset)" "$A" 1.00
		printf '%-58s %8s %8s\n' "B  holder alive, its window persisting" "$B" "$(ratio "$B")"
		printf '%-58s %8s %8s\n' "C  holder alive, after gpumem-l2reset" "$C" "$(ratio "$C")"
		printf '%-58s %8s %8s\n' "D  holder killed" "$D" "$(ratio "$D")"
		printf '%-58s %8s %8s\n' "E  a holder that set its window and exited" "$E" "$(ratio "$E")"
		printf '%-58s %8s %8s\n' "F  after gpumem-l2reset" "$F" "$(ratio "$F")"
		} | sed 's/^/# /'
		check "every read measured" eval '[ -n "$A$B" ] && [ -n "$C" ] && [ -n "$D" ] && [ -n "$E" ] && [ -n "$F" ] && [ -n "$A" ] && [ -n "$B" ]'
		diag "(informational: B/A well below 1 with C/A back near 1 is the case gpumem-l2reset exists for;" \
			" E/A near 1 means an exited process leaves nothing behind)"
	fi
fi

finish

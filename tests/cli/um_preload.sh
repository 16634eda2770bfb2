#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# libgpumem-um and gpumem-l2reset without a GPU: the library must be
# harmless in every process of a job (it is in LD_PRELOAD for all of them),
# export only its entry points, and, against a stand-in libcuda.so.1
# (gpu/um_fakedrv.c) driven by a miniature CUDA program (gpu/um_client.c),
# advise exactly what GPUMEM_UM_ADVICE says, however the allocation is
# reached.  gpumem-l2reset must answer "no driver" in milliseconds.
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib.sh"

LIB="$top_builddir/kernels/um/.libs/libgpumem-um.so"
L2RESET="$top_builddir/kernels/l2reset/gpumem-l2reset"
FAKEDRV="$top_builddir/tests/gpu/.libs/um_fakedrv.so"
CLIENT="$top_builddir/tests/gpu/um_client"
ADVICE='v1;preferred=cpu;accessed_by=gpu;read_mostly=0;prefetch=none;min_bytes=1048576;verbose=0'

[ -f "$LIB" ] || skip_all "libgpumem-um was not built (no CUDA toolkit at configure time)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-um.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/nodrv" "$tmp/fake"

# ------------------------------------------------------------------ harmless
# preA ADVICE CMD...: CMD with the library and that advice.
preA() { _a=$1; shift; env LD_PRELOAD="$LIB" GPUMEM_UM_ADVICE="$_a" "$@"; }
pre() { preA "$ADVICE" "$@"; }

run pre /bin/true
is "$rc:$out" "0:" "/bin/true: exit 0, no output"
run pre /bin/false
is "$rc:$out" "1:" "/bin/false: exit 1 kept, no output"
run pre sh -c 'echo x | cat'
is "$rc:$out" "0:x" "a pipeline: output unchanged"
run pre sh -c 'exit 7'
is "$rc" "7" "an exit status is passed through"
run pre sh -c 'for i in 1 2 3; do (echo "$i") & done; wait; (exit 0) && echo done'
like "$out" "done" "a shell that forks and waits"
is "$(printf '%s\n' "$out" | grep -c '^[123]$')" "3" "  all its children ran"
run pre sh -c 'echo y | sed s/y/z/ | tr z w'
is "$rc:$out" "0:w" "several programs in a pipeline"
run preA 'garbage' sh -c 'echo ok'
is "$rc:$out" "0:ok" "a bad GPUMEM_UM_ADVICE is not reported by programs that never use CUDA"
run preA 'v1;verbose=1;preferred=cpu' sh -c 'echo ok'
is "$rc:$out" "0:ok" "verbose=1 prints nothing in a program that never uses CUDA"
run env -u GPUMEM_UM_ADVICE LD_PRELOAD="$LIB" /bin/echo plain
is "$rc:$out" "0:plain" "no GPUMEM_UM_ADVICE at all: nothing happens"
# dlsym is interposed: lookups of other names must behave as before.
if command -v python3 >/dev/null 2>&1; then
	run pre python3 -c 'import ctypes; l = ctypes.CDLL(None); print(hasattr(l, "printf"), hasattr(l, "cuInit"), hasattr(l, "cuMemAllocManaged"), hasattr(l, "cuGetProcAddress_v2"))'
	is "$rc:$out" "0:True False False False" "dlsym(RTLD_DEFAULT) finds libc, and no CUDA symbol where there is no driver"
else
	skip "python3 not found: dlsym(RTLD_DEFAULT) probe"
fi

# ------------------------------------------------------------------ exports
if command -v nm >/dev/null 2>&1; then
	exports=$(nm -D --defined-only "$LIB" | awk '$2 ~ /^[TWi]$/ { print $3 }' |
		grep -v -e '^_init$' -e '^_fini$' | sort | tr '\n' ' ')
	is "$exports" "cuGetProcAddress cuGetProcAddress_v2 cuMemAllocManaged dlsym " \
		"nm -D: only the interposed entry points are exported"
	data=$(nm -D --defined-only "$LIB" | awk '$2 !~ /^[TWi]$/ { print $3 }' | tr '\n' ' ')
	is "$data" "" "  and no data symbols"
	run sh -c "nm -D --undefined-only '$LIB' | grep -E ' cu[A-Z]'"
	is "$out" "" "  and it needs no CUDA symbol from elsewhere"
else
	skip "nm not found: exports"
	skip "nm not found: data symbols"
	skip "nm not found: undefined CUDA symbols"
fi
if command -v readelf >/dev/null 2>&1; then
	run sh -c "readelf -d '$LIB' | grep NEEDED"
	unlike "$out" "libcuda|libcudart" "not linked to libcuda or libcudart"
else
	skip "readelf not found: NEEDED"
fi

# ------------------------------------------------------------------ gpumem-l2reset: no driver
if [ -x "$L2RESET" ]; then
	if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
		skip "a CUDA driver is installed here: the no-driver case of gpumem-l2reset"
	else
		t0=$(date +%s%N)
		run env LD_LIBRARY_PATH="$tmp/nodrv" "$L2RESET"
		t1=$(date +%s%N)
		is "$rc" "3" "gpumem-l2reset without a driver exits 3"
		like "$out" "^gpumem-l2reset: no CUDA driver library \\(libcuda.so.1\\)" "  and says so"
		ms=$(( (t1 - t0) / 1000000 ))
		if [ "$ms" -lt 20000 ]; then pass "  without hanging (${ms} ms)"; else fail "  in ${ms} ms (a hang?)"; fi
	fi
	run "$L2RESET" --devices 0,x
	is "$rc" "2" "gpumem-l2reset --devices 0,x is a usage error (2)"
	like "$out" "--devices '0,x'" "  naming the value"
	run "$L2RESET" --timeout -1
	is "$rc" "2" "gpumem-l2reset --timeout -1 is a usage error"
	run "$L2RESET" --help
	is "$rc" "0" "gpumem-l2reset --help"
else
	skip "gpumem-l2reset not built"
fi

# ------------------------------------------------------------------ against a stand-in driver
if [ ! -f "$FAKEDRV" ] || [ ! -x "$CLIENT" ]; then
	skip "the stand-in driver (tests/gpu/um_fakedrv) was not built: make check builds it"
	done_testing
fi
ln -s "$FAKEDRV" "$tmp/fake/libcuda.so.1"

# The stand-in also interposes getpid, finding libc's with dlsym(RTLD_NEXT)
# (see its header): -1 if our dlsym made "next" relative to itself.
run env LD_PRELOAD="$LIB:$FAKEDRV" sh -c 'echo $$'
like "$rc:$out" "^0:[1-9][0-9]*$" "dlsym(RTLD_NEXT) from an interposer loaded after the library is still relative to its caller"

# clientA ADVICE [VAR=VALUE...] MODE ARGS...: the miniature program on the
# stand-in driver, with the library and that advice.
clientA() { _a=$1; shift; env LD_LIBRARY_PATH="$tmp/fake" LD_PRELOAD="$LIB" GPUMEM_UM_ADVICE="$_a" \
	"$@"; }
client() { clientA "$ADVICE" "$CLIENT" "$@"; }
count() { printf '%s\n' "$out" | grep -c -- "$1"; }

run env LD_LIBRARY_PATH="$tmp/fake" "$CLIENT" runtime 4194304
is "$rc" "0" "without the library: the client works"
is "$(count '^fakedrv: advise')" "0" "  and nothing is advised"
like "$out" "cuMemAllocManaged from libcuda.so.1" "  cuMemAllocManaged is the driver's"

for mode in runtime runtime11 direct default; do
	run client $mode 4194304 1000
	is "$rc" "0" "$mode: the client works with the library"
	like "$out" "cuMemAllocManaged from libgpumem-um.so" "  $mode: its cuMemAllocManaged is ours"
	like "$out" "fakedrv: advise preferred host 4194304" "  $mode: preferred location host"
	like "$out" "fakedrv: advise accessed_by device:0 4194304" "  $mode: accessed by gpu 0"
	is "$(count '^fakedrv: advise')" "2" "  $mode: two advices, none for the 1000-byte allocation"
	unlike "$out" "gpumem-um:" "  $mode: silent with verbose=0"
done

run client default 4194304
like "$out" "client: default before: null" "dlsym(RTLD_DEFAULT) of cuGetProcAddress_v2 before libcuda is loaded: still NULL"
like "$out" "client: default before cuMemAllocManaged: null" "  same for cuMemAllocManaged"
like "$out" "client: default after: found" "  and found once it is loaded"

run clientA 'v1;preferred=gpu;accessed_by=cpu,gpu;read_mostly=1;prefetch=gpu;min_bytes=0;verbose=1' "$CLIENT" runtime 4096
like "$out" "fakedrv: advise preferred device:0 4096" "preferred=gpu: the context's device"
like "$out" "fakedrv: advise accessed_by host 4096" "accessed_by=cpu: host"
like "$out" "fakedrv: advise accessed_by device:0 4096" "accessed_by=gpu"
like "$out" "fakedrv: advise read_mostly" "read_mostly=1"
like "$out" "fakedrv: prefetch device:0 4096 flags 0 stream \(nil\) legacy" "prefetch=gpu on the legacy default stream"
like "$out" "gpumem-um: advising managed allocations of 0 bytes or more: preferred=gpu \(gpu 0\) accessed_by=cpu \(host\),gpu \(gpu 0\) read_mostly=1 prefetch=gpu \(gpu 0\)" \
	"verbose=1: one line saying what is applied"
run clientA 'v1;prefetch=gpu;min_bytes=0' "$CLIENT" runtime --ptds 4096
like "$out" "stream \(nil\) legacy" "a program on the per-thread default stream: still the legacy stream's prefetch"

run clientA 'v1;preferred=cpu;prefetch=cpu;min_bytes=0' UM_FAKEDRV_NUMA=0 "$CLIENT" runtime 4096
if grep -q '^Mems_allowed:.*1$' /proc/self/status 2>/dev/null; then
	like "$out" "fakedrv: advise preferred host 4096" "preferred=cpu: plain host (a NUMA preference reads back as none on H100)"
	like "$out" "fakedrv: prefetch host_numa:0 4096" "prefetch=cpu: same node"
else
	skip "NUMA node 0 is not in this process's Mems_allowed"
	skip "NUMA node 0 is not in this process's Mems_allowed"
fi
run clientA 'v1;prefetch=cpu;min_bytes=0' UM_FAKEDRV_NUMA=4095 "$CLIENT" runtime 4096
like "$out" "fakedrv: prefetch host 4096" "a NUMA node outside Mems_allowed: plain host"
unlike "$out" "gpumem-um:" "  without a message"

run clientA 'v1;preferred=cpu;accessed_by=gpu;prefetch=gpu;min_bytes=0' UM_FAKEDRV_OLD=1 "$CLIENT" runtime 4096
like "$out" "fakedrv: advise8 preferred cpu 4096" "a 12.0 driver: the device-ordinal cuMemAdvise, CPU"
like "$out" "fakedrv: advise8 accessed_by dev0 4096" "  and GPU"
like "$out" "fakedrv: prefetch8 dev 4096" "  and the old cuMemPrefetchAsync"

# Bad advice: one line, once, and the program goes on unadvised.
run clientA 'v1;preferred=sideways' "$CLIENT" runtime --threads 4 4194304 4194304
is "$rc" "0" "bad GPUMEM_UM_ADVICE: the program still succeeds"
is "$(count '^gpumem-um:')" "1" "  one message for 10 allocations in 5 threads"
like "$out" "^gpumem-um: GPUMEM_UM_ADVICE: preferred='sideways': want cpu, gpu or none" "  which says what is wrong"
is "$(count '^fakedrv: advise')" "0" "  and nothing is advised"
run clientA 'v9' "$CLIENT" runtime 4194304
like "$out" "^gpumem-um: GPUMEM_UM_ADVICE: version 'v9' is not supported" "an unknown version is reported"
run clientA '' "$CLIENT" runtime 4194304
like "$out" "^gpumem-um: GPUMEM_UM_ADVICE: does not start with 'v1'" "an empty value is reported"
run env -u GPUMEM_UM_ADVICE LD_LIBRARY_PATH="$tmp/fake" LD_PRELOAD="$LIB" "$CLIENT" runtime 4194304
is "$rc:$(count '^fakedrv: advise'):$(count '^gpumem-um:')" "0:0:0" "no GPUMEM_UM_ADVICE: allocations untouched, silently"

# A failing advice is reported once; the allocation stands.
run clientA "$ADVICE" UM_FAKEDRV_FAIL=cuMemAdvise "$CLIENT" runtime 4194304 4194304
is "$rc" "0" "cuMemAdvise failing: the program still succeeds"
is "$(count '^gpumem-um:')" "1" "  one message"
like "$out" "^gpumem-um: cuMemAdvise\(SET_PREFERRED_LOCATION, host\) on a 4194304-byte managed allocation failed: CUDA_ERROR_INVALID_VALUE" "  naming the call and the error"
run clientA "$ADVICE" UM_FAKEDRV_FAIL=cuMemAllocManaged "$CLIENT" runtime 4194304
like "$out" "client: main alloc 4194304 rc=1" "a failing cuMemAllocManaged: its error is returned unchanged"
is "$(count '^fakedrv: advise')" "0" "  and nothing is advised"

# Threads and fork.
run clientA 'v1;preferred=cpu;min_bytes=0;verbose=1' "$CLIENT" runtime --threads 8 --fork 4096
is "$rc" "0" "8 threads and a forked child allocate"
is "$(count '^fakedrv: advise preferred')" "10" "  all 10 allocations advised"
is "$(count '^gpumem-um: advising')" "1" "  one verbose line"

# ------------------------------------------------------------------ placement by size (stripe)
# ranges: the advice and prefetch calls, one per line, as "KIND WHERE BYTES @+OFFSET".
ranges() { printf '%s\n' "$out" | sed -n 's/^fakedrv: \(advise8\?\|prefetch8\?\) \(.*\)$/\1 \2/p' |
	sed 's/ flags 0 stream (nil) legacy//' | tr '\n' ';'; }
M=1048576
S='v2;placement=stripe;min_bytes=1048576'
for mode in runtime runtime11 direct; do
	run clientA "$S;gpu_fraction=0.25" "$CLIENT" $mode $((16 * M)) 1000
	is "$rc" "0" "$mode: stripe 0.25 of 16 MiB: the client works"
	is "$(ranges)" "advise accessed_by device:0 16777216 @+0;advise preferred host 6291456 @+0;prefetch device:0 2097152 @+6291456;advise preferred host 6291456 @+8388608;prefetch device:0 2097152 @+14680064;" \
		"  $mode: 8 granules: CPU 0-6 MiB, GPU 6-8, CPU 8-14, GPU 14-16 (1 in 4, spread); the 1000-byte allocation untouched"
	unlike "$out" "gpumem-um:" "  $mode: silent"
done
run clientA "$S;gpu_fraction=0" "$CLIENT" runtime $((16 * M))
is "$(ranges)" "advise accessed_by device:0 16777216 @+0;advise preferred host 16777216 @+0;" "gpu_fraction 0: mapped for the GPU, one CPU range: 2 calls, no prefetch"
run clientA "$S;gpu_fraction=1" "$CLIENT" runtime $((16 * M))
is "$(ranges)" "advise accessed_by device:0 16777216 @+0;prefetch device:0 16777216 @+0;" "gpu_fraction 1: mapped for the GPU, one GPU range, prefetched (no preferred location: issue 26)"
run clientA "$S;gpu_fraction=1;gpu_max=0.5" "$CLIENT" runtime $((16 * M))
is "$(printf '%s\n' "$out" | grep -c '^fakedrv: prefetch device:0 2097152')" "4" "gpu_max 0.5 (the site's cap) on gpu_fraction 1: 4 of 8 granules"
run clientA "$S;gpu_fraction=0.75" "$CLIENT" runtime $((24 * M + 4096))
is "$(ranges)" "advise accessed_by device:0 25169920 @+0;advise preferred host 2097152 @+0;prefetch device:0 4194304 @+2097152;advise preferred host 2097152 @+6291456;prefetch device:0 4194304 @+8388608;advise preferred host 2097152 @+12582912;prefetch device:0 4194304 @+14680064;advise preferred host 2097152 @+18874368;prefetch device:0 4198400 @+20971520;" \
	"gpu_fraction 0.75 of 24 MiB + 4 KiB: 9 of 13 granules on the GPU (the short last one among them), 1 in 4 on the CPU"
run clientA "$S;gpu_fraction=0.5;granularity=4194304" "$CLIENT" runtime $((16 * M))
is "$(ranges)" "advise accessed_by device:0 16777216 @+0;advise preferred host 4194304 @+0;prefetch device:0 4194304 @+4194304;advise preferred host 4194304 @+8388608;prefetch device:0 4194304 @+12582912;" \
	"granularity 4 MiB: 4 granules, alternating"
# 1 GiB: 512 granules in 64 periods of 8; the call count is the bound.
for f in 0.25 0.5 0.75; do
	run clientA "$S;gpu_fraction=$f" "$CLIENT" runtime $((1024 * M))
	g=$(awk -v f=$f 'BEGIN { print int(512 * f) * 2097152 }')
	sum=$(printf '%s\n' "$out" | awk '/^fakedrv: prefetch device:0/ { s += $4 } END { print s + 0 }')
	is "$sum" "$g" "1 GiB at $f: $g bytes prefetched to the GPU"
	is "$(count '^fakedrv: advise preferred device:0'):$(count '^fakedrv: prefetch'):$(count '^fakedrv: advise preferred host'):$(count '^fakedrv: advise accessed_by device:0')" \
		"0:64:64:1" "  in 64 GPU and 64 CPU ranges, mapped for the GPU once, no preferred location on the GPU part: 129 driver calls, the most any allocation costs"
done
run clientA "$S;gpu_fraction=0.25" "$CLIENT" runtime --threads 4 $((1024 * M))
is "$(count '^fakedrv: prefetch device:0')" "320" "5 allocations in 5 threads: each placed (5 x 64 GPU ranges)"

# auto: the free memory cuMemGetInfo reports, less the reserve, in whole granules.
run clientA "$S;gpu_fraction=auto;reserve=1073741824" UM_FAKEDRV_FREE=$((1024 * M + 7 * M)) "$CLIENT" runtime $((16 * M))
like "$out" "fakedrv: meminfo free 1081081856" "auto: cuMemGetInfo is asked"
sum=$(printf '%s\n' "$out" | awk '/^fakedrv: prefetch device:0/ { s += $4 } END { print s + 0 }')
is "$sum" "$((6 * M))" "  1 GiB + 7 MiB free - 1 GiB reserve: 3 whole granules (6 MiB) on the GPU"
unlike "$out" "stream sync" "  nothing queued before: no wait"
run clientA "$S;gpu_fraction=auto;reserve=1073741824" UM_FAKEDRV_FREE=$((512 * M)) "$CLIENT" runtime $((16 * M))
is "$(ranges)" "advise accessed_by device:0 16777216 @+0;advise preferred host 16777216 @+0;" "auto: free below the reserve: all on the CPU"
run clientA "$S;gpu_fraction=auto;reserve=0" "$CLIENT" runtime $((16 * M)) $((16 * M))
is "$(ranges)" "advise accessed_by device:0 16777216 @+0;prefetch device:0 16777216 @+0;advise accessed_by device:0 16777216 @+0;prefetch device:0 16777216 @+0;" "auto with 80 GiB free: all on the GPU, twice"
is "$(printf '%s\n' "$out" | grep -E '^fakedrv: (meminfo|stream sync|prefetch)' | cut -d' ' -f2-3 | tr '\n' ';')" \
	"meminfo free;prefetch device:0;stream sync;meminfo free;prefetch device:0;" \
	"  the second waits for the first one's prefetch before reading free memory"
run clientA "$S;gpu_fraction=auto;gpu_max=0.25" "$CLIENT" runtime $((16 * M))
is "$(count '^fakedrv: prefetch device:0')" "2" "auto under gpu_max 0.25: 2 of 8 granules"

# Verbose: one line per placed allocation, saying what went where.
run clientA "$S;gpu_fraction=0.25;verbose=1" "$CLIENT" runtime $((16 * M)) $((16 * M))
like "$out" "gpumem-um: stripe: 16777216 bytes at 0x[0-9a-f]+: 4194304 on gpu 0, 12582912 on the host \(gpu_fraction 0.250000\), 4 ranges of 2097152-byte granules, 5 driver calls" \
	"verbose=1: what went where, and the driver calls it took"
is "$(count '^gpumem-um: stripe:')" "2" "  one line per placed allocation"

# An old (12.0) driver: the device-ordinal ABI.
run clientA "$S;gpu_fraction=0.5" UM_FAKEDRV_OLD=1 "$CLIENT" runtime $((4 * M))
is "$(ranges)" "advise8 accessed_by dev0 4194304 @+0;advise8 preferred cpu 2097152 @+0;prefetch8 dev 2097152 stream (nil) @+2097152;" \
	"a 12.0 driver: the same plan through the device-ordinal calls"
# accessed_by=cpu from the policy still holds for the whole allocation.
run clientA "$S;gpu_fraction=1;accessed_by=cpu" "$CLIENT" runtime $((4 * M))
like "$(ranges)" "advise accessed_by host 4194304 @\+0;$" "accessed_by=cpu beside the stripes: one more call on the whole allocation"

# A placement that fails: unset, left plain, said once.
run clientA "$S;gpu_fraction=0.5" UM_FAKEDRV_FAIL=cuMemPrefetchAsync "$CLIENT" runtime --threads 3 $((16 * M))
is "$rc" "0" "a failing prefetch: the program still succeeds"
is "$(count '^gpumem-um:')" "1" "  one message for 4 allocations in 4 threads"
like "$out" "^gpumem-um: placing a 16777216-byte managed allocation between the GPU and the host failed: cuMemPrefetchAsync\(gpu 0\) on bytes 2097152..4194304: CUDA_ERROR_INVALID_VALUE \(1\); it is left a plain managed allocation" \
	"  naming the call, the range and the error"
is "$(count '^fakedrv: advise unset_preferred'):$(count '^fakedrv: advise unset_accessed_by')" "4:4" "  each allocation's advice unset again"
run clientA "$S;gpu_fraction=0.5" UM_FAKEDRV_FAIL=cuMemAdvise UM_FAKEDRV_FAILNTH=3 "$CLIENT" runtime $((16 * M))
like "$out" "failed: cuMemAdvise\(SET_PREFERRED_LOCATION, host\) on bytes 4194304..6291456" "the third cuMemAdvise failing: named with its range"
like "$(ranges)" "advise unset_preferred device:0 16777216 @\+0;advise unset_accessed_by device:0 16777216 @\+0;$" "  then the whole allocation unset"
run clientA "$S;gpu_fraction=auto" UM_FAKEDRV_FAIL=cuMemGetInfo "$CLIENT" runtime $((16 * M))
like "$out" "^gpumem-um: placing a 16777216-byte managed allocation between the GPU and the host failed: cuMemGetInfo: CUDA_ERROR_INVALID_VALUE" "auto with cuMemGetInfo failing: said"
is "$(count '^fakedrv: advise')" "0" "  nothing advised"
run clientA "$S;gpu_fraction=0.5" UM_FAKEDRV_FAIL=cuCtxGetDevice "$CLIENT" runtime $((16 * M))
like "$out" "failed: cuCtxGetDevice: CUDA_ERROR_INVALID_VALUE" "no current device: said, nothing placed"

# Bad values: refused whole, once, nothing advised.
for bad in 'gpu_fraction=1.5' 'gpu_fraction=half' 'granularity=3000000' 'reserve=1G' 'gpu_max=2'; do
	run clientA "$S;$bad" "$CLIENT" runtime --threads 2 $((16 * M))
	is "$rc:$(count '^gpumem-um:'):$(count '^fakedrv: advise')" "0:1:0" "$bad: the program runs unadvised, one message"
	like "$out" "^gpumem-um: GPUMEM_UM_ADVICE: ${bad%%=*}='" "  naming the field"
done
run clientA 'v1;placement=stripe;gpu_fraction=0.5' "$CLIENT" runtime $((16 * M))
like "$out" "unknown field 'placement' \(a v2 field in v1\)" "a v1 string with v2 fields is refused"

# ------------------------------------------------------------------ gpumem-l2reset on the stand-in
if [ -x "$L2RESET" ]; then
	l2() { env LD_LIBRARY_PATH="$tmp/fake" "$L2RESET" "$@"; }
	run l2
	is "$rc" "0" "gpumem-l2reset: exit 0"
	like "$out" "gpumem-l2reset: gpu 0 \(Fake GPU 0\): persisting L2 lines reset, set-aside 0 bytes, [0-9.]+ s" "  one line per GPU (0)"
	like "$out" "gpumem-l2reset: gpu 1 \(Fake GPU 1\): persisting L2 lines reset" "  one line per GPU (1)"
	like "$out" "fakedrv: reset persisting L2 on 1" "  cuCtxResetPersistingL2Cache on each"
	like "$out" "fakedrv: set limit 6 to 0 on 1" "  CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0 on each"
	is "$(count 'fakedrv: retain'):$(count 'fakedrv: release')" "2:2" "  every context released"
	like "$out" "gpumem-l2reset: 2 GPU\(s\), 0 failed, [0-9.]+ s \(driver start [0-9.]+ s\)" "  and a summary with the time"
	run l2 --devices 1
	is "$rc:$(count 'fakedrv: retain')" "0:1" "--devices 1: only that GPU"
	run l2 --devices 2
	is "$rc" "2" "--devices 2 of 2: failure (2)"
	like "$out" "gpu 2: no such device \(2 visible\)" "  says so"
	is "$(count 'fakedrv: retain')" "0" "  before touching any GPU"
	run env UM_FAKEDRV_NODEV=1 LD_LIBRARY_PATH="$tmp/fake" "$L2RESET"
	is "$rc" "3" "cuInit: no device: exit 3"
	like "$out" "cuInit failed: CUDA_ERROR_NO_DEVICE" "  says why"
	run env UM_FAKEDRV_NGPUS=0 LD_LIBRARY_PATH="$tmp/fake" "$L2RESET"
	is "$rc" "3" "no GPU visible: exit 3"
	run env UM_FAKEDRV_FAIL=cuCtxResetPersistingL2Cache LD_LIBRARY_PATH="$tmp/fake" "$L2RESET"
	is "$rc" "2" "a failing reset: exit 2"
	like "$out" "gpu 0 \(Fake GPU 0\): cuCtxResetPersistingL2Cache failed: CUDA_ERROR_INVALID_VALUE" "  naming the GPU and the call"
	is "$(count 'fakedrv: retain'):$(count 'fakedrv: release')" "2:2" "  the other GPU still done, every context released"
	t0=$(date +%s)
	run env UM_FAKEDRV_HANG=cuDevicePrimaryCtxRetain LD_LIBRARY_PATH="$tmp/fake" "$L2RESET" --timeout 1
	t1=$(date +%s)
	is "$rc" "2" "a hung driver call: --timeout 1 ends it with exit 2"
	like "$out" "gpumem-l2reset: timed out after 1 s" "  says so"
	# The timeout, not the hang, ended it (a hung call never returns).
	if [ $((t1 - t0)) -le 15 ]; then pass "  ended by the timeout ($((t1 - t0)) s)"; else fail "  took $((t1 - t0)) s"; fi
	run l2 -q
	is "$rc:$(printf '%s\n' "$out" | grep -c '^gpumem-l2reset')" "0:0" "--quiet: no progress lines"
fi

done_testing

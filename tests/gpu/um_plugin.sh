#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Unified-memory advice through the plugin, as a user gets it: the same
# unmodified program (tests/gpu/um_read.cu: 2 GiB of managed memory filled on
# the CPU, read once on the GPU) under `srun` without a policy and with
# `--gpumem-policy=zerocopy.yaml`, alternating, for both runtime linkages and
# both access patterns.  Goal from the issue: at least 5x.  Then prefetch.yaml
# on the same program building its data on the GPU (--fill gpu): the range
# attributes it prints must show the prefetch, and the time from allocation
# to the end of the GPU fill is reported beside the same run without.
# Usage: tests/gpu/um_plugin.sh BUILD_DIR   (run by tests/gpu/run)
B=$(cd "${1:?usage: um_plugin.sh BUILD_DIR}" && pwd)
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
export top_srcdir top_builddir=$B
. "$top_srcdir/tests/lib.sh"
[ -e /dev/nvidiactl ] || skip_all "no GPU here: run tests/gpu/run on a GPU machine"
um="$B/kernels/um/.libs/libgpumem-um.so"
[ -f "$um" ] || skip_all "libgpumem-um was not built"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
CL="$top_srcdir/tests/slurm/cluster"
t=$(mktemp -d /tmp/gpumem-umplug.XXXXXX); chmod 755 "$t"
export GPUMEM_CLUSTER_DIR=$t/cluster   # its own (runs at once never share one)
trap '"$CL" stop >/dev/null 2>&1; rm -rf "$t"' EXIT
"$NVCC" -O2 -arch=sm_90 -DUM_READ_LINK='"static"' -o "$t/um_static" "$top_srcdir/tests/gpu/um_read.cu" &&
"$NVCC" -O2 -arch=sm_90 -cudart shared -DUM_READ_LINK='"shared"' -o "$t/um_shared" "$top_srcdir/tests/gpu/um_read.cu" ||
	skip_all "nvcc failed"
printf 'version: 1\npolicy_dir: %s\n' "$top_srcdir/policies" >"$t/site.yaml"
echo "required $B/plugin/spank/.libs/gpumem.so site=$t/site.yaml libexecdir=$B/plugin/probe um_library=$um" >"$t/plugstack.conf"
chmod 644 "$t"/*.yaml "$t"/*.conf
"$CL" start --plugstack "$t/plugstack.conf" >"$t/start.log" 2>&1 || { cat "$t/start.log"; skip_all "local Slurm did not start"; }
eval "$("$CL" env)"
gbps() { sed -n 's/.*RESULT.* gbps=\([0-9.]*\).*/\1/p' | head -1; }
fills() { sed -n 's/.*RESULT.* fill_s=\([0-9.]*\).*/\1/p' | head -1; }
N=${GPUMEM_UM_REPEATS:-5}
med() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# The ceiling: advice that keeps the data on the CPU cannot read it faster
# than the link moves pinned memory, so the ratio is bounded by that speed
# over the fault-driven baseline, whatever the library does.
CUDA_VISIBLE_DEVICES=0 "$B/kernels/check/gpumem-check" --quick --json "$t/link.json" >/dev/null 2>&1
h2d=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["devices"][0]["metrics"]["h2d"]["best_gbps"])' "$t/link.json" 2>/dev/null)
diag "pinned H2D on this GPU (gpumem-check): ${h2d:-?} GB/s"
printf '# %-7s %-7s %12s %12s %8s %9s\n' link pattern "none GB/s" "policy GB/s" ratio "at most"
for link in static shared; do
	for pat in grid random; do
		: >"$t/none" ; : >"$t/pol"
		for i in $(seq "$N"); do
			srun -N1 "$t/um_$link" --bytes 2G --pattern $pat 2>&1 | gbps >>"$t/none"
			srun -N1 --gpumem-policy=zerocopy "$t/um_$link" --bytes 2G --pattern $pat 2>"$t/err" | gbps >>"$t/pol"
		done
		a=$(med <"$t/none"); b=$(med <"$t/pol")
		r=$(awk -v a="$a" -v b="$b" 'BEGIN{ if (a > 0) printf "%.2f", b/a; else print 0 }')
		bound=$(awk -v a="$a" -v h="$h2d" 'BEGIN{ if (a > 0 && h > 0) printf "%.2fx", h/a; else print "?" }')
		printf '# %-7s %-7s %12s %12s %7sx %9s\n' $link $pat "$a" "$b" "$r" "$bound"
		awk -v r="$r" 'BEGIN{exit !(r >= 5)}' && pass "$link $pat: zerocopy.yaml through srun is ${r}x the same program without (goal 5x)" ||
			fail "$link $pat: zerocopy.yaml through srun is ${r}x (goal 5x; medians $a -> $b GB/s; the link allows at most $bound)"
	done
done
printf '# prefetch.yaml, GPU-built data: seconds from allocation to the end of the GPU fill (median of %s)\n' "$N"
printf '# %-7s %12s %12s %8s\n' link "none s" "policy s" speedup
for link in static shared; do
	: >"$t/none"; : >"$t/pol"
	for i in $(seq "$N"); do
		srun -N1 "$t/um_$link" --bytes 2G --pattern grid --fill gpu >"$t/o_none" 2>&1
		fills <"$t/o_none" >>"$t/none"
		srun -N1 --gpumem-policy=prefetch "$t/um_$link" --bytes 2G --pattern grid --fill gpu >"$t/o_pol" 2>&1
		fills <"$t/o_pol" >>"$t/pol"
	done
	a=$(med <"$t/none"); b=$(med <"$t/pol")
	printf '# %-7s %12s %12s %7sx\n' $link "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN{ if (b > 0) printf "%.2f", a/b; else print 0 }')"
	like "$(cat "$t/o_pol")" "check=ok preferred=gpu0 last_prefetch=gpu0" "$link: prefetch.yaml through srun: the program reads preferred=gpu0 last_prefetch=gpu0 back"
	like "$(cat "$t/o_none")" "check=ok preferred=none last_prefetch=none" "$link: without a policy: no advice, no prefetch"
done
run srun -N1 --gpumem-policy=zerocopy sh -c 'echo "$LD_PRELOAD"; echo "$GPUMEM_UM_ADVICE"'
like "$out" "libgpumem-um.so" "the task got the installed library from the plugin"
like "$out" "v1;preferred=cpu;accessed_by=gpu" "and the policy's advice"
done_testing

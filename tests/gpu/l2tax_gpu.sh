#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The persisting-L2 set-aside's cap on a GPU node, through a real srun with
# the shipped site file: persist.yaml and a policy asking for 50% get the
# model's cap, the task's context reports it, and the step says so; a site
# that raises the cap gets what it asked.  Then the benchmark: the same
# STREAM-style program (bench/l2-setaside.cu, --mode env) in alternating
# jobs with the site's defaults, persist (the shipped persist.yaml, by
# name) and 50% with the cap raised,
# each figure's median and its ratio to the defaults (printed, not
# asserted).  GPUMEM_L2TAX_PROGRAM="PATH ARGS" adds another program (its
# output is printed per job; a carried BabelStream, say).
# Usage: tests/gpu/l2tax_gpu.sh BUILD_DIR   (run by tests/gpu/run)
B=$(cd "${1:?usage: l2tax_gpu.sh BUILD_DIR}" && pwd)
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
export top_srcdir top_builddir=$B
. "$top_srcdir/tests/lib.sh"
[ -e /dev/nvidiactl ] || skip_all "no GPU here: run tests/gpu/run on a GPU machine"
[ -f "$B/plugin/spank/.libs/gpumem.so" ] || skip_all "gpumem.so not built"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
CL="$top_srcdir/tests/slurm/cluster"
t=$(mktemp -d /tmp/gpumem-l2tax.XXXXXX); chmod 755 "$t"
export GPUMEM_CLUSTER_DIR=$t/cluster
trap '"$CL" stop >/dev/null 2>&1; rm -rf "$t"' EXIT

"$NVCC" -O3 -gencode arch=compute_90,code=sm_90 -o "$t/l2sa" "$top_srcdir/bench/l2-setaside.cu" || fail "nvcc l2-setaside"
mkdir -p "$t/reports" "$t/libexec"
# The shipped site file, its paths made this cluster's.
sed -e "s|^policy_dir: .*|policy_dir: $top_srcdir/policies|" \
    -e "s|^  dir: /var/lib/gpumem/reports|  dir: $t/reports|" "$top_srcdir/etc/gpumem.yaml" >"$t/site.yaml"
# The same with the cap raised for every model.
sed -e "s|^  # l2_model_max_percent:|  l2_model_max_percent:|" -e "s|^  #   NVIDIA H200: 18|    NVIDIA H200: 62|" \
    -e "s|^  #   other: 18|    other: 62|" "$t/site.yaml" >"$t/raised.yaml"
grep -q '^    NVIDIA H200: 62' "$t/raised.yaml" || fail "raised.yaml: the shipped site file's l2_model_max_percent example changed"
printf 'version: 1\nl2:\n  persisting_limit: 50%%\n' >"$t/p50.yaml"
ln -s "$B/plugin/probe/gpumem-probe" "$t/libexec/gpumem-probe"
[ -x "$B/kernels/l2reset/gpumem-l2reset" ] && ln -s "$B/kernels/l2reset/gpumem-l2reset" "$t/libexec/gpumem-l2reset"
[ -x "$B/plugin/sample/gpumem-sample" ] && ln -s "$B/plugin/sample/gpumem-sample" "$t/libexec/gpumem-sample"
[ -x "$B/plugin/health/gpumem-health" ] && ln -s "$B/plugin/health/gpumem-health" "$t/libexec/gpumem-health"
for s in site raised; do
	echo "required $B/plugin/spank/.libs/gpumem.so site=$t/$s.yaml libexecdir=$t/libexec check=$B/kernels/check/gpumem-check" >"$t/$s.conf"
done
chmod 644 "$t"/*.yaml "$t"/*.conf
"$CL" start --gpus 1 --plugstack "$t/site.conf" >"$t/start.log" 2>&1 || { cat "$t/start.log"; skip_all "local Slurm did not start"; }
eval "$("$CL" env)"
name=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0)
diag "$name; bench/l2-setaside --mode env in jobs"

# limit LINE: the bytes the task's context reports.
limit() { printf '%s' "$1" | sed -n 's/.* limit=\([0-9]*\) .*/\1/p' | tail -1; }
l2=$("$t/l2sa" --mode env --mib 64 | sed -n 's/.*L2 \([0-9]*\) bytes.*/\1/p')
run srun -N1 --gres=gpu:1 --gpumem-policy=persist "$t/l2sa" --mode env --mib 256; diag "persist.yaml: $out"
got=$(limit "$out")
case $name in
*H200*) [ -n "$got" ] && [ "$got" -le $((l2 * 3 / 16)) ] &&
	pass "persist.yaml on $name: the task's set-aside $got bytes is within 3/16 of L2 (no tax measured there)" ||
	fail "persist.yaml on $name: set-aside $got bytes, L2 $l2" ;;
*) [ -n "$got" ] && [ "$got" -le $((l2 / 4)) ] && pass "persist.yaml on $name: set-aside $got within a quarter of L2" ||
	fail "persist.yaml on $name: set-aside $got, L2 $l2" ;;
esac
run srun -N1 --gres=gpu:1 --gpumem-policy="$t/p50.yaml" "$t/l2sa" --mode env --mib 256; diag "50%: $out"
like "$out" "capped at" "a policy asking for 50% is told it was capped, and why"
[ "$(limit "$out")" = "$got" ] && pass "... and gets the same set-aside as persist.yaml" || fail "50% capped: $(limit "$out") against $got"

"$CL" restart-slurmd --plugstack "$t/raised.conf" >"$t/restart.log" 2>&1 || { cat "$t/restart.log"; fail "restart with the raised cap"; }
run srun -N1 --gres=gpu:1 --gpumem-policy="$t/p50.yaml" "$t/l2sa" --mode env --mib 256; diag "50%, cap raised: $out"
[ "$(limit "$out")" = $((l2 / 2)) ] && pass "with the site's cap raised, 50% gets half of L2" || fail "raised: $(limit "$out") against $((l2 / 2))"

# The benchmark: rounds of defaults / persist.yaml / 50% raised, alternating.
fig() { printf '%s\n' "$1" | sed -n "s/.* $2=\([0-9]*\).*/\1/p" | tail -1; }
for r in 1 2 3 4 5; do
	"$CL" restart-slurmd --plugstack "$t/site.conf" >/dev/null 2>&1
	for p in defaults persist; do
		o=$(if [ $p = defaults ]; then srun -N1 --gres=gpu:1 "$t/l2sa" --mode env --mib 1024; else
			srun -N1 --gres=gpu:1 --gpumem-policy=persist "$t/l2sa" --mode env --mib 1024; fi 2>&1)
		for k in read write copy triad; do fig "$o" $k >>"$t/$p.$k"; done
		[ -z "${GPUMEM_L2TAX_PROGRAM:-}" ] || { if [ $p = defaults ]; then srun -N1 --gres=gpu:1 $GPUMEM_L2TAX_PROGRAM; else
			srun -N1 --gres=gpu:1 --gpumem-policy=persist $GPUMEM_L2TAX_PROGRAM; fi 2>&1 | grep -iE '^(copy|triad)[ ,:]' | tee -a "$t/prog.$p" | sed "s/^/# round $r $p: /"; }
	done
	"$CL" restart-slurmd --plugstack "$t/raised.conf" >/dev/null 2>&1
	o=$(srun -N1 --gres=gpu:1 --gpumem-policy="$t/p50.yaml" "$t/l2sa" --mode env --mib 1024 2>&1)
	for k in read write copy triad; do fig "$o" $k >>"$t/raised50.$k"; done
done
med() { sort -n "$1" | awk '{ a[NR] = $1 } END { m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; print m }'; }
for k in read write copy triad; do
	d=$(med "$t/defaults.$k"); p=$(med "$t/persist.$k"); h=$(med "$t/raised50.$k")
	diag "$k GB/s, median of 5 alternating jobs: defaults $d, persist.yaml $p ($(awk -v a="$p" -v b="$d" 'BEGIN{printf "%.3f", a/b}')x), 50% with the cap raised $h ($(awk -v a="$h" -v b="$d" 'BEGIN{printf "%.3f", a/b}')x)"
done
# The other program's Triad and Copy, where it printed BabelStream's CSV (MB/s in the fifth field).
for k in Copy Triad; do
	[ -s "$t/prog.defaults" ] || break
	for p in defaults persist; do awk -F, -v k=$k '$1 == k { print $5 / 1000 }' "$t/prog.$p" >"$t/prog.$p.$k"; done
	d=$(med "$t/prog.defaults.$k"); p=$(med "$t/prog.persist.$k")
	[ -n "$d" ] && [ -n "$p" ] && diag "$GPUMEM_L2TAX_PROGRAM: $k GB/s, median of 5: defaults $d, persist.yaml $p ($(awk -v a="$p" -v b="$d" 'BEGIN{printf "%.3f", a/b}')x)"
done
done_testing

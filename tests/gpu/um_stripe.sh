#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Placement by size (issue 17) through the plugin, as a user gets it: the
# same unmodified program (tests/gpu/um_read.cu) under `srun
# --gpumem-policy=FILE` with unified_memory.placement: stripe forced to
# gpu_fraction 0, 0.25, 0.5, 0.75 and 1, for static cudart, shared cudart and
# the driver API, beside the same program fault-driven (no policy) and
# zero-copy (zerocopy.yaml), all in one run.  Never oversubscribed: the
# allocation (UM_STRIPE_BYTES, 8G) is one that fits; um_read itself takes at
# most half of what the GPU has free.
#
# Per run it prints the read-once bandwidth (first pass) and the read-many
# one (passes 2..UM_STRIPE_READS), and the model's prediction:
#   time = bytes_gpu / HBM + bytes_cpu / link
# with HBM (a cudaMalloc buffer) and link (pinned host memory read through
# its mapping) measured by the same kernel in the same run.  Data built on
# the GPU (--fill gpu) follows that for both; data built on the CPU
# (--fill cpu, static only) stays where the CPU put it (the GPU part has no
# preferred location since issue 26) and is read over the link on every
# pass, so its model is the link's bandwidth whatever the fraction.  TAP
# checks: checksums, and the bytes the driver records as placed on the GPU
# (prefetched there, no preferred location) equal the plan's
# (floor(granules * fraction)).
# Bandwidths are printed, never asserted.  Ends with the model for
# oversubscription factors 1.5 and 2 from the measured figures.
# Issue 26's matrix follows the fraction table: grid, block and random
# patterns x data built on the GPU, on the CPU, or moved to the CPU by the
# program before each pass, stripe 0.5 beside fault-driven and zero-copy.
# Usage: tests/gpu/um_stripe.sh BUILD_DIR   (tests/gpu/run, part umstripe)
B=$(cd "${1:?usage: um_stripe.sh BUILD_DIR}" && pwd)
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
export top_srcdir top_builddir=$B
. "$top_srcdir/tests/lib.sh"
[ -e /dev/nvidiactl ] || skip_all "no GPU here: run tests/gpu/run on a GPU machine"
um="$B/kernels/um/.libs/libgpumem-um.so"
[ -f "$um" ] || skip_all "libgpumem-um was not built"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
BYTES=${UM_STRIPE_BYTES:-8G}
READS=${UM_STRIPE_READS:-3}
FRACS=${UM_STRIPE_FRACTIONS:-0 0.25 0.5 0.75 1}
CL="$top_srcdir/tests/slurm/cluster"
t=$(mktemp -d /tmp/gpumem-umstripe.XXXXXX); chmod 755 "$t"
export GPUMEM_CLUSTER_DIR=${GPUMEM_CLUSTER_DIR:-$t/cluster}   # a run's own (two runs never share one)
trap '"$CL" stop >/dev/null 2>&1; rm -rf "$t"' EXIT
src="$top_srcdir/tests/gpu/um_read.cu"
"$NVCC" -O2 -arch=sm_90 -DUM_READ_LINK='"static"' -o "$t/um_static" "$src" &&
"$NVCC" -O2 -arch=sm_90 -cudart shared -DUM_READ_LINK='"shared"' -o "$t/um_shared" "$src" &&
"$NVCC" -O2 -arch=sm_90 -DUM_READ_DRIVER -DUM_READ_LINK='"driver"' -o "$t/um_driver" "$src" -lcuda ||
	skip_all "nvcc failed"
printf 'version: 1\npolicy_dir: %s\n' "$top_srcdir/policies" >"$t/site.yaml"
echo "required $B/plugin/spank/.libs/gpumem.so site=$t/site.yaml libexecdir=$B/plugin/probe um_library=$um" >"$t/plugstack.conf"
for f in $FRACS auto; do
	printf 'version: 1\nunified_memory:\n  placement: stripe\n  gpu_fraction: %s\n  min_bytes: 1MiB\n' "$f" >"$t/stripe-$f.yaml"
done
chmod 644 "$t"/*.yaml "$t"/*.conf
"$CL" start --plugstack "$t/plugstack.conf" >"$t/start.log" 2>&1 || { cat "$t/start.log"; skip_all "local Slurm did not start"; }
eval "$("$CL" env)"

# val FILE KEY: KEY's value on the RESULT line.
val() { sed -n "s/.*RESULT.* $2=\([^ ]*\).*/\1/p" "$1" | head -1; }
# one NAME POLICY|- PROG ARGS...: one srun, output in $t/NAME.
one() {
	local name=$1 pol=$2; shift 2
	if [ "$pol" = - ]; then srun -N1 "$@" >"$t/$name" 2>&1
	else srun -N1 --gpumem-policy="$pol" "$@" >"$t/$name" 2>&1; fi
}
RD=(--bytes "$BYTES" --pattern grid --reads "$READS")

# The two bandwidths of the model, by the same kernel.
one hbm - "$t/um_static" "${RD[@]}" --alloc device --fill gpu
one link - "$t/um_static" "${RD[@]}" --alloc pinned --fill gpu
HBM=$(val "$t/hbm" gbps_rest); LINK=$(val "$t/link" gbps_rest)
like "$(cat "$t/hbm")" "RESULT.*check=ok" "HBM reference (cudaMalloc, read by the same kernel): $HBM GB/s"
like "$(cat "$t/link")" "RESULT.*check=ok" "link reference (pinned host memory through its mapping): $LINK GB/s"
diag "bytes per run: $(val "$t/hbm" bytes); reads per run: $READS (read-once = pass 1, read-many = passes 2..$READS)"

# model F GPU_BW CPU_BW: GB/s for a share F on the GPU.
model() { awk -v f="$1" -v g="$2" -v c="$3" 'BEGIN { t = (f > 0 ? f / g : 0) + (f < 1 ? (1 - f) / c : 0); if (t > 0) printf "%.1f", 1 / t; else print "?" }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "?" }'; }
row() { printf '# %-7s %-4s %-9s %13s %9s %9s %6s %9s %9s %6s %7s %7s\n' "$@"; }
row link fill mode "placed_gpu" "once" "model" "/mod" "many" "model" "/mod" "/fault" "/zcopy"

for link in static shared driver; do
	fills="gpu"; [ $link = static ] && fills="gpu cpu"
	for fill in $fills; do
		base=$link.$fill
		one "$base.fault" - "$t/um_$link" "${RD[@]}" --fill $fill
		one "$base.zc" zerocopy "$t/um_$link" "${RD[@]}" --fill $fill
		F1=$(val "$t/$base.fault" gbps); FM=$(val "$t/$base.fault" gbps_rest)
		Z1=$(val "$t/$base.zc" gbps); ZM=$(val "$t/$base.zc" gbps_rest)
		row $link $fill fault - "$F1" - - "$FM" - - 1.00 "$(ratio "$F1" "$Z1")"
		row $link $fill zerocopy - "$Z1" "$LINK" "$(ratio "$Z1" "$LINK")" "$ZM" "$LINK" "$(ratio "$ZM" "$LINK")" "$(ratio "$Z1" "$F1")" 1.00
		for f in $FRACS; do
			o="$t/$base.$f"
			one "$base.$f" "$t/stripe-$f.yaml" "$t/um_$link" "${RD[@]}" --fill $fill
			b=$(val "$o" bytes); pg=$(val "$o" placed_gpu); pc=$(val "$o" placed_cpu)
			want=$(awk -v b="$b" -v f="$f" 'BEGIN { g = 2097152; printf "%.0f", int(b / g * f + 1e-9) * g }')
			fg=$(awk -v p="$pg" -v b="$b" 'BEGIN { if (b > 0) printf "%.6f", p / b; else print 0 }')
			once=$(val "$o" gbps); many=$(val "$o" gbps_rest)
			# CPU-built data stays on the CPU: read over the link, every pass.
			if [ $fill = cpu ]; then m1=$LINK mm=$LINK; else m1=$(model "$fg" "$HBM" "$LINK") mm=$m1; fi
			row $link $fill "stripe $f" "$pg" "$once" "$m1" "$(ratio "$once" "$m1")" "$many" "$mm" "$(ratio "$many" "$mm")" \
				"$(ratio "$once" "$F1")" "$(ratio "$once" "$Z1")"
			if grep -q 'RESULT.*check=ok' "$o" && [ "$pg" = "$want" ] && [ "$pc" = "$((b - want))" ] &&
			   ! grep -q '^gpumem-um:' "$o"; then
				pass "$link fill=$fill gpu_fraction $f through srun: $pg bytes placed on the GPU (plan: $want), the rest on the CPU, checksums ok"
			else
				fail "$link fill=$fill gpu_fraction $f: placed_gpu=$pg placed_cpu=$pc (plan: $want of $b)"
				sed 's/^/#   /' "$o" | tail -5
			fi
		done
	done
done

# Issue 26: every access pattern, for data built on the GPU, built on the CPU,
# or moved to the CPU by the program itself before each pass (--to-cpu, as
# the oversubscription benchmark's page_fault mode does): stripe at 0.5
# beside fault-driven and zero-copy, static cudart.  Goal: stripe/zcopy >= 1
# read-once and read-many in every row; read-many of GPU-built data near the
# model.  Printed, never asserted (checksums are).
diag "MATRIX (issue 26): GB/s read-once (pass 1) and read-many (passes 2..$READS), stripe 0.5 beside fault-driven and zero-copy"
mrow() { printf '# %-7s %-7s %8s %8s %8s %8s %8s %8s %7s %7s %7s\n' "$@"; }
mrow pattern origin fault1 zcopy1 stripe1 faultN zcopyN stripeN s/z1 s/zN s/modN
MOD=$(model 0.5 "$HBM" "$LINK")
for pat in grid block random; do
	for origin in gpu cpu to-cpu; do
		case $origin in
		gpu) args=(--fill gpu) ;;
		cpu) args=(--fill cpu) ;;
		to-cpu) args=(--fill gpu --to-cpu) ;;
		esac
		m=mx.$pat.$origin
		ARGS=(--bytes "$BYTES" --pattern $pat --reads "$READS" "${args[@]}")
		one $m.fault - "$t/um_static" "${ARGS[@]}"
		one $m.zc zerocopy "$t/um_static" "${ARGS[@]}"
		one $m.st "$t/stripe-0.5.yaml" "$t/um_static" "${ARGS[@]}"
		mrow $pat $origin "$(val "$t/$m.fault" gbps)" "$(val "$t/$m.zc" gbps)" "$(val "$t/$m.st" gbps)" \
			"$(val "$t/$m.fault" gbps_rest)" "$(val "$t/$m.zc" gbps_rest)" "$(val "$t/$m.st" gbps_rest)" \
			"$(ratio "$(val "$t/$m.st" gbps)" "$(val "$t/$m.zc" gbps)")" \
			"$(ratio "$(val "$t/$m.st" gbps_rest)" "$(val "$t/$m.zc" gbps_rest)")" \
			"$(ratio "$(val "$t/$m.st" gbps_rest)" "$MOD")"
		bad=""
		for x in fault zc st; do grep -q 'RESULT.*check=ok' "$t/$m.$x" || bad="$bad $x"; done
		[ -z "$bad" ] && pass "matrix $pat $origin: fault, zero-copy and stripe 0.5 read the right bytes" ||
			{ fail "matrix $pat $origin: checksum or run failed:$bad"; for x in $bad; do sed 's/^/#   /' "$t/$m.$x" | tail -3; done; }
	done
done
diag "  (s/modN: stripe read-many over the model at 0.5, $MOD GB/s from this run's HBM $HBM and link $LINK)"

# auto: all of it when it fits; what free - reserve allows when told to leave most free.
one auto.fit "$t/stripe-auto.yaml" "$t/um_static" "${RD[@]}" --fill gpu
b=$(val "$t/auto.fit" bytes); pg=$(val "$t/auto.fit" placed_gpu)
is "$pg" "$b" "gpu_fraction auto, default 1GiB reserve, an allocation that fits: all of it on the GPU"
free=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits -i "${CUDA_VISIBLE_DEVICES:-0}" 2>/dev/null | head -1)
if [ -n "$free" ]; then
	res=$(( (free - 3072) * 1048576 ))
	printf 'version: 1\nunified_memory:\n  placement: stripe\n  gpu_fraction: auto\n  reserve: %s\n' "$res" >"$t/stripe-auto3.yaml"
	chmod 644 "$t/stripe-auto3.yaml"
	one auto.3g "$t/stripe-auto3.yaml" "$t/um_static" "${RD[@]}" --fill gpu
	pg=$(val "$t/auto.3g" placed_gpu)
	what="gpu_fraction auto with reserve = free - 3 GiB ($res bytes): $pg bytes on the GPU, more than 0 and at most 3 GiB"
	if [ -n "$pg" ] && [ "$pg" -gt 0 ] && [ "$pg" -le $((3 << 30)) ] && grep -q 'check=ok' "$t/auto.3g"; then
		pass "$what"
	else
		fail "$what"; sed 's/^/#   /' "$t/auto.3g" | tail -5
	fi
else
	skip "nvidia-smi gave no free memory: auto with a large reserve"
fi

# The model beyond the GPU, from this run's figures (a model, not a measurement).
diag "MODEL (not measured): an allocation k times what the GPU has free, stripe with gpu_fraction auto"
diag "  puts about 1/k of it in HBM and reads the rest over the link, every pass:"
for k in 1.5 2; do
	f=$(awk -v k=$k 'BEGIN { printf "%.4f", 1 / k }')
	s=$(model "$f" "$HBM" "$LINK")
	diag "  k=$k: read-many $s GB/s = $(ratio "$s" "$LINK")x zero-copy ($LINK GB/s); GPU-built read-once the same;" \
		"CPU-built $LINK GB/s (read over the link, as zero-copy)"
done
done_testing

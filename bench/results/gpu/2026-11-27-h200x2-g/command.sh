#!/bin/bash
# run g's devrun.sh (devwork-check4/ in the device's copy of main)
set -u
cd "$(dirname "$0")"
D=$PWD
n=$(nvidia-smi -L | grep -c '^GPU')
nvidia-smi --query-gpu=index,name,driver_version,persistence_mode,compute_mode --format=csv | tee $OUT/nvidia-smi.txt
G=/tmp/gpumem-gpu-build/gpumem-0.1.0
GPUMEM_GPU_PARTS="timing policycost" GPUMEM_GPU_NGPUS=$n GPUMEM_GPU_BASELINE=$D/old.tar.gz \
GPUMEM_COST_RUNS=3 GPUMEM_COST_STEPS=10 \
GPUMEM_COST_POLICIES="none $G/policies/checked.yaml $G/policies/stream.yaml $G/policies/persist.yaml" \
	bash tests/gpu/run new.tar.gz ../.debs 2>&1 | tee $OUT/run.log
B=/tmp/gpumem-gpu-build/build K=/tmp/gpumem-gpu-build/keep-build
export LD_LIBRARY_PATH=/tmp/gpumem-prefix/usr/lib/x86_64-linux-gnu
cp -a $B $K && (cd $K/kernels && rm -f check/*check_gpu.o && make check/gpumem-check CFLAGS="-g -O2 -DGPUMEM_CHECK_KEEP_CONTEXTS" >keep.out 2>&1 || tail keep.out)
{ echo "# date: $(date -u +%FT%TZ)"; echo "# command: bench/check-timing $B --gpus $n --baseline $K --ab-only (baseline: this branch built with -DGPUMEM_CHECK_KEEP_CONTEXTS)";
  bash $G/bench/check-timing $B --gpus $n --baseline $K --ab-only; } 2>&1 | tee $OUT/keep-ab.log

#!/bin/bash
# check4's device run: main (old, 923149f) and check4 (new) built side by side;
# policy-cost for both on all GPUs; --devices narrowing; check A/B and phases.
set -u
cd "$(dirname "$0")"
D=$PWD
n=$(nvidia-smi -L | grep -c '^GPU')
nvidia-smi --query-gpu=index,name,uuid,driver_version,persistence_mode,compute_mode --format=csv | tee $OUT/nvidia-smi.txt
G=/tmp/gpumem-gpu-build/gpumem-0.1.0
GPUMEM_GPU_PARTS="policycost" GPUMEM_GPU_NGPUS=$n GPUMEM_GPU_BASELINE=$D/old.tar.gz \
GPUMEM_COST_RUNS=3 GPUMEM_COST_STEPS=10 GPUMEM_COST_BASELINE_POLICIES="none $G/policies/stream.yaml" \
	timeout 200 bash tests/gpu/run new.tar.gz ../.debs 2>&1 | tee $OUT/run.log
export LD_LIBRARY_PATH=/tmp/gpumem-prefix/usr/lib/x86_64-linux-gnu
B=/tmp/gpumem-gpu-build/build O=/tmp/gpumem-gpu-build/old-build
last=$((n - 1))
{ echo "# date:    $(date -u +%FT%TZ)"; echo "# device:  $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | paste -sd';')";
  echo "# command: bench/check-timing $B --gpus $n --baseline $O --ab-only (old: main 923149f; new: branch check4)";
  echo "# --devices $last (new), index and uuid: $($B/kernels/check/gpumem-check --devices $last --json - 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print([(x["index"], x["uuid"]) for x in d["devices"]])')";
  echo "# nvidia-smi GPU $last: $(nvidia-smi --query-gpu=index,uuid --format=csv,noheader | sed -n "$n p")";
  timeout 150 bash $G/bench/check-timing $B --gpus $n --baseline $O --ab-only; } 2>&1 | tee $OUT/check-ab.log

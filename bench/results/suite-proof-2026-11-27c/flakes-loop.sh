#!/bin/bash
# usage: flakes-loop.sh NAME N SERIES TESTS [run args...]
name=$1 n=$2 series=$3 tests=$4; shift 4
out=/work/wt/flakes/bench/results/suite-proof-2026-11-27c
cd /work/wt/flakes
for i in $(seq 1 $n); do
	s=$(date -u +%H:%M:%S)
	GPUMEM_SLURM_TESTS="$tests" tests/slurm/run --slurm $series "$@" >"$out/$name-$i.raw" 2>&1
	rc=$?
	cp _build-slurm$series/tests/test-suite.log "$out/$name-$i.suite.log" 2>/dev/null
	echo "$name $i start $s end $(date -u +%H:%M:%S) rc $rc: $(tail -1 "$out/$name-$i.raw")" >>"$out/runs.txt"
done
